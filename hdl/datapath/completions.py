"""Completions of the datapaths that end in a UB write (MTE2, UB->UB)."""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import Completion


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
