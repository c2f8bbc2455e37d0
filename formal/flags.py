"""The event flags' contract on one counter, a free-but-fixed (src pipe, dst pipe, event):
no wait on it is granted without a set counted for it (none invented), a set counted
stays until a wait takes it (none lost: a wait on it while sets are counted is granted
within the flags' latency), and a set on it with room is counted within its latency.

The pipes are free within the ports' rules: a set is held, unchanged, until `counted`
(and is not shown on that cycle); a wait is held, unchanged, until `granted`.

Induction closes with an invariant: every counter's `nonzero` and `room` agree with its
count, and the tracked counter holds the sets counted less the grants taken off."""

from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.asserts import AnyConst

from hdl.intake.intake import ENGINE_PIPES
from hdl.pipe import flags
from hdl.pipe.flags import EventFlags, _port_name
from model.isa import EVENT_ID_BITS

from .inputs import free
from .props import add_block, assume, past, prop, registers
from .runner import Mutation

# Cycles from a set shown to `counted`, and from a wait shown to `granted`, when the
# counter allows them: the flags' registered lookups (EventFlags' docstring).
SET_LATENCY = 3
WAIT_LATENCY = 2


def flags_harness(depth):
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", EventFlags(depth), mutation)
        src, dst, event = _tracked_counter(m)
        for pipe in ENGINE_PIPES:
            _free_pipe(m, dut, pipe)
        counted_here, shown_here = _seen(m, dut, "set", "counted", src, dst, event,
                                         answer_follows=True)
        granted_here, waiting_here = _seen(m, dut, "wait", "granted", dst, src, event,
                                           answer_follows=False)
        balance = _balance(m, depth, counted_here, shown_here, granted_here, waiting_here)
        _counters_match(m, registers(m.submodules["dut"]), depth, (src, dst, event),
                        balance + counted_here)
        return m
    return build


def _seen(m, dut, kind, answer, own, other, event, answer_follows):
    """Whether a pipe's `kind` port (set or wait) shows a request on the tracked counter
    (its own pipe `own`, naming `other` and `event`), and whether it has its `answer`.
    A set is no longer shown when `counted` comes (`answer_follows`), so its answer is
    matched with what it showed the cycle before; a wait is still shown with `granted`."""
    answered = Signal(name=f"{kind}_{answer}_here")
    shown = Signal(name=f"{kind}_shown_here")
    for pipe in ENGINE_PIPES:
        port = getattr(dut, _port_name(kind, pipe))
        names_it = (own == pipe) & (port.pipe == other) & (port.event == event)
        if answer_follows:
            names_it_then = past(m, names_it, name=f"{kind}_{pipe.name}_named")
        else:
            names_it_then = names_it
        with m.If(getattr(port, answer) & names_it_then):
            m.d.comb += answered.eq(1)
        with m.If(port.valid & names_it):
            m.d.comb += shown.eq(1)
    return answered, shown


def _tracked_counter(m):
    src = Signal(2, name="tracked_src")
    dst = Signal(2, name="tracked_dst")
    event = Signal(EVENT_ID_BITS, name="tracked_event")
    m.d.comb += [src.eq(AnyConst(2)), dst.eq(AnyConst(2)), event.eq(AnyConst(EVENT_ID_BITS))]
    assume(m, "tracked_pipes_are_engine_pipes", (src < len(ENGINE_PIPES))
           & (dst < len(ENGINE_PIPES)))
    return src, dst, event


