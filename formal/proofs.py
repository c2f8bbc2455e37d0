"""Every property group `make formal` proves, with the mutations each must catch."""

from amaranth.hdl import C, Cat, Mux, Signal
from amaranth.lib import stream

from hdl import top
from hdl.datapath import (aligner, axi_reader, axi_writer, completions, legalizer,
                          line_writer, pad, rowfork)
from hdl.intake import intake
from hdl.intake.commands import CommandKind
from hdl.intake.intake import ENGINE_PIPES, QUEUE_DEPTH, word_count
from hdl.layouts import BUS_WIDTHS, EXTENT_BITS, IN_FLIGHT_DEPTH, Completion
from hdl.lib.arith import sum_mod
from hdl.lib.queue import BypassQueue, pass_or_queue
from hdl.lib.stream import buffered_output
from hdl.pipe import addrgen, checker, flags, in_flight
from hdl.pipe.pipe import COPY_KIND, PipeController
from model.isa import Opcode

from .addrgen import drain_harness, rows_numbered_harness
from .aligner import aligner_harness, rotator_harness
from .axi_master import reader_harness, writer_completions_harness, writer_harness
from .copy_checker import copy_checker_harness
from .dispatcher import dispatcher_harness
from .drain import drain_chain_harness
from .engine import completions_harness, idle_engine_harness
from .flags import flags_harness
from .intake import intake_harness
from .line_writer import line_writer_harness
from .loop_nest import nest_harness
from .mte2_completions import mte2_completions_harness
from .pad import PARTS as PAD_PARTS, pad_harness
from .pipe_controller import pipe_controller_harness
from .pipe_in_flight import in_flight_harness
from .read_commands import reader_commands_harness
from .rowfork import rowfork_harness
from .runner import Mutation, Proof
from .splitter import splitter_harness

# k-induction closes at 1 with the GM sides' invariants (formal/gm_side.py) and MTE3's
# completions' (formal/completions.py).
AXI_DEPTH = 1
# The mutations' BMC: the first counterexamples come 4 cycles from reset; a burst past the
# limit as the issuer takes its (max_outstanding + 1)-th burst, one a cycle from step 1.
AXI_MUTATION_DEPTH = 6
SPLITTER_DEPTH = 4              # k-induction closes at 4 with the splitter's invariant
# The pad stage's four groups (formal/pad.py's PARTS) close by k-induction at depth 1;
# their mutations run by BMC to 8: a row taken at step 1 is set up at 3 and its first UB
# word out at 5, its last data word a few words after.
PAD_DEPTH = 1
PAD_MUTATION_DEPTH = 8
FLAGS_DEPTH = 2                 # sets a counter holds: 2 fill it within the bound
# k-induction closes at 4; at 10 the base case holds a set lost or invented and seen.
FLAGS_PROVE_DEPTH = 10
INTAKE_DEPTH = 3                # k-induction closes at 3 with the invariant
ENGINE_WIDTH = 8                # the narrowest bus, for the smallest engine
ENGINE_DEPTH = 24               # 76 to 144 s: given nothing, the engine stays simple
# A one-word command completes 3 cycles after it is accepted; with free commands yices
# takes 93 to 227 s to depth 10 and over 5 minutes to 12.
COMPLETIONS_DEPTH = 10
# The completion paths close at depth 1 (MTE3) and 2 (MTE2); at 4 the base case holds a
# mutation's counterexample (the second command's Completion, a few cycles from reset).
COMPLETIONS_PROVE_DEPTH = 4
# The drain's induction closes at 1; at 4 the base case holds a row too many.
DRAIN_DEPTH = 4
# The drain from the address generator through the row fork to the GM side closes at 1;
# the mutations' counterexamples need the GM queue filled with the copy's rows before
# its abort, and the rows after it.
DRAIN_TO_GM_SIDE_DEPTH = 1
DRAIN_TO_GM_SIDE_MUTATION_DEPTH = 14
# The rows' numbering's induction closes at 1; at 4 the base case holds a copy's rows
# after its first, walked.
ROWS_NUMBERED_DEPTH = 4
# The loop nest's walk: its induction closes at 1; at 4 the base case holds a copy's
# first rows walked.
NEST_DEPTH = 4
# With the rows' addresses too, the induction closes at 1 (7 to 55 s); the mutation runs
# by BMC to NEST_DEPTH, which holds a copy's rows after its first.
NEST_ADDRESSES_DEPTH = 1
# UB->UB's write side at W <= 32 (a UB line whole words), the engine's 32 among them.
LINE_WRITER_WIDTHS = (8, 32)
LINE_WRITER_DEPTH = 4
# The row fork's induction closes at 1; at 8 the base case fills its deeper queue.
ROWFORK_DEPTH = 8
# The pipe's in-flight limit in its harness: the engine's least (layouts.in_flight_depth).
# Its induction closes at depth 1; the mutations run by BMC to the limit + 2, which holds
# a copy past the limit.
PIPE_IN_FLIGHT = IN_FLIGHT_DEPTH
PIPE_IN_FLIGHT_DEPTH = 1
# The pipe controller's induction closes at depth 2 (InFlight's completed count's step
# register is the ends of the cycle before); its mutations run by BMC to the limit + 2:
# a pipe starts a copy per cycle at most, so the start past the limit is offered at step
# limit + 1 (BMC to the limit + 1 does not reach it).
PIPE_CONTROLLER_DEPTH = 2
PIPE_CONTROLLER_MUTATION_DEPTH = PIPE_IN_FLIGHT + 2
# CopyChecker's guarantees to the pipe close by k-induction at depth 1; at 8 the base
# case holds a full pipeline and queue (6 copies) and one taken after them.
CHECKER_CONTRACT_DEPTH = 8
# The aligner's "any byte" contract closes by k-induction at depth 1 with its invariant;
# its mutations run by BMC to 7 + L, L the rotator's stages, which holds their
# counterexamples (at W = 8: steps 4 and 7).
ALIGNER_DEPTH = 1
ALIGNER_DEPTH_BEYOND_ROTATOR = 7
# The induction step takes 1.6 minutes at W = 8, 3 at 16 and 14 at 32; at 64 and 128
# only the rotator's turns are proved (aligner_rotator_w*).
ALIGNER_WIDTHS = (8, 16, 32)
# A stage's turn is a mux tree, no register: its check holds on every cycle.
ROTATOR_DEPTH = 1
AXI_WIDTH = 8                   # the narrowest bus: 256-beat bursts end inside a page
AXI_OUTSTANDING = 8             # the engine's (MteDma's max_outstanding)
# The AXI groups are proved at every W with their mutations; the bursts past the limit
# (minutes of BMC each) run at the narrowest and widest.
AXI_LIMIT_MUTATION_WIDTHS = (BUS_WIDTHS[0], BUS_WIDTHS[-1])
# The fast subset's (tests/test_formal.py): the same proofs, where the writer's takes a
# sixth of the time.
FAST_AXI_OUTSTANDING = 2


