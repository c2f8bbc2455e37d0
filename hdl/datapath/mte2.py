"""The MTE2 datapath: GM -> UB, with padding."""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import GM_ADDR_BITS

from ..lib.axi import AXI4ReadSignature
from ..layouts import (ROWS_PAST_BUS, AbortSignature, Completion, RowJob, UbWriteSignature,
                       in_flight_depth)
from .aligner import Aligner
from .axi_reader import AxiReader
from .completions import ReadResults, WriteCompletions, write_to_ub
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

        # Commands whose last beat was read but whose last word is not yet written: at
        # most the copies in flight, so the results queue (which takes depth - 1) always
        # has room.
        results = m.submodules.read_results = ReadResults(
            w, in_flight_depth(self._max_outstanding) + 1)
        wiring.connect(m, reader.beats, results.beats)
        wiring.connect(m, results.src, aligner.src)
        wiring.connect(m, results.results, completions.results)
        wiring.connect(m, results.abort, wiring.flipped(self.abort))

        write_to_ub(m, self.ub, pad.ub, completions)
        return m
