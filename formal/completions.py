"""Completions in order: a harness's record of the commands a completion path answers,
each numbered as its last item (an R beat, a B response) goes, and the contract that
the path's i-th Completion is command i's, once.

A command's Completion is BUS_ERROR if any item of the command failed, with the address
of its first failing item, else NONE with address 0 (layouts.Completion)."""

from dataclasses import dataclass

from amaranth.hdl import Array, Mux, Signal, Value

from hdl.datapath.legalizer import IssuedBurst
from hdl.layouts import COPY_SEQ_BITS, Completion
from hdl.lib.axi import resp_is_error
from hdl.lib.queue import wrap_incr
from model.isa import GM_ADDR_BITS, ErrorCode

from .props import (child, counter, distance, memory_rows, past, prop, registers,
                    wrap_add)


def _result(failed, failed_addr, bad, addr):
    """The Completion of a command whose earlier items failed (`failed`, the first at
    `failed_addr`) and whose item now (failing if `bad`, at `addr`) is its last."""
    result = Signal(Completion, name="result")
    error = Mux(failed | bad, ErrorCode.BUS_ERROR, ErrorCode.NONE)
    address = Mux(failed, failed_addr, Mux(bad, addr, 0))
    return result, [result.error.eq(error), result.address.eq(address)]


@dataclass(frozen=True)
class CommandRecord:
    """What the harness knows of the commands: `failed` and `failed_addr` of the command
    whose items are going; `answered`, the commands whose last item went (modulo
    2^COPY_SEQ_BITS, as an abort request numbers them); `now`, the Completion the item
    on offer would end its command with; `expected`, the Completions of the commands
    answered, by number modulo `ring`."""
    failed: Value
    failed_addr: Value
    answered: Value
    now: Value
    expected: Array
    ring: int


def record_commands(m, go, last, bad, addr, ring=4):
    """Numbers the commands as their last item goes (`go` with `last`); `bad` and
    `addr` are the item's failure and the address it reports."""
    failed = Signal(name="rec_failed")
    failed_addr = Signal(GM_ADDR_BITS, name="rec_failed_addr")
    answered = counter(m, "rec_answered", go & last, COPY_SEQ_BITS)
    now, drive = _result(failed, failed_addr, bad, addr)
    m.d.comb += drive
    expected = Array(Signal(Completion, name=f"rec_expected_{i}") for i in range(ring))
    with m.If(go):
        with m.If(last):
            m.d.sync += [failed.eq(0), expected[answered % ring].eq(now)]
        with m.Elif(bad & ~failed):
            m.d.sync += [failed.eq(1), failed_addr.eq(addr)]
    return CommandRecord(failed, failed_addr, answered, now, expected, ring)


def completions_in_order(m, done, record, ending_now=0):
    """Asserts that `done` (a stream of Completion) offers command i's Completion as
    its i-th, and none for a command not answered, except with `ending_now` (the item
    that ends a command is on offer) the Completion it ends its command with. Returns
    the count of Completions taken and the commands answered and not yet taken."""
    taken = counter(m, "completions_taken", done.valid & done.ready, COPY_SEQ_BITS)
    behind = (record.answered - taken)[:COPY_SEQ_BITS]
    prop(m, "completions_within_ring", behind <= record.ring - 1)
    prop(m, "completion_only_for_an_answered_command",
         ~done.valid | (behind != 0) | ending_now)
    expected = Mux(behind != 0, record.expected[taken % record.ring].as_value(),
                   record.now.as_value())
    prop(m, "completion_is_its_commands_in_order",
         ~done.valid | (done.payload.as_value() == expected))
    return taken, behind


def abort_names_failing_command(m, abort, go, bad, answered, delay):
    """Asserts that `abort` requests for each failing item and only then, `delay`
    cycles after it goes, naming its command (`answered`, the commands before it)."""
    failing, number = go & bad, answered
    for _ in range(delay):
        failing, number = past(m, failing, "failing_before"), past(m, number, "copy_before")
    prop(m, "abort_for_each_failing_item", abort.valid == failing)
    prop(m, "abort_names_the_failing_command", ~abort.valid | (abort.copy == number))


