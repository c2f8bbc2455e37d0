"""Reads the UB words of each row for the datapaths that take their source from UB."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import UB_ADDR_BITS

from ..lib.queue import BypassQueue, pass_or_queue
from ..layouts import UbReadSignature, ub_word_bits
from .aligner import Aligner
from .rowfork import RowFork


class UbReadRow(data.Struct):
    """A row to read: UB words `first` .. `first` + `words_m1` (word numbers)."""
    first: UB_ADDR_BITS
    words_m1: UB_ADDR_BITS


def ub_words_m1(ub_addr, len_m1, width_bytes):
    """The W-byte words a row of `len_m1` + 1 bytes from UB byte address `ub_addr` touches,
    less one (ints or Values; for Values one carry chain, `len_m1` from a register:
    RowTerms.len_m1)."""
    shift = width_bytes.bit_length() - 1
    if isinstance(ub_addr, int) and isinstance(len_m1, int):
        return ((ub_addr % width_bytes) + len_m1) >> shift
    return (ub_addr[:shift] + len_m1)[shift:]


def ub_read_row(row, width_bytes):
    """The UbReadRow of a RowJob: its UB row."""
    return {"first": row.ub_addr >> (width_bytes.bit_length() - 1),
            "words_m1": row.ub_words_m1}


def walk_row_words(m, row, step, word_bits):
    """Steps through the words `first` .. `first` + `words_m1` of the rows offered in `row`
    (a payload with those fields), one word on each cycle `step` is high; a row is taken
    on the step of its first word. Whether the next word is the taken row's last is a
    register, worked out from a count of its words. Returns (active: words of a taken row
    remain, now: the word this step is for, at_last: it is its row's last)."""
    active = Signal()
    addr = Signal(word_bits)                        # the next word of the taken row
    left = Signal.like(row.words_m1)                # its words after the next one
    at_end = Signal()                               # the next word is the row's last
    now = Mux(active, addr, row.first)
    at_last = Mux(active, at_end, row.words_m1 == 0)
    with m.If(step):
        m.d.sync += [active.eq(~at_last), addr.eq(now + 1)]
        with m.If(active):
            m.d.sync += [left.eq(left - 1), at_end.eq(left == 1)]
        with m.Else():
            m.d.sync += [left.eq(row.words_m1 - 1), at_end.eq(row.words_m1 == 1)]
    return active, now, at_last


class UbReader(wiring.Component):
    """Requests, for each row, its UB words `first` .. `last`.

    Ports:
      rows   In  stream of UbReadRow
      ub     Out UbReadSignature: the UB read port
      words  Out stream of W-byte words, in request order

    A row's first word is requested in the cycle the row is offered (its address comes
    straight from `rows.payload`), and the row is taken with that request; its further
    words come from a counter, one per cycle, and the next row's first word follows its
    predecessor's last without a gap.

    UB read data arrives three or more cycles after a request and cannot be held back, so
    every word asked for needs a free place in the output queue when it lands. A request is
    made only while fewer than `depth` words asked for are not yet taken on `words`. Each
    word lands first in a register of the reader's own (`ub.rdata` and `ub.rvalid`, loaded
    on every cycle), so the route from the block RAMs, which lie all over the device, is
    the whole of a path, and the consumer's logic starts at a flip-flop beside it. A word
    that has landed while nothing is queued goes straight on to `words` if it is taken
    there, and into the queue otherwise; so a stream of words flows through at one per
    cycle with four in flight (three in the UB, one landed) and none queued; `depth` >= 5
    keeps that rate, also while the queue drains after a stall. `words.valid` is a
    register (a word is landed or queued), loaded from the UB's `rvalid` and the queue's
    next state, so the consumer's decisions to take a word start at a flip-flop.
    """

    def __init__(self, width_bytes, depth=5):
        assert depth >= 3
        self._width = width_bytes
        self._depth = depth
        super().__init__({
            "rows": In(stream.Signature(UbReadRow)),
            "ub": Out(UbReadSignature(width_bytes)),
            "words": Out(stream.Signature(8 * width_bytes)),
        })

    def elaborate(self, platform):
        m = Module()
        # The credit rule keeps the words held at most `depth`; a BypassQueue one deeper
        # never refuses a landing word (it refuses only while depth words are held).
        queue = m.submodules.queue = BypassQueue(width=8 * self._width, depth=self._depth + 1)

        issued = Signal()
        active, now, _ = walk_row_words(m, self.rows.payload, issued,
                                        ub_word_bits(self._width))

        landed = Signal(8 * self._width)
        landed_valid = Signal()
        m.d.sync += [landed.eq(self.ub.rdata), landed_valid.eq(self.ub.rvalid)]

        m.d.comb += issued.eq(self.ub.valid & self.ub.ready)
        # Words asked for and not yet taken on `words` (in flight, queued or passing) may
        # not exceed `depth`: `room` counts what is left, a register, so a request waits
        # on no sum.
        room = Signal(range(self._depth + 1), init=self._depth)
        m.d.sync += room.eq(room - issued + (self.words.valid & self.words.ready))
        has_room = room != 0
        # A row is taken with its first word's request. `rows.ready` does not wait on
        # `rows.valid`: it is a gate of registers of the reader's and the UB's, so the
        # row queue's output register is not in front of its own read.
        m.d.comb += [
            self.ub.addr.eq(now),
            self.ub.valid.eq((active | self.rows.valid) & has_room),
            self.rows.ready.eq(~active & has_room & self.ub.ready),
        ]
        pass_or_queue(m, queue, landed_valid, landed, self.words, valid_next=self.ub.rvalid)
        return m


def read_branch(width_bytes, row_queue):
    """The RowFork branch of a UbReader: a RowJob's source row, ub_addr and length."""
    return (UbReadRow, row_queue, lambda row: ub_read_row(row, width_bytes))


def ub_source(m, width_bytes, dst_addr, align_queue, row_queue, **other_branches):
    """The front end of a datapath whose source is UB: a RowFork that hands each RowJob to
    a UbReader ("read") and to an Aligner ("align"), which moves the row's bytes from byte
    ub_addr % W of the words read to byte dst_addr(row) % W, plus the datapath's
    `other_branches` (RowFork's `name=(shape, depth, select)`).

    Adds the three as submodules of `m`, with the reader's words feeding the aligner, and
    returns (fork, reader, aligner): the caller connects fork.rows, reader.ub, aligner.dst
    and its own branches."""
    shift = width_bytes.bit_length() - 1
    reader = m.submodules.reader = UbReader(width_bytes)
    aligner = m.submodules.aligner = Aligner(width_bytes)
    fork = m.submodules.fork = RowFork({
        "read": read_branch(width_bytes, row_queue),
        "align": (aligner.row_layout, align_queue,
                  lambda row: {"src_off": row.ub_addr[:shift],
                               "dst_off": dst_addr(row)[:shift], "length": row.length}),
        **other_branches,
    })
    wiring.connect(m, fork.read, reader.rows)
    wiring.connect(m, fork.align, aligner.rows)
    m.d.comb += [
        aligner.src.payload.data.eq(reader.words.payload),
        aligner.src.valid.eq(reader.words.valid),
        reader.words.ready.eq(aligner.src.ready),
    ]
    return fork, reader, aligner
