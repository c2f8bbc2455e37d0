"""CopyChecker's guarantees of its ports, which the pipe controller's proof assumes of
its stand-in (formal/pipe_stand_ins.py, `checker_contract`), and the count flags of its
results, which the address generator's loop nest group assumes of the copies it takes
(formal/loop_nest.py, `nest_flags_hold`), proved of the real block: requests and the
results' `ready` free, the rules and geometry worked out as they are."""

from amaranth.hdl import Const, Module, Mux
from amaranth.lib import data
from amaranth.lib.wiring import Flow

from hdl.pipe import checker
from hdl.pipe.checker import LOOP_COUNTS, CopyChecker, has_loops, request_layout
from model.isa import DEFAULT_PROFILE

from .inputs import free_ports
from .loop_nest import count_flags_hold, nest_flags_hold, second_row_ends_hold
from .pipe_stand_ins import CheckerRecord, checker_contract
from .props import add_block, prop, registers
from .runner import Mutation


def copy_checker_harness(kind, width_bytes):
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", CopyChecker(kind, DEFAULT_PROFILE, width_bytes), mutation)
        free_ports(m, dut, Flow.In)
        record = CheckerRecord()
        checker_contract(m, prop, dut, record)
        state = registers(m.submodules["dut"])
        _handshake_invariant(m, state, dut, record)
        prop(m, "checker_result_flags_are_its_counts",
             ~dut.result.valid | nest_flags_hold(dut.result.payload.geom))
        _count_flags_invariant(m, state, dut)
        return m
    return build


def _handshake_invariant(m, state, dut, record):
    """What closes the induction: a copy is evaluated from its accept (`age` 1) until it
    loads into the result register (at `age` latency - 1, `load`, only while that is
    free), and its request register holds its index; `ready` is "none evaluated, or one
    loads"."""
    age, load, valid = state["age"], state["load"], dut.result.valid
    evaluated = age != 0
    prop(m, "checker_age_within_latency", age < dut.latency)
    prop(m, "checker_holds_its_result_and_the_copy_evaluated",
         record.held == valid + evaluated)
    prop(m, "checker_loads_at_the_last_stage_into_a_free_result",
         ~load | ((age == dut.latency - 1) & ~valid))
    prop(m, "checker_ready_while_none_evaluated_or_one_loads",
         state["ready"] == ((age == 0) | load))
    request = data.View(request_layout(dut.kind), state["held"])
    prop(m, "checker_request_register_holds_the_copy_evaluated", ~evaluated
         | (request.index == Mux(valid, record.indices[1], record.indices[0])))


def _count_flags_invariant(m, state, dut):
    """What closes the count flags' induction: the flags of the copy evaluated are its
    counts' from stage 2 (`_many`, `_two`, `empty`) and 3 (`_second_end`) on, as the
    request register holds it until it loads."""
    request = data.View(request_layout(dut.kind), state["held"])
    fields = request.fields
    counts = {"n_burst": fields.n_burst, "loop1_count": Const(1), "loop2_count": Const(1)}
    if has_loops(dut.kind):
        counts.update(loop1_count=request.regs.loop1_count,
                      loop2_count=request.regs.loop2_count)
    # A UB->UB copy's loop counts are 1: their `_many` and `_two` are 0, with no register.
    flags = {f"{name}_{flag}": state.get(f"{name}_{flag}", Const(0, 1))
             for name in LOOP_COUNTS for flag in ("many", "two", "second_end")}
    geom = {**counts, **flags, "len_burst": fields.len_burst, "empty": state["empty"]}
    age = state["age"]
    prop(m, "checker_count_flags_of_the_copy_evaluated", (age < 2) | count_flags_hold(geom))
    prop(m, "checker_second_row_ends_of_the_copy_evaluated",
         (age < 3) | second_row_ends_hold(geom))


def _ready_while_evaluating(handshake):
    """The checker's `request.ready` high on every cycle (the later assignment wins)."""
    def patched(self, m, accept, latency):
        load = handshake(self, m, accept, latency)
        m.d.comb += self.request.ready.eq(1)
        return load
    return patched


def _reloaded_while_waiting(handshake):
    """The checker's result register loaded again while its result waits to be taken."""
    def patched(self, m, accept, latency):
        return handshake(self, m, accept, latency) | self.result.valid
    return patched


def _loop1_steps_after_one_burst(many, two):
    """The checker's second_row_ends taking loop1 as the level the second row steps
    whenever n_burst's count is 1, even with loop1's 1 too: a copy of n_burst 1, loop1 1
    and loop2 2 is told its second row does not end loop1 or loop2."""
    steps = [many[0], ~many[0], 0]
    return [Mux(step, two[level], ~many[level]) for level, step in enumerate(steps)]


CHECKER_MUTATIONS = (
    *(Mutation(name, what, ((checker.CopyChecker, "_handshake",
                             patch(checker.CopyChecker._handshake)),))
      for name, what, patch in (
          ("ready_while_evaluating", "a request is taken while a copy is evaluated",
           _ready_while_evaluating),
          ("result_reloaded_while_waiting", "the result register loads again while its "
           "result waits to be taken", _reloaded_while_waiting))),
    Mutation("loop1_steps_after_one_burst", "the second row of a copy of one row per "
             "burst loop taken as a loop1 step, even with loop1's count 1",
             ((checker, "second_row_ends", _loop1_steps_after_one_burst),)),
)
