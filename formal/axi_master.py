"""The AXI4 master properties on the engine's m_axi: its read half (AxiReader, MTE2's GM
side) and its write half (AxiWriter, MTE3's), which `hdl.top` joins into m_axi member by
member. Each is proved with rows of any address and length coming in, and a slave that
does anything AXI4 allows."""

from amaranth.hdl import Array, Module, Mux

from hdl.datapath.axi_reader import AxiReader
from hdl.datapath.axi_writer import AxiWriter, _WordPlan

from .axi4 import Axi4MasterChecker
from .gm_side import address_side_invariant, queue_entries
from .inputs import free, free_rows, free_slave, free_stream
from .props import add_block, child, past, prop, registers, stream_rule


def reader_harness(width_bytes, max_outstanding):
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", AxiReader(width_bytes, max_outstanding), mutation)
        row_sid = free_rows(m, dut.rows, width_bytes)
        free_slave(m, dut.axi)
        free(m, dut.beats.ready)
        checker = Axi4MasterChecker(width_bytes, max_outstanding, one_id=True)
        checker.add(m, dut.axi)
        consumer_stalled = past(m, dut.beats.valid & ~dut.beats.ready)
        prop(m, "rready_low_only_when_beats_stall", dut.axi.rready | consumer_stalled)
        stream_rule(m, prop, "beats", dut.beats)
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
        dut = add_block(m, "dut", AxiWriter(width_bytes, max_outstanding), mutation)
        row_sid = free_rows(m, dut.rows, width_bytes)
        free_stream(m, "beats", dut.beats)
        free_slave(m, dut.axi)
        free(m, dut.done.ready)
        checker = Axi4MasterChecker(width_bytes, max_outstanding, one_id=True)
        checker.add(m, dut.axi)
        consumer_stalled = past(m, dut.done.valid & ~dut.done.ready)
        prop(m, "bready_low_only_when_done_stalls", dut.axi.bready | consumer_stalled)
        stream_rule(m, prop, "done", dut.done)
        _writer_invariant(m, m.submodules["dut"], checker, width_bytes, max_outstanding,
                          row_sid)
        return m
    return build


def _writer_invariant(m, fragment, checker, width_bytes, max_outstanding, row_sid):
    """What closes the writer's induction: the splitter's and the issuer's invariants;
    every burst taken is queued for AW until its AW goes and for W until its last beat
    goes, with one length in both queues and the checker's rings; the W burst in
    progress counted alike by the writer and the checker; the B side's queue."""
    addresses, queued, unfinished = address_side_invariant(
        m, fragment, checker, checker.writes_outstanding, width_bytes, max_outstanding,
        row_sid)
    entries, planned = queue_entries(m, "w_plans", child(fragment, "plans"))
    plans = [(held, _WordPlan(entry)) for held, entry in entries]
    queue_entries(m, "b_done", child(fragment, "done_fifo"))
    writes = checker.writes
    bits = len(writes.issued)
    # Bursts are numbered as taken: the AW FIFO holds numbers issued .. taken - 1, the
    # plans written .. taken - 1. A plan is a burst the issuer counts unfinished, since
    # its B response waits for its last W beat.
    prop(m, "aw_and_w_queues_end_at_one_burst",
         (writes.issued + queued)[:bits] == (writes.written + planned)[:bits])
    prop(m, "w_plans_only_for_unfinished_bursts", planned <= unfinished)
    fifo_lengths = Array(burst.len for _, burst in addresses)
    for age, (held, plan) in enumerate(plans):
        number = (writes.written + age)[:bits]
        fifo_age = (number - writes.issued)[:bits]
        length = Mux(fifo_age < queued, fifo_lengths[fifo_age], writes.aw_lengths[number])
        prop(m, f"w_plan_{age}_is_its_bursts_length",
             ~held | ((plan.axlen == length) & (plan.single == (plan.axlen == 0))))
    for age, (held, burst) in enumerate(addresses):
        number = (writes.issued + age)[:bits]
        planned_still = (number - writes.written)[:bits] < planned
        prop(m, f"address_fifo_entry_{age}_is_its_w_bursts_length",
             ~held | planned_still | (burst.len == writes.w_lengths[number]))
    _w_burst_in_progress(m, registers(fragment), plans[0], writes.beat)


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
