"""The UB->UB datapath (PIPE_V)."""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import UB_ADDR_BITS

from .completions import WriteCompletions
from .layouts import Completion, RowJob, UbReadSignature, UbWriteSignature
from .pad import PadInserter, PadRow
from .ub_reader import ub_source

ROW_QUEUE = 4       # rows the UB reader may be handed ahead of the data
DATA_QUEUE = 8      # rows between the UB read and the aligner / write stage


class UbCopyDatapath(wiring.Component):
    """RowJob -> UB read -> Aligner -> PadInserter (no padding) -> UB write.

    Ports:
      rows  In  stream of RowJob: ub_addr = source row, gm_addr = destination row (a UB
            address, see addrgen.ROW_ADDRESSES), length
      rd    Out UbReadSignature(W), wr Out UbWriteSignature(W): the UB ports
      done  Out stream of Completion (always NONE): one per command, once the word that
            ends its last row is written

    The PadInserter with select = 0 writes exactly the row's bytes, so a row that does not
    start or end on a word boundary leaves the rest of its first and last words alone.
    """

    def __init__(self, width_bytes=32):
        self._width = width_bytes
        super().__init__({
            "rows": In(stream.Signature(RowJob)),
            "rd": Out(UbReadSignature(width_bytes)),
            "wr": Out(UbWriteSignature(width_bytes)),
            "done": Out(stream.Signature(Completion)),
        })

    def elaborate(self, platform):
        m = Module()
        writer = m.submodules.writer = PadInserter(self._width)
        completions = m.submodules.completions = WriteCompletions()
        fork, reader, aligner = ub_source(
            m, self._width, lambda row: row.gm_addr, DATA_QUEUE, ROW_QUEUE,
            write=(PadRow, DATA_QUEUE,
                   lambda row: {"ub_addr": row.gm_addr[:UB_ADDR_BITS], "length": row.length,
                                "extent": row.length, "last": row.last}))

        wiring.connect(m, wiring.flipped(self.rows), fork.rows)
        wiring.connect(m, fork.write, writer.rows)
        wiring.connect(m, reader.ub, wiring.flipped(self.rd))
        wiring.connect(m, aligner.dst, writer.data)
        wiring.connect(m, completions.done, wiring.flipped(self.done))

        out = writer.ub.payload
        m.d.comb += [
            self.wr.addr.eq(out.addr),
            self.wr.data.eq(out.data),
            self.wr.strb.eq(out.strb),
            self.wr.valid.eq(writer.ub.valid),
            writer.ub.ready.eq(self.wr.ready),
            completions.written.eq(writer.ub.valid & writer.ub.ready & out.cmd_last),
            # A UB->UB copy cannot fail once it has passed the checker.
            completions.results.valid.eq(1),
        ]
        return m
