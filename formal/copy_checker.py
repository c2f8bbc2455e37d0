"""CopyChecker's guarantees of its ports, which the pipe controller's proof assumes of
its stand-in (formal/pipe_stand_ins.py, `checker_contract`), proved of the real block:
requests and the results' `ready` free, the rules and geometry worked out as they are."""

from amaranth.hdl import Module, Mux
from amaranth.lib import data
from amaranth.lib.wiring import Flow

from hdl.pipe.checker import CopyChecker, request_layout
from model.isa import DEFAULT_PROFILE

from .inputs import free_ports
from .pipe_stand_ins import CheckerRecord, checker_contract
from .props import add_block, prop, registers


def copy_checker_harness(kind, width_bytes):
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", CopyChecker(kind, DEFAULT_PROFILE, width_bytes), mutation)
        free_ports(m, dut, Flow.In)
        record = CheckerRecord()
        checker_contract(m, prop, dut, record)
        _handshake_invariant(m, registers(m.submodules["dut"]), dut, record)
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