def _grid_too_coarse(width_bytes):
    """Splits at twice 4 KiB (or 256 beats), so bursts cross a page."""
    return 2 * max(4096, 256 * width_bytes)


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

CROSS_4K = Mutation("burst_crosses_4k", "the splitter cuts rows at 8 KiB, not 4 KiB",
                    ((legalizer, "split_grid", _grid_too_coarse),))


def _one_more_outstanding(issue_rows):
    def patched(m, rows, axi, prefix, width_bytes, max_outstanding, id_width):
        return issue_rows(m, rows, axi, prefix, width_bytes, max_outstanding + 1, id_width)
    return patched


def _one_burst_too_many_in(side):
    """The mutation of `side` (axi_reader or axi_writer) whose issuer's limit is one more."""
    return Mutation("one_burst_too_many", "the issuer lets max_outstanding + 1 out",
                    ((side, "issue_rows", _one_more_outstanding(legalizer.issue_rows)),))


def _no_id_fence(issue_rows):
    """The issuer told no burst starts a new sid, so it never waits for the bursts of the
    sid before to finish."""
    def patched(m, rows, axi, prefix, width_bytes, max_outstanding, id_width):
        splitter, issuer = issue_rows(m, rows, axi, prefix, width_bytes, max_outstanding,
                                      id_width)
        m.d.comb += issuer.bursts.payload.new_sid.eq(0)
        return splitter, issuer
    return patched


def _no_id_fence_in(side):
    """The mutation of `side` (axi_reader or axi_writer) whose issuer never fences."""
    return Mutation("no_id_fence", "the issuer lets a burst of a new ID out while bursts "
                    "of the ID before are unfinished",
                    ((side, "issue_rows", _no_id_fence(legalizer.issue_rows)),))


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


