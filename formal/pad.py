"""The pad stage's contract: each row's UB writes are its words in address order, their
strobes cover exactly [ub_addr, ub_addr + extent) (select = 0: [ub_addr, ub_addr +
length)), and every byte written is the row's data byte for that address, from the data
word that holds it, or else the pad byte of its address (byte x mod 8 of pad8).

Data words carry a tag, not free bytes: byte p of the g-th data word is (g, p) packed
into 8 bits, so a byte taken from the wrong word or lane shows.

Bounds, so that yices reaches several whole rows: a row is at most ROW_WORDS words of UB
and starts in UB's first two words (any offset within a word: its upper address bits
are only counted on), and at most RING - 1 rows are in flight."""

from amaranth.hdl import Array, C, Cat, Module, Mux, Signal
from amaranth.lib import data

from hdl.datapath.pad import PAD8_BYTES, PadInserter
from hdl.layouts import EXTENT_BITS
from model.isa import UB_ADDR_BITS

from .inputs import free, free_stream
from .props import add_block, assume, counter, prop, stream_rule

RING = 4                # rows the harness tells apart
ROW_COUNT_BITS = RING.bit_length() - 1  # rows counted modulo the ring's size
ROW_WORDS = 3
END_BITS = UB_ADDR_BITS + 2


class TrackedRow(data.Struct):
    """A row the stage has taken, as the harness reads its contract: UB bytes
    [start, end) are written, [data_start, data_end) of them data."""
    start: UB_ADDR_BITS
    data_start: END_BITS
    data_end: END_BITS
    end: END_BITS
    pad8: 8 * PAD8_BYTES
    last: 1


def pad_harness(width_bytes):
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", PadInserter(width_bytes), mutation)
        ring, taken = _take_rows(m, dut.rows, width_bytes)
        tag = _tagger(width_bytes)
        _feed_data(m, dut.data, ring, taken, width_bytes, tag)
        free(m, dut.ub.ready)
        stream_rule(m, prop, "ub", dut.ub)
        _check_writes(m, dut.ub, dut.rows.valid, ring, taken, width_bytes, tag)
        return m
    return build


def _tagger(width_bytes):
    """tag(g, p): byte p of the g-th data word."""
    lane_bits = width_bytes.bit_length() - 1
    return lambda count, lane: Cat(C(lane, lane_bits), count[:8 - lane_bits])


def _word_in_row(m, name, step, last, width):
    """A word's index within its row: counts words, back to 0 after the row's last."""
    index = counter(m, name, step, width)
    with m.If(step & last):
        m.d.sync += index.eq(0)
    return index


def _take_rows(m, rows, width_bytes):
    """Rows offered as RowJob gives them (length >= 1; select = 1: left + length <=
    extent; inside UB), within the bounds above, each recorded in a ring as taken."""
    free_stream(m, "rows", rows)
    row = rows.payload
    left = row.left & row.select.replicate(len(row.left))
    extent = Signal(EXTENT_BITS, name="row_extent")
    m.d.comb += extent.eq(row.extent)
    with m.If(~row.select):
        m.d.comb += extent.eq(row.length)
    assume(m, "rows_not_empty", ~rows.valid | (row.length != 0))
    assume(m, "rows_data_within_extent", ~rows.valid | (left + row.length <= extent))
    assume(m, "rows_inside_ub", ~rows.valid | (row.ub_addr + extent <= 1 << UB_ADDR_BITS))
    assume(m, "rows_short", ~rows.valid | (extent <= ROW_WORDS * width_bytes))
    assume(m, "rows_low", ~rows.valid | (row.ub_addr < 2 * width_bytes))
    ring = Array(Signal(TrackedRow.as_shape().size, name=f"row_{i}") for i in range(RING))
    taken = counter(m, "rows_taken", rows.valid & rows.ready, ROW_COUNT_BITS)
    tracked = Signal(TrackedRow, name="tracked")
    m.d.comb += [tracked.start.eq(row.ub_addr),
                 tracked.data_start.eq(row.ub_addr + left),
                 tracked.data_end.eq(row.ub_addr + left + row.length),
                 tracked.end.eq(row.ub_addr + extent),
                 tracked.pad8.eq(row.pad8),
                 tracked.last.eq(row.last)]
    with m.If(rows.valid & rows.ready):
        m.d.sync += ring[taken].eq(tracked)
    return ring, taken


