"""The address generator's part of the drain after a bus error: once an abort request
names the copy it is walking, it hands out at most `ROWS_AFTER_ABORT` more rows of that
copy, the last of them marked `last`; a request for a copy no longer walked changes
nothing of the rows (the copy's last row is already made)."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data

from hdl.layouts import COPY_SEQ_BITS, RowJob
from hdl.pipe.addrgen import AddressGenerator

from .gm_side import output_queue_entries
from .inputs import free, free_stream
from .props import add_block, counter, prop, registers

# Rows of a copy on `rows` from the cycle its abort request comes: those in the output
# queue or made on that cycle (two at most: a row is made only while the queue has room)
# and the one walked after it, which the registered request marks last.
ROWS_AFTER_ABORT = 3


def drain_harness(kind, width_bytes):
    """Copies of any geometry (held until taken), any abort requests, `rows` taken at
    will: the rows of a copy from its abort request on are at most ROWS_AFTER_ABORT."""
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", AddressGenerator(kind, width_bytes), mutation)
        free_stream(m, "copy", dut.copy)
        free(m, dut.rows.ready, dut.abort.valid, dut.abort.copy)
        rows = dut.rows
        row_goes = rows.valid & rows.ready
        # Copies numbered as the datapath numbers them, from 0: the copy taken last is
        # taken - 1, and the rows going out are those of copy `ended`.
        taken = counter(m, "copies_taken", dut.copy.valid & dut.copy.ready, COPY_SEQ_BITS)
        ended = counter(m, "copies_ended", row_goes & rows.payload.last, COPY_SEQ_BITS)
        last_taken = (taken - 1)[:COPY_SEQ_BITS]
        cut = Signal(name="cut")                       # an abort names a copy not ended
        cut_copy = Signal(COPY_SEQ_BITS, name="cut_copy")
        rows_after = Signal(range(ROWS_AFTER_ABORT + 2), name="rows_after")
        named = dut.abort.valid & (dut.abort.copy == last_taken) & (taken != ended)
        starts = named & ~cut
        copy = Mux(starts, last_taken, cut_copy)
        of_copy = row_goes & (ended == copy) & (cut | starts)
        counted = rows_after + of_copy
        with m.If(starts):
            m.d.sync += [cut.eq(1), cut_copy.eq(last_taken)]
        with m.If(cut | starts):
            m.d.sync += rows_after.eq(counted)
        with m.If(of_copy & rows.payload.last):
            m.d.sync += [cut.eq(0), rows_after.eq(0)]
        prop(m, "rows_after_abort_at_most_bound", counted <= ROWS_AFTER_ABORT)
        _drain_invariant(m, registers(m.submodules["dut"]), taken, ended,
                         (cut, cut_copy, rows_after))
        return m
    return build


def _drain_invariant(m, walk, taken, ended, cut_state):
    """What closes the induction: the address generator's copy number is the harness's,
    its two-entry output queue's flags agree, the copies taken and not ended are those
    whose last row is queued and the one walked, and while a cut copy drains, its rows
    counted, queued and still to be walked are at most the bound, the walked row its
    last."""
    cut, cut_copy, rows_after = cut_state
    bits = COPY_SEQ_BITS
    last_taken = (taken - 1)[:bits]
    prop(m, "addrgen_number_is_last_taken", walk["number"] == last_taken)
    (head_held, head), (second_held, second) = [
        (held, data.View(RowJob, entry))
        for held, entry in output_queue_entries(m, "row_queue", walk, "row")]
    walking = walk["walking"]
    queued_last = (head_held & head.last) + (second_held & second.last)
    prop(m, "copies_unended_are_queued_or_walked",
         (taken - ended)[:bits] == queued_last + walking)
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