def _abort_decode(abort, registered, as_it_comes):
    """The address generator's abort decode with the request it registers and the one
    it sees as it comes each kept or replaced by a signal nothing sets."""
    def patched(self, m, walking):
        number, aborted, hit = abort(self, m, walking)
        return (number, aborted if registered else Signal(name="never_aborted"),
                hit if as_it_comes else Signal(name="never_hit"))
    return patched


def _abort_mutation(name, what, registered, as_it_comes):
    decode = _abort_decode(addrgen.AddressGenerator._abort, registered, as_it_comes)
    return Mutation(name, what, ((addrgen.AddressGenerator, "_abort", decode),))


DRAIN_MUTATIONS = (
    _abort_mutation("abort_ignored", "the address generator ignores abort requests",
                    False, False),
    _abort_mutation("abort_a_row_late", "an abort request acts once registered, a row "
                    "later", True, False),
)


def _last_a_row_early(walked_last, row_fields):
    """The address generator's walked row marked `last` when the row after it is the
    copy's last, which still follows it."""
    next_is_last = []

    def patched_walked_last(job, at_one, at_end, step):
        next_is_last.append(walked_last(job, at_one, at_end, step))
        return next_is_last[-1]

    def patched_row_fields(self, m, row, job, walking, ending, first_ending):
        early = Signal(name="last_a_row_early")
        m.d.comb += early.eq(ending | next_is_last[-1])
        return row_fields(self, m, row, job, walking, early, first_ending)
    return ((addrgen.AddressGenerator, "_walked_last", staticmethod(patched_walked_last)),
            (addrgen.AddressGenerator, "_row_fields", patched_row_fields))


def _first_row_from_the_walk(row_fields):
    """A copy's first row made from the register the walk loads, which holds the copy
    offered a cycle before: a copy taken as it is offered gives its first row the fields
    of the copy before."""
    def patched(self, m, row, job, walking, ending, first_ending):
        first_sid = row_fields(self, m, row, job, walking, ending, first_ending)
        with m.If(~walking):
            m.d.comb += addrgen._row_fields(row, job, last=first_ending, new_sid=first_sid)
        return first_sid
    return patched


ROWS_NUMBERED_MUTATIONS = (
    Mutation("last_a_row_early", "the row before a copy's last marked `last` too",
             _last_a_row_early(addrgen.AddressGenerator._walked_last,
                               addrgen.AddressGenerator._row_fields)),
    Mutation("first_row_a_copy_late", "a copy's first row made from the walk's register, "
             "which holds the copy offered a cycle before",
             ((addrgen.AddressGenerator, "_row_fields",
               _first_row_from_the_walk(addrgen.AddressGenerator._row_fields)),)),
)


def _loop1_reloaded_one_short(count):
    """The address generator's loop1 counter reloaded one iteration short as a loop2
    iteration starts (the later assignment wins): every loop1 pass after the first ends
    early."""
    def patched(m, job, counters, at_one, count_two, step):
        count(m, job, counters, at_one, count_two, step)
        loop1 = job.geom.loop1_count
        with m.If(step > addrgen.Step.LOOP1):
            m.d.sync += [counters[1].eq(loop1 - 2), at_one[1].eq(loop1 == 3)]
    return staticmethod(patched)


def _last_at_the_inner_end(job, at_one, at_end, step):
    """`last` (and the copy's end) on the last row of the n_burst loop, whatever the outer
    loops' indices."""
    inner_starts_over = ~job.geom.n_burst_many
    return addrgen._pick(step, [at_one[0], inner_starts_over, inner_starts_over])


def _burst_end_a_row_early(count):
    """The n_burst counter seen at its end with two rows left, not one."""
    def patched(m, job, counters, at_one, count_two, step):
        count(m, job, counters, at_one, count_two, step)
        with m.If(step == addrgen.Step.ROW):
            m.d.sync += at_one[0].eq(counters[0] == 3)
    return staticmethod(patched)


BURST_END_A_ROW_EARLY = Mutation(
    "burst_end_a_row_early", "the n_burst loop seen at its end a row early",
    ((addrgen.AddressGenerator, "_count",
      _burst_end_a_row_early(addrgen.AddressGenerator._count)),))
