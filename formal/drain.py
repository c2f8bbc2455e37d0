"""The drain after a bus error from the abort request to the GM side, as one property: a
GM pipe's address generator feeding its row fork, as the pipe and the datapath connect
them; once an abort request names the copy the generator walks, the fork's GM branch
(the AXI reader's or writer's rows) gives at most `GM_ROWS_AFTER_ABORT` more rows of that
copy, the last of them marked `last`. The bound is the generator's (`ROWS_AFTER_ABORT`:
rows it hands out from the request on) plus the rows the GM branch's queue holds
(`ROW_QUEUE` - 1).

Induction closes with the drain group's invariant of the generator
(`formal.addrgen.drain_record`, which asserts its bound too), the row fork's of its
queues, and an invariant numbering the copies of the rows the GM queue holds."""

from amaranth.asserts import AnyConst
from amaranth.hdl import Module, Signal
from amaranth.lib import data

from hdl.datapath.mte2 import ROW_QUEUE
from hdl.datapath.rowfork import RowFork
from hdl.layouts import COPY_SEQ_BITS
from hdl.pipe.addrgen import AddressGenerator

from .addrgen import ROWS_AFTER_ABORT, drain_record
from .gm_side import queue_entries
from .inputs import free, free_stream
from .props import add_block, child, counter, prop, registers
from .rowfork import BRANCHES, queue_levels

GM_ROWS_AFTER_ABORT = ROWS_AFTER_ABORT + ROW_QUEUE - 1
# The GM branch carries each row's `last`, the branch that stands for the data side
# nothing; only its queue's room matters, which holds its rows back.
_ENTRY = data.StructLayout({"last": 1})
# A wide enough count of a branch's rows that taken - given is its level.
ROW_COUNT_BITS = 4


def drain_chain_harness(kind, width_bytes):
    def build(mutation):
        m = Module()
        generator = add_block(m, "generator", AddressGenerator(kind, width_bytes), mutation)
        fork = add_block(m, "fork", RowFork({name: (_ENTRY, depth, _last_only)
                                             for name, depth in BRANCHES.items()}), mutation)
        _connect(m, generator, fork)
        free_stream(m, "copy", generator.copy)
        free(m, generator.abort.valid, generator.abort.copy, fork.gm.ready, fork.data.ready)
        counts = _copy_counts(m, generator, fork)
        followed = Signal(COPY_SEQ_BITS, name="followed_copy")
        m.d.comb += followed.eq(AnyConst(COPY_SEQ_BITS))
        generator_side = drain_record(m, generator, registers(m.submodules["generator"]),
                                      (counts["taken"], counts["ended"]), followed)
        _gm_drain(m, fork, counts, followed, generator_side)
        return m
    return build


def _last_only(row):
    return {"last": row.last}


def _connect(m, generator, fork):
    """As `hdl/top.py` connects a pipe's rows to its datapath's fork."""
    m.d.comb += [fork.rows.valid.eq(generator.rows.valid),
                 fork.rows.payload.eq(generator.rows.payload),
                 generator.rows.ready.eq(fork.rows.ready)]


def _copy_counts(m, generator, fork):
    """Copies numbered as the datapath numbers them, from 0: taken by the generator, ended
    into the fork (their `last` row taken), ended on the GM branch (given)."""
    rows, gm = generator.rows, fork.gm
    return {
        "taken": counter(m, "copies_taken", generator.copy.valid & generator.copy.ready,
                         COPY_SEQ_BITS),
        "ended": counter(m, "copies_ended", rows.valid & rows.ready & rows.payload.last,
                         COPY_SEQ_BITS),
        "gm_ended": counter(m, "copies_ended_on_gm", gm.valid & gm.ready & gm.payload.last,
                            COPY_SEQ_BITS),
    }


def _gm_drain(m, fork, counts, followed, generator_side):
    """From the request on, the rows of the followed copy the GM branch gives: at most the
    bound, counted until the copy's `last` row is given."""
    starts, cut, into_fork, rows_after = generator_side
    gm = fork.gm
    gm_cut = Signal(name="gm_cut")              # its last row not yet given on gm
    gm_after = Signal(range(GM_ROWS_AFTER_ABORT + 2), name="gm_rows_after")
    fork_after = Signal(range(ROWS_AFTER_ABORT + 2), name="fork_rows_after")
    of_copy = gm.valid & gm.ready & (counts["gm_ended"] == followed) & (gm_cut | starts)
    counted = gm_after + of_copy
    with m.If(starts):
        m.d.sync += gm_cut.eq(1)
    with m.If(gm_cut | starts):
        m.d.sync += [gm_after.eq(counted), fork_after.eq(fork_after + into_fork)]
    with m.If(of_copy & gm.payload.last):
        m.d.sync += [gm_cut.eq(0), gm_after.eq(0), fork_after.eq(0)]
    prop(m, "gm_rows_after_abort_at_most_bound", counted <= GM_ROWS_AFTER_ABORT)
    queued_of_copy = _fork_invariant(m, fork, counts, followed)
    prop(m, "gm_rows_counted_only_while_cut",
         gm_cut | ((gm_after == 0) & (fork_after == 0)))
    prop(m, "generator_cut_within_gm_cut", ~cut | gm_cut)
    prop(m, "fork_rows_while_generator_cut", ~cut | (fork_after == rows_after))
    prop(m, "fork_rows_within_generator_bound", fork_after <= ROWS_AFTER_ABORT)
    gm_ended = counts["gm_ended"]
    prop(m, "gm_cut_copy_ended_into_the_fork_unless_generator_cut",
         ~gm_cut | cut | ((followed - gm_ended)[:COPY_SEQ_BITS]
                          < (counts["ended"] - gm_ended)[:COPY_SEQ_BITS]))
    prop(m, "gm_cut_copy_ended_into_the_fork_is_queued",
         ~gm_cut | cut | (queued_of_copy != 0))
    prop(m, "gm_cut_copy_not_ended_on_gm",
         ~gm_cut | ((followed - counts["gm_ended"])[:COPY_SEQ_BITS]
                    < (counts["taken"] - counts["gm_ended"])[:COPY_SEQ_BITS]))
    prop(m, "gm_rows_given_and_queued_within_bound",
         ~gm_cut | (gm_after + queued_of_copy <= ROW_QUEUE - 1 + fork_after))


def _fork_invariant(m, fork, counts, followed):
    """The row fork group's invariant of its queues (formal/rowfork.py), and: the copies
    ended into the fork are those ended on the GM branch plus the `last` rows its queue
    holds. Returns how many rows of copy `followed` the GM queue holds."""
    fragment = m.submodules["fork"]
    taken = counter(m, "fork_rows_taken", fork.rows.valid & fork.rows.ready, ROW_COUNT_BITS)
    queue_levels(m, fork, fragment, BRANCHES, taken)
    entries, _ = queue_entries(m, "gm_queue_entries", child(fragment, "gm_queue"))
    lasts, of_copy, copy = 0, 0, counts["gm_ended"]
    for held, entry in entries:
        last = data.View(_ENTRY, entry).last
        of_copy = of_copy + (held & (copy == followed))
        lasts = lasts + (held & last)
        copy = (copy + (held & last))[:COPY_SEQ_BITS]
    prop(m, "gm_queue_lasts_are_copies_ended_into_the_fork",
         (counts["ended"] - counts["gm_ended"])[:COPY_SEQ_BITS] == lasts)
    return of_copy
