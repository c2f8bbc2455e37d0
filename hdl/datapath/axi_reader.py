"""MTE2's GM side: reads byte-exact rows from GM over AXI4 as bus words."""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import GM_ADDR_BITS
from ..lib.axi import AXI4ReadSignature, resp_is_error
from ..lib.queue import BypassQueue, pass_or_queue
from ..lib.register_copy import RegisterCopy
from .legalizer import GmRow, issue_rows


def read_beat_layout(width_bytes):
    """One bus word of a row as read from GM."""
    return data.StructLayout({
        "data": 8 * width_bytes,
        "row_last": 1,                  # last word of the row
        "cmd_last": 1,                  # last word of the command's last row
        "error": 1,                     # the word came back with SLVERR or DECERR
        "err_addr": GM_ADDR_BITS,       # first byte of the word's burst, as issued
    })


class AxiReader(wiring.Component):
    """Reads each row's W-aligned words floor(addr/W) .. floor((addr+length-1)/W).

    Ports:
      rows   In  stream of GmRow
      axi    Out AXI4ReadSignature(40, 8*W, id_width), master
      beats  Out stream of read_beat_layout(W), the words of the rows in order

    Rows become legal bursts (BurstSplitter), issued with ARID = sid and ARCACHE = cache;
    at most `max_outstanding` bursts are on the bus at once, so up to that many memory
    latencies overlap. An R word is on `beats` in the cycle it is on R when no earlier
    word waits (so `beats` follows R combinationally); words not taken at once wait in a
    small queue, whose room is RREADY (a register), and leave it one per cycle. ARVALID
    for a row's first burst rises one clock edge after the edge that takes the row.
    """

    def __init__(self, width_bytes=32, max_outstanding=8, id_width=4):
        self._width = width_bytes
        self._max_outstanding = max_outstanding
        self._id_width = id_width
        self.beat_layout = read_beat_layout(width_bytes)
        super().__init__({
            "rows": In(stream.Signature(GmRow)),
            "axi": Out(AXI4ReadSignature(GM_ADDR_BITS, 8 * width_bytes, id_width)),
            "beats": Out(stream.Signature(self.beat_layout)),
        })

    def elaborate(self, platform):
        m = Module()
        axi = self.axi
        _, issuer = issue_rows(m, self.rows, axi, "ar", self._width, self._max_outstanding,
                               self._id_width)

        # R words of one ID arrive in issue order, so the oldest unfinished burst is the
        # one each word belongs to. A word offered while none waits goes straight on to
        # `beats`; one that is not taken at once waits in a small queue, whose room is
        # RREADY. The queue's room, its output word and "a word waits" (its output is
        # valid) are registers, so `beats` is one mux from flip-flops or R; a copy of
        # "a word waits" selects the payload.
        burst = issuer.resp.payload
        words = m.submodules.words = BypassQueue(width=self.beat_layout.size, depth=3)
        word = Signal(self.beat_layout)
        waiting_select = RegisterCopy(1)
        m.submodules.waiting_select = waiting_select
        m.d.comb += waiting_select.d.eq(words.r_rdy_next)
        accept = axi.rvalid & axi.rready
        m.d.comb += [
            axi.rready.eq(words.w_rdy),
            word.data.eq(axi.rdata),
            word.row_last.eq(axi.rlast & burst.last_of_row),
            word.cmd_last.eq(axi.rlast & burst.last),
            word.error.eq(resp_is_error(axi.rresp)),
            word.err_addr.eq(burst.addr),
            issuer.resp.ready.eq(accept & axi.rlast),
        ]
        pass_or_queue(m, words, axi.rvalid, word, self.beats, select=waiting_select.q)
        return m