LOOPS_MUTATIONS = (
    Mutation("loop1_reloaded_one_short", "the loop1 counter reloaded one iteration short as "
             "a loop2 iteration starts",
             ((addrgen.AddressGenerator, "_count",
               _loop1_reloaded_one_short(addrgen.AddressGenerator._count)),)),
    Mutation("last_at_the_inner_loops_end", "`last` on the n_burst loop's last row, "
             "whatever loop1's and loop2's indices",
             ((addrgen.AddressGenerator, "_walked_last",
               staticmethod(_last_at_the_inner_end)),)),
)
# Beside an abort acting a row late: UB->UB copies have no loop1 or loop2 (counts 1), so
# the n_burst loop's mutation stands for the loops'.
NEST_MUTATIONS = {
    kind: (DRAIN_MUTATIONS[1], *((BURST_END_A_ROW_EARLY,) if kind == Opcode.COPY_UBUF_TO_UBUF
                                 else LOOPS_MUTATIONS))
    for kind in checker.COPY_KINDS}


def _source_strides(strides):
    """The address generator's strides of the source side, whichever side asks."""
    return lambda geom, side: strides(geom, "src")


SOURCE_STRIDES_ON_BOTH_SIDES = Mutation(
    "source_strides_on_both_sides", "the destination's rows stepped by the source's strides",
    ((addrgen, "_strides", _source_strides(addrgen._strides)),))


def _cmd_last_on_every_row(elaborate):
    """The AXI reader marking the last word of every row as its command's."""
    def patched(self, platform):
        m = elaborate(self, platform)
        m.d.comb += self.beats.payload.cmd_last.eq(self.beats.payload.row_last)
        return m
    return patched


CMD_LAST_ON_EVERY_ROW = Mutation(
    "cmd_last_on_every_row", "the AXI reader marks every row's last word cmd_last",
    ((axi_reader.AxiReader, "elaborate",
      _cmd_last_on_every_row(axi_reader.AxiReader.elaborate)),))


def _completion_a_cycle_late(elaborate):
    """WriteCompletions offering each Completion on the cycle after its command's last
    word is written."""
    def patched(self, platform):
        m = elaborate(self, platform)
        late = Signal(name="written_late")
        m.d.sync += late.eq(self.written)
        m.d.comb += self.done.valid.eq(late & self.results.valid)
        return m
    return patched


LINE_WRITER_MUTATIONS = (
    # The writer's one Mux picks the row's cmd_last: the walked row's or the one taken.
    Mutation("cmd_last_of_the_row_before", "a row taken with its first word marked with "
             "the cmd_last of the row before", ((line_writer, "Mux", lambda c, a, b: a),)),
    Mutation("completion_a_cycle_late", "a Completion offered the cycle after its "
             "command's last word is written",
             ((completions.WriteCompletions, "elaborate",
               _completion_a_cycle_late(completions.WriteCompletions.elaborate)),)),
)


def _room_rows_late(holds_at_most, rows_late):
    """The row fork's room test with `rows_late` rows more than the queue can take."""
    return lambda filled, rows: holds_at_most(filled, rows + rows_late)


ROOM_ONE_ROW_LATE = Mutation("room_one_row_late", "the row fork takes a row into a "
                             "queue that holds its depth less one",
                             ((rowfork, "_holds_at_most",
                               _room_rows_late(rowfork._holds_at_most, 1)),))
# A queue that holds its depth refuses a write: the row is lost on that branch.
ROOM_TWO_ROWS_LATE = Mutation("room_two_rows_late", "the row fork takes a row into a "
                              "full queue, which drops it",
                              ((rowfork, "_holds_at_most",
                                _room_rows_late(rowfork._holds_at_most, 2)),))


def _entry_of_the_row_before(elaborate):
    """The row fork's data branch given each row's entry in place of the row after it."""
    def patched(self, platform):
        m = elaborate(self, platform)
        queue = m.submodules["data_queue"]
        before = Signal.like(queue.w_data, name="entry_before")
        with m.If(self.rows.valid & self.rows.ready):
            m.d.sync += before.eq(queue.w_data)
        m.d.comb += queue.w_data.eq(before)
        return m
    return patched


ENTRY_OF_THE_ROW_BEFORE = Mutation(
    "entry_of_the_row_before", "the row fork's data branch queues each row's entry with "
    "the row after it", ((rowfork.RowFork, "elaborate",
                          _entry_of_the_row_before(rowfork.RowFork.elaborate)),))


def _wlast_on_first(condition, if_true, if_false):
    """AxiWriter's `is_last` mux with WLAST on every burst's first word."""
    return Mux(condition, 1, if_false)


def _row_end_one_byte_long(terms, width):
    """The pad stage's sums with the row's last byte (extent + head - 1) one too far."""
    if len(terms) == 3 and width == EXTENT_BITS + 1:
        terms = [*terms, 1]
    return sum_mod(terms, width)


