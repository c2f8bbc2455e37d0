"""The MTE3 datapath: UB -> GM."""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import GM_ADDR_BITS

from ..lib.axi import AXI4WriteSignature
from ..layouts import AbortSignature, Completion, RowJob, UbReadSignature
from .axi_writer import AxiWriter
from .legalizer import GmRow, gm_row_of
from .ub_reader import ub_source

ROW_QUEUE = 4       # rows a stage may be handed ahead of the stage before it
ALIGN_QUEUE = 8     # rows between the UB read and the aligner: read latency plus buffers


class Mte3Datapath(wiring.Component):
    """RowJob -> UB read -> Aligner -> AxiWriter.

    Ports:
      rows  In  stream of RowJob (gm_addr, ub_addr, length, sid, cache, last)
      ub    Out UbReadSignature(W): UB read port
      axi   Out AXI4WriteSignature(40, 8W, id_width): AW, W, B
      done  Out stream of Completion: one per command, after the B response of its last
            burst (AxiWriter.done)
      abort Out AbortSignature: a failing B response cuts its copy short (AxiWriter.abort)

    Each row's UB words are re-aligned from byte ub_addr % W to byte gm_addr % W, so the
    writer receives exactly the GM-aligned words of the row with strobes on its bytes.
    """

    def __init__(self, width_bytes=32, max_outstanding=8, id_width=4):
        self._width = width_bytes
        self._max_outstanding = max_outstanding
        self._id_width = id_width
        super().__init__({
            "rows": In(stream.Signature(RowJob)),
            "ub": Out(UbReadSignature(width_bytes)),
            "axi": Out(AXI4WriteSignature(GM_ADDR_BITS, 8 * width_bytes, id_width)),
            "done": Out(stream.Signature(Completion)),
            "abort": Out(AbortSignature()),
        })

    def elaborate(self, platform):
        m = Module()
        writer = m.submodules.writer = AxiWriter(self._width, self._max_outstanding,
                                                 self._id_width)
        fork, reader, aligner = ub_source(
            m, self._width, lambda row: row.gm_addr, ALIGN_QUEUE, ROW_QUEUE,
            write=(GmRow, ROW_QUEUE, gm_row_of))

        wiring.connect(m, wiring.flipped(self.rows), fork.rows)
        wiring.connect(m, fork.write, writer.rows)
        wiring.connect(m, reader.ub, wiring.flipped(self.ub))
        wiring.connect(m, writer.axi, wiring.flipped(self.axi))
        wiring.connect(m, writer.done, wiring.flipped(self.done))
        wiring.connect(m, writer.abort, wiring.flipped(self.abort))
        m.d.comb += [
            writer.beats.payload.data.eq(aligner.dst.payload.data),
            writer.beats.payload.strb.eq(aligner.dst.payload.strb),
            writer.beats.valid.eq(aligner.dst.valid),
            aligner.dst.ready.eq(writer.beats.ready),
        ]
        return m
