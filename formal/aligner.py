"""The aligner's "any byte" contract on its first row: for a free-but-fixed row offset p
and byte value v, if the source byte at row offset p is v, the destination byte at row
offset p is v, with its strobe set; each output word's strobes mark exactly the row's
bytes and `last` its final word.

The row's source offset, destination offset and length are free; the length is at most
MAX_WORDS words, so the bound holds the whole row."""

from amaranth.hdl import C, Cat, Module, Signal
from amaranth.asserts import AnyConst

from hdl.datapath.aligner import Aligner
from hdl.layouts import LEN_BITS

from .inputs import free, free_stream
from .props import add_block, assume, counter, prop, stream_rule

MAX_WORDS = 2


def aligner_harness(width_bytes):
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", Aligner(width_bytes), mutation)
        shift = width_bytes.bit_length() - 1
        free_stream(m, "rows", dut.rows)
        free_stream(m, "src", dut.src)
        free(m, dut.dst.ready)
        stream_rule(m, prop, "dst", dut.dst)
        row = Signal.like(dut.rows.payload, name="first_row")
        taken = Signal(name="first_row_taken")
        with m.If(dut.rows.valid & dut.rows.ready):
            m.d.sync += [taken.eq(1), row.eq(dut.rows.payload)]
        assume(m, "one_row", ~(taken & dut.rows.valid))
        length = row.length
        assume(m, "row_not_empty", ~dut.rows.valid | (dut.rows.payload.length != 0))
        assume(m, "row_short", ~dut.rows.valid
               | (dut.rows.payload.length <= MAX_WORDS * width_bytes))
        assume(m, "src_after_its_row", ~dut.src.valid | taken)
        spot = Signal(LEN_BITS, name="tracked_offset")
        value = Signal(8, name="tracked_value")
        m.d.comb += [spot.eq(AnyConst(LEN_BITS)), value.eq(AnyConst(8))]
        src_words = counter(m, "src_words", dut.src.valid & dut.src.ready, LEN_BITS)
        dst_words = counter(m, "dst_words", dut.dst.valid & dut.dst.ready, LEN_BITS)
        source_at = Cat(C(0, shift), src_words) - row.src_off     # row offset of lane 0
        dest_at = Cat(C(0, shift), dst_words) - row.dst_off
        out = dut.dst.payload
        words = (row.dst_off + length + width_bytes - 1) >> shift
        prop(m, "dst_last_on_rows_final_word",
             ~dut.dst.valid | (out.last == (dst_words + 1 == words)))
        for lane in range(width_bytes):
            at_source = source_at + lane
            assume(m, f"src_lane_{lane}_tracked",
                   ~(dut.src.valid & (at_source == spot))
                   | (dut.src.payload.data.word_select(lane, 8) == value))
            at_dest = dest_at + lane
            inside = (Cat(C(0, shift), dst_words) + lane >= row.dst_off) & (at_dest < length)
            prop(m, f"dst_strb_{lane}_marks_the_rows_bytes",
                 ~dut.dst.valid | (out.strb[lane] == inside))
            prop(m, f"dst_lane_{lane}_carries_its_byte",
                 ~(dut.dst.valid & inside & (at_dest == spot))
                 | (out.data.word_select(lane, 8) == value))
        return m
    return build
