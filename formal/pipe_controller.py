"""The pipe controller's side of the engine contract (hdl/pipe/pipe.py, PipeController),
with its copy checker and address generator replaced by stand-ins that keep only those
blocks' guarantees (formal/pipe_stand_ins.py), and its record of copies in flight
(InFlight) as it is. Commands (any words, of any kind, not even held until taken), flag
and token answers, clears, abort requests and the datapath's rows' `ready` are free;
Completions come any cycle a copy is in flight, with any result.

The harness counts the commands the pipe takes from `cmd`, the copies its checker holds
(the stand-in's count), the copies started (the address generator takes them) and not
completed, and the commands that end in the pipe (every command but a copy, as it is
taken; a copy whose checked result does not start it). Its contract:

- InFlight is given only what `formal/pipe_in_flight.py` assumes: a start only below the
  limit (`start_below_the_limit`), a copy's end only with none in flight
  (`copy_ends_with_none_in_flight`), a rule error only as a copy's end, with a code
  (`rule_error_is_a_copys_end`), the pipe's Completions as the datapath gives them (its
  `completion_after_its_start`, assumed here of the datapath); and the index of a start
  or a rule error is its copy's command's (the checker's result's), which that group
  leaves free;
- every command taken is counted in `completed` exactly once: a copy by its Completion or
  a cycle after it ends in the pipe, any other command a cycle after it is taken; so
  `completed` never runs ahead of the commands taken and, once none is in the checker,
  in flight or ending, equals them; a set_flag or rls_buf is offered only once no copy
  is in the checker or in flight, so it counts after every copy before it;
- `busy` exactly while a command waits on `cmd` or one taken is not counted, and on the
  cycle after a failing Completion, as its error is recorded."""

from amaranth.hdl import C, Module, Value
from amaranth.lib.wiring import Flow

from hdl.intake.commands import CommandKind
from hdl.layouts import COPY_SEQ_BITS
from hdl.pipe.in_flight import COMPLETED_BITS
from hdl.pipe.pipe import COPY_KIND, PipeController
from model.isa import DEFAULT_PROFILE, ErrorCode

from .inputs import free_ports
from .pipe_in_flight import PIPE_IN_FLIGHT_MUTATIONS, count_invariant
from .pipe_stand_ins import (FreeAddressGenerator, FreeCopyChecker, offers_a_passing_result,
                             result_taken)
from .props import add_block, assume, child, counter, past, prop, registers
from .runner import Mutation


def pipe_controller_harness(pipe, limit, width_bytes):
    """PipeController of `pipe` at `limit` copies in flight, with stand-ins."""
    def build(mutation):
        m = Module()
        kind = COPY_KIND[pipe]
        checker = FreeCopyChecker(kind, DEFAULT_PROFILE, width_bytes)
        addrgen = FreeAddressGenerator(kind, width_bytes)
        dut = add_block(m, "dut", PipeController(
            pipe, DEFAULT_PROFILE, width_bytes, limit, checker=lambda *_: checker,
            address_generator=lambda *_: addrgen), mutation)
        free_ports(m, dut, Flow.In)
        pipe_contract(m, m.submodules["dut"], dut, (checker, addrgen))
        return m
    return build


def pipe_contract(m, fragment, dut, stand_ins):
    """The contract above of PipeController `dut` (elaborated as `fragment`), built with
    `stand_ins`, its (FreeCopyChecker, FreeAddressGenerator), its Completions assumed to
    come only while a copy is in flight. Returns the commands it took and those it holds
    unfinished (in its checker, in flight or ending), each counted modulo
    2^COMPLETED_BITS."""
    checker, addrgen = stand_ins
    limit = dut.in_flight
    in_flight_fragment = child(fragment, "in_flight")
    in_flight = in_flight_fragment.origins[0]
    start = addrgen.copy.valid & addrgen.copy.ready
    started = counter(m, "copies_started", start, COPY_SEQ_BITS)
    completed = counter(m, "copies_completed", dut.done.valid, COPY_SEQ_BITS)
    copies = (started - completed)[:COPY_SEQ_BITS]
    assume(m, "completion_after_its_start", ~dut.done.valid | (copies != 0))
    count_invariant(m, in_flight_fragment, in_flight, limit, started, completed)
    _in_flight_given_its_assumptions(m, dut, in_flight, checker, copies, limit)
    completion_seen = past(m, dut.done.valid, "completion_seen")
    _pipe_invariant(m, fragment, checker, addrgen, copies, completion_seen)
    prop(m, "result_taken_exactly_as_it_starts_or_ends",
         checker.result.ready == (start | in_flight.copy_end))
    taken, unfinished = _each_command_counted_once(m, dut, checker, in_flight,
                                                   (start, copies))
    # A Completion keeps the pipe busy a cycle after it counts: its bus error is
    # recorded then, and InFlight's `drained` shows it then.
    prop(m, "busy_while_a_command_waits_or_is_not_counted",
         dut.status.busy == (dut.cmd.valid | (taken != dut.status.completed)
                             | completion_seen))
    return taken, unfinished


