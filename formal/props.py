"""Helpers every harness uses: named properties, past values, stream rules."""

from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from unittest import mock

from amaranth.asserts import AnyConst
from amaranth.hdl import Assert, Assume, C, Cat, Fragment, Mux, Shape, Signal, Value
from amaranth.lib import data
from amaranth.utils import ceil_log2


class _CycleLate:
    """Whether `prop` also assumes each test a cycle late (each_also_assumed_a_cycle_late)."""
    on = False


# What names the assumption `prop` adds beside a property in such a harness.
A_CYCLE_LATE = " held the cycle before"


def prop(m, name, test):
    """Asserts `test` on every cycle. `name` is the property's name, written into the
    RTLIL check cell, so a failing proof reports it."""
    m.d.comb += Assert(test, name)
    if _CycleLate.on:
        # On the first cycle after reset the register's reset value, so nothing is
        # assumed of a state before reset.
        held = Signal(init=1, name="held_the_cycle_before")
        m.d.sync += held.eq(test)
        m.d.comb += Assume(held, name + A_CYCLE_LATE)


@contextmanager
def each_also_assumed_a_cycle_late():
    """While a harness is built inside it, each `prop` also assumes its test as it was
    on the cycle before. A proof of some of the properties that leaves the others'
    asserts out (runner.Proof.split) takes them as known up to the cycle before, not on
    the cycle it checks, so no two properties prove each other."""
    _CycleLate.on = True
    try:
        yield
    finally:
        _CycleLate.on = False


def assume(m, name, test):
    m.d.comb += Assume(test, name)


def past(m, value, name=None):
    """`value` as it was on the cycle before (its reset value after a reset)."""
    value = Value.cast(value)
    held = Signal.like(value, name=name or "past")
    m.d.sync += held.eq(value)
    return held


def counter(m, name, step, width):
    """How many cycles `step` was high, modulo 2^width."""
    count = Signal(width, name=name)
    m.d.sync += count.eq(count + step)
    return count


@dataclass(frozen=True)
class Followed:
    """A free-but-fixed item number and the payload of the item last taken with it."""
    number: Value
    payload: Value


def follow(m, name, stream, taken):
    """Follows a free-but-fixed number among the items `stream` takes, numbered by
    `taken` (the items taken before, modulo 2^len(taken)): as ZipCPU's any-byte proofs
    do, a property of that one item stands for every item."""
    number = Signal(len(taken), name=f"followed_{name}")
    m.d.comb += number.eq(AnyConst(len(taken)))
    payload = Signal.like(stream.payload, name=f"followed_{name}_payload")
    with m.If(stream.valid & stream.ready & (taken == number)):
        m.d.sync += payload.eq(stream.payload)
    return Followed(number, payload)


def wrap_add(ptr, offset, slots):
    """(ptr + offset) modulo `slots`, for ptr < slots and offset <= slots: by a compare and
    a subtraction, as a divider is the solver's slowest circuit."""
    total = ptr + offset
    return Mux(total >= slots, total - slots, total)


def distance(ptr, start, slots):
    """How many steps round a ring of `slots` the slot `ptr` is past `start`."""
    return Mux(ptr >= start, ptr - start, ptr + slots - start)


def stalled(m, stream):
    """High on every cycle after one on which `stream` offered and was not taken."""
    return past(m, stream.valid & ~stream.ready, name="stalled")


def stream_rule(m, check, name, stream, payload=None):
    """The stream rules for one side of `stream`: once valid, valid stays high with the
    payload (or the part of it given as `payload`) unchanged until ready. `check` is
    `prop` for a stream the block drives and `assume` for one its neighbour drives."""
    was_waiting = stalled(m, stream)
    payload = Value.cast(stream.payload if payload is None else payload)
    before = past(m, payload, name=f"{name}_payload_before")
    check(m, f"{name}_valid_held_until_ready", ~was_waiting | stream.valid)
    check(m, f"{name}_payload_stable_until_ready", ~was_waiting | (payload == before))


def on_lane(name, member, lane):
    """Member `name` of a bus word with its `data` (bytes) and `strb` (a bit a byte) cut to
    byte lane `lane`, others whole. A property of a free-but-fixed lane (AnyConst) holds
    on every lane; the solver works it out for one lane's bits, not the bus's 1024."""
    if name == "data":
        return member.word_select(lane, 8)
    if name == "strb":
        return member.bit_select(lane, 1)
    return member


def payload_on_lane(payload, lane):
    """A stream's payload (a View) with its members cut to byte lane `lane` (on_lane)."""
    return Cat(*(on_lane(name, payload[name], lane)
                 for name, _ in data.Layout.cast(payload.shape())))


def add_block(m, name, block, mutation=None):
    """Adds `block` to the harness as submodule `name`, elaborated under `mutation`'s
    patches (a Mutation, or None for the block as it is)."""
    with ExitStack() as stack:
        for target, attribute, replacement in (mutation.patches if mutation else ()):
            stack.enter_context(mock.patch.object(target, attribute, replacement))
        m.submodules[name] = Fragment.get(block, None)
    return block


def registers(fragment):
    """The registers a block's own elaborate() drives, by name: an induction invariant
    ties the harness's state to them, which the block keeps local to elaborate()."""
    return {signal.name: signal
            for statement in fragment.statements.get("sync", ())
            for signal in statement._lhs_signals()}


def registers_in_order(fragment):
    """The registers a block's own elaborate() drives, each once, in the order its
    statements drive them: names may repeat (registers() keeps the last of a name), so
    two elaborations of a block are matched register by register in this order."""
    ordered = {}
    for statement in fragment.statements.get("sync", ()):
        for signal in statement._lhs_signals():
            ordered.setdefault(id(signal), signal)
    return list(ordered.values())


def combinational(fragment):
    """The signals a block's own elaborate() drives combinationally, by name: a harness
    paces its record by a block's internal events (a row made), which no port shows."""
    return {signal.name: signal
            for statement in fragment.statements.get("comb", ())
            for signal in statement._lhs_signals()}


def child(fragment, *path):
    """The fragment of the submodule at `path` (names, outermost first) of `fragment`."""
    for name in path:
        fragment = next(sub for sub, sub_name, _ in fragment.subfragments if sub_name == name)
    return fragment


def memory_rows(memory):
    """Each row of `memory` (a MemoryInstance fragment, such as `child(queue, "storage")`),
    read by a port of its own: an induction invariant speaks of the entries a queue
    holds, which no register of the block names."""
    contents = memory._data
    rows = []
    for index in range(contents.depth):
        row = Signal(Shape.cast(contents.shape), name=f"{contents.name}_row_{index}")
        memory.read_port(domain="comb", addr=C(index, ceil_log2(contents.depth)), data=row,
                         en=C(1, 1), transparent_for=())
        rows.append(row)
    return rows
