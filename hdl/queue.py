"""A FIFO whose first entry reaches the output one clock edge after it is written."""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out


class BypassQueue(wiring.Component):
    """SyncFIFOBuffered's ports and level, with one edge less latency.

    A SyncFIFOBuffered shows a new entry two edges after it is written; on the datapath's
    start and tail paths that is one edge too many. Here an output register takes an entry
    written while nothing is queued ahead of it (and the output is free or being read)
    directly, so it is on `r_data` one edge after the write; entries that wait go through
    an inner first-word-fall-through queue, whose head refills the output register on any
    edge it is free, so after a stall the queue drains one entry per cycle without a gap.
    Outputs (`r_data`, `r_rdy`, `w_rdy`, `level`) come from registers. The queue holds
    `depth` entries, and a write is refused only while the inner queue is full, that is
    while at least depth - 1 entries are held.
    """

    def __init__(self, *, width, depth):
        assert depth >= 2
        self.width = width
        self.depth = depth
        super().__init__({
            "w_data": In(width), "w_en": In(1), "w_rdy": Out(1),
            "r_data": Out(width), "r_en": In(1), "r_rdy": Out(1),
            "level": Out(range(depth + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        inner = m.submodules.inner = SyncFIFO(width=self.width, depth=self.depth - 1)
        out_free = ~self.r_rdy | self.r_en
        bypass = ~inner.r_rdy & out_free
        m.d.comb += [
            self.w_rdy.eq(inner.w_rdy),
            inner.w_data.eq(self.w_data),
            inner.w_en.eq(self.w_en & ~bypass),
            inner.r_en.eq(out_free),
            self.level.eq(inner.level + self.r_rdy),
        ]
        with m.If(out_free):
            with m.If(inner.r_rdy):
                m.d.sync += [self.r_data.eq(inner.r_data), self.r_rdy.eq(1)]
            with m.Elif(self.w_en):
                m.d.sync += [self.r_data.eq(self.w_data), self.r_rdy.eq(1)]
            with m.Else():
                m.d.sync += self.r_rdy.eq(0)
        return m
