"""The pipe controller's side of in-order completion (hdl/pipe/in_flight.py, InFlight):
copies started with any command indices, at most the limit in flight, and their
Completions in order, any cycle after their start, with any error code; commands that
end in the pipe, and rule errors, as the pipe gives them (a copy ends there only with
none in flight).

The harness numbers the copies as they start and as their Completions come: the i-th
Completion is the i-th copy's. It follows one copy, of a free-but-fixed number, whose
index is a free-but-fixed value (as ZipCPU's proofs follow one byte): wherever the block
holds that copy's index, it holds the value. Its contract: the index recorded with a bus
error is its copy's; the completed count goes up by exactly one per Completion and per
command that ends in the pipe; `drained` and `room` are exactly the compares of the
count in flight with the start, a cycle before (so a Completion shows in them a cycle
after it counts); the queue never refuses an index."""

from dataclasses import dataclass

from amaranth.asserts import AnyConst
from amaranth.hdl import Cat, Module, Mux, Signal, Value

from hdl.layouts import CMD_INDEX_BITS, COPY_SEQ_BITS, Completion
from hdl.lib.queue import BypassQueue
from hdl.pipe import in_flight
from hdl.pipe.in_flight import COMPLETED_BITS, InFlight
from model.isa import GM_ADDR_BITS, ErrorCode

from .gm_side import queue_entries, queue_slots
from .inputs import free
from .props import add_block, assume, child, counter, past, prop, registers
from .runner import Mutation


@dataclass(frozen=True)
class Tracked:
    """The copy the harness follows: its number and its command's index."""
    number: Value
    index: Value

    def held(self, number, index):
        """Whether an index said to be copy `number`'s is right for the tracked copy."""
        return (number[:COPY_SEQ_BITS] != self.number) | (index == self.index)


def in_flight_harness(limit):
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", InFlight(limit), mutation)
        done = dut.done
        free(m, dut.start, dut.start_index, done.valid, Value.cast(done.payload),
             dut.finished, dut.copy_end, dut.rule_error, dut.rule_code, dut.rule_index,
             dut.clear)
        started = counter(m, "copies_started", dut.start, COPY_SEQ_BITS)
        completed = counter(m, "copies_completed", done.valid, COPY_SEQ_BITS)
        in_flight = (started - completed)[:COPY_SEQ_BITS]
        assume(m, "start_below_the_limit", ~dut.start | (in_flight < limit))
        assume(m, "completion_after_its_start", ~done.valid | (in_flight != 0))
        assume(m, "copy_ends_with_none_in_flight", ~dut.copy_end | (in_flight == 0))
        assume(m, "rule_error_is_a_copys_end",
               ~dut.rule_error | (dut.copy_end & (dut.rule_code != ErrorCode.NONE)))
        number = Signal(COPY_SEQ_BITS, name="tracked_copy")
        index = Signal(CMD_INDEX_BITS, name="tracked_index")
        m.d.comb += [number.eq(AnyConst(COPY_SEQ_BITS)), index.eq(AnyConst(CMD_INDEX_BITS))]
        tracked = Tracked(number, index)
        assume(m, "tracked_copy_starts_with_its_index",
               ~dut.start | tracked.held(started, dut.start_index))
        count_invariant(m, m.submodules["dut"], dut, limit, started, completed)
        landed = _landed(m, dut, completed == number)
        _queue_holds_the_indices(m, dut, started, completed, tracked, landed)
        _completed_count(m, dut, in_flight)
        _error_record(m, dut, tracked, landed)
        return m
    return build


def count_invariant(m, fragment, dut, limit, started, completed):
    """The count in flight of InFlight `dut` (elaborated as `fragment`) and its compares
    are the harness's: the copies `started` less those `completed`."""
    in_flight = (started - completed)[:COPY_SEQ_BITS]
    state = registers(fragment)
    prop(m, "count_is_the_copies_in_flight",
         (state["count"] == in_flight) & (in_flight <= limit))
    # The next values leave this cycle's Completion out: it shows in them a cycle later.
    started_now = (in_flight + dut.start)[:COPY_SEQ_BITS]
    prop(m, "drained_next_exactly_none_in_flight_nor_started",
         dut.drained_next == (started_now == 0))
    prop(m, "room_next_exactly_below_the_limit_with_the_start",
         dut.room_next == (started_now < limit))
    drained_seen = Signal(init=1, name="drained_next_seen")   # none in flight at reset
    room_seen = Signal(init=1, name="room_next_seen")
    m.d.sync += [drained_seen.eq(dut.drained_next), room_seen.eq(dut.room_next)]
    prop(m, "drained_and_room_registered",
         (dut.drained == drained_seen) & (dut.room == room_seen))
    prop(m, "drained_only_with_none_in_flight", ~dut.drained | (in_flight == 0))
    prop(m, "room_only_below_the_limit", ~dut.room | (in_flight < limit))


