"""Event flags between the engine's pipes (set_flag / wait_flag)."""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from model.isa import EVENT_ID_BITS, Pipe

from .intake import ENGINE_PIPES


class FlagSetSignature(wiring.Signature):
    """A pipe's set_flag port (Out from the pipe): a one-cycle `valid` pulse per set_flag.
    `pipe` is the flag's other side (its dst_pipe), `event` its event id."""
    def __init__(self):
        super().__init__({
            "valid": Out(1),
            "pipe": Out(Pipe),
            "event": Out(EVENT_ID_BITS),
        })


class FlagWaitSignature(wiring.Signature):
    """A pipe's wait_flag port (Out from the pipe): `valid` is held until `granted`.
    `pipe` is the flag's other side (its src_pipe), `event` its event id. `granted` is high
    for one cycle, the cycle the flag is consumed; the pipe drops `valid` after it."""
    def __init__(self):
        super().__init__({
            "valid": Out(1),
            "pipe": Out(Pipe),
            "event": Out(EVENT_ID_BITS),
            "granted": In(1),
        })


def _port_name(kind, pipe):
    return f"{kind}_{pipe.name.lower()}"


class EventFlags(wiring.Component):
    """One counter per (src pipe, dst pipe, event id), src and dst among MTE2, MTE3, V.

    `set_<src>` with (dst, event) adds one to counter (src, dst, event); `wait_<dst>` with
    (src, event) is granted on a cycle where counter (src, dst, event) is non-zero and
    takes one off it. A set and a grant of the same counter in one cycle cancel out; a
    wait on a counter that is zero is granted at the earliest the cycle after the set.

    Each counter holds up to `depth` outstanding sets (default 7, three bits): a correctly
    synchronised program sets a flag again only after the matching wait, or keeps a few
    (double or triple buffering) in flight. A set beyond `depth` is lost (saturation).

    A flag whose other side is Pipe.EXTERNAL (a pipe this engine does not have) does
    nothing: such a set changes no counter and such a wait is granted at once.
    """

    def __init__(self, depth=7):
        self.depth = depth
        members = {}
        for pipe in ENGINE_PIPES:
            members[_port_name("set", pipe)] = In(FlagSetSignature())
            members[_port_name("wait", pipe)] = In(FlagWaitSignature())
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        for src in ENGINE_PIPES:
            setter = getattr(self, _port_name("set", src))
            for dst in ENGINE_PIPES:
                waiter = getattr(self, _port_name("wait", dst))
                for event in range(1 << EVENT_ID_BITS):
                    count = Signal(range(self.depth + 1),
                                   name=f"flag_{src.name}_{dst.name}_{event}")
                    inc = setter.valid & (setter.pipe == dst) & (setter.event == event)
                    dec = (waiter.valid & (waiter.pipe == src) & (waiter.event == event)
                           & (count != 0))
                    with m.If(dec):
                        m.d.comb += waiter.granted.eq(1)
                    with m.If(inc & ~dec & (count != self.depth)):
                        m.d.sync += count.eq(count + 1)
                    with m.Elif(dec & ~inc):
                        m.d.sync += count.eq(count - 1)
        for dst in ENGINE_PIPES:
            waiter = getattr(self, _port_name("wait", dst))
            with m.If(waiter.valid & (waiter.pipe == Pipe.EXTERNAL)):
                m.d.comb += waiter.granted.eq(1)
        return m