def writer_completions(m, dut, fragment, checker, done_fifo):
    """The AxiWriter's completions (`dut`, elaborated as `fragment`), with the checker's
    B responses numbered as its bursts: each burst's `last` (of its command) and address
    recorded as the issuer takes it from the splitter, the i-th B response the i-th
    burst's (one ID, so in order). `done_fifo` is the B side's queue (entries, level)."""
    writes = checker.writes
    axi = dut.axi
    go = axi.bvalid & axi.bready
    burst = issued_bursts(m, child(fragment, "issuer"), go, writes.answered)
    bad = resp_is_error(axi.bresp)
    record = record_commands(m, go, burst.last, bad, burst.addr)
    taken_done, behind = completions_in_order(m, dut.done, record,
                                              ending_now=axi.bvalid & burst.last)
    abort_names_failing_command(m, dut.abort, go, bad, record.answered, delay=1)
    _writer_command_state(m, registers(fragment), record, done_fifo, taken_done, behind)


def issued_bursts(m, issuer_fragment, answer, answered):
    """The bursts the issuer (`issuer_fragment`) takes from the splitter, each recorded
    (its address and `last`) as it is taken, in a ring of the issuer's queue's size
    written and read round as that queue is; `answer`: the bus answers the oldest (its
    last R beat or its B response), `answered` the bursts so answered. Asserts the
    issuer's record is the ring's and returns the oldest burst not answered."""
    issuer = issuer_fragment.origins[0]
    bursts = issuer.bursts
    took = bursts.valid & bursts.ready
    taken = counter(m, "bursts_taken", took, len(answered))
    slots = Array(Signal(IssuedBurst, name=f"burst_{i}") for i in range(issuer._depth))
    write_slot = Signal(range(issuer._depth), name="burst_write_slot")
    answer_slot = Signal(range(issuer._depth), name="burst_answer_slot")
    with m.If(took):
        m.d.sync += [slots[write_slot].addr.eq(bursts.payload.addr),
                     slots[write_slot].last.eq(bursts.payload.last),
                     write_slot.eq(wrap_incr(write_slot, issuer._depth))]
    with m.If(answer):
        m.d.sync += answer_slot.eq(wrap_incr(answer_slot, issuer._depth))
    _issued_bursts_recorded(m, issuer_fragment, taken, answered,
                            (slots, write_slot, answer_slot))
    return slots[answer_slot]


def _issued_bursts_recorded(m, fragment, taken, answered, ring):
    """The induction invariant of the issuer's record of unfinished bursts: the oldest
    (burst number `answered`) in its response register, and each in the queue's slot
    the harness's `ring` (its slots, write and answer pointers) recorded it in as it was
    taken, as the issuer's pointers are the harness's."""
    issuer = registers(fragment)
    depth = fragment.origins[0]._depth
    unfinished, after_ptr = issuer["unfinished"], issuer["after_ptr"]
    slots, write_slot, answer_slot = ring
    prop(m, "bursts_taken_are_answered_or_unfinished",
         taken == (answered + unfinished)[:len(answered)])
    prop(m, "burst_slots_apart_by_unfinished",
         write_slot == wrap_add(answer_slot, unfinished, depth))
    prop(m, "issuer_queue_pointers_are_the_slots",
         (issuer["taken_ptr"] == write_slot)
         & (after_ptr == wrap_incr(answer_slot, depth)))
    same = lambda held, recorded: (held.addr == recorded.addr) & (held.last == recorded.last)
    prop(m, "issuer_oldest_burst_recorded",
         (unfinished == 0) | same(fragment.origins[0].resp.payload, slots[answer_slot]))
    rows = memory_rows(child(fragment, "queue"))
    for slot, row in enumerate(rows):
        prop(m, f"issuer_queue_slot_{slot}_recorded",
             (distance(slot, answer_slot, depth) >= unfinished)
             | same(IssuedBurst(row), slots[slot]))


def _writer_command_state(m, writer, record, done_fifo, taken, behind):
    """The writer's registers of the command being answered are the record's, and its
    B side's queue holds the Completions answered and not yet taken, in order."""
    prop(m, "writer_command_number_recorded", writer["command"] == record.answered)
    prop(m, "writer_failure_recorded",
         (writer["failed"] == record.failed)
         & (~record.failed | (writer["failed_addr"] == record.failed_addr)))
    entries, level = done_fifo
    prop(m, "done_fifo_holds_the_commands_behind", level == behind)
    for age, (held, entry) in enumerate(entries):
        number = (taken + age)[:COPY_SEQ_BITS]
        prop(m, f"done_fifo_entry_{age}_is_its_commands",
             ~held | (entry == record.expected[number % record.ring].as_value()))
