"""The free inputs a harness gives its block: values, streams that keep the stream rules,
GM rows as the address generator sends them, and an AXI slave; and a block's stand-in
whose outputs are free."""

from amaranth.hdl import Array, Cat, Module, Mux, Signal, Value
from amaranth.asserts import AnySeq
from amaranth.lib import wiring
from amaranth.lib.wiring import Flow
from amaranth.utils import exact_log2

from hdl.datapath.legalizer import first_split
from model.isa import GM_ADDR_BITS

from .props import assume, stream_rule


def free(m, *values):
    """Drives each of `values` with a free value on every cycle."""
    for value in values:
        m.d.comb += value.eq(AnySeq(len(value)))


def free_ports(m, component, flow):
    """Drives every port of `component` whose flow (as the component sees it) is `flow`
    with a free value: `Flow.In` for a block's inputs, `Flow.Out` for a stand-in's
    outputs."""
    for _, member, value in component.signature.flatten(component):
        if member.flow == flow:
            free(m, Value.cast(value))


class FreeOutputs(wiring.Component):
    """`block`'s ports, every output free on every cycle: with it in the block's place,
    every run of the design is a run of the harness."""

    def __init__(self, block):
        super().__init__(block.signature)

    def elaborate(self, platform):
        m = Module()
        free_ports(m, self, Flow.Out)
        return m


def free_stream(m, name, stream, payload=None):
    """`stream` (an In stream of the block) offered by a producer that keeps the rules,
    on its payload or the part of it given as `payload`."""
    free(m, stream.valid, Value.cast(stream.payload))
    stream_rule(m, assume, name, stream, payload)


def free_rows(m, rows, width_bytes):
    """GmRows as the address generator sends them: length >= 1, inside GM, the first split
    worked out, `new_sid` set when the sid differs from the row before. Returns the sid
    of the last row taken."""
    free_stream(m, "rows", rows)
    row = rows.payload
    split = first_split(row.addr, row.length, width_bytes)
    previous_sid = Signal.like(row.sid, name="previous_sid")
    with m.If(rows.valid & rows.ready):
        m.d.sync += previous_sid.eq(row.sid)
    assume(m, "rows_not_empty", ~rows.valid | (row.length != 0))
    # The checker's GM_RANGE rule: no row runs past the end of GM.
    assume(m, "rows_inside_gm", ~rows.valid | (row.addr + row.length <= 1 << GM_ADDR_BITS))
    for name, value in split.items():
        assume(m, f"rows_split_{name}", ~rows.valid | (row.split[name] == value))
    assume(m, "rows_new_sid", ~rows.valid | (row.new_sid == (row.sid != previous_sid)))
    return previous_sid


def free_slave(m, axi, driven=()):
    """Whatever a slave drives, free, but the signals named in `driven`, which the caller
    drives; the checker constrains the slave to AXI4."""
    for name, member in axi.signature.members.items():
        if member.flow.name == "In" and name not in driven:
            free(m, getattr(axi, name))


def timely_slave(m, axi, checker, stalls=0):
    """A slave that holds the master up on at most `stalls` cycles in all: AR, AW and W
    ready, an R beat on a cycle a read burst is outstanding, RLAST on the burst's last
    beat by its ARLEN, and a B response on a cycle a burst whose AW and last W beat have
    gone awaits one, each on every such cycle but those it chooses to stall (a cycle it
    holds back any of them). Data, responses and IDs are free. `checker` is the
    Axi4MasterChecker added on `axi`, whose counts of the bursts outstanding this
    reads."""
    free_slave(m, axi, driven=("arready", "awready", "wready", "rvalid", "rlast", "bvalid"))
    # The lengths of the read bursts outstanding, in a ring of the checker's size, each
    # in the slot its burst number (the checker's counts) picks.
    lengths = Array(Signal(8, name=f"slave_arlen_{k}") for k in range(checker.ring))
    slot_bits = exact_log2(checker.ring)
    beat = Signal(8, name="slave_r_beat")
    with m.If(axi.arvalid & axi.arready):
        m.d.sync += lengths[checker.reads_issued[:slot_bits]].eq(axi.arlen)
    with m.If(axi.rvalid & axi.rready):
        m.d.sync += beat.eq(Mux(axi.rlast, 0, beat + 1))
    waits = {"arready": axi.arvalid, "awready": axi.awvalid, "wready": axi.wvalid,
             "rvalid": checker.reads_outstanding != 0,
             "bvalid": checker.writes_awaiting_b != 0}
    given = _stalled_at_most(m, waits, stalls)
    m.d.comb += axi.rlast.eq(beat == lengths[checker.reads_finished[:slot_bits]])
    # A response goes out only for a burst awaiting it, and stays until taken (the
    # checker's stream rule on R and B).
    for name, waited_for in waits.items():
        m.d.comb += getattr(axi, name).eq(
            given[name] & waited_for if name in ("rvalid", "bvalid") else given[name])


def _stalled_at_most(m, waits, stalls):
    """Per handshake of `waits` (its name: the condition on which the master waits for
    it), whether the slave gives it: always, but on at most `stalls` cycles in all on
    which it holds back one or more that the master waits for."""
    if stalls == 0:
        return {name: 1 for name in waits}
    used = Signal(range(stalls + 1), name="slave_stalls_used")
    exhausted = used == stalls
    given = {name: Signal(name=f"slave_gives_{name}") for name in waits}
    for signal in given.values():
        m.d.comb += signal.eq(AnySeq(1) | exhausted)
    stalled = Cat(waited_for & ~given[name] for name, waited_for in waits.items()).any()
    with m.If(stalled):
        m.d.sync += used.eq(used + 1)
    return given