def _first_two_lanes_swapped(*parts):
    """The pad stage's Cat of its byte lanes (one list) with lanes 0 and 1 swapped."""
    if len(parts) == 1 and isinstance(parts[0], list):
        lanes = parts[0]
        return Cat(lanes[1], lanes[0], *lanes[2:])
    return Cat(*parts)


def _data_counts_one_word_off(terms, width):
    """The pad stage's sums of where the row's data starts and ends, as counted down from
    its last word (data_on_p1, data_off_p1), each one more."""
    if len(terms) == 3 and isinstance(terms[2], int) and terms[2] == 1:
        terms = [*terms, 1]
    return sum_mod(terms, width)


def _cmd_last_queued_on_every_rows_end(m, out, word, put, *args, **kwargs):
    """The pad stage's output queue given each row's last word with `cmd_last` set."""
    marked = Signal.like(word, name="cmd_last_on_every_rows_end")
    m.d.comb += [marked.eq(word), marked.cmd_last.eq(word.last)]
    return buffered_output(m, out, marked, put, *args, **kwargs)


def _cmd_last_out_on_every_rows_end(m, out, word, put, *args, **kwargs):
    """The pad stage's UB writes given `cmd_last` on each row's last word past its output
    queue, whose registers are as they were."""
    queued = stream.Signature(out.payload.shape()).create()
    room = buffered_output(m, queued, word, put, *args, **kwargs)
    m.d.comb += [out.valid.eq(queued.valid), queued.ready.eq(out.ready),
                 out.payload.eq(queued.payload), out.payload.cmd_last.eq(queued.payload.last)]
    return room


PAD_MUTATIONS = {
    "setup": (Mutation("right_fill_one_byte_long", "the row's last byte written is extent, "
                       "not extent - 1", ((pad, "sum_mod", _row_end_one_byte_long),)),),
    "sequencer": (Mutation("data_counts_one_word_off", "the row's data words counted a "
                           "word off", ((pad, "sum_mod", _data_counts_one_word_off),)),),
    "queue": (Mutation("lanes_0_1_swapped", "the UB word's byte lanes 0 and 1 swapped",
                       ((pad, "Cat", _first_two_lanes_swapped),)),
              Mutation("cmd_last_on_every_rows_end", "each row's last word queued with "
                       "cmd_last", ((pad, "buffered_output",
                                     _cmd_last_queued_on_every_rows_end),))),
    "stage": (Mutation("ub_cmd_last_on_every_rows_end", "each row's last UB write given "
                       "cmd_last past the output queue",
                       ((pad, "buffered_output", _cmd_last_out_on_every_rows_end),)),),
}


class _SetLostWithGrant(flags._Counter):
    """A counter that, given a set and a grant on one edge, takes one off."""
    def update(self, m, inc, dec):
        super().update(m, inc & ~dec, dec)


class _NonzeroAfterLastGrant(flags._Counter):
    """A counter still shown non-zero after its last set is taken."""
    def update(self, m, inc, dec):
        super().update(m, inc, dec)
        with m.If(dec & ~inc):
            m.d.sync += self.nonzero.eq(1)


FLAGS_MUTATIONS = (
    Mutation("set_lost_with_a_grant", "a set counted on the edge a wait takes one off "
             "is lost", ((flags, "_Counter", _SetLostWithGrant),)),
    Mutation("grant_invented", "a counter stays non-zero after its last set is taken",
             ((flags, "_Counter", _NonzeroAfterLastGrant),)),
)


def _word_count_one_short(m, word):
    """The intake's word counts with 7-word commands taken as 6."""
    size = word_count(m, word)
    return Mux(size == 7, 6, size)


def _taken_without_ready(valid, ready, first, flag, last):
    """The intake's `first` set by a command not accepted, so the command is lost."""
    return valid & ((first & flag) | (~first & last))


INTAKE_MUTATIONS = (
    Mutation("command_one_word_short", "the 7-word commands end after 6 words",
             ((intake, "word_count", _word_count_one_short),)),
    Mutation("command_lost_when_refused", "a command not accepted is dropped",
             ((intake, "_takes", _taken_without_ready),)),
)


# The dispatcher's queues hold 8 commands each; its induction closes at 1. The mutations'
# BMC: a pipe's second command is given 3 cycles from reset, a get_buf taken on its
# third cycle.
DISPATCHER_DEPTH = 1
DISPATCHER_MUTATION_DEPTH = 6


