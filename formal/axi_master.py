"""The AXI4 master properties on the engine's m_axi: its read half (AxiReader, MTE2's GM
side) and its write half (AxiWriter, MTE3's), which `hdl.top` joins into m_axi member by
member. Each is proved with rows of any address and length coming in, and a slave that
does anything AXI4 allows."""

import inspect

from amaranth.hdl import Array, Module, Mux, Signal

from hdl.datapath import axi_writer, legalizer
from hdl.datapath.axi_reader import AxiReader
from hdl.datapath.axi_writer import AxiWriter, _WordPlan
from hdl.layouts import Completion
from hdl.lib.queue import pass_or_queue

from .axi4 import Axi4MasterChecker
from .completions import writer_completions
from .gm_side import address_side_invariant, queue_entries, queue_slots
from .inputs import free, free_rows, free_slave, free_stream
from .props import (add_block, child, past, payload_on_lane, prop, registers,
                    stream_rule)
from .runner import Mutation


def _gm_side(m, block, mutation, out_name, ready_name, ready_rule):
    """A GM side (`block`, AxiReader or AxiWriter) with rows and a slave free, its output
    stream `out_name` taken at will and held until taken (its data on the checker's
    free-but-fixed lane, so on every lane), and the AXI4 master checker;
    property `ready_rule`: its response channel's ready (`ready_name`) is low only while
    that stream stalls. Returns the block, the checker and the sid of the last row."""
    dut = add_block(m, "dut", block, mutation)
    row_sid = free_rows(m, dut.rows, block._width)
    free_slave(m, dut.axi)
    out = getattr(dut, out_name)
    free(m, out.ready)
    checker = Axi4MasterChecker(block._width, block._max_outstanding, one_id=True)
    checker.add(m, dut.axi)
    consumer_stalled = past(m, out.valid & ~out.ready)
    prop(m, ready_rule, getattr(dut.axi, ready_name) | consumer_stalled)
    stream_rule(m, prop, out_name, out, payload_on_lane(out.payload, checker.lane))
    return dut, checker, row_sid


def reader_harness(width_bytes, max_outstanding):
    def build(mutation):
        m = Module()
        dut, checker, row_sid = _gm_side(
            m, AxiReader(width_bytes, max_outstanding), mutation, "beats", "rready",
            "rready_low_only_when_beats_stall")
        _reader_invariant(m, m.submodules["dut"], checker, width_bytes, max_outstanding,
                          row_sid)
        return m
    return build


def _reader_invariant(m, fragment, checker, width_bytes, max_outstanding, row_sid):
    """What closes the reader's induction: the splitter's and the issuer's invariants,
    and the R words' queue with the copy of its `r_rdy` that picks `beats`' payload."""
    address_side_invariant(m, fragment, checker, checker.reads_outstanding, width_bytes,
                           max_outstanding, row_sid)
    queue_entries(m, "r_words", child(fragment, "words"))
    words = registers(child(fragment, "words"))
    select = registers(child(fragment, "waiting_select"))
    # The copy loads r_rdy_next on every edge, as r_rdy does.
    prop(m, "r_words_select_copies_r_rdy", select["q"] == words["r_rdy"])


def writer_harness(width_bytes, max_outstanding):
    def build(mutation):
        m = Module()
        _writer_with_invariant(m, mutation, width_bytes, max_outstanding)
        return m
    return build


def writer_completions_harness(width_bytes, max_outstanding):
    """The writer's AXI4 master properties and its completions: one per command, in
    order, after the B response of its last burst, BUS_ERROR with its first failing
    burst's address if any failed; an abort request for each failing B response naming
    its command."""
    def build(mutation):
        m = Module()
        dut, fragment, checker, done_fifo = _writer_with_invariant(
            m, mutation, width_bytes, max_outstanding)
        writer_completions(m, dut, fragment, checker, done_fifo)
        return m
    return build


def _writer_with_invariant(m, mutation, width_bytes, max_outstanding):
    """The writer, its free inputs, the AXI4 master checker and the invariant that
    closes its induction. Returns the writer, its fragment, the checker and the B side's
    queue's entries."""
    dut, checker, row_sid = _gm_side(
        m, AxiWriter(width_bytes, max_outstanding), mutation, "done", "bready",
        "bready_low_only_when_done_stalls")
    free_stream(m, "beats", dut.beats, payload_on_lane(dut.beats.payload, checker.lane))
    fragment = m.submodules["dut"]
    done_fifo = _writer_invariant(m, fragment, checker, width_bytes, max_outstanding,
                                  row_sid)
    return dut, fragment, checker, done_fifo


