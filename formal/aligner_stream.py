"""The aligner's "any byte" contract on a stream of rows that overlap in the block: rows
of up to 4 W bytes, any offsets, are offered whenever the block takes them, and their
source words whenever the producer has them, so short rows fill the set-up registers,
the row queue and the rotator at once. The harness numbers the rows taken and, across
rows, the source words taken and the destination words given; it follows a
free-but-fixed row number, and in that row a free-but-fixed destination position (word
and lane) and byte value v, as formal/aligner.py's one-row harness does: if the row
offset p that lands there is one of the row's bytes and each of the row's source words
holds v at p, the destination byte there is v. Every row is some row number and every
position some position, so the contract holds for every byte of every row. Its words'
strobes mark exactly the row's bytes and `last` its final word; no source word is
taken, and no destination word given, for a row not taken.

A BMC from reset: an induction would tie every register to a ring of the up to L + 7
rows the block holds (docs/formal.md, "What is not proved")"""

from amaranth.asserts import AnyConst
from amaranth.hdl import Module, Signal

from hdl.datapath import aligner
from hdl.datapath.aligner import Aligner

from .aligner import (Record, assume_src_tracked_byte, dst_word_contract, row_facts,
                      tracked_byte)
from .inputs import free, free_stream
from .props import add_block, assume, counter, prop, stream_rule
from .runner import Mutation

# Rows of at most ROW_WORDS * W bytes: within the bound it is short rows that overlap;
# formal/aligner.py proves rows of every length, one at a time.
ROW_WORDS = 4
# Rows taken within the bound (at most one a cycle), and words summed over them.
ROW_NUMBER_BITS = 5
STREAM_BITS = 10


def aligner_stream_harness(width_bytes):
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", Aligner(width_bytes), mutation)
        free_stream(m, "rows", dut.rows)
        free_stream(m, "src", dut.src)
        free(m, dut.dst.ready)
        stream_rule(m, prop, "dst", dut.dst)
        length = dut.rows.payload.length
        assume(m, "row_not_empty", ~dut.rows.valid | (length != 0))
        assume(m, "row_short", ~dut.rows.valid | (length <= ROW_WORDS * width_bytes))
        _contract(m, dut, width_bytes)
        return m
    return build


def _contract(m, dut, width_bytes):
    rows_taken = dut.rows.valid & dut.rows.ready
    src_taken = dut.src.valid & dut.src.ready
    src_count = counter(m, "src_words_taken", src_taken, STREAM_BITS)
    dst_count = counter(m, "dst_words_given", dut.dst.valid & dut.dst.ready, STREAM_BITS)
    # The source and destination words of the rows taken so far.
    offered = row_facts(dut.rows.payload, width_bytes)
    src_due = Signal(STREAM_BITS, name="src_words_of_rows_taken")
    dst_due = Signal(STREAM_BITS, name="dst_words_of_rows_taken")
    with m.If(rows_taken):
        m.d.sync += [src_due.eq(src_due + offered.src_words),
                     dst_due.eq(dst_due + offered.dst_words)]
    prop(m, "src_taken_only_for_rows_taken", ~src_taken | (src_count < src_due))
    prop(m, "dst_only_for_rows_taken", ~dut.dst.valid | (dst_count < dst_due))

    # The followed row: its number, and where its words start in each stream.
    number = Signal(ROW_NUMBER_BITS, name="followed_row")
    m.d.comb += number.eq(AnyConst(ROW_NUMBER_BITS))
    row_count = counter(m, "rows_taken", rows_taken, ROW_NUMBER_BITS)
    seen = Signal(name="followed_row_taken")
    row = Signal.like(dut.rows.payload, name="followed_row_payload")
    src_base = Signal(STREAM_BITS, name="followed_src_base")
    dst_base = Signal(STREAM_BITS, name="followed_dst_base")
    with m.If(rows_taken & (row_count == number)):
        m.d.sync += [seen.eq(1), row.eq(dut.rows.payload), src_base.eq(src_due),
                     dst_base.eq(dst_due)]
    facts = row_facts(row, width_bytes)
    # Its words taken and given: below its base they wrap, so they are below its word
    # counts only for its own words.
    src_k = (src_count - src_base)[:STREAM_BITS]
    dst_k = (dst_count - dst_base)[:STREAM_BITS]
    record = Record(seen & (dst_k < facts.dst_words), row, src_k, dst_k,
                    *tracked_byte(m, row, width_bytes))
    assume_src_tracked_byte(m, dut.src, seen & (src_k < facts.src_words), src_k, record,
                            width_bytes)
    dst_word_contract(m, dut.dst.payload, dut.dst.valid & record.busy, dst_k, record, facts,
                      width_bytes)


def _row_queue_of_two(queue):
    def patched(*, width, depth, split_at=()):
        return queue(width=width, depth=2, split_at=split_at)
    return patched


ROW_QUEUE_SHORT = Mutation("row_queue_of_two", "the merge's row queue holds 2 rows, so "
                           "a row entering it while one waits is lost",
                           ((aligner, "BypassQueue", _row_queue_of_two(aligner.BypassQueue)),))
