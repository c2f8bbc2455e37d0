"""MTE2's UB side: writes each row's UB words, left pad, data and right fill, from the
aligned data words, one word per cycle."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import UB_ADDR_BITS
from .aligner import buffered_output, dst_word_layout, offset_bits
from .layouts import EXTENT_BITS, LEFT_BITS, LEN_BITS, ub_word_bits

PAD8_BYTES = 8


class PadRow(data.Struct):
    """One UB row, as RowJob describes it.

    select = 1: UB bytes [ub_addr, ub_addr + extent) are written: `left` pad bytes, the
    `length` data bytes, then pad. select = 0: only the data bytes
    [ub_addr, ub_addr + length) are written (`left` and `extent` are not used).
    Pad byte at UB address x is byte (x mod 8) of `pad8`. length >= 1, and with
    select = 1, left + length <= extent."""
    ub_addr: UB_ADDR_BITS
    length: LEN_BITS
    left: LEFT_BITS
    extent: EXTENT_BITS
    select: 1
    pad8: 8 * PAD8_BYTES
    last: 1             # last row of its command


def ub_write_layout(width_bytes):
    """A UB word write: `strb` bit i enables byte i of `data`."""
    return data.StructLayout({
        "addr": ub_word_bits(width_bytes),
        "data": 8 * width_bytes,
        "strb": width_bytes,
        "last": 1,                      # last word of the row
        "cmd_last": 1,                  # last word of the command's last row
    })


def _word_index_bits(width_bytes):
    """Bits of a word index within a row: the last word of the widest row starting at
    the largest offset in its word."""
    return ((width_bytes - 1 + (1 << EXTENT_BITS) - 2) >> offset_bits(width_bytes)).bit_length()


class PadInserter(wiring.Component):
    """Turns a row's aligned data words into the UB writes of the whole row.

    Ports:
      rows  In  stream of PadRow: one per row
      data  In  stream of the Aligner's dst_word_layout(W): per row, the Aligner's words
                for dst_off = (ub_addr + left) mod W (select = 0: ub_addr mod W), length
      ub    Out stream of ub_write_layout(W), from registers: the row's UB words in address
                order, W-byte word addresses

    A UB word holding any data byte takes exactly one `data` word (its bytes with `strb`
    set are the data); the others are all pad and take none. Any `ub_addr` alignment works
    (rows starting mid-word when W > 32, or anywhere): pad is laid by address, and `strb`
    covers exactly [ub_addr, ub_addr + extent).

    Throughput: one word per cycle, rows back to back. Latency: a row is set up on the
    edge that takes it from `rows`; its first word is on `ub` after the next edge (if that
    word needs data, the data word must be offered by then). `data.ready` depends only on
    registers; `rows.ready` on registers and `data.valid`; `ub.ready` only steps the
    output queue (see aligner.buffered_output).
    """

    def __init__(self, width_bytes=32):
        if width_bytes % PAD8_BYTES:
            raise ValueError(f"word width must be a multiple of {PAD8_BYTES} bytes, "
                             f"not {width_bytes}")
        self._width = width_bytes
        self._shift = offset_bits(width_bytes)
        self.data_layout = dst_word_layout(width_bytes)
        self.ub_layout = ub_write_layout(width_bytes)
        super().__init__({
            "rows": In(stream.Signature(PadRow)),
            "data": In(stream.Signature(self.data_layout)),
            "ub": Out(stream.Signature(self.ub_layout)),
        })

    def elaborate(self, platform):
        m = Module()
        width, shift = self._width, self._shift
        index_bits = _word_index_bits(width)

        # --- Row set-up: where the row's data words start and end, and the byte masks of
        # its first and last words, registered, so the word path only compares a
        # counter against them.
        row = self.rows.payload
        ones = Const((1 << width) - 1, width)
        span = Signal(EXTENT_BITS)              # bytes written
        left = Signal(LEFT_BITS)
        head = Signal(shift)                    # first byte of the first word
        data_start = Signal(EXTENT_BITS + 1)    # first data byte, from the first word
        row_end = Signal(EXTENT_BITS + 1)       # last byte written, from the first word
        data_end = Signal(EXTENT_BITS + 1)      # last data byte, from the first word
        m.d.comb += [
            span.eq(Mux(row.select, row.extent, row.length)),
            left.eq(Mux(row.select, row.left, 0)),
            head.eq(row.ub_addr[:shift]),
            data_start.eq(head + left),
            row_end.eq(head + span - 1),
            data_end.eq(data_start + row.length - 1),
        ]
        # Word positions count down: `rest` is the number of the row's words after the
        # current one. Data runs from the word after the one where rest = data_on_at
        # through the one where rest = data_off_at.
        words_m1 = Signal(index_bits)           # the row's UB words - 1
        first_data = Signal(index_bits)         # index of its first data word
        m.d.comb += [
            words_m1.eq(row_end[shift:]),
            first_data.eq(data_start[shift:]),
        ]
        have_row = Signal()
        data_on_at = Signal(index_bits + 1)     # rest of the word before the first data word
        data_off_at = Signal(index_bits)        # rest of the last data word
        head_mask = Signal(width)               # first word: bytes [head, W)
        tail_mask = Signal(width)               # last word: bytes [0, row_end mod W]
        pad8 = Signal(8 * PAD8_BYTES)
        cmd_last = Signal()

        # --- Word sequencer. What the next word needs is worked out a cycle ahead, into
        # `in_data` and `end`, by comparing the count-down against registers, so `go` is
        # a few gates from registers.
        addr = Signal(ub_word_bits(width))      # the current word's address
        rest = Signal(index_bits)
        at_start = Signal()                     # the current word is the row's first
        in_data = Signal()                      # it holds data
        end = Signal()                          # it is the row's last
        room = Signal()
        go = Signal()
        m.d.comb += [
            self.data.ready.eq(have_row & in_data & room),
            go.eq(have_row & room & (~in_data | self.data.valid)),
            self.rows.ready.eq(~have_row | (go & end)),
        ]
        with m.If(self.rows.ready):
            m.d.sync += [
                have_row.eq(self.rows.valid),
                addr.eq(row.ub_addr[shift:]),
                rest.eq(words_m1),
                data_on_at.eq(words_m1 - first_data + 1),
                data_off_at.eq(words_m1 - data_end[shift:]),
                head_mask.eq(ones << head),
                tail_mask.eq(ones >> ~row_end[:shift]),
                pad8.eq(row.pad8),
                cmd_last.eq(row.last),
                at_start.eq(1),
                in_data.eq(first_data == 0),
                end.eq(words_m1 == 0),
            ]
        with m.Elif(go):
            m.d.sync += [
                addr.eq(addr + 1),
                rest.eq(rest - 1),
                at_start.eq(0),
                in_data.eq(Mux(in_data, rest != data_off_at, rest == data_on_at)),
                end.eq(rest == 1),
            ]

        # Words are W-aligned and W is a multiple of 8, so byte p of any word is at an
        # address = p (mod 8): the pad word is pad8 repeated.
        word = self.data.payload
        lanes = []
        for p in range(width):
            use_data = in_data & word.strb[p]
            lanes.append(Mux(use_data, word.data.word_select(p, 8),
                             pad8.word_select(p % PAD8_BYTES, 8)))
        out = Signal(self.ub_layout)
        m.d.comb += [
            out.addr.eq(addr),
            out.data.eq(Cat(lanes)),
            out.strb.eq((head_mask | ~at_start.replicate(width))
                        & (tail_mask | ~end.replicate(width))),
            out.last.eq(end),
            out.cmd_last.eq(end & cmd_last),
            room.eq(buffered_output(m, self.ub, out, go)),
        ]
        return m
