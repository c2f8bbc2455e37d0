"""The MTE2 datapath: GM -> UB, with padding."""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import GM_ADDR_BITS, ErrorCode

from ..lib.axi import AXI4ReadSignature
from ..lib.queue import BypassQueue
from ..layouts import (COPY_SEQ_BITS, ROWS_PAST_BUS, AbortSignature, Completion, RowJob,
                       UbWriteSignature, in_flight_depth)
from .aligner import Aligner
from .axi_reader import AxiReader
from .completions import WriteCompletions, write_to_ub
from .legalizer import GmRow, gm_row_of
from .pad import PadInserter, PadRow
from .rowfork import RowFork

ROW_QUEUE = 4       # rows the AXI reader may be handed ahead of the data


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
      abort Out AbortSignature: a failing beat cuts its copy short

    At most layouts.in_flight_depth(max_outstanding) copies are between `rows` and `done`
    (the pipe controller holds to it), so a command's result always has room in its queue and no
    read word waits on that queue.

    A row's data lands at UB byte ub_addr + left, so the aligner moves it from byte
    gm_addr % W of the read words to byte (ub_addr + left) % W. A failing burst's words
    still flow (with whatever data the bus returned), so every row ends and the command's
    completion comes in order; only the failing copy's own destination is affected. The
    first failing beat also asks the address generator to end the copy, so it stops
    after the rows already in flight.
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
            "abort": Out(AbortSignature()),
        })

    def elaborate(self, platform):
        m = Module()
        w = self._width
        shift = w.bit_length() - 1
        # Rows between the AXI read and the aligner / pad stage: with rows of one burst
        # each, every burst in flight holds one, so the bus can keep them all busy.
        data_queue = self._max_outstanding + ROWS_PAST_BUS
        reader = m.submodules.reader = AxiReader(w, self._max_outstanding, self._id_width)
        aligner = m.submodules.aligner = Aligner(w)
        pad = m.submodules.pad = PadInserter(w)
        completions = m.submodules.completions = WriteCompletions()
        fork = m.submodules.fork = RowFork({
            "read": (GmRow, ROW_QUEUE, gm_row_of),
            "align": (aligner.row_layout, data_queue,
                      lambda row: {"src_off": row.gm_addr[:shift],
                                   "dst_off": (row.ub_addr + row.left)[:shift],
                                   "length": row.length}),
            "pad": (PadRow, data_queue, pad_row),
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

        write_to_ub(m, self.ub, pad.ub, completions)
        return m

    def _bus_errors(self, m, beats, src):
        """Passes the read words to the aligner and records, per command, the address of
        its first failing beat; a failing beat asks to abort its command. Returns the
        stream of per-command results.

        What is recorded of a beat is registered first: the bookkeeping and the results
        queue sit apart from the reader, and a command's result is needed only when its
        last word is written to UB, cycles after its last beat."""
        # Commands whose last beat was read but whose last word is not yet written: at
        # most the copies in flight, so the queue (which takes depth - 1) always has room.
        queue = m.submodules.results = BypassQueue(
            width=Completion.as_shape().size,
            depth=in_flight_depth(self._max_outstanding) + 1)
        beat = beats.payload
        m.d.comb += [
            src.payload.data.eq(beat.data),
            src.valid.eq(beats.valid),
            beats.ready.eq(src.ready),
        ]
        passed = Signal()
        landed = Signal(data.StructLayout({"cmd_last": 1, "error": 1,
                                           "err_addr": GM_ADDR_BITS}))
        m.d.sync += [passed.eq(beats.valid & beats.ready),
                     landed.cmd_last.eq(beat.cmd_last), landed.error.eq(beat.error),
                     landed.err_addr.eq(beat.err_addr)]

        failed = Signal()
        failed_addr = Signal(GM_ADDR_BITS)
        result = Completion(queue.w_data)
        m.d.comb += queue.w_en.eq(passed & landed.cmd_last)
        with m.If(failed):
            m.d.comb += [result.error.eq(ErrorCode.BUS_ERROR), result.address.eq(failed_addr)]
        with m.Elif(landed.error):
            m.d.comb += [result.error.eq(ErrorCode.BUS_ERROR),
                         result.address.eq(landed.err_addr)]

        command = Signal(COPY_SEQ_BITS)          # the number of the command being read
        m.d.sync += [self.abort.valid.eq(passed & landed.error), self.abort.copy.eq(command)]
        with m.If(passed):
            with m.If(landed.cmd_last):
                m.d.sync += [failed.eq(0), command.eq(command + 1)]
            with m.Elif(landed.error & ~failed):
                m.d.sync += [failed.eq(1), failed_addr.eq(landed.err_addr)]

        results = stream.Signature(Completion).create()
        m.d.comb += [
            results.payload.eq(queue.r_data),
            results.valid.eq(queue.r_rdy),
            queue.r_en.eq(results.ready),
        ]
        return results
