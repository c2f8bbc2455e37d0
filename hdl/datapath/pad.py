"""MTE2's UB side: writes each row's UB words, left pad, data and right fill, from the
aligned data words, one word per cycle."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import UB_ADDR_BITS
from ..lib.arith import sum_mod
from ..lib.kept_lut import load_in_groups
from ..lib.stream import buffered_output, skid_stage
from ..layouts import EXTENT_BITS, LEFT_BITS, LEN_BITS, ub_word_bits
from .aligner import dst_word_layout, offset_bits

PAD8_BYTES = 8

# The decision to load the next row enables some 400 flip-flops: the row registers and
# both registers of the set-up stage. It is made once per group of them, each time from
# the group's own copies of the word sequencer's state, so no one net reaches them all.
# Groups: the sequencer's registers, pad8, the byte masks (which take the decision from
# KeptLuts of their copy), the set-up register, its skid register.
ROW_LOAD_GROUPS = 5

# Lanes of the byte masks that load on one cell.
MASK_GROUP = 8


def _goes(have_row, in_data, room, data_valid):
    """The current word goes: there is a row and room, and the word is pad or its data
    word is offered."""
    return have_row & room & (~in_data | data_valid)


def _loads_row(have_row, in_data, end, room, data_valid):
    """The next row loads: there is none, or the current word is the row's last and goes."""
    return ~have_row | (_goes(have_row, in_data, room, data_valid) & end)


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


def _start_bits(width_bytes):
    """Bits of a row's first data byte counted from byte 0 of its first word."""
    return max(LEFT_BITS, offset_bits(width_bytes)) + 1


