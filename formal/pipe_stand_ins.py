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
    many, and `indices`, their commands' indices, oldest first (valid below `held`);
    `holds` is the most the checker holds (its `holds`)."""

    def __init__(self, holds):
        self.holds = holds
        self.held = Signal(range(holds + 1), name="checker_held")
        self.indices = [Signal(CMD_INDEX_BITS, name=f"checker_index_{k}")
                        for k in range(holds)]

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

    - a request is taken on any cycle `ready` is high, while it holds fewer than `holds`
      copies (or one leaves on that cycle);
    - one result per request taken, in order, with the request's index; held until
      taken, its verdict (error, empty, `result_passes`) and index unchanged;
    - `result_passes` with a result says whether it passes;
    - `result_valid_next` and `result_passes_next` are the values `result.valid` and
      (with a result) `result_passes` take on the next edge;
    - `busy` exactly while it holds a copy (a register), `busy_next` its next value."""
    request, result = checker.request, checker.result
    held, oldest = record.held, record.indices[0]
    held_next = record.follow(m, checker)
    taken = result_taken(checker)
    check(m, "checker_takes_a_copy_with_room",
          ~request.ready | (held - taken < record.holds))
    check(m, "checker_result_of_a_copy_held",
          ~result.valid | ((held != 0) & (result.payload.index == oldest)))
    verdict = Cat(result.payload.error, result.payload.geom.empty, result.payload.index,
                  checker.result_passes)
    check(m, "checker_result_held_until_taken", ~stalled(m, result)
          | (result.valid & (verdict == past(m, verdict, "verdict_before"))))
    check(m, "checker_result_passes_is_its_verdict",
          ~result.valid | (checker.result_passes == _passes(result.payload)))
    valid_next = past(m, checker.result_valid_next, "result_valid_announced")
    passes_next = past(m, checker.result_passes_next, "result_passes_announced")
    check(m, "checker_result_valid_as_announced", result.valid == valid_next)
    check(m, "checker_result_passes_as_announced",
          ~result.valid | (checker.result_passes == passes_next))
    check(m, "checker_busy_while_holding", checker.busy == (held != 0))
    check(m, "checker_busy_next", checker.busy_next == (held_next != 0))


class FreeCopyChecker(wiring.Component):
    """CopyChecker's ports, its outputs free under what CopyChecker guarantees
    (`checker_contract`, assumed). Every other field of the result is free: it says
    where the copy's rows go, which no property of the pipe's completions reads.
    `record` is the copies it holds (CheckerRecord): the result's index is
    `record.indices[0]`."""

    def __init__(self, kind, profile, width_bytes):
        real = CopyChecker(kind, profile, width_bytes)
        super().__init__(real.signature)
        self.record = CheckerRecord(real.holds)

    def elaborate(self, platform):
        m = Module()
        free_ports(m, self, Flow.Out)
        checker_contract(m, assume, self, self.record)
        return m


def copy_ready_as_announced(m, generator):
    """What AddressGenerator guarantees of `copy.ready` (its docstring): it is the value
    `copy_ready_next` announced on the cycle before, and high on the first cycle and
    after a reset."""
    # A register whose reset value is 1 and which loads 0: high exactly then.
    fresh = Signal(init=1, name="addrgen_fresh")
    m.d.sync += fresh.eq(0)
    announced = past(m, generator.copy_ready_next, "copy_ready_announced")
    return generator.copy.ready == (fresh | announced)


class FreeAddressGenerator(wiring.Component):
    """AddressGenerator's ports, its outputs (`copy.ready`, `rows`, `busy`) free but for
    `copy.ready` being announced a cycle ahead (`copy_ready_as_announced`, assumed): when
    it takes a copy and which rows it makes decide no property of the pipe's completions,
    whose Completions the harness gives within the copies started."""

    def __init__(self, kind, width_bytes):
        super().__init__(AddressGenerator(kind, width_bytes).signature)

    def elaborate(self, platform):
        m = Module()
        free_ports(m, self, Flow.Out)
        assume(m, "addrgen_copy_ready_as_announced", copy_ready_as_announced(m, self))
        return m