def _entry_of_the_command_before(elaborate):
    """MTE3's queue given each command with the entry and kind of the one before it."""
    def patched(self, platform):
        m = elaborate(self, platform)
        queue = m.submodules["fifo_mte3"]
        before = Signal.like(queue.w_data, name="command_before")
        with m.If(queue.w_en):
            m.d.sync += before.eq(queue.w_data)
        m.d.comb += queue.w_data.eq(before)
        return m
    return patched


def _ticket_read_after_its_step(ticket):
    """A get_buf queued with its id's count as the lookup reads it when taken, after
    the lookup stepped it, not as it was looked up."""
    def patched(self, m, entry, pipe, queued):
        ticketed = ticket(self, m, entry, pipe, queued)
        m.d.comb += queued.ticket.eq(m.submodules.tickets.ticket)
        return ticketed
    return patched


DISPATCHER_MUTATIONS = (
    Mutation("entry_of_the_command_before", "MTE3's queue takes each command with the "
             "entry of the one before", ((intake.Dispatcher, "elaborate",
                                          _entry_of_the_command_before(
                                              intake.Dispatcher.elaborate)),)),
    Mutation("ticket_read_after_its_step", "a get_buf queued with its id's ticket count "
             "after the lookup stepped it", ((intake.Dispatcher, "_ticket",
                                             _ticket_read_after_its_step(
                                                 intake.Dispatcher._ticket)),)),
)

def _phantom_row(issue_rows):
    """Every GM side's splitter offered a row on every cycle, which nobody sent."""
    def patched(m, rows, axi, prefix, width_bytes, max_outstanding, id_width):
        splitter, issuer = issue_rows(m, rows, axi, prefix, width_bytes, max_outstanding,
                                      id_width)
        m.d.comb += splitter.rows.valid.eq(1)
        return splitter, issuer
    return patched


PHANTOM_ROW = Mutation("phantom_row", "the GM sides' splitters see a row nobody sent",
                       ((axi_reader, "issue_rows", _phantom_row(legalizer.issue_rows)),
                        (axi_writer, "issue_rows", _phantom_row(legalizer.issue_rows))))


class _CompletesTwice(PipeController):
    """A pipe that counts a command that ends in it (not a copy) twice."""
    def _status(self, m, in_flight, finished, copy_end, *rest):
        return super()._status(m, in_flight, finished, finished | copy_end, *rest)


COMPLETES_TWICE = Mutation("completes_twice", "a command that ends in its pipe counts as "
                           "two completions", ((top, "PipeController", _CompletesTwice),))


class _EndsUncounted(PipeController):
    """A pipe that counts no command that ends in it (not a copy)."""
    def _status(self, m, in_flight, finished, copy_end, *rest):
        return super()._status(m, in_flight, C(0, 1), copy_end, *rest)


ENDS_UNCOUNTED = Mutation("ends_uncounted", "a command that ends in its pipe is not "
                          "counted", ((top, "PipeController", _EndsUncounted),))


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


def _never_drained_again(track_in_flight):
    """`drained_next` low from a copy's start on, whatever completes."""
    def patched(self, m, landed):
        queue = track_in_flight(self, m, landed)
        m.d.comb += self.drained_next.eq(self.drained & ~self.start)
        return queue
    return patched


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
                       "started", _never_drained_again),
    _tracking_mutation("room_for_one_more", "room and the count in flight allow one copy "
                       "past the limit", _room_for_one_more),
    Mutation("queue_short_of_the_limit", "the in-flight queue holds one entry fewer than "
             "the limit", ((in_flight, "BypassQueue", _short_of_the_limit),)),
)


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
                   "_track_in_flight", _in_flight_read_as(room=C(1, 1))),
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


def _room_always(buffered_output):
    """The checker's output queue read as always having room: the evaluation advances,
    takes a request and puts a result while both entries are full."""
    def patched(*args, **kwargs):
        buffered_output(*args, **kwargs)
        return C(1, 1)
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
    Mutation("room_while_full", "a request taken and a result put with the output queue "
             "full", ((checker, "buffered_output", _room_always(checker.buffered_output)),)),
    Mutation("carried_a_stage_short", "a value worked out for one stage read at a later "
             "stage from the register a stage before: another copy's",
             ((checker._Stages, "_carry", _carried_a_stage_short(checker._Stages._carry)),)),
    Mutation("loop1_steps_after_one_burst", "the second row of a copy of one row per "
             "burst loop taken as a loop1 step, even with loop1's count 1",
             ((checker, "second_row_ends", _loop1_steps_after_one_burst),)),
)


