"""Event flags between the engine's pipes (set_flag / wait_flag)."""

from amaranth.hdl import C, Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from model.isa import EVENT_ID_BITS, FLAG_DEPTH, Pipe

from ..lib.muxes import mux_tree
from ..lib.register_copy import RegisterCopy
from ..intake.intake import ENGINE_PIPES


class FlagSetSignature(wiring.Signature):
    """A pipe's set_flag port (Out from the pipe): `valid` is held until `counted`, and
    low on the cycle `counted` is high. `pipe` is the flag's other side (its dst_pipe),
    `event` its event id. `counted` is high for one cycle, the cycle after the set was
    counted; the pipe drops the set_flag after it."""
    def __init__(self):
        super().__init__({
            "valid": Out(1),
            "pipe": Out(Pipe),
            "event": Out(EVENT_ID_BITS),
            "counted": In(1),
        })


class FlagWaitSignature(wiring.Signature):
    """A pipe's wait_flag port (Out from the pipe): `valid` is held, with the same `pipe`
    and `event`, until `granted`.
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


class _Counter:
    """Counter (src, dst, event) as registers: the count, whether it is non-zero (a wait
    on it may be granted) and whether it has room (a set on it may be counted)."""
    def __init__(self, depth, src, dst, event):
        name = f"flag_{src.name}_{dst.name}_{event}"
        self.depth = depth
        self.count = Signal(range(depth + 1), name=name)
        self.nonzero = Signal(name=f"{name}_nonzero")
        self.room = Signal(init=1, name=f"{name}_room")

    def update(self, m, inc, dec):
        """`inc` only with room, `dec` only when non-zero; both at once cancel out."""
        with m.If(inc & ~dec):
            m.d.sync += [self.count.eq(self.count + 1), self.nonzero.eq(1),
                         self.room.eq(self.count != self.depth - 1)]
        with m.Elif(dec & ~inc):
            m.d.sync += [self.count.eq(self.count - 1), self.nonzero.eq(self.count != 1),
                         self.room.eq(1)]


class EventFlags(wiring.Component):
    """One counter per (src pipe, dst pipe, event id), src and dst among MTE2, MTE3, V.

    `set_<src>` with (dst, event) is counted when counter (src, dst, event) has room, and
    adds one to it; `wait_<dst>` with (src, event) is granted when counter (src, dst, event)
    is non-zero, and takes one off it. A set counted and a grant taken off one counter on
    one edge cancel out. Each counter holds up to `depth` outstanding sets: a set on a
    full counter waits, holding its pipe, until a wait takes one off, so no set is lost
    however far a pipe runs ahead of the pipe that waits on it.

    Timing: the counters' lookups never start at the pipes' command decoding, and
    counting a set is one gate from registers. A set is taken into a register, the room
    of the counter it names is looked up from there into another, and the set is counted
    on the next edge it is held with room looked up for it the cycle before. `counted`
    is a register, high the cycle after; the held register still shows the same set
    then, which `counted` keeps from being counted again, and the pipe offers no set
    that cycle, so no two sets are taken for one. So a pipe's set_flag takes five cycles
    (the pipe takes the command the cycle after `counted`), and a wait on a counter that
    is zero is granted at the earliest four cycles after its set was offered. A wait is
    taken into a register of the flags' own too, and decided from it on every cycle it
    holds a wait shown the cycle before and not granted since: it is granted if its
    counter is non-zero. `granted` is a register, high the cycle after the decision, so
    a wait shown at cycle t is granted at t + 2 at the earliest, and a pipe's successive
    waits at most every third cycle. The counter takes the flag off on the edge after
    `granted` shows, from that register and the wait's held (pipe, event), so neither
    the grant's lookup nor the counters' update starts at the pipe's command queue. Only
    that waiter takes off that counter, and it is not decided again before then, so no
    wait sees a flag already granted; a set held on a full counter sees the place freed
    in its room lookup the cycle after the edge. The ports' `counted` and `granted` are
    `RegisterCopy`s of the registers this block decides with, so they sit by the pipe's
    command handshake, which they feed, and not by the counters.

    A flag whose other side is Pipe.EXTERNAL (a pipe this engine does not have) does
    nothing: such a set changes no counter and such a wait is granted at once (two cycles
    after it shows, as any wait at the earliest).
    """

    def __init__(self, depth=FLAG_DEPTH):
        self.depth = depth
        members = {}
        for pipe in ENGINE_PIPES:
            members[_port_name("set", pipe)] = In(FlagSetSignature())
            members[_port_name("wait", pipe)] = In(FlagWaitSignature())
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        counters = {(src, dst, event): _Counter(self.depth, src, dst, event)
                    for src in ENGINE_PIPES for dst in ENGINE_PIPES
                    for event in range(1 << EVENT_ID_BITS)}
        setters = {src: self._registered_set(m, src) for src in ENGINE_PIPES}
        waiters = {dst: getattr(self, _port_name("wait", dst)) for dst in ENGINE_PIPES}
        counting = {src: self._count_set(m, setter, src, counters)
                    for src, setter in setters.items()}
        consumed = {dst: self._grant_wait(m, waiter, dst, counters)
                    for dst, waiter in waiters.items()}
        for (src, dst, event), counter in counters.items():
            setter, (granted, pipe, event_id) = setters[src], consumed[dst]
            counter.update(
                m,
                inc=counting[src] & (setter.pipe == dst) & (setter.event == event),
                dec=granted & (pipe == src) & (event_id == event))
        return m

    def _count_set(self, m, setter, src, counters):
        """Whether `src`'s held set is counted this cycle: it was held the cycle before
        too, and then its counter had room. The counter's room, looked up a cycle ahead
        into a register, leaves the counting one gate from registers. It cannot have
        gone since: only `src`'s own sets fill the counter, and the one counted last
        cycle shows `counted` now, which keeps the same set from being counted again."""
        name = src.name.lower()
        held_before = Signal(name=f"set_{name}_held_before")
        room = Signal(name=f"set_{name}_room")
        m.d.sync += [
            held_before.eq(setter.valid),
            room.eq(self._lookup(m, setter.pipe, setter.event, "set", src,
                                 lambda dst, event: counters[src, dst, event].room)),
        ]
        counted, counted_copy = self._answer(m, "set", src, "counted")
        counting = setter.valid & held_before & room & ~counted
        m.d.sync += counted.eq(counting)
        m.d.comb += counted_copy.eq(counting)
        return counting

    def _grant_wait(self, m, waiter, dst, counters):
        """`dst`'s wait is decided from the flags' own copy of it, a register: on a cycle
        that copy holds a wait shown the cycle before, not granted then and not shown
        `granted` since, it is granted if its counter is non-zero. So the grant's lookup
        starts at registers by the flags, not at the pipe's command queue. The pipe holds
        a wait until `granted`, so the copy holds the same wait on the cycle it shows
        `granted`: returns that cycle's registers, which its counter takes one off with,
        whether a wait was granted and its (src pipe, event)."""
        name = dst.name.lower()
        # A RegisterCopy: the pipe's set and wait take their pipe and event from the same
        # command bits, and Yosys would merge this register with the set's held one.
        held = m.submodules[f"wait_{name}_held"] = RegisterCopy(len(waiter.pipe)
                                                                + EVENT_ID_BITS)
        held_pipe = Signal(Pipe, name=f"wait_{name}_held_pipe")
        held_event = Signal(EVENT_ID_BITS, name=f"wait_{name}_held_event")
        m.d.comb += [held.d.eq(Cat(waiter.pipe, waiter.event)),
                     Cat(held_pipe, held_event).eq(held.q)]
        pending = Signal(name=f"wait_{name}_pending")
        granted, granted_copy = self._answer(m, "wait", dst, "granted")
        hit = self._lookup(m, held_pipe, held_event, "wait", dst,
                           lambda src, event: counters[src, dst, event].nonzero)
        granting = pending & hit
        m.d.sync += [granted.eq(granting),
                     pending.eq(waiter.valid & ~granting & ~granted)]
        m.d.comb += granted_copy.eq(granting)
        return granted, held_pipe, held_event

    def _lookup(self, m, other_pipe, event_id, kind, pipe, ready):
        """`ready(other pipe, event)` of the counter (`other_pipe`, `event_id`) names.
        Whether each counter is ready is a register, and which one is named is a mux of
        them by (pipe, event) alone: per other pipe, kept muxes by the event, then one by
        the pipe. A pipe this engine does not have is always ready."""
        by_other = []
        for other in sorted(Pipe):
            if other in ENGINE_PIPES:
                choices = [ready(other, event) for event in range(1 << EVENT_ID_BITS)]
                by_other.append(_kept_mux(m, choices, event_id,
                                          f"{kind}_{other.name.lower()}_{pipe.name.lower()}"))
            else:
                by_other.append(C(1))
        return mux_tree(by_other, other_pipe)

    def _answer(self, m, kind, pipe, answer):
        """The register this block decides `pipe`'s `kind` requests with, and the input of
        the `RegisterCopy` of it that the port `answer` shows; the caller drives both with
        the register's next value."""
        name = f"{answer}_{pipe.name.lower()}"
        copy = m.submodules[f"{name}_copy"] = RegisterCopy(1)
        m.d.comb += getattr(getattr(self, _port_name(kind, pipe)), answer).eq(copy.q)
        return Signal(name=name), copy.d

    def _registered_set(self, m, src):
        """The set port of `src`, one cycle later."""
        setter = getattr(self, _port_name("set", src))
        held = FlagSetSignature().create(path=(f"set_{src.name.lower()}_held",))
        m.d.sync += [held.valid.eq(setter.valid), held.pipe.eq(setter.pipe),
                     held.event.eq(setter.event)]
        return held
