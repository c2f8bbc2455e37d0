"""UB->UB's write stage when a UB line is whole words: each row's words, as read, to
consecutive UB words."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import UB_ADDR_BITS, UB_LINE

from ..lib.stream import buffered_output
from ..layouts import ub_word_bits
from .pad import ub_write_layout
from .ub_reader import walk_row_words


class LineRow(data.Struct):
    """A row to write: UB words `first` .. `first` + `words_m1` (word numbers);
    `cmd_last`: the last row of its command."""
    first: UB_ADDR_BITS
    words_m1: UB_ADDR_BITS
    cmd_last: 1


class LineWriter(wiring.Component):
    """Writes each row's words to UB words `first` .. `first` + `words_m1`, whole.

    Ports:
      rows  In  stream of LineRow
      data  In  stream of W-byte words: per row, words_m1 + 1 of them
      ub    Out stream of ub_write_layout(W), from registers

    A UB->UB copy's rows start on a UB line (32 bytes) on both sides and are whole lines
    long, so with W <= 32 a source word is a destination word: no byte moves to another
    lane, and every byte of the row's words is written. A word is on `ub` after the edge
    that takes it from `data`; one word per cycle, the next row's first word right after
    the last one's.

    A word is offered on `data` only once its row is on `rows` or taken: the row fork
    queues a row for the UB reader and for this writer on the same edge, and the reader
    asks for the row's words only after it has taken the row, so the words land at least
    one edge after the row is on `rows`, behind every word of the rows before it. So
    `data.ready` is the output queue's room alone, a register (stream.buffered_output):
    the UB reader's queue, placed by the block RAMs' read data, takes its read enable
    straight from a flip-flop, and waits neither on the row queue nor on the UB's `ready`,
    which only steps the output queue.
    """

    def __init__(self, width_bytes):
        assert UB_LINE % width_bytes == 0
        self._width = width_bytes
        super().__init__({
            "rows": In(stream.Signature(LineRow)),
            "data": In(stream.Signature(8 * width_bytes)),
            "ub": Out(stream.Signature(ub_write_layout(width_bytes))),
        })

    def elaborate(self, platform):
        m = Module()
        new = self.rows.payload
        put = Signal()
        active, now, at_last = walk_row_words(m, new, put, ub_word_bits(self._width))
        cmd_last = Signal()                               # the taken row's

        word = Signal(ub_write_layout(self._width))
        room = buffered_output(m, self.ub, word, put)
        m.d.comb += [
            word.addr.eq(now),
            word.data.eq(self.data.payload),
            word.strb.eq((1 << self._width) - 1),
            word.last.eq(at_last),
            word.cmd_last.eq(at_last & Mux(active, cmd_last, new.cmd_last)),
            self.data.ready.eq(room),
            put.eq(self.data.valid & room),
            self.rows.ready.eq(~active & put),
        ]
        with m.If(put & ~active):
            m.d.sync += cmd_last.eq(new.cmd_last)
        return m
