"""The address generator's rows, copy by copy. Numbered: the rows out are the copies' in
the order taken, each copy's ending with the one marked `last`, none while every copy
taken has ended. The drain after a bus error: once an abort request names the copy it is
walking, it hands out at most `ROWS_AFTER_ABORT` more rows of that copy, the last of them
marked `last`; a request for a copy no longer walked changes nothing of the rows (the
copy's last row is already made)."""

from amaranth.asserts import AnyConst
from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data

from hdl.layouts import COPY_SEQ_BITS, RowJob
from hdl.pipe import addrgen
from hdl.pipe.addrgen import AddressGenerator
from hdl.pipe.addrgen import _row_fields as addrgen_row_fields
from hdl.pipe.checker import checked_copy_layout

from .gm_side import output_queue_entries
from .inputs import free, free_stream
from .pipe_stand_ins import copy_ready_as_announced
from .props import add_block, counter, follow, prop, registers
from .runner import Mutation

# Rows of a copy on `rows` from the cycle its abort request comes: those in the output
# queue or made on that cycle (two at most: a row is made only while the queue has room)
# and the one walked after it, which the registered request marks last.
ROWS_AFTER_ABORT = 3


def _numbered_generator(m, kind, width_bytes, mutation):
    """The address generator with its copies (held until taken), abort requests and
    `rows.ready` free; copies numbered as the datapath numbers them, from 0: returns the
    block, the copies taken and the copies ended (their `last` row gone), so the copy
    taken last is taken - 1 and the rows going out are those of copy `ended`."""
    dut = add_block(m, "dut", AddressGenerator(kind, width_bytes), mutation)
    free_stream(m, "copy", dut.copy)
    free(m, dut.rows.ready, dut.abort.valid, dut.abort.copy)
    rows = dut.rows
    taken = counter(m, "copies_taken", dut.copy.valid & dut.copy.ready, COPY_SEQ_BITS)
    ended = counter(m, "copies_ended", rows.valid & rows.ready & rows.payload.last,
                    COPY_SEQ_BITS)
    return dut, taken, ended


def drain_harness(kind, width_bytes):
    """Copies of any geometry (held until taken), any abort requests, `rows` taken at
    will: following a free-but-fixed copy number (so every copy), the rows of that copy
    from its abort request on are at most ROWS_AFTER_ABORT."""
    def build(mutation):
        m = Module()
        dut, taken, ended = _numbered_generator(m, kind, width_bytes, mutation)
        followed = Signal(COPY_SEQ_BITS, name="followed_copy")
        m.d.comb += followed.eq(AnyConst(COPY_SEQ_BITS))
        drain_record(m, dut, registers(m.submodules["dut"]), (taken, ended), followed)
        return m
    return build


def drain_record(m, generator, walk, counts, followed):
    """The rows of copy `followed` that `generator` (its registers `walk`) hands out from
    the first abort request naming it while it is walked: at most ROWS_AFTER_ABORT, with
    the invariant that closes the induction. `counts` are the copies taken and ended,
    numbered from 0. Returns (starts, cut, of_copy, rows_after): that request's cycle,
    whether the copy's rows drain, a row of it going out, and those gone before."""
    taken, ended = counts
    rows = generator.rows
    last_taken = (taken - 1)[:COPY_SEQ_BITS]
    cut = Signal(name="cut")
    rows_after = Signal(range(ROWS_AFTER_ABORT + 2), name="rows_after")
    named = generator.abort.valid & (generator.abort.copy == last_taken) & (taken != ended)
    starts = named & ~cut & (last_taken == followed)
    of_copy = rows.valid & rows.ready & (ended == followed) & (cut | starts)
    counted = rows_after + of_copy
    with m.If(starts):
        m.d.sync += cut.eq(1)
    with m.If(cut | starts):
        m.d.sync += rows_after.eq(counted)
    with m.If(of_copy & rows.payload.last):
        m.d.sync += [cut.eq(0), rows_after.eq(0)]
    prop(m, "rows_after_abort_at_most_bound", counted <= ROWS_AFTER_ABORT)
    _drain_invariant(m, walk, taken, ended, (cut, followed, rows_after))
    return starts, cut, of_copy, rows_after


def _walk_invariant(m, walk, taken, ended):
    """What both groups' induction needs: the address generator's copy number is the
    harness's last copy taken, its two-entry output queue's flags agree, and the copies
    taken and not ended are those whose last row is queued plus the one walked. Returns
    the queue's entries, (held, RowJob view), oldest first."""
    last_taken = (taken - 1)[:COPY_SEQ_BITS]
    prop(m, "addrgen_number_is_last_taken", walk["number"] == last_taken)
    queued = [(held, data.View(RowJob, entry))
              for held, entry in output_queue_entries(m, "row_queue", walk, "row")]
    (head_held, head), (second_held, second) = queued
    queued_last = (head_held & head.last) + (second_held & second.last)
    prop(m, "copies_unended_are_queued_or_walked",
         (taken - ended)[:COPY_SEQ_BITS] == queued_last + walk["walking"])
    return queued


