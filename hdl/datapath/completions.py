"""Completions of the datapaths that end in a UB write (MTE2, UB->UB)."""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import GM_ADDR_BITS, ErrorCode

from ..lib.queue import BypassQueue
from ..layouts import COPY_SEQ_BITS, AbortSignature, Completion
from .aligner import src_word_layout
from .axi_reader import read_beat_layout


class ReadResults(wiring.Component):
    """Passes the read words on and records, per command, the address of its first
    failing beat; a failing beat asks to abort its command.

    Ports:
      beats    In  stream of axi_reader.read_beat_layout(W): the bus reader's words
      src      Out stream of aligner.src_word_layout(W): the words, on to the aligner
      results  Out stream of Completion: each command's outcome, in command order, once
                   its last word has passed (BUS_ERROR with its first failing beat's
                   burst address, if any)
      abort    Out AbortSignature: two cycles after a failing word passes, its command

    What is recorded of a beat is registered first: the bookkeeping and the results
    queue sit apart from the reader, and a command's result is needed only when its
    last word is written to UB, cycles after its last beat. The queue holds `depth` - 1
    results; the caller keeps no more commands between the words and the results' reader.
    """

    def __init__(self, width_bytes, depth):
        self._depth = depth
        super().__init__({
            "beats": In(stream.Signature(read_beat_layout(width_bytes))),
            "src": Out(stream.Signature(src_word_layout(width_bytes))),
            "results": Out(stream.Signature(Completion)),
            "abort": Out(AbortSignature()),
        })

    def elaborate(self, platform):
        m = Module()
        queue = m.submodules.results = BypassQueue(width=Completion.as_shape().size,
                                                   depth=self._depth)
        beats, beat = self.beats, self.beats.payload
        m.d.comb += [
            self.src.payload.data.eq(beat.data),
            self.src.valid.eq(beats.valid),
            beats.ready.eq(self.src.ready),
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

        m.d.comb += [
            self.results.payload.eq(queue.r_data),
            self.results.valid.eq(queue.r_rdy),
            queue.r_en.eq(self.results.ready),
        ]
        return m


class WriteCompletions(wiring.Component):
    """Reports a copy as complete as its last UB word is written: its Completion is
    offered on the cycle the UB takes that word (if the command's result is known then),
    so the pipe counts it on the same edge.

    Ports:
      written  In  1: a command's last word was written to UB this cycle
      results  In  stream of Completion: each command's outcome, in command order (it may
                   be known before or after the last word is written)
      done     Out stream of Completion: one per `written`, with that command's result

    Up to `pending` written commands wait for `done` to be taken; the pipe controller takes
    every Completion the cycle it is offered, so none waits in the engine. `written` comes
    from registers (the pad stage's output and the UB's `ready`), so `done.valid` is a
    gate of registers.
    """

    def __init__(self, pending=3):
        self._pending = pending
        super().__init__({
            "written": In(1),
            "results": In(stream.Signature(Completion)),
            "done": Out(stream.Signature(Completion)),
        })

    def elaborate(self, platform):
        m = Module()
        waiting = Signal(range(self._pending + 1))
        taken = self.done.valid & self.done.ready
        m.d.comb += [
            self.done.payload.eq(self.results.payload),
            self.done.valid.eq(((waiting != 0) | self.written) & self.results.valid),
            self.results.ready.eq(taken),
        ]
        m.d.sync += waiting.eq(waiting + self.written - taken)
        return m


def write_to_ub(m, ub, words, completions):
    """Drives the UB write port `ub` (layouts.UbWriteSignature) from `words`, a stream of
    pad.ub_write_layout, and tells `completions` (a WriteCompletions) as each command's
    last word is written."""
    out = words.payload
    m.d.comb += [
        ub.addr.eq(out.addr),
        ub.data.eq(out.data),
        ub.strb.eq(out.strb),
        ub.valid.eq(words.valid),
        words.ready.eq(ub.ready),
        completions.written.eq(words.valid & words.ready & out.cmd_last),
    ]
