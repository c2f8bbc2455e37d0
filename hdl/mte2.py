"""The MTE2 datapath: GM -> UB, with padding."""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from model.isa import GM_ADDR_BITS, ErrorCode

from .aligner import Aligner
from .axi import AXI4ReadSignature
from .axi_reader import AxiReader
from .completions import WriteCompletions
from .layouts import Completion, RowJob, UbWriteSignature
from .legalizer import GmRow
from .pad import PadInserter, PadRow
from .rowfork import RowFork

ROW_QUEUE = 4       # rows the AXI reader may be handed ahead of the data
DATA_QUEUE = 16     # rows between the AXI read and the aligner / pad stage: bursts in flight
RESULT_QUEUE = 8    # commands whose last beat was read but whose last word is not yet written


def pad_row(row):
    """The PadInserter's view of a row (all of it but the GM side)."""
    return {"ub_addr": row.ub_addr, "length": row.length, "left": row.left,
            "extent": row.extent, "select": row.select, "pad8": row.pad8, "last": row.last}


class Mte2Datapath(wiring.Component):
    """RowJob -> AxiReader -> Aligner -> PadInserter -> UB write.

    Ports:
      rows  In  stream of RowJob
      axi   Out AXI4ReadSignature(40, 8W, id_width): AR, R
      ub    Out UbWriteSignature(W): UB write port
      done  Out stream of Completion: one per command, once the word that ends its last
            row is written to UB; BUS_ERROR with the err_addr of the command's first
            failing beat, if any

    A row's data lands at UB byte ub_addr + left, so the aligner moves it from byte
    gm_addr % W of the read words to byte (ub_addr + left) % W. A failing burst's words
    still flow (with whatever data the bus returned), so every row ends and the command's
    completion comes in order; only the failing copy's own destination is affected.
    """

    def __init__(self, width_bytes=32, max_outstanding=8, id_width=4):
        self._width = width_bytes
        self._max_outstanding = max_outstanding
        self._id_width = id_width
        super().__init__({
            "rows": In(stream.Signature(RowJob)),
            "axi": Out(AXI4ReadSignature(GM_ADDR_BITS, 8 * width_bytes, id_width)),
            "ub": Out(UbWriteSignature(width_bytes)),
            "done": Out(stream.Signature(Completion)),
        })

    def elaborate(self, platform):
        m = Module()
        w = self._width
        shift = w.bit_length() - 1
        reader = m.submodules.reader = AxiReader(w, self._max_outstanding, self._id_width)
        aligner = m.submodules.aligner = Aligner(w)
        pad = m.submodules.pad = PadInserter(w)
        completions = m.submodules.completions = WriteCompletions()
        fork = m.submodules.fork = RowFork({
            "read": (GmRow, ROW_QUEUE,
                     lambda row: {"addr": row.gm_addr, "length": row.length, "sid": row.sid,
                                  "cache": row.cache, "last": row.last}),
            "align": (aligner.row_layout, DATA_QUEUE,
                      lambda row: {"src_off": row.gm_addr[:shift],
                                   "dst_off": (row.ub_addr + row.left)[:shift],
                                   "length": row.length}),
            "pad": (PadRow, DATA_QUEUE, pad_row),
        })

        wiring.connect(m, wiring.flipped(self.rows), fork.rows)
        wiring.connect(m, fork.read, reader.rows)
        wiring.connect(m, fork.align, aligner.rows)
        wiring.connect(m, fork.pad, pad.rows)
        wiring.connect(m, reader.axi, wiring.flipped(self.axi))
        wiring.connect(m, aligner.dst, pad.data)
        wiring.connect(m, completions.done, wiring.flipped(self.done))

        results = self._bus_errors(m, reader.beats, aligner.src)
        wiring.connect(m, results, completions.results)

        out = pad.ub.payload
        m.d.comb += [
            self.ub.addr.eq(out.addr),
            self.ub.data.eq(out.data),
            self.ub.strb.eq(out.strb),
            self.ub.valid.eq(pad.ub.valid),
            pad.ub.ready.eq(self.ub.ready),
            completions.written.eq(pad.ub.valid & pad.ub.ready & out.cmd_last),
        ]
        return m

    def _bus_errors(self, m, beats, src):
        """Passes the read words to the aligner and records, per command, the address of
        its first failing beat. Returns the stream of per-command results."""
        queue = m.submodules.results = SyncFIFOBuffered(
            width=Completion.as_shape().size, depth=RESULT_QUEUE)
        beat = beats.payload
        failed = Signal()
        failed_addr = Signal(GM_ADDR_BITS)
        passed = beats.valid & beats.ready
        result = Completion(queue.w_data)
        m.d.comb += [
            src.payload.data.eq(beat.data),
            src.valid.eq(beats.valid & queue.w_rdy),
            beats.ready.eq(src.ready & queue.w_rdy),
            queue.w_en.eq(passed & beat.cmd_last),
        ]
        with m.If(failed):
            m.d.comb += [result.error.eq(ErrorCode.BUS_ERROR), result.address.eq(failed_addr)]
        with m.Elif(beat.error):
            m.d.comb += [result.error.eq(ErrorCode.BUS_ERROR), result.address.eq(beat.err_addr)]

        with m.If(passed):
            with m.If(beat.cmd_last):
                m.d.sync += failed.eq(0)
            with m.Elif(beat.error & ~failed):
                m.d.sync += [failed.eq(1), failed_addr.eq(beat.err_addr)]

        results = stream.Signature(Completion).create()
        m.d.comb += [
            results.payload.eq(queue.r_data),
            results.valid.eq(queue.r_rdy),
            queue.r_en.eq(results.ready),
        ]
        return results
