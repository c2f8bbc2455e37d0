"""MTE2's completion path, where its Completions are decided and released: the AXI
reader's words pass to the aligner, each command's result is recorded as its last word
passes (ReadResults), and WriteCompletions offers it as the command's last
UB word is written. The aligner and the pad stage between are left out: only `written`
comes from them, one per command, after its last word passed.

The pipe's rule: it takes every Completion on the cycle it is offered, and keeps at
most `IN_FLIGHT` copies between its address generator and their Completions. That limit
is the results queue's depth less one (in the engine, layouts.in_flight_depth, at least
16); here it is cut to 3, which the contract does not depend on, so the queue's entries
stay few for the solver."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from hdl.datapath import completions
from hdl.datapath.aligner import src_word_layout
from hdl.datapath.axi_reader import read_beat_layout
from hdl.layouts import AbortSignature, Completion

from .completions import abort_names_failing_command, completions_in_order, record_commands
from .gm_side import queue_entries
from .inputs import free, free_stream
from .props import add_block, assume, child, counter, past, prop, registers
from .runner import Mutation

IN_FLIGHT = 3


class Mte2CompletionPath(wiring.Component):
    """Mte2Datapath's completion path as it wires it: `beats` (the reader's words) to
    `src` (the aligner's) with each command's result recorded (ReadResults), into
    WriteCompletions, which `written` (the pad stage's last UB word of a command)
    releases to `done`."""

    def __init__(self, width_bytes):
        self._width = width_bytes
        super().__init__({
            "beats": In(stream.Signature(read_beat_layout(width_bytes))),
            "src": Out(stream.Signature(src_word_layout(width_bytes))),
            "written": In(1),
            "done": Out(stream.Signature(Completion)),
            "abort": Out(AbortSignature()),
        })

    def elaborate(self, platform):
        m = Module()
        results = m.submodules.read_results = completions.ReadResults(self._width,
                                                                      IN_FLIGHT + 1)
        path = m.submodules.completions = completions.WriteCompletions()
        wiring.connect(m, wiring.flipped(self.beats), results.beats)
        wiring.connect(m, results.src, wiring.flipped(self.src))
        wiring.connect(m, results.results, path.results)
        wiring.connect(m, results.abort, wiring.flipped(self.abort))
        wiring.connect(m, path.done, wiring.flipped(self.done))
        m.d.comb += path.written.eq(self.written)
        return m


def mte2_completions_harness(width_bytes):
    """Words of any commands, errors anywhere, any UB writes of commands whose last word
    passed: one Completion per command, in order, once its last UB word is written,
    BUS_ERROR with its first failing word's burst address if any failed; an abort
    request for each failing word naming its command."""
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", Mte2CompletionPath(width_bytes), mutation)
        free_stream(m, "beats", dut.beats)
        free(m, dut.src.ready, dut.written)
        m.d.comb += dut.done.ready.eq(1)
        beat = dut.beats.payload
        go = dut.beats.valid & dut.beats.ready
        record = record_commands(m, go, beat.cmd_last, beat.error, beat.err_addr)
        taken, behind = completions_in_order(m, dut.done, record)
        assume(m, "at_most_in_flight_copies",
               ~(go & beat.cmd_last) | (behind < IN_FLIGHT))
        written = counter(m, "commands_written", dut.written, len(taken))
        assume(m, "written_after_its_last_word_passed",
               ~dut.written | (written != record.answered))
        unreleased = (written - taken)[:len(taken)]
        prop(m, "written_only_commands_answered", unreleased <= behind)
        prop(m, "completion_only_for_a_written_command",
             ~dut.done.valid | (unreleased != 0) | dut.written)
        abort_names_failing_command(m, dut.abort, go, beat.error, record.answered, delay=2)
        _path_invariant(m, m.submodules["dut"], record, go, beat, taken, unreleased)
        return m
    return build


def _path_invariant(m, fragment, record, go, beat, taken, unreleased):
    """The path's registers hold what the record held a cycle ago (what a word leaves
    is registered first), its results queue the Completions answered and not taken, in
    order, and WriteCompletions counts the commands written and not released."""
    path = registers(child(fragment, "read_results"))
    prop(m, "passed_word_registered", path["passed"] == past(m, go))
    landed = Cat(beat.cmd_last, beat.error, beat.err_addr)
    prop(m, "landed_word_registered",
         ~path["passed"] | (path["landed"] == past(m, landed)))
    prop(m, "path_command_number_recorded", path["command"] == past(m, record.answered))
    failed = past(m, record.failed)
    prop(m, "path_failure_recorded",
         (path["failed"] == failed)
         & (~failed | (path["failed_addr"] == past(m, record.failed_addr))))
    entries, level = queue_entries(m, "results",
                                   child(child(fragment, "read_results"), "results"))
    prop(m, "results_hold_the_commands_landed",
         level == (past(m, record.answered) - taken)[:len(taken)])
    for age, (held, entry) in enumerate(entries):
        number = (taken + age)[:len(taken)]
        prop(m, f"results_entry_{age}_is_its_commands",
             ~held | (entry == record.expected[number % record.ring].as_value()))
    waiting = registers(child(fragment, "completions"))["waiting"]
    prop(m, "completions_count_the_commands_written", waiting == unreleased)


class _ResultOfCommandBefore(completions.ReadResults):
    """MTE2's per-command results each replaced by the one before it."""
    def elaborate(self, platform):
        m = super().elaborate(platform)
        queue = m.submodules["results"]
        before = Signal(Completion, name="result_before")
        with m.If(self.results.valid & self.results.ready):
            m.d.sync += before.eq(queue.r_data)
        m.d.comb += self.results.payload.eq(before)
        return m


RESULT_OF_COMMAND_BEFORE_MTE2 = Mutation(
    "result_of_command_before", "each command's Completion carries the command before's "
    "result", ((completions, "ReadResults", _ResultOfCommandBefore),))