def _rotated_one_lane_more(rotate_left):
    def patched(value, amount, unit):
        return rotate_left(value, amount, unit).rotate_left(unit)
    return patched


ROTATOR_OFF = Mutation("rotator_one_lane_off", "each rotator stage turns one lane more",
                       ((aligner, "_rotate_left", _rotated_one_lane_more(aligner._rotate_left)),))


def _first_kept_on_a_new_row(output_control):
    """The merge's `first` not set when a new head row loads: it is set at reset, so the
    first row is right, and a row after one of two or more output words starts at k > 0."""
    def patched(m, merge, ring, filling, loading, index_bits):
        first_next, last_next, uses_hi_next = output_control(m, merge, ring, filling,
                                                             loading, index_bits)
        kept = Signal()
        m.d.comb += kept.eq(Mux(loading[1], merge.first, first_next))
        m.d.sync += merge.first.eq(kept)
        return kept, last_next, uses_hi_next
    return staticmethod(patched)


FIRST_KEPT = Mutation("first_kept_on_a_new_row", "the merge's `first` is not set when "
                      "the next row's head loads", ((aligner.Aligner, "_output_control",
                      _first_kept_on_a_new_row(aligner.Aligner._output_control)),))

WHY_ENGINE_BMC = ("induction would need invariants over every pipe, queue and datapath "
                  "register of the engine (that an engine given no command keeps them "
                  "empty; that each pipe's completed count trails its accepted commands by "
                  "what its queue and datapath hold)")


def axi_proofs(width_bytes, max_outstanding, past_the_limit=True):
    """The AXI4 master groups and MTE3's completions at W = `width_bytes` and
    `max_outstanding`, with their mutations; the bursts past the limit, whose BMC takes
    minutes, if `past_the_limit`."""
    bursts_past_limit = max(AXI_MUTATION_DEPTH, max_outstanding + 2)
    wlast_on_first = Mutation("wlast_on_first_beat", "WLAST on each burst's first word too",
                              ((axi_writer, "Mux", _wlast_on_first),))
    groups = (
        ("axi4_master_read", reader_harness, bursts_past_limit,
         (AXSIZE_WRONG, _no_id_fence_in(axi_reader),
          *((_one_burst_too_many_in(axi_reader),) if past_the_limit else ()))),
        ("axi4_master_write", writer_harness, bursts_past_limit,
         (wlast_on_first, _no_id_fence_in(axi_writer),
          *((_one_burst_too_many_in(axi_writer),) if past_the_limit else ()))),
        ("mte3_completions", writer_completions_harness, COMPLETIONS_PROVE_DEPTH,
         (RESULT_OF_COMMAND_BEFORE_MTE3,)),
    )
    return tuple(Proof(f"{group}_w{width_bytes}", harness(width_bytes, max_outstanding),
                       "prove", AXI_DEPTH, mutations,
                       mutation_depth=mutation_depth)
                 for group, harness, mutation_depth, mutations in groups)