def spots_layout(width_bytes):
    """The set-up stage's record of a row: its byte positions counted from byte 0 of its
    first word, each of the row's words' counts one carry chain from them."""
    shift = offset_bits(width_bytes)
    first_bits = _start_bits(width_bytes) - shift + 1   # start[shift:] - 1, signed
    return data.StructLayout({
        "addr": ub_word_bits(width_bytes),
        "head": shift,                      # first byte written
        "first_m1": signed(first_bits),     # index of the first data word - 1
        "first_zero": 1,                    # ... it is the first word
        "data_end": EXTENT_BITS + 1,        # last data byte
        "row_end": EXTENT_BITS + 1,         # last byte written
        "pad8": 8 * PAD8_BYTES,
        "last": 1,
    })


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

    Throughput: one word per cycle, rows back to back. Latency: a row taken from `rows` on
    edge t passes an input register and a set-up register (its byte positions) and is set
    up, its word counts worked out and its byte masks decoded, on edge t + 2 at the
    earliest; its first word is on `ub` after the next edge (if that word needs data, the
    data word must be offered by then). Both registers fill while earlier rows run, so
    rows follow each other with no gap; the datapaths hand a row over several cycles
    before its first data word. `data.ready` and `rows.ready` depend only on registers
    (both registers are `skid_stage`s, so a handshake's decision ends at the next stage);
    `ub.ready` only steps the output queue (see stream.buffered_output).
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
        width = self._width
        index_bits = _word_index_bits(width)

        # --- Row set-up: where the row's data words start and end, worked out in a
        # registered stage ahead of the row and as it is loaded (`_setup`), and the byte
        # masks of its first and last words, decoded as it is loaded, so the word path
        # only compares a counter against registers.
        next_rows = [Signal(name=f"next_row{k}") for k in range(ROW_LOAD_GROUPS)]
        # (The masks load on cells of their own, from their copy of the state.)
        next_row, pad8_next_row, _, setup_take, setup_skid_take = next_rows
        setup_valid, setup = self._setup(m, index_bits, setup_take, setup_skid_take)
        ones = Const((1 << width) - 1, width)
        # `rest` of the word before the first data word, and of the last data word, each
        # plus one: the word after this one is the first data word, or this one is the
        # last, when `rest` is one less. Whether it is, and whether this word is the
        # row's last but one, are registers worked out a word ahead, so what the next
        # word is takes no compare.
        data_on_p1 = Signal(index_bits + 1)
        data_off_p1 = Signal(index_bits + 1)
        rest_on = Signal()                      # rest == data_on_p1 - 1
        rest_off = Signal()                     # rest == data_off_p1 - 1
        rest_one = Signal()                     # rest == 1
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
        room = Signal()
        # `in_data`: the current word holds data; `end`: it is the row's last.
        copies = self._row_load_decisions(
            m, next_rows, room, self.data.valid,
            loaded=(setup_valid, setup.first_in_data, setup.words_m1 == 0),
            stepped=lambda in_data: (Mux(in_data, ~rest_off, rest_on), rest_one))
        have_row, in_data, end, go = copies[0]
        m.d.comb += self.data.ready.eq(have_row & in_data & room)
        with m.If(next_row):
            m.d.sync += [
                addr.eq(setup.addr),
                rest.eq(setup.words_m1),
                data_on_p1.eq(setup.data_on_p1),
                data_off_p1.eq(setup.data_off_p1),
                rest_on.eq(setup.rest_on),
                rest_off.eq(setup.rest_off),
                rest_one.eq(setup.words_m1 == 1),
                cmd_last.eq(setup.last),
                at_start.eq(1),
            ]
        with m.Elif(go):
            m.d.sync += [
                addr.eq(addr + 1),
                rest.eq(rest - 1),
                rest_on.eq(rest == data_on_p1),
                rest_off.eq(rest == data_off_p1),
                rest_one.eq(rest == 2),
                at_start.eq(0),
            ]
        with m.If(pad8_next_row):
            m.d.sync += pad8.eq(setup.pad8)
        # The masks' bits sit with their lanes, across the datapath: each MASK_GROUP
        # lanes load on a cell of their own (a KeptLut of the masks' copy of the
        # sequencer's state), which the placer can put among them.
        masks_state = Cat(*copies[2][:3], room, self.data.valid)
        load_in_groups(m, "masks", _loads_row, masks_state,
                       [(head_mask, ones << setup.head), (tail_mask, ones >> ~setup.end_off)],
                       group=MASK_GROUP)

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

    @staticmethod
    def _row_load_decisions(m, next_rows, room, data_valid, loaded, stepped):
        """Drives each of `next_rows` with the decision to load the next row: there is no
        row, or the current word is the row's last and goes (there is `room`, and the
        word is pad or its data word is offered, `data_valid`). Each is worked out from
        its own copy of the word sequencer's state, `have_row`, `in_data` and `end`,
        which loads `loaded` (the set-up row's values) with the row, and `stepped(in_data)`
        (`in_data` and `end` of the word after this one) as a word goes. A copy's update
        goes through its own decision, so synthesis keeps the copies apart. Returns each
        copy's state and whether its current word goes."""
        copies = []
        for k, next_row in enumerate(next_rows):
            state = [Signal(name=f"{field}{k}") for field in ("have_row", "in_data", "end")]
            have_row, in_data, end = state
            go = Signal(name=f"go{k}")
            m.d.comb += [
                go.eq(_goes(have_row, in_data, room, data_valid)),
                next_row.eq(_loads_row(have_row, in_data, end, room, data_valid)),
            ]
            with m.If(next_row):
                m.d.sync += [reg.eq(value) for reg, value in zip(state, loaded)]
            with m.Elif(go):
                m.d.sync += [reg.eq(value) for reg, value in zip(state[1:], stepped(in_data))]
            copies.append((*state, go))
        return copies

    def _setup(self, m, index_bits, take, skid_take):
        """The set-up register in front of the row registers, and the word counts the row
        registers load from it (one carry chain each). Returns (valid, set-up); `take` and
        its copy `skid_take`: the row registers load it (see stream.skid_stage)."""
        width, shift = self._width, self._shift
        # The row is registered as it is taken, so its sums start at a register of this
        # block rather than at the row fork's queue; the stage costs no time in the
        # datapaths, whose data comes several cycles after the row.
        # Without data_select the row has no left pad and its extent is its length: that
        # choice is made on the way in, so the sums start at the registers.
        incoming = Signal.like(self.rows.payload)
        m.d.comb += incoming.eq(self.rows.payload)
        with m.If(~self.rows.payload.select):
            m.d.comb += [incoming.left.eq(0), incoming.extent.eq(self.rows.payload.length)]
        row_take = Signal()
        row_valid, row, ready = skid_stage(m, self.rows.valid, incoming, row_take, "row_in")
        m.d.comb += self.rows.ready.eq(ready)
        # Byte positions counted from byte 0 of the row's first word, each sum a
        # carry-save level or two in front of one carry chain (arith.sum_mod).
        start_bits = _start_bits(width)
        spots = Signal(spots_layout(width))
        head = row.ub_addr[:shift]
        left = row.left
        start = Signal(start_bits)              # first data byte
        row_bits = EXTENT_BITS + 1
        m.d.comb += [
            start.eq(head + left),
            spots.addr.eq(row.ub_addr[shift:]),
            spots.head.eq(head),
            # (start >> shift) - 1, in two's complement (-1 when start is in word 0).
            spots.first_m1.eq(sum_mod([head, left, -(1 << shift)],
                                      shift + len(spots.first_m1))[shift:]),
            spots.first_zero.eq(start[shift:] == 0),
            spots.data_end.eq(sum_mod([row.length, head, left, -1], row_bits)),
            spots.row_end.eq(sum_mod([row.extent, head, -1], row_bits)),
            spots.pad8.eq(row.pad8),
            spots.last.eq(row.last),
        ]
        # A skid stage too, so the word sequencer's decision to load the next row (from
        # the data handshake) ends at this stage's registers and does not reach the row
        # input stage's as well.
        spots_valid, spots, spots_ready = skid_stage(m, row_valid, spots, take, "row_spots",
                                                     skid_take)
        m.d.comb += row_take.eq(spots_ready)

        # Word positions count down: the row registers' `rest` is the number of the row's
        # words after the current one. Data runs from the word after the one where
        # rest = data_on_at through the one where rest = data_off_at.
        setup = Signal(data.StructLayout({
            "addr": ub_word_bits(width),
            "words_m1": index_bits,             # the row's UB words - 1
            "data_on_p1": index_bits + 1,       # data_on_at + 1
            "data_off_p1": index_bits + 1,      # data_off_at + 1
            "rest_on": 1,                       # words_m1 == data_on_at
            "rest_off": 1,                      # words_m1 == data_off_at
            "head": shift,                      # first byte of the first word
            "end_off": shift,                   # last byte of the last word
            "first_in_data": 1,                 # the first word holds data
            "pad8": 8 * PAD8_BYTES,
            "last": 1,
        }))
        words_m1 = spots.row_end[shift:]
        m.d.comb += [
            setup.addr.eq(spots.addr),
            setup.words_m1.eq(words_m1),
            setup.data_on_p1.eq(sum_mod([words_m1, -spots.first_m1, 1], index_bits + 1)),
            setup.data_off_p1.eq(sum_mod([words_m1, -spots.data_end[shift:], 1],
                                         index_bits + 1)),
            setup.rest_on.eq(spots.first_m1 == 0),
            setup.rest_off.eq(spots.data_end[shift:] == 0),
            setup.head.eq(spots.head),
            setup.end_off.eq(spots.row_end[:shift]),
            setup.first_in_data.eq(spots.first_zero),
            setup.pad8.eq(spots.pad8),
            setup.last.eq(spots.last),
        ]
        return spots_valid, setup