def _writer_invariant(m, fragment, checker, width_bytes, max_outstanding, row_sid):
    """What closes the writer's induction: the splitter's and the issuer's invariants;
    every burst taken is queued for AW until its AW goes and for W until its last beat
    goes, with one length in both queues and the checker's ring; the W burst in
    progress counted alike by the writer and the checker; the B side's queue, whose
    entries and level it returns."""
    addresses, queued, unfinished = address_side_invariant(
        m, fragment, checker, checker.writes_outstanding, width_bytes, max_outstanding,
        row_sid)
    entries, planned = queue_entries(m, "w_plans", child(fragment, "plans"))
    head_held, head = entries[0]
    done_fifo = queue_entries(m, "b_done", child(fragment, "done_fifo"))
    writes = checker.writes
    bits = len(writes.issued)
    # Bursts are numbered as taken: the AW FIFO holds numbers issued .. taken - 1, the
    # plans written .. taken - 1. A plan is a burst the issuer counts unfinished, since
    # its B response waits for its last W beat.
    prop(m, "aw_and_w_queues_end_at_one_burst",
         (writes.issued + queued)[:bits] == (writes.written + planned)[:bits])
    prop(m, "w_plans_only_for_unfinished_bursts", planned <= unfinished)
    fifo_lengths = Array(burst.len for _, burst in addresses)
    slots = queue_slots(child(fragment, "plans"))
    for where, (held, plan, age) in [("head", (head_held, head, 0)),
                                     *((f"slot_{i}", slot) for i, slot in enumerate(slots))]:
        number = (writes.written + age)[:bits]
        fifo_age = (number - writes.issued)[:bits]
        length = Mux(fifo_age < queued, fifo_lengths[fifo_age], writes.length(number))
        plan = _WordPlan(plan)
        prop(m, f"w_plan_{where}_is_its_bursts_length",
             ~held | ((plan.axlen == length) & (plan.single == (plan.axlen == 0))))
    for age, (held, burst) in enumerate(addresses):
        number = (writes.issued + age)[:bits]
        planned_still = (number - writes.written)[:bits] < planned
        prop(m, f"address_fifo_entry_{age}_is_its_w_bursts_length",
             ~held | planned_still | (burst.len == writes.length(number)))
    _w_burst_in_progress(m, registers(fragment), (head_held, _WordPlan(head)), writes.beat)
    return done_fifo


def _w_burst_in_progress(m, writer, head, beat):
    """The writer's word count of the W burst in progress against the checker's: `beat`
    words of the plan at the head of the queue have gone."""
    held, plan = head
    first, to_go = writer["first"], writer["to_go"]
    prop(m, "w_first_word_when_no_beat_sent", first == (beat == 0))
    # A plan leaves its queue with its burst's last word.
    prop(m, "w_burst_in_progress_planned", first | held)
    prop(m, "w_words_to_go_are_the_plans_rest",
         first | ((beat <= plan.axlen) & (to_go + beat == plan.axlen)
                  & (writer["last_next"] == (to_go == 0))))


def _size_one_too_small(connect_address):
    """The address channel's AxSIZE one less than the issuer's log2(W), all else as it
    is: log2(W) + 1 would not fit AxSIZE's 3 bits at W = 128."""
    def patched(m, channel, axi, prefix):
        connect_address(m, channel, axi, prefix)
        m.d.comb += getattr(axi, f"{prefix}size").eq(channel.size - 1)
    return patched


AXSIZE_WRONG = Mutation("axsize_off_by_one", "the issuer's AxSIZE is log2(W) - 1",
                        ((legalizer, "connect_address",
                          _size_one_too_small(legalizer.connect_address)),))


def issue_rows_then(change):
    """`legalizer.issue_rows`, then `change(m, splitter, issuer)` on the blocks it made."""
    issue_rows = legalizer.issue_rows

    def patched(m, *args, **kwargs):
        splitter, issuer = issue_rows(m, *args, **kwargs)
        change(m, splitter, issuer)
        return splitter, issuer
    return patched


def _one_more_outstanding(*args, **kwargs):
    bound = inspect.signature(legalizer.issue_rows).bind(*args, **kwargs)
    bound.arguments["max_outstanding"] += 1
    return legalizer.issue_rows(*bound.args, **bound.kwargs)


def one_burst_too_many_in(side):
    """The mutation of `side` (axi_reader or axi_writer) whose issuer's limit is one more."""
    return Mutation("one_burst_too_many", "the issuer lets max_outstanding + 1 out",
                    ((side, "issue_rows", _one_more_outstanding),))


def _no_id_fence(m, splitter, issuer):
    """The issuer told no burst starts a new sid, so it never waits for the bursts of the
    sid before to finish."""
    m.d.comb += issuer.bursts.payload.new_sid.eq(0)


def no_id_fence_in(side):
    """The mutation of `side` (axi_reader or axi_writer) whose issuer never fences."""
    return Mutation("no_id_fence", "the issuer lets a burst of a new ID out while bursts "
                    "of the ID before are unfinished",
                    ((side, "issue_rows", issue_rows_then(_no_id_fence)),))


def _result_of_command_before(pass_or_queue):
    """pass_or_queue, with a Completion replaced by the one offered before it: each
    command reported with the result of the command before."""
    def patched(m, queue, valid, word, out, **kwargs):
        if isinstance(word, Completion):
            before = Signal(Completion, name="result_before")
            with m.If(valid):
                m.d.sync += before.eq(word)
            word = before
        return pass_or_queue(m, queue, valid, word, out, **kwargs)
    return patched


RESULT_OF_COMMAND_BEFORE_MTE3 = Mutation(
    "result_of_command_before", "each command's Completion carries the command before's "
    "result", ((axi_writer, "pass_or_queue", _result_of_command_before(pass_or_queue)),))


def _wlast_on_first(condition, if_true, if_false):
    """AxiWriter's `is_last` mux with WLAST on every burst's first word."""
    return Mux(condition, 1, if_false)


WLAST_ON_FIRST = Mutation("wlast_on_first_beat", "WLAST on each burst's first word too",
                          ((axi_writer, "Mux", _wlast_on_first),))
