"""Event flags between the engine's pipes (set_flag / wait_flag)."""

from amaranth.hdl import C, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from model.isa import EVENT_ID_BITS, Pipe

from .intake import ENGINE_PIPES
from .muxes import mux_tree
from .register_copy import RegisterCopy


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
    for one cycle, the cycle after the flag was consumed; the pipe drops `valid` after it."""
    def __init__(self):
        super().__init__({
            "valid": Out(1),
            "pipe": Out(Pipe),
            "event": Out(EVENT_ID_BITS),
            "granted": In(1),
        })


def _kept_mux(m, choices, index, name):
    """choices[index] as 4:1 muxes on two index bits at a time (a LUT level each, with
    the slice's PFUMX), each output a wire marked `keep`: without them ABC maps the
    grant's 64:1 choice and its gate into a chain of six or seven LUTs."""
    level = 0
    while len(choices) > 1:
        bits = index[2 * level:2 * level + 2]
        size = 1 << len(bits)
        picked = []
        for k in range(0, len(choices), size):
            out = Signal(name=f"{name}_l{level}_{k // size}", attrs={"keep": 1})
            m.d.comb += out.eq(mux_tree(choices[k:k + size], bits))
            picked.append(out)
        choices, level = picked, level + 1
    return choices[0]


def _port_name(kind, pipe):
    return f"{kind}_{pipe.name.lower()}"


class EventFlags(wiring.Component):
    """One counter per (src pipe, dst pipe, event id), src and dst among MTE2, MTE3, V.

    `set_<src>` with (dst, event) adds one to counter (src, dst, event); `wait_<dst>` with
    (src, event) is granted when counter (src, dst, event) is non-zero and takes one off
    it. A set and a grant of the same counter in one cycle cancel out.

    Timing: both sides are registered, so neither the pipes' command decoding nor the
    counters' lookup reaches across the engine in one cycle. A set is taken into a
    register and counts on the next edge; a wait is decided on a cycle it is valid and its
    counter is non-zero (the flag is consumed on that edge), and `granted` is a register,
    high the next cycle, during which the same waiter is not decided again. So a wait on a
    counter that is zero is granted at the earliest two cycles after its set, and a pipe's
    successive waits at most every other cycle. The port's `granted` is a `RegisterCopy`
    of the register this block decides with, so it sits by the pipe's command handshake,
    which it feeds, and not by the counters.

    Each counter holds up to `depth` outstanding sets (default 7, three bits): a correctly
    synchronised program sets a flag again only after the matching wait, or keeps a few
    (double or triple buffering) in flight. A set beyond `depth` is lost (saturation).

    A flag whose other side is Pipe.EXTERNAL (a pipe this engine does not have) does
    nothing: such a set changes no counter and such a wait is granted at once (the next
    cycle, as any grant).
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
        sets = {src: self._registered_set(m, src) for src in ENGINE_PIPES}
        for dst in ENGINE_PIPES:
            waiter = getattr(self, _port_name("wait", dst))
            # `granted` also keeps the waiter, which still shows the consumed wait, from
            # being decided twice.
            granted = Signal(name=f"granted_{dst.name.lower()}")
            decide = waiter.valid & ~granted
            # Whether the named counter is non-zero is a register per counter, and which
            # one is named is a mux of them by (pipe, event) alone, so the grant is that
            # mux and one gate with `decide`, not a compare and an OR over the counters:
            # per source pipe, kept muxes by the event, then one by the pipe.
            by_src = []
            for src in sorted(Pipe):
                if src in sets:
                    nonzero = [self._counter(m, sets[src], waiter, decide, src, dst, event)
                               for event in range(1 << EVENT_ID_BITS)]
                    by_src.append(_kept_mux(m, nonzero, waiter.event,
                                            f"hit_{src.name.lower()}_{dst.name.lower()}"))
                else:
                    by_src.append(C(1))
            hit = mux_tree(by_src, waiter.pipe)
            m.d.sync += granted.eq(decide & hit)
            copy = m.submodules[f"granted_{dst.name.lower()}_copy"] = RegisterCopy(1)
            m.d.comb += [copy.d.eq(decide & hit), waiter.granted.eq(copy.q)]
        return m

    def _counter(self, m, setter, waiter, decide, src, dst, event):
        """Counter (src, dst, event); returns its "non-zero" register."""
        count = Signal(range(self.depth + 1), name=f"flag_{src.name}_{dst.name}_{event}")
        nonzero = Signal(name=f"flag_{src.name}_{dst.name}_{event}_nonzero")
        inc = setter.valid & (setter.pipe == dst) & (setter.event == event)
        dec = decide & (waiter.pipe == src) & (waiter.event == event) & nonzero
        with m.If(inc & ~dec & (count != self.depth)):
            m.d.sync += [count.eq(count + 1), nonzero.eq(1)]
        with m.Elif(dec & ~inc):
            m.d.sync += [count.eq(count - 1), nonzero.eq(count != 1)]
        return nonzero

    def _registered_set(self, m, src):
        """The set port of `src`, one cycle later."""
        setter = getattr(self, _port_name("set", src))
        held = FlagSetSignature().create(path=(f"set_{src.name.lower()}_held",))
        m.d.sync += [held.valid.eq(setter.valid), held.pipe.eq(setter.pipe),
                     held.event.eq(setter.event)]
        return held