def _in_flight_given_its_assumptions(m, dut, in_flight, checker, copies, limit):
    """What the pipe gives its InFlight is what formal/pipe_in_flight.py assumes, each
    property discharging the Assume named after it there: `start_below_the_limit`,
    `copy_ends_with_none_in_flight`, `rule_error_is_a_copys_end`; the Completions pass
    unchanged, so `completion_after_its_start` is the datapath's, assumed here too; and
    the index of a start or a rule error is its copy's command's, where that group's
    `tracked_copy_starts_with_its_index` allows any."""
    prop(m, "in_flight_start_below_the_limit", ~in_flight.start | (copies < limit))
    prop(m, "in_flight_copy_ends_with_none_in_flight", ~in_flight.copy_end | (copies == 0))
    prop(m, "in_flight_rule_error_is_a_copys_end", ~in_flight.rule_error
         | (in_flight.copy_end & (in_flight.rule_code != ErrorCode.NONE)))
    prop(m, "in_flight_completions_are_the_datapaths",
         (in_flight.done.valid == dut.done.valid)
         & (Value.cast(in_flight.done.payload) == Value.cast(dut.done.payload)))
    oldest = checker.record.indices[0]
    prop(m, "in_flight_start_index_is_its_copys",
         ~in_flight.start | (in_flight.start_index == oldest))
    prop(m, "in_flight_rule_index_is_its_copys",
         ~in_flight.rule_error | (in_flight.rule_index == oldest))


def _pipe_invariant(m, fragment, checker, addrgen, copies, completion_seen):
    """What closes the induction: the stand-in holds at most what a checker holds; the
    pipe's `idle` register is none in the checker, none in flight and no Completion a
    cycle ago (`completion_seen`); the address generator is offered a copy only with the
    checker's passing result."""
    held = checker.record.held
    prop(m, "checker_holds_at_most_its_copies", held <= checker.record.holds)
    idle = registers(fragment)["idle"]
    # InFlight's `drained` shows a Completion a cycle after it counts.
    prop(m, "idle_is_no_copy_unfinished",
         idle == ((held == 0) & (copies == 0) & ~completion_seen))
    prop(m, "copy_offered_only_as_it_passes",
         ~addrgen.copy.valid | offers_a_passing_result(checker))


def _each_command_counted_once(m, dut, checker, in_flight, copies_started):
    """`completed` is the commands taken less those in the checker, in flight and ending
    (InFlight is told of each end once, and counts it a cycle later); a set is offered
    only with no copy unfinished. `copies_started`: whether a copy starts, the copies in
    flight. Returns the count of commands taken and how many of them are unfinished."""
    start, copies = copies_started
    held = checker.record.held
    cmd = dut.cmd
    took = cmd.valid & cmd.ready
    taken = counter(m, "commands_taken", took, COMPLETED_BITS)
    not_started = result_taken(checker) & ~start
    ends = (took & (cmd.payload.kind != CommandKind.COPY)) + not_started
    prop(m, "in_flight_told_of_each_end_once",
         in_flight.finished + in_flight.copy_end == ends)
    ending = past(m, ends, "commands_ending")
    count = dut.status.completed
    prop(m, "completed_counts_each_command_taken_once",
         count == (taken - held - copies - ending)[:COMPLETED_BITS])
    prop(m, "completed_is_every_command_taken_once_none_is_unfinished",
         ~((held == 0) & (copies == 0) & (ending == 0)) | (count == taken))
    offered = dut.flag_set.valid | dut.token_rls.valid
    prop(m, "set_offered_only_with_no_copy_unfinished",
         ~offered | ((held == 0) & (copies == 0)))
    return taken, held + copies + ending