def _drain_invariant(m, walk, taken, ended, cut_state):
    """What closes the drain's induction beside _walk_invariant: while a cut copy drains,
    its rows counted, queued and still to be walked are at most the bound, the walked row
    its last."""
    cut, cut_copy, rows_after = cut_state
    bits = COPY_SEQ_BITS
    last_taken = (taken - 1)[:bits]
    (head_held, head), (second_held, second) = _walk_invariant(m, walk, taken, ended)
    walking = walk["walking"]
    second_copy = (ended + head.last)[:bits]
    queued_of_cut = ((head_held & (ended == cut_copy))
                     + (second_held & (second_copy == cut_copy)))
    walked_is_cut = walking & (cut_copy == last_taken)
    prop(m, "rows_counted_only_while_cut", cut | (rows_after == 0))
    prop(m, "cut_copy_not_ended",
         ~cut | ((cut_copy - ended)[:bits] < (taken - ended)[:bits]))
    prop(m, "cut_copy_rows_within_bound",
         ~cut | (rows_after + queued_of_cut + walked_is_cut <= ROWS_AFTER_ABORT))
    prop(m, "cut_copy_walked_row_is_its_last", ~(cut & walked_is_cut) | walk["ending"])

# The RowJob fields a row takes from its copy as they are (addrgen._row_fields): a row
# carrying them is its copy's.
CARRIED = ("length", "left", "extent", "select", "pad8", "sid", "cache")
# Copies taken and not ended (last row not yet out): one whose last row waits in the
# output queue and one whose first row joined it, or one walked; at most 2.
UNENDED_MAX = 2


def rows_numbered_harness(kind, width_bytes):
    """Copies of any payload (held until taken), any abort requests, `rows` taken at will:
    the rows out are the copies' in the order taken, each copy's rows ending with the one
    marked `last`: no row while every copy taken has ended, the copies ended never past
    those taken, and each row of a free-but-fixed copy number carries that copy's fields."""
    def build(mutation):
        m = Module()
        dut, taken, ended = _numbered_generator(m, kind, width_bytes, mutation)
        rows = dut.rows
        unended = (taken - ended)[:COPY_SEQ_BITS]
        prop(m, "copies_ended_never_past_taken", unended <= UNENDED_MAX)
        prop(m, "row_only_of_a_copy_taken_and_not_ended", ~rows.valid | (unended != 0))
        followed = follow(m, "copy", dut.copy, taken)
        prop(m, "row_of_the_followed_copy_carries_its_fields",
             ~(rows.valid & (ended == followed.number)) | _carries(m, rows.payload,
                                                                   followed.payload))
        prop(m, "copy_ready_as_announced", copy_ready_as_announced(m, dut))
        walk = registers(m.submodules["dut"])
        queued = _walk_invariant(m, walk, taken, ended)
        _numbered_invariant(m, kind, walk, (taken, ended), queued, followed)
        return m
    return build


def _carries(m, row, copy):
    """Whether RowJob `row` carries the fields `copy` (a checked copy) gives its rows."""
    expected = Signal(RowJob, name="row_of_the_followed_copy")
    m.d.comb += addrgen_row_fields(expected, copy, last=0, new_sid=0)
    return Cat(*(row[name] == expected[name] for name in CARRIED)).all()


def _numbered_invariant(m, kind, walk, counts, queued, followed):
    """What closes the induction beside _walk_invariant: a queued row that is not its copy's
    last has a row of its copy behind it, queued or walked; the copy walked, and each
    queued row of the followed copy number, carry that copy's fields."""
    taken, ended = counts
    (head_held, head), (second_held, second) = queued
    walking = walk["walking"]
    prop(m, "queued_row_not_last_has_its_copy_behind",
         (~head_held | head.last | second_held | walking)
         & (~second_held | second.last | walking))
    job = data.View(checked_copy_layout(kind), walk["job"])
    job_row = Signal(RowJob, name="row_of_the_copy_walked")
    m.d.comb += addrgen_row_fields(job_row, job, last=0, new_sid=0)
    last_taken = (taken - 1)[:COPY_SEQ_BITS]
    prop(m, "copy_walked_is_the_followed_copy",
         ~(walking & (last_taken == followed.number)) | _carries(m, job_row, followed.payload))
    second_copy = (ended + (head_held & head.last))[:COPY_SEQ_BITS]
    prop(m, "queued_rows_of_the_followed_copy_carry_its_fields",
         (~(head_held & (ended == followed.number)) | _carries(m, head, followed.payload))
         & (~(second_held & (second_copy == followed.number))
            | _carries(m, second, followed.payload)))


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


def _room_announced_as_now(buffered_output):
    """The output queue's `room_next` driven with `room`, a cycle late."""
    def patched(m, *args, room_next=None, **kwargs):
        room = buffered_output(m, *args, **kwargs)
        if room_next is not None:
            m.d.comb += room_next.eq(room)
        return room
    return patched


ROWS_NUMBERED_MUTATIONS = (
    Mutation("last_a_row_early", "the row before a copy's last marked `last` too",
             _last_a_row_early(addrgen.AddressGenerator._walked_last,
                               addrgen.AddressGenerator._row_fields)),
    Mutation("first_row_a_copy_late", "a copy's first row made from the walk's register, "
             "which holds the copy offered a cycle before",
             ((addrgen.AddressGenerator, "_row_fields",
               _first_row_from_the_walk(addrgen.AddressGenerator._row_fields)),)),
    Mutation("copy_ready_announced_a_cycle_late", "`copy_ready_next` worked out from the "
             "output queue's room of this cycle, not the next",
             ((addrgen, "buffered_output", _room_announced_as_now(addrgen.buffered_output)),)),
)
