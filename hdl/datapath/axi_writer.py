"""MTE3's GM side: writes byte-exact rows to GM over AXI4 from strobed bus words."""

from amaranth.hdl import Cat, Module, Mux, Shape, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import GM_ADDR_BITS, ErrorCode
from ..lib.axi import AXI4WriteSignature, resp_is_error
from ..lib.kept_lut import KeptLut, truth_table
from ..lib.queue import BypassQueue, pass_or_queue
from ..layouts import COPY_SEQ_BITS, AbortSignature, Completion
from .legalizer import GmRow, issue_rows


def write_beat_layout(width_bytes):
    """One GM-aligned bus word to write; strobe bit i enables byte i."""
    return data.StructLayout({"data": 8 * width_bytes, "strb": width_bytes})


def _word_goes(valid, planned, wready):
    """A W word is sent: offered, its burst known, and taken."""
    return valid & planned & wready


class _WordPlan(data.Struct):
    """What W needs of a burst: its AxLEN (words - 1), and whether it is one word."""
    axlen: 8
    single: 1


class AxiWriter(wiring.Component):
    """Writes each row from its ceil(((addr % W) + length) / W) words on `beats`.

    Ports:
      rows   In  stream of GmRow
      beats  In  stream of write_beat_layout(W): each row's GM-aligned words in order,
                 strobes set for exactly the row's bytes
      axi    Out AXI4WriteSignature(40, 8*W, id_width), master
      done   Out stream of Completion, one per command, after the B response of its last
                 burst: BUS_ERROR with the first failing burst's first byte address if any
                 burst of the command got SLVERR or DECERR, else NONE with address 0
      abort  Out AbortSignature: a one-cycle request for each SLVERR or DECERR B response,
                 naming its command (commands counted from 0 since reset)

    Rows become legal bursts (BurstSplitter), issued with AWID = sid, AWCACHE = cache; at
    most `max_outstanding` bursts await their B response. A burst's W words go out as soon
    as the burst is queued for AW, possibly before its AW is accepted: AXI4 allows write
    data ahead of its address, and since neither channel waits on the other no slave can
    deadlock them. W is `beats` itself, held back only until its burst is known: WDATA and
    WSTRB are `beats.payload`, WVALID is `beats.valid` once the burst is queued, and
    `beats.ready` is WREADY then; so `beats` should come from registers, as the aligner's
    output does. One word per cycle, and no edge between `beats` and W. B sits behind a
    small FIFO, so BREADY is a register; a Completion is on `done` in the cycle its B
    response is (combinationally from B when no Completion waits), and `abort` for the
    cycle after the edge that accepts the response.

    Every row taken is written in full, and a command's Completion needs its `last` row:
    to cut a command short after `abort`, the producer marks the last row it still sends
    as `last` and supplies that row's words.
    """

    def __init__(self, width_bytes=32, max_outstanding=8, id_width=4):
        self._width = width_bytes
        self._max_outstanding = max_outstanding
        self._id_width = id_width
        self.beat_layout = write_beat_layout(width_bytes)
        super().__init__({
            "rows": In(stream.Signature(GmRow)),
            "beats": In(stream.Signature(self.beat_layout)),
            "axi": Out(AXI4WriteSignature(GM_ADDR_BITS, 8 * width_bytes, id_width)),
            "done": Out(stream.Signature(Completion)),
            "abort": Out(AbortSignature()),
        })

    def elaborate(self, platform):
        m = Module()
        axi = self.axi
        splitter, issuer = issue_rows(m, self.rows, axi, "aw", self._width,
                                      self._max_outstanding, self._id_width)

        # W: each burst the issuer takes queues its word count for W. The queue's output is
        # a register, and so is "the next word is its burst's last" once the burst's first
        # word has gone, so `wlast` and the queue's pop are a LUT from registers. At most
        # `max_outstanding` bursts are unsent, so the queue is never full. Words go out
        # straight from `beats` (no queue: the producer drives it from registers).
        bursts = splitter.bursts
        plans = m.submodules.plans = BypassQueue(
            width=Shape.cast(_WordPlan).width, depth=self._max_outstanding + 1)
        plan_in = _WordPlan(plans.w_data)
        plan = _WordPlan(plans.r_data)
        m.d.comb += [
            plans.w_en.eq(bursts.valid & bursts.ready),
            plan_in.axlen.eq(bursts.payload.axlen),
            plan_in.single.eq(bursts.payload.axlen == 0),
        ]
        first = Signal(init=1)      # the next word is its burst's first
        to_go = Signal(8)           # else: words from the next one to its burst's last
        last_next = Signal()        # else: the next word is its burst's last
        is_last = Mux(first, plan.single, last_next)
        # A word goes, as the plan queue and the word count see it: a cell of its own, so
        # the placer keeps it beside them, away from WVALID's and `beats.ready`'s gates
        # (beside the producer's registers), and only `beats.valid` and WREADY travel.
        sent = m.submodules.sent = KeptLut(3, truth_table(_word_goes, 3))
        m.d.comb += [
            axi.wdata.eq(self.beats.payload.data),
            axi.wstrb.eq(self.beats.payload.strb),
            axi.wlast.eq(is_last),
            axi.wvalid.eq(self.beats.valid & plans.r_rdy),
            self.beats.ready.eq(axi.wready & plans.r_rdy),
            sent.a.eq(Cat(self.beats.valid, plans.r_rdy, axi.wready)),
            plans.r_en.eq(sent.z & is_last),
        ]
        with m.If(sent.z):
            m.d.sync += first.eq(is_last)
            with m.If(first):
                m.d.sync += [to_go.eq(plan.axlen - 1), last_next.eq(plan.axlen == 1)]
            with m.Else():
                m.d.sync += [to_go.eq(to_go - 1), last_next.eq(to_go == 1)]

        # B: responses of one ID come in issue order, one per burst. A command's
        # Completion goes straight on to `done` in the cycle its last burst's response is
        # on B when none waits (so `done` follows B combinationally, as `beats` follows R
        # in the reader); one not taken at once waits in a small queue, whose room is
        # BREADY (a register).
        burst = issuer.resp.payload
        done_fifo = m.submodules.done_fifo = BypassQueue(
            width=Shape.cast(Completion).width, depth=3)
        done = Signal(Completion)
        failed = Signal()                        # an earlier burst of this command failed
        failed_addr = Signal(GM_ADDR_BITS)
        accept = axi.bvalid & axi.bready
        bad = resp_is_error(axi.bresp)
        m.d.comb += [
            axi.bready.eq(done_fifo.w_rdy),
            issuer.resp.ready.eq(accept),
        ]
        pass_or_queue(m, done_fifo, axi.bvalid & burst.last, done, self.done)
        with m.If(failed):
            m.d.comb += [done.error.eq(ErrorCode.BUS_ERROR), done.address.eq(failed_addr)]
        with m.Elif(bad):
            m.d.comb += [done.error.eq(ErrorCode.BUS_ERROR), done.address.eq(burst.addr)]

        command = Signal(COPY_SEQ_BITS)          # the number of the command answered
        m.d.sync += [self.abort.valid.eq(accept & bad), self.abort.copy.eq(command)]
        with m.If(accept):
            with m.If(burst.last):
                m.d.sync += [failed.eq(0), command.eq(command + 1)]
            with m.Elif(bad & ~failed):
                m.d.sync += [failed.eq(1), failed_addr.eq(burst.addr)]
        return m