class _InFlightSeen:
    """A pipe's InFlight as the pipe reads it, with the outputs in `replaced` replaced."""
    def __init__(self, block, **replaced):
        self.block, self.replaced = block, replaced

    def __getattr__(self, name):
        return self.replaced[name] if name in self.replaced else getattr(self.block, name)


def _in_flight_read_as(**replaced):
    """The pipe's `_track_in_flight`, its InFlight's outputs in `replaced` read as given."""
    track_in_flight = PipeController._track_in_flight

    def patched(self, m, start, index):
        return _InFlightSeen(track_in_flight(self, m, start, index), **replaced)
    return patched


def _in_flight_next_room_read_as_now(track_in_flight):
    """InFlight's `room_next` read as `room`: whether the result is taken is decided on
    the room of a cycle before."""
    def patched(self, m, start, index):
        block = track_in_flight(self, m, start, index)
        return _InFlightSeen(block, room_next=block.room)
    return patched


def _started_with_the_index_at_cmd(track_in_flight):
    """A start recorded with the index of the command at the head of `cmd`."""
    def patched(self, m, start, index):
        return track_in_flight(self, m, start, self.cmd.payload.entry.index)
    return patched


def _set_counted_twice(status):
    """A set_flag's or rls_buf's end counted as two: given to InFlight as a copy's too."""
    def patched(self, m, in_flight, finished, copy_end, *rest):
        set_end = finished & (self.cmd.payload.kind == CommandKind.SET_FLAG)
        return status(self, m, in_flight, finished, copy_end | set_end, *rest)
    return patched


def _nothing_pending(status):
    """`busy` without the cycle an end or a bus error waits to be recorded."""
    def patched(self, *args):
        status(self, *args)
        return C(0, 1)
    return patched


def _fetched_as_if_idle(fetch):
    """Commands executed as if no copy were in the checker or in flight."""
    def patched(self, m, cmd, idle, checker, finished):
        return fetch(self, m, cmd, C(1, 1), checker, finished)
    return patched


def _pipe_mutation(name, what, attribute, patch):
    return Mutation(name, what, ((PipeController, attribute, patch),))


PIPE_CONTROLLER_MUTATIONS = (
    _pipe_mutation("started_without_room", "a copy starts with the limit in flight",
                   "_track_in_flight", _in_flight_read_as(room=C(1, 1), room_next=C(1, 1))),
    _pipe_mutation("taken_on_the_room_of_a_cycle_before", "whether the checker's result "
                   "is taken is decided on the room in flight of the cycle before",
                   "_track_in_flight",
                   _in_flight_next_room_read_as_now(PipeController._track_in_flight)),
    _pipe_mutation("copy_end_with_copies_in_flight", "a copy that broke a rule ends "
                   "with copies in flight", "_track_in_flight",
                   _in_flight_read_as(drained=C(1, 1))),
    _pipe_mutation("start_index_of_the_command_at_cmd", "a start recorded with the index "
                   "of the command at the head of `cmd`", "_track_in_flight",
                   _started_with_the_index_at_cmd(PipeController._track_in_flight)),
    _pipe_mutation("set_end_counted_twice", "a set_flag's end counted as two", "_status",
                   _set_counted_twice(PipeController._status)),
    PIPE_IN_FLIGHT_MUTATIONS[1],
    _pipe_mutation("set_offered_with_copies_unfinished", "a set_flag offered while copies "
                   "are in the checker or in flight", "_fetch",
                   _fetched_as_if_idle(PipeController._fetch)),
    _pipe_mutation("busy_low_as_an_end_is_recorded", "`busy` low on the cycle an end waits "
                   "to be counted", "_status", _nothing_pending(PipeController._status)),
)
