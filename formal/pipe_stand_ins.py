# amaranth: UnusedElaboratable=no
# (The real CopyChecker and AddressGenerator are built here for their signatures alone.)
"""Stand-ins for the pipe controller's copy checker and address generator: each has the
real block's signature and drives its outputs with free values, under Assumes of only
what the real block guarantees (its docstring), so a proof of the pipe controller with
them holds with any block that keeps those guarantees. What the proofs know of the
checker's ports is here alone."""

from amaranth.hdl import Array, Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Flow

from hdl.layouts import CMD_INDEX_BITS
from hdl.pipe.addrgen import AddressGenerator
from hdl.pipe.checker import CopyChecker
from model.isa import ErrorCode

from .inputs import free_ports
from .props import assume, past, stalled

# Copies a CopyChecker holds at once: one evaluated, one in its result register.
CHECKER_HOLDS = 2


def _passes(result):
    """Whether a checked copy (a CopyChecker result) goes to the address generator: it
    broke no rule and has a row."""
    return (result.error == ErrorCode.NONE) & ~result.geom.empty


class FreeCopyChecker(wiring.Component):
    """CopyChecker's ports, its outputs free under what CopyChecker guarantees:

    - a request is taken on any cycle `ready` is high, while it holds fewer than
      CHECKER_HOLDS copies (or one leaves on that cycle);
    - one result per request taken, in order, with the request's index; held until
      taken, its verdict (error, empty) and index unchanged;
    - `passing` only on a cycle with no result, and then the next cycle's result passes;
    - `busy` exactly while it holds a copy (a register), `busy_next` its next value.

    Every other field of the result, and `upcoming`, is free: it says where the copy's
    rows go, which no property of the pipe's completions reads. `held` is the number of
    copies held and `indices` their indices, oldest first (valid below `held`): the
    result's is `indices[0]`."""

    def __init__(self, kind, profile, width_bytes):
        super().__init__(CopyChecker(kind, profile, width_bytes).signature)
        self.held = Signal(range(CHECKER_HOLDS + 1), name="checker_held")
        self.indices = [Signal(CMD_INDEX_BITS, name=f"checker_index_{k}")
                        for k in range(CHECKER_HOLDS)]

    def result_taken(self):
        """A result leaves on this cycle."""
        return self.result.valid & self.result.ready

    def offers_a_passing_result(self):
        return self.result.valid & _passes(self.result.payload)

    def elaborate(self, platform):
        m = Module()
        free_ports(m, self, Flow.Out)
        request, result = self.request, self.result
        accept = request.valid & request.ready
        taken = self.result_taken()
        held_next = self.held + accept - taken
        m.d.sync += self.held.eq(held_next)
        with m.If(taken):
            m.d.sync += [now.eq(later) for now, later in zip(self.indices, self.indices[1:])]
        free_slot = (self.held - taken)[:len(self.held)]
        with m.If(accept):
            m.d.sync += Array(self.indices)[free_slot].eq(request.payload.index)
        assume(m, "checker_takes_a_copy_with_room",
               ~request.ready | (self.held - taken < CHECKER_HOLDS))
        assume(m, "checker_result_of_a_copy_held",
               ~result.valid | ((self.held != 0) & (result.payload.index == self.indices[0])))
        verdict = Cat(result.payload.error, result.payload.geom.empty, result.payload.index)
        waiting = stalled(m, result)
        assume(m, "checker_result_held_until_taken",
               ~waiting | (result.valid & (verdict == past(m, verdict, "verdict_before"))))
        assume(m, "checker_passing_before_a_result",
               ~self.passing | ~result.valid)
        assume(m, "checker_passing_result_passes",
               ~past(m, self.passing, "passing_before") | self.offers_a_passing_result())
        assume(m, "checker_busy_while_holding", self.busy == (self.held != 0))
        assume(m, "checker_busy_next", self.busy_next == (held_next != 0))
        return m


class FreeAddressGenerator(wiring.Component):
    """AddressGenerator's ports, its outputs (`copy.ready`, `rows`, `busy`) free: when it
    takes a copy and which rows it makes decide no property of the pipe's completions,
    whose Completions the harness gives within the copies started."""

    def __init__(self, kind, width_bytes):
        super().__init__(AddressGenerator(kind, width_bytes).signature)

    def elaborate(self, platform):
        m = Module()
        free_ports(m, self, Flow.Out)
        return m
