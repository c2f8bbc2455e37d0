# amaranth: UnusedElaboratable=no
# (The real CopyChecker and AddressGenerator are built here for their signatures alone.)
"""Stand-ins for the pipe controller's copy checker and address generator: each has the
real block's signature and drives its outputs with free values, under Assumes of only
what the real block guarantees (its docstring), so a proof of the pipe controller with
them holds with any block that keeps those guarantees; formal/copy_checker.py proves
the checker's (`checker_contract`) of the real CopyChecker. What the proofs know of the
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


def result_taken(checker):
    """A CopyChecker's result leaves on this cycle."""
    return checker.result.valid & checker.result.ready


def offers_a_passing_result(checker):
    return checker.result.valid & _passes(checker.result.payload)


class CheckerRecord:
    """A harness's record of the copies a CopyChecker holds, from its ports: `held`, how
    many, and `indices`, their commands' indices, oldest first (valid below `held`)."""

    def __init__(self):
        self.held = Signal(range(CHECKER_HOLDS + 1), name="checker_held")
        self.indices = [Signal(CMD_INDEX_BITS, name=f"checker_index_{k}")
                        for k in range(CHECKER_HOLDS)]

    def follow(self, m, checker):
        """Follows `checker`'s requests taken and results taken. Returns `held`'s next
        value."""
        accept = checker.request.valid & checker.request.ready
        taken = result_taken(checker)
        held_next = self.held + accept - taken
        m.d.sync += self.held.eq(held_next)
        with m.If(taken):
            m.d.sync += [now.eq(later) for now, later in zip(self.indices, self.indices[1:])]
        free_slot = (self.held - taken)[:len(self.held)]
        with m.If(accept):
            m.d.sync += Array(self.indices)[free_slot].eq(checker.request.payload.index)
        return held_next


def checker_contract(m, check, checker, record):
    """What CopyChecker guarantees of its ports (its docstring), `check`ed: `assume` of a
    stand-in, `prop` of the real block. `record` (a CheckerRecord) follows it:

    - a request is taken on any cycle `ready` is high, while it holds fewer than
      CHECKER_HOLDS copies (or one leaves on that cycle);
    - one result per request taken, in order, with the request's index; held until
      taken, its verdict (error, empty) and index unchanged;
    - `passing` only on a cycle with no result, and then the next cycle's result passes;
    - `busy` exactly while it holds a copy (a register), `busy_next` its next value."""
    request, result = checker.request, checker.result
    held, oldest = record.held, record.indices[0]
    held_next = record.follow(m, checker)
    taken = result_taken(checker)
    check(m, "checker_takes_a_copy_with_room",
          ~request.ready | (held - taken < CHECKER_HOLDS))
    check(m, "checker_result_of_a_copy_held",
          ~result.valid | ((held != 0) & (result.payload.index == oldest)))
    verdict = Cat(result.payload.error, result.payload.geom.empty, result.payload.index)
    check(m, "checker_result_held_until_taken", ~stalled(m, result)
          | (result.valid & (verdict == past(m, verdict, "verdict_before"))))
    check(m, "checker_passing_before_a_result", ~checker.passing | ~result.valid)
    check(m, "checker_passing_result_passes",
          ~past(m, checker.passing, "passing_before") | offers_a_passing_result(checker))
    check(m, "checker_busy_while_holding", checker.busy == (held != 0))
    check(m, "checker_busy_next", checker.busy_next == (held_next != 0))


class FreeCopyChecker(wiring.Component):
    """CopyChecker's ports, its outputs free under what CopyChecker guarantees
    (`checker_contract`, assumed). Every other field of the result, and `upcoming`, is
    free: it says where the copy's rows go, which no property of the pipe's completions
    reads. `record` is the copies it holds (CheckerRecord): the result's index is
    `record.indices[0]`."""

    def __init__(self, kind, profile, width_bytes):
        super().__init__(CopyChecker(kind, profile, width_bytes).signature)
        self.record = CheckerRecord()

    def elaborate(self, platform):
        m = Module()
        free_ports(m, self, Flow.Out)
        checker_contract(m, assume, self, self.record)
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