def _landed(m, dut, tracked_now):
    """The Completion offered a cycle ago, as the harness saw it: (valid, Completion,
    whether it was the tracked copy's, `tracked_now` a cycle ago); the block's landed
    registers hold it."""
    state = registers(m.submodules["dut"])
    valid = past(m, dut.done.valid, "landed_seen")
    payload = Completion(past(m, Value.cast(dut.done.payload), "landed_payload_seen"))
    prop(m, "landed_registered", (state["landed__valid"] == valid)
         & (state["landed__payload"] == Value.cast(payload)))
    return valid, payload, past(m, dut.done.valid & tracked_now, "landed_tracked")


def _queue_holds_the_indices(m, dut, started, completed, tracked, landed):
    """The in-flight queue holds the indices of the copies started (but the one written a
    cycle after its start) and not landed (but the one landing, read this cycle), oldest
    first, and never refuses one: the landed index is its copy's."""
    fragment = m.submodules["dut"]
    state = registers(fragment)
    queue = child(fragment, "queue")
    start_seen = past(m, dut.start, "start_seen")
    prop(m, "started_registered", state["started"] == start_seen)
    prop(m, "started_index_registered",
         ~start_seen | tracked.held(started - 1, state["started_index"]))
    entries, level = queue_entries(m, "in_flight_queue", queue)
    landed_valid, _, landed_tracked = landed
    oldest = completed - landed_valid
    prop(m, "in_flight_queue_holds_the_copies_not_landed",
         level == (started - start_seen - oldest)[:COPY_SEQ_BITS])
    head_held, head = entries[0]
    prop(m, "in_flight_queue_head_is_the_oldest", ~head_held | tracked.held(oldest, head))
    for slot, (held, entry, age) in enumerate(queue_slots(queue)):
        prop(m, f"in_flight_queue_slot_{slot}_is_its_copys",
             ~held | tracked.held(oldest + age, entry))
    queue_state = registers(queue)
    prop(m, "in_flight_queue_never_refuses", ~state["started"] | queue_state["has_room"])
    prop(m, "landed_index_is_its_copys",
         ~landed_valid | (head_held & (~landed_tracked | (head == tracked.index))))


def _completed_count(m, dut, in_flight):
    """The completed count goes up by one per Completion, on the cycle it is offered, and
    by one per command that ends in the pipe, a cycle after it ends."""
    fragment = m.submodules["dut"]
    ends_seen = past(m, dut.finished + dut.copy_end, "ends_seen")
    expected = counter(m, "completions_and_ends", dut.done.valid + ends_seen, COMPLETED_BITS)
    prop(m, "completed_counts_each_completion_and_end", dut.completed == expected)
    steps = registers(child(fragment, "completed_steps"))["q"]
    prop(m, "completed_steps_are_the_ends_seen", (steps[:2] == ends_seen) & (ends_seen <= 2))
    # The reset clears "the ends and one" too: right from the first edge on, and until
    # then no copy is in flight, so no Completion comes.
    prop(m, "completed_steps_and_one_once_a_copy_is_in_flight",
         (steps[2:] == (ends_seen + 1)[:2]) | (in_flight == 0))
    ended = registers(fragment)["ended"]
    prop(m, "ended_registered", ended == (ends_seen != 0))