PROOFS = (
    *(proof for width in BUS_WIDTHS
      for proof in axi_proofs(width, AXI_OUTSTANDING, width in AXI_LIMIT_MUTATION_WIDTHS)),
    Proof("mte2_read_commands", reader_commands_harness(AXI_WIDTH, AXI_OUTSTANDING), "prove",
          AXI_DEPTH, (CMD_LAST_ON_EVERY_ROW,), mutation_depth=AXI_MUTATION_DEPTH),
    Proof("mte2_completions", mte2_completions_harness(AXI_WIDTH),
          "prove", COMPLETIONS_PROVE_DEPTH, (RESULT_OF_COMMAND_BEFORE_MTE2,)),
    *(Proof(f"drain_addrgen_{kind.name.lower()}", drain_harness(kind, AXI_WIDTH), "prove",
            DRAIN_DEPTH, DRAIN_MUTATIONS)
      for kind in (Opcode.COPY_GM_TO_UBUF, Opcode.COPY_UBUF_TO_GM)),
    *(Proof(f"drain_to_gm_side_{kind.name.lower()}", drain_chain_harness(kind, AXI_WIDTH),
            "prove", DRAIN_TO_GM_SIDE_DEPTH, (*DRAIN_MUTATIONS, ROOM_ONE_ROW_LATE),
            mutation_depth=DRAIN_TO_GM_SIDE_MUTATION_DEPTH)
      for kind in (Opcode.COPY_GM_TO_UBUF, Opcode.COPY_UBUF_TO_GM)),
    *(Proof(f"addrgen_rows_numbered_{kind.name.lower()}",
            rows_numbered_harness(kind, AXI_WIDTH), "prove", ROWS_NUMBERED_DEPTH,
            ROWS_NUMBERED_MUTATIONS) for kind in checker.COPY_KINDS),
    *(Proof(f"addrgen_nest_last_{kind.name.lower()}", nest_harness(kind, AXI_WIDTH, False),
            "prove", NEST_DEPTH, NEST_MUTATIONS[kind]) for kind in checker.COPY_KINDS),
    *(Proof(f"addrgen_nest_addresses_{kind.name.lower()}", nest_harness(kind, AXI_WIDTH, True),
            "prove", NEST_ADDRESSES_DEPTH, (SOURCE_STRIDES_ON_BOTH_SIDES,),
            mutation_depth=NEST_DEPTH) for kind in checker.COPY_KINDS),
    *(Proof(f"line_writer_w{width}", line_writer_harness(width), "prove", LINE_WRITER_DEPTH,
            LINE_WRITER_MUTATIONS) for width in LINE_WRITER_WIDTHS),
    Proof("row_fork", rowfork_harness(), "prove", ROWFORK_DEPTH,
          (ROOM_ONE_ROW_LATE, ROOM_TWO_ROWS_LATE, ENTRY_OF_THE_ROW_BEFORE)),
    Proof("pipe_in_flight", in_flight_harness(PIPE_IN_FLIGHT), "prove", PIPE_IN_FLIGHT_DEPTH,
          PIPE_IN_FLIGHT_MUTATIONS, mutation_depth=PIPE_IN_FLIGHT + 2),
    *(Proof(f"pipe_controller_{pipe.name.lower()}",
            pipe_controller_harness(pipe, PIPE_IN_FLIGHT, AXI_WIDTH), "prove",
            PIPE_CONTROLLER_DEPTH, PIPE_CONTROLLER_MUTATIONS,
            mutation_depth=PIPE_CONTROLLER_MUTATION_DEPTH) for pipe in ENGINE_PIPES),
    *(Proof(f"checker_contract_{pipe.name.lower()}",
            copy_checker_harness(COPY_KIND[pipe], AXI_WIDTH), "prove", CHECKER_CONTRACT_DEPTH,
            CHECKER_MUTATIONS) for pipe in ENGINE_PIPES),
    *(Proof(f"burst_splitter_w{width}", splitter_harness(width), "prove", SPLITTER_DEPTH,
            (CROSS_4K,)) for width in BUS_WIDTHS),
    *(Proof(f"pad_{part}_w{width}", pad_harness(width, part), "prove", PAD_DEPTH,
            PAD_MUTATIONS[part], mutation_depth=PAD_MUTATION_DEPTH)
      for width in BUS_WIDTHS for part in PAD_PARTS),
    Proof("command_intake", intake_harness(), "prove", INTAKE_DEPTH, INTAKE_MUTATIONS),
    Proof("dispatcher", dispatcher_harness(QUEUE_DEPTH), "prove", DISPATCHER_DEPTH,
          DISPATCHER_MUTATIONS, mutation_depth=DISPATCHER_MUTATION_DEPTH),
    Proof("event_flags", flags_harness(FLAGS_DEPTH), "prove", FLAGS_PROVE_DEPTH,
          FLAGS_MUTATIONS),
    *(Proof(f"aligner_any_byte_w{width}", aligner_harness(width), "prove", ALIGNER_DEPTH,
            (ROTATOR_OFF, FIRST_KEPT),
            mutation_depth=ALIGNER_DEPTH_BEYOND_ROTATOR + aligner.rotate_stages(width))
      for width in ALIGNER_WIDTHS),
    *(Proof(f"aligner_rotator_w{width}", rotator_harness(width), "prove", ROTATOR_DEPTH,
            (ROTATOR_OFF,)) for width in BUS_WIDTHS),
    Proof(f"idle_engine_w{ENGINE_WIDTH}", idle_engine_harness(ENGINE_WIDTH), "bmc",
          ENGINE_DEPTH, (PHANTOM_ROW,), WHY_ENGINE_BMC),
    Proof(f"engine_completions_w{ENGINE_WIDTH}", completions_harness(ENGINE_WIDTH), "bmc",
          COMPLETIONS_DEPTH, (COMPLETES_TWICE, ENDS_UNCOUNTED), WHY_ENGINE_BMC),
)