def _free_pipe(m, dut, pipe):
    """`pipe`'s set and wait ports driven by a pipe that keeps their rules."""
    name = pipe.name.lower()
    setter = getattr(dut, _port_name("set", pipe))
    waiter = getattr(dut, _port_name("wait", pipe))
    free(m, setter.valid, setter.pipe, setter.event, waiter.valid, waiter.pipe, waiter.event)
    set_flag, wait_flag = Cat(setter.pipe, setter.event), Cat(waiter.pipe, waiter.event)
    set_shown = past(m, setter.valid, name=f"set_{name}_shown_before")
    set_before = past(m, set_flag, name=f"set_{name}_before")
    assume(m, f"set_{name}_not_shown_when_counted", ~(setter.counted & setter.valid))
    assume(m, f"set_{name}_held_until_counted",
           ~set_shown | setter.counted | (setter.valid & (set_flag == set_before)))
    wait_shown = past(m, waiter.valid, name=f"wait_{name}_shown_before")
    wait_granted = past(m, waiter.granted, name=f"wait_{name}_granted_before")
    wait_before = past(m, wait_flag, name=f"wait_{name}_before")
    assume(m, f"wait_{name}_held_until_granted",
           ~wait_shown | wait_granted | (waiter.valid & (wait_flag == wait_before)))
    prop(m, f"set_{name}_counted_only_when_shown", ~setter.counted | set_shown)
    prop(m, f"wait_{name}_granted_only_when_shown", ~waiter.granted | waiter.valid)


def _balance(m, depth, counted, set_shown, granted, wait_shown):
    """The tracked counter's sets counted less its waits granted, as the pipes saw them,
    and the properties on it."""
    balance = Signal(range(depth + 2), name="tracked_balance")
    m.d.sync += balance.eq(balance + counted - granted)
    prop(m, "no_grant_without_a_counted_set", ~granted | (balance != 0))
    prop(m, "sets_counted_within_depth", balance <= depth)
    # A wait shown while a set is counted, and a set shown while there is room, each go
    # on within their latency: neither a set nor its room is lost.
    starving_wait = Signal(range(WAIT_LATENCY + 2), name="wait_starving")
    m.d.sync += starving_wait.eq(Mux(wait_shown & ~granted & (balance != 0),
                                     starving_wait + 1, 0))
    prop(m, "wait_on_a_counted_set_granted_in_time", starving_wait <= WAIT_LATENCY)
    starving_set = Signal(range(SET_LATENCY + 2), name="set_starving")
    m.d.sync += starving_set.eq(Mux(set_shown & ~counted & (balance + 1 < depth),
                                    starving_set + 1, 0))
    prop(m, "set_with_room_counted_in_time", starving_set <= SET_LATENCY)
    return balance


def _counters_match(m, dut, depth, tracked, count):
    """The induction invariant: every counter's flags agree with its count, and the
    tracked counter holds the sets the pipes saw counted less the grants taken off."""
    src, dst, event = tracked
    consistent = []
    by_triple = {}
    for a in ENGINE_PIPES:
        for b in ENGINE_PIPES:
            for e in range(1 << EVENT_ID_BITS):
                name = f"flag_{a.name}_{b.name}_{e}"
                value = dut[name]
                consistent.append((value <= depth) & (dut[f"{name}_nonzero"] == (value != 0))
                                  & (dut[f"{name}_room"] == (value != depth)))
                by_triple[a, b, e] = value
    prop(m, "flag_counters_consistent", Cat(*consistent).all())
    tracked_count = Array(Array(Array(by_triple[a, b, e] for e in range(1 << EVENT_ID_BITS))
                                for b in ENGINE_PIPES) for a in ENGINE_PIPES)
    prop(m, "tracked_counter_holds_the_balance", tracked_count[src][dst][event] == count)


class _SetLostWithGrant(flags._Counter):
    """A counter that, given a set and a grant on one edge, takes one off."""
    def update(self, m, inc, dec):
        super().update(m, inc & ~dec, dec)


class _NonzeroAfterLastGrant(flags._Counter):
    """A counter still shown non-zero after its last set is taken."""
    def update(self, m, inc, dec):
        super().update(m, inc, dec)
        with m.If(dec & ~inc):
            m.d.sync += self.nonzero.eq(1)


FLAGS_MUTATIONS = (
    Mutation("set_lost_with_a_grant", "a set counted on the edge a wait takes one off "
             "is lost", ((flags, "_Counter", _SetLostWithGrant),)),
    Mutation("grant_invented", "a counter stays non-zero after its last set is taken",
             ((flags, "_Counter", _NonzeroAfterLastGrant),)),
)
