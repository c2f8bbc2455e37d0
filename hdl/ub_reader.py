"""Reads the UB words of each row for the datapaths that take their source from UB."""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from model.isa import UB_ADDR_BITS

from .layouts import LEN_BITS, UbReadSignature, ub_word_bits


class UbReadRow(data.Struct):
    """A row to read: `length` (>= 1) bytes from UB byte address `ub_addr`."""
    ub_addr: UB_ADDR_BITS
    length: LEN_BITS


class UbReader(wiring.Component):
    """Requests, for each row, the UB words floor(ub_addr/W) .. floor((ub_addr+length-1)/W).

    Ports:
      rows   In  stream of UbReadRow
      ub     Out UbReadSignature: the UB read port
      words  Out stream of W-byte words, in request order

    UB read data arrives two or more cycles after a request and cannot be held back, so
    every word asked for needs a free place in the output queue when it lands. A request is
    made only while queued words plus words asked for and not yet landed leave room for one
    more; with `depth` >= 5 that still sustains one word per cycle (two words in flight,
    two in the queue on their way to `words`).
    """

    def __init__(self, width_bytes, depth=5):
        # A SyncFIFOBuffered of depth d holds d - 1 words behind its output register; the
        # credit rule keeps the total at d, which the inner queue can take for d >= 3.
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
        shift = self._width.bit_length() - 1
        queue = m.submodules.queue = SyncFIFOBuffered(width=8 * self._width, depth=self._depth)

        addr = Signal(ub_word_bits(self._width))
        last_addr = Signal(ub_word_bits(self._width))
        active = Signal()

        issued = self.ub.valid & self.ub.ready
        in_flight = Signal(range(self._depth + 1))      # asked for, not yet landed
        m.d.sync += in_flight.eq(in_flight + issued - self.ub.rvalid)
        has_room = queue.level + in_flight < self._depth
        row_done = issued & (addr == last_addr)
        m.d.comb += [
            self.ub.addr.eq(addr),
            self.ub.valid.eq(active & has_room),
            self.rows.ready.eq(~active | row_done),
            queue.w_data.eq(self.ub.rdata),
            queue.w_en.eq(self.ub.rvalid),
            self.words.payload.eq(queue.r_data),
            self.words.valid.eq(queue.r_rdy),
            queue.r_en.eq(self.words.ready),
        ]

        with m.If(issued):
            m.d.sync += addr.eq(addr + 1)
        with m.If(row_done):
            m.d.sync += active.eq(0)
        with m.If(self.rows.valid & self.rows.ready):
            row = self.rows.payload
            m.d.sync += [
                addr.eq(row.ub_addr >> shift),
                last_addr.eq((row.ub_addr + row.length - 1) >> shift),
                active.eq(1),
            ]
        return m
