"""CopyChecker's guarantees of its ports, which the pipe controller's proof assumes of
its stand-in (formal/pipe_stand_ins.py, `checker_contract`), and the count flags of its
results, which the address generator's loop nest group assumes of the copies it takes
(formal/loop_nest.py, `nest_flags_hold`), proved of the real block: requests and the
results' `ready` free, the rules and geometry worked out as they are."""

from amaranth.hdl import Array, C, Const, Module, Mux
from amaranth.lib import data
from amaranth.lib.wiring import Flow

from hdl.pipe import checker
from hdl.pipe.checker import (COUNT_FLAGS, LOOP_COUNTS, CopyChecker, has_loops, output_layout,
                              request_layout)
from model.isa import DEFAULT_PROFILE, ErrorCode

from .inputs import free_ports
from .loop_nest import count_flags_hold, nest_flags_hold, second_row_ends_hold
from .pipe_stand_ins import CheckerRecord, checker_contract
from .props import add_block, child, prop, registers
from .runner import Mutation


def copy_checker_harness(kind, width_bytes):
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", CopyChecker(kind, DEFAULT_PROFILE, width_bytes), mutation)
        free_ports(m, dut, Flow.In)
        record = CheckerRecord(dut.holds)
        checker_contract(m, prop, dut, record)
        prop(m, "checker_result_flags_are_its_counts",
             ~dut.result.valid | nest_flags_hold(dut.result.payload.geom))
        top = registers(m.submodules["dut"])
        stages = registers(child(m.submodules["dut"], "evaluation"))
        queued = _output_invariant(m, top, dut, record)
        _stages_invariant(m, stages, dut, record, queued)
        return m
    return build


def _output_invariant(m, top, dut, record):
    """What closes the induction at the output: the output register holds the oldest
    copy and the skid register, only while the output is full, the next, each with its
    verdict and count flags; the count of copies held is the record's. Returns how many
    the two hold."""
    valid, skid_valid = top["result_valid"], top["result_skid_valid"]
    held = [(valid, data.View(output_layout(dut.kind), top["result"])),
            (skid_valid, data.View(output_layout(dut.kind), top["result_skid"]))]
    prop(m, "checker_count_is_the_copies_held", top["held"] == record.held)
    prop(m, "checker_skid_only_behind_a_result", ~skid_valid | valid)
    for (full, entry), (name, oldest) in zip(held, (("output", 0), ("skid", 1))):
        result = entry.result
        passes = (result.error == ErrorCode.NONE) & ~result.geom.empty
        prop(m, f"checker_{name}_holds_its_copy_with_its_verdict_and_flags", ~full
             | ((result.index == record.indices[oldest]) & (entry.passes == passes)
                & nest_flags_hold(result.geom)))
    return valid + skid_valid


def _stages_invariant(m, stages, dut, record, queued):
    """What closes the induction in the evaluation: the copies held are those in the
    output and skid registers and one per valid stage, each stage's the next older than
    the stage before it; a stage's count flags (from stage 2; whether the second row ends
    each level from 3) are its copy's counts'."""
    last = dut.latency - 1
    valid = [stages[f"valid_{k}"] for k in range(1, last + 1)]
    prop(m, "checker_holds_its_queue_and_stages", record.held == queued + sum(valid))
    for k in range(1, last + 1):
        request = data.View(request_layout(dut.kind), stages[f"held_{k}"])
        # Copies in later stages are older: this one's place in the record is behind them.
        place = queued + sum(valid[k:])
        prop(m, f"checker_stage_{k}_holds_its_copy", ~valid[k - 1]
             | (request.index == Array(record.indices)[place]))
        if k < 2:
            continue
        geom = _stage_flags(stages, dut.kind, request, k)
        holds = count_flags_hold(geom)
        if k >= 3:
            holds &= second_row_ends_hold(geom)
        prop(m, f"checker_stage_{k}_count_flags", ~valid[k - 1] | holds)


def _stage_flags(stages, kind, request, stage):
    """The counts of the copy at `stage` and the flags that stage holds of them."""
    fields = request.fields
    counts = {"n_burst": fields.n_burst, "loop1_count": Const(1), "loop2_count": Const(1)}
    if has_loops(kind):
        counts.update(loop1_count=request.regs.loop1_count,
                      loop2_count=request.regs.loop2_count)

    def at(name, first):
        return stages[name if stage == first else f"{name}_s{stage}"]

    geom = {**counts, "len_burst": fields.len_burst, "empty": at("empty", 2)}
    for name in LOOP_COUNTS:
        registered = name == "n_burst" or has_loops(kind)
        for flag, test in COUNT_FLAGS.items():
            # A UB->UB copy's loop counts are 1: their flags are constants, no register.
            geom[f"{name}_{flag}"] = (at(f"{name}_{flag}", 2) if registered
                                      else Const(test(1), 1))
        if stage >= 3:
            geom[f"{name}_second_end"] = at(f"{name}_second_end", 3)
    return geom


def _ready_while_full(skid_stage):
    """The checker's output read as always ready: the evaluation advances, takes a
    request and offers a result while the output and skid registers are both full."""
    def patched(*args, **kwargs):
        valid, register, _ = skid_stage(*args, **kwargs)
        return valid, register, C(1, 1)
    return patched


def _valid_announced_without_the_skid(skid_stage):
    """The checker's `result_valid_next` as if its skid register were always empty: a
    result waiting there is not announced."""
    def patched(m, valid_in, value, take, name, **kwargs):
        announced = kwargs.pop("valid_next")
        valid, register, ready = skid_stage(m, valid_in, value, take, name, **kwargs)
        m.d.comb += announced.eq(Mux(~valid | take, valid_in, valid))
        return valid, register, ready
    return patched


def _carried_a_stage_short(carry):
    """A value worked out for one stage of the checker, read at a later stage from the
    register a stage before it: another copy's value."""
    def patched(self, chain, stage, name):
        carry(self, chain, stage, name)
        return chain[max(min(chain), stage - 1)]
    return patched


def _loop1_steps_after_one_burst(many, two):
    """The checker's second_row_ends taking loop1 as the level the second row steps
    whenever n_burst's count is 1, even with loop1's 1 too: a copy of n_burst 1, loop1 1
    and loop2 2 is told its second row does not end loop1 or loop2."""
    steps = [many[0], ~many[0], 0]
    return [Mux(step, two[level], ~many[level]) for level, step in enumerate(steps)]


CHECKER_MUTATIONS = (
    Mutation("ready_while_full", "a request taken and a result offered with the output "
             "and skid registers full", ((checker, "skid_stage",
                                          _ready_while_full(checker.skid_stage)),)),
    Mutation("valid_announced_without_the_skid", "a result waiting in the skid register "
             "not announced by `result_valid_next`",
             ((checker, "skid_stage", _valid_announced_without_the_skid(checker.skid_stage)),)),
    Mutation("carried_a_stage_short", "a value worked out for one stage read at a later "
             "stage from the register a stage before: another copy's",
             ((checker._Stages, "_carry", _carried_a_stage_short(checker._Stages._carry)),)),
    Mutation("loop1_steps_after_one_burst", "the second row of a copy of one row per "
             "burst loop taken as a loop1 step, even with loop1's count 1",
             ((checker, "second_row_ends", _loop1_steps_after_one_burst),)),
)