def _feed_data(m, words, ring, taken, width_bytes, tag):
    """The aligner's words for each taken row in turn: word k holds the row's data bytes
    that fall in [k W, (k + 1) W) of its window from (ub_addr + left) rounded down to W,
    `last` on the row's final word, byte p tagged (g, p). A row's data comes only after
    the row is taken (the datapaths hand a row over before its first data word)."""
    shift = width_bytes.bit_length() - 1
    free_stream(m, "data", words)
    word = words.payload
    go = words.valid & words.ready
    supplied = counter(m, "data_rows_supplied", go & word.last, ROW_COUNT_BITS)
    index = _word_in_row(m, "data_word_in_row", go, word.last, END_BITS - shift)
    given = counter(m, "data_words_given", go, 8)
    row = data.View(TrackedRow, ring[supplied])
    offset = row.data_start[:shift]
    length = row.data_end - row.data_start
    first = Cat(C(0, shift), index)             # window position of the word's byte 0
    assume(m, "data_only_for_taken_rows", ~words.valid | (supplied != taken))
    assume(m, "data_last_on_rows_final_word",
           ~words.valid | (word.last == (index == (offset + length - 1) >> shift)))
    for lane in range(width_bytes):
        position = first + lane
        inside = (position >= offset) & (position < offset + length)
        assume(m, f"data_strb_{lane}", ~words.valid | (word.strb[lane] == inside))
        assume(m, f"data_tag_{lane}",
               ~words.valid | (word.data.word_select(lane, 8) == tag(given, lane)))


def _check_writes(m, ub, rows_offered, ring, taken, width_bytes, tag):
    """Each UB write against the row it belongs to, the oldest not yet written out."""
    shift = width_bytes.bit_length() - 1
    write = ub.payload
    go = ub.valid & ub.ready
    written = counter(m, "rows_written", go & write.last, ROW_COUNT_BITS)
    index = _word_in_row(m, "ub_word_in_row", go, write.last, END_BITS - shift)
    row = data.View(TrackedRow, ring[written])
    base = Cat(C(0, shift), write.addr)         # UB address of the word's byte 0
    holds_data = (base < row.data_end) & (base + width_bytes > row.data_start)
    used = counter(m, "data_words_used", go & holds_data, 8)
    valid = ub.valid
    assume(m, "rows_wait_while_ring_full",
           ~rows_offered | ((taken - written)[:len(taken)] != RING - 1))
    prop(m, "ub_write_only_for_taken_row", ~valid | (written != taken))
    prop(m, "ub_words_in_address_order",
         ~valid | (write.addr == ((row.start >> shift) + index)[:len(write.addr)]))
    prop(m, "ub_last_on_rows_final_word",
         ~valid | (write.last == (base + width_bytes >= row.end)))
    prop(m, "ub_cmd_last_on_commands_final_word",
         ~valid | (write.cmd_last == (write.last & row.last)))
    for lane in range(width_bytes):
        address = base + lane
        covered = (address >= row.start) & (address < row.end)
        is_data = (address >= row.data_start) & (address < row.data_end)
        byte = write.data.word_select(lane, 8)
        pad = row.pad8.word_select(lane % PAD8_BYTES, 8)
        prop(m, f"strb_{lane}_covers_exactly_the_row", ~valid | (write.strb[lane] == covered))
        prop(m, f"byte_{lane}_is_its_data_or_pad",
             ~(valid & covered) | (byte == Mux(is_data, tag(used, lane), pad)))
