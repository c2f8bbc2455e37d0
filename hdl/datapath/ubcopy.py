"""The UB->UB datapath (PIPE_V)."""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import UB_ADDR_BITS, UB_LINE

from ..layouts import Completion, RowJob, UbReadSignature, UbWriteSignature
from .completions import WriteCompletions, write_to_ub
from .line_writer import LineRow, LineWriter
from .pad import PadInserter, PadRow
from .rowfork import RowFork
from .ub_reader import UbReader, read_branch, ub_source

ROW_QUEUE = 4       # rows the UB reader may be handed ahead of the data
DATA_QUEUE = 8      # rows between the UB read and the write stage


class UbCopyDatapath(wiring.Component):
    """RowJob -> UB read -> UB write.

    Ports:
      rows  In  stream of RowJob: ub_addr = source row, gm_addr = destination row (a UB
            address, see addrgen.ROW_ADDRESSES), length
      rd    Out UbReadSignature(W), wr Out UbWriteSignature(W): the UB ports
      done  Out stream of Completion (always NONE): one per command, once the word that
            ends its last row is written

    Rows start on a UB line (32 bytes) on both sides and are whole lines long. With
    W <= 32 a line is whole words, so the words read are the words written (LineWriter).
    Wider words hold more than one line, and a row's lines may sit at other places in the
    source's words than in the destination's: then the words pass an Aligner, and a
    PadInserter with select = 0 writes exactly the row's bytes, leaving the rest of a
    first or last word alone.
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
        completions = m.submodules.completions = WriteCompletions()
        if self._width <= UB_LINE:
            fork, reader, writer = self._whole_words(m)
        else:
            fork, reader, writer = self._aligned(m)
        wiring.connect(m, wiring.flipped(self.rows), fork.rows)
        wiring.connect(m, reader.ub, wiring.flipped(self.rd))
        wiring.connect(m, completions.done, wiring.flipped(self.done))

        write_to_ub(m, self.wr, writer.ub, completions)
        # A UB->UB copy cannot fail once it has passed the checker.
        m.d.comb += completions.results.valid.eq(1)
        return m

    def _whole_words(self, m):
        """W <= 32: the UB reader's words go straight to the LineWriter."""
        width = self._width
        shift = width.bit_length() - 1
        reader = m.submodules.reader = UbReader(width)
        writer = m.submodules.writer = LineWriter(width)
        fork = m.submodules.fork = RowFork({
            "read": read_branch(width, ROW_QUEUE),
            # Both rows start on a line and W divides it, so the destination row is as
            # many words as the source row.
            "write": (LineRow, DATA_QUEUE,
                      lambda row: {"first": row.gm_addr[:UB_ADDR_BITS] >> shift,
                                   "words_m1": row.ub_words_m1, "cmd_last": row.last}),
        })
        wiring.connect(m, fork.read, reader.rows)
        wiring.connect(m, fork.write, writer.rows)
        wiring.connect(m, reader.words, writer.data)
        return fork, reader, writer

    def _aligned(self, m):
        """W > 32: the words pass the aligner; the pad stage writes the row's bytes."""
        writer = m.submodules.writer = PadInserter(self._width)
        fork, reader, aligner = ub_source(
            m, self._width, lambda row: row.gm_addr, DATA_QUEUE, ROW_QUEUE,
            write=(PadRow, DATA_QUEUE,
                   lambda row: {"ub_addr": row.gm_addr[:UB_ADDR_BITS], "length": row.length,
                                "extent": row.length, "last": row.last}))
        wiring.connect(m, fork.write, writer.rows)
        wiring.connect(m, aligner.dst, writer.data)
        return fork, reader, writer