def _error_record(m, dut, tracked, landed):
    """The first error since the last clear: a landed bus error with its copy's index and
    address, or a rule error with its command's index, a cycle after its end; `pending`
    while either waits to be recorded. The harness knows the index of a bus error of the
    tracked copy, of a rule error, and after a clear."""
    state = registers(m.submodules["dut"])
    landed_valid, completion, landed_tracked = landed
    failed_seen = past(m, dut.rule_error, "failed_seen")
    code_seen, index_seen = past(m, dut.rule_code, "code_seen"), past(m, dut.rule_index)
    prop(m, "rule_failure_registered",
         (state["failed"] == failed_seen) & (state["code"] == code_seen)
         & (state["index"] == index_seen))
    bus_error = landed_valid & (completion.error != ErrorCode.NONE)
    prop(m, "pending_while_an_end_or_a_bus_error_lands",
         dut.pending == (state["ended"] | bus_error))
    error = Signal(ErrorCode, name="expected_error")
    known = Signal(init=1, name="expected_error_index_known")
    index = Signal(CMD_INDEX_BITS, name="expected_error_index")
    addr = Signal(GM_ADDR_BITS, name="expected_error_addr")
    unrecorded = dut.clear | (error == ErrorCode.NONE)
    with m.If(dut.clear):
        m.d.sync += [error.eq(ErrorCode.NONE), known.eq(1), index.eq(0), addr.eq(0)]
    with m.If(bus_error & unrecorded):
        m.d.sync += [error.eq(completion.error), known.eq(landed_tracked),
                     index.eq(tracked.index), addr.eq(completion.address)]
    with m.Elif(failed_seen & unrecorded):
        m.d.sync += [error.eq(code_seen), known.eq(1), index.eq(index_seen), addr.eq(0)]
    prop(m, "error_is_the_first_since_clear", dut.error == error)
    prop(m, "error_index_is_its_copys_or_commands", ~known | (dut.error_index == index))
    prop(m, "error_addr_is_its_completions", dut.error_addr == addr)


def _landed_read_a_cycle_late(track_in_flight):
    """The in-flight queue's head read a cycle after its Completion lands, so a
    Completion right after another lands with the index of the copy before."""
    def patched(self, m, landed):
        late = Signal(name="landed_late")
        m.d.sync += late.eq(landed)
        return track_in_flight(self, m, late)
    return patched


def _one_step_with_an_end(*parts):
    """The completed count's steps with "the ends and a Completion" the ends alone when
    there are any: a Completion on the cycle an end counts is lost."""
    ends, ends_and_one = parts
    return Cat(ends, Mux(ends != 0, ends, ends_and_one))


def _room_for_one_more(track_in_flight):
    """The count in flight with its compares against a limit one higher."""
    def patched(self, m, landed):
        self.limit += 1
        try:
            return track_in_flight(self, m, landed)
        finally:
            self.limit -= 1
    return patched


def _low_for_good_after_a_start(register):
    """A patch of `_track_in_flight`: the next value of `register` ("drained" or "room")
    low from a copy's start on, whatever completes."""
    def patch(track_in_flight):
        def patched(self, m, landed):
            queue = track_in_flight(self, m, landed)
            m.d.comb += getattr(self, f"{register}_next").eq(
                getattr(self, register) & ~self.start)
            return queue
        return patched
    return patch


def _short_of_the_limit(*, width, depth):
    """The in-flight queue two entries short: one fewer than the limit. (One short, as
    many as the limit, it never refuses an index either: proved as the group is.)"""
    return BypassQueue(width=width, depth=depth - 2)


def _tracking_mutation(name, what, patch):
    """A mutation of InFlight's count and queue of the copies in flight by `patch`."""
    track_in_flight = in_flight.InFlight._track_in_flight
    return Mutation(name, what, ((in_flight.InFlight, "_track_in_flight",
                                  patch(track_in_flight)),))


PIPE_IN_FLIGHT_MUTATIONS = (
    _tracking_mutation("landed_index_one_entry_late", "the in-flight queue's head is read "
                       "a cycle after its Completion lands", _landed_read_a_cycle_late),
    Mutation("completion_with_an_end_counted_once", "a Completion on the cycle an end "
             "counts is not counted", ((in_flight, "Cat", _one_step_with_an_end),)),
    _tracking_mutation("never_drained_again", "`drained` stays low once a copy has "
                       "started", _low_for_good_after_a_start("drained")),
    _tracking_mutation("room_for_one_more", "room and the count in flight allow one copy "
                       "past the limit", _room_for_one_more),
    _tracking_mutation("no_room_after_a_start", "`room` stays low once a copy has started",
                       _low_for_good_after_a_start("room")),
    Mutation("queue_short_of_the_limit", "the in-flight queue holds one entry fewer than "
             "the limit", ((in_flight, "BypassQueue", _short_of_the_limit),)),
)
