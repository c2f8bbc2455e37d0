"""The free inputs a harness gives its block: values, streams that keep the stream rules,
GM rows as the address generator sends them, and an AXI slave."""

from amaranth.hdl import Signal, Value
from amaranth.asserts import AnySeq

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


def free_slave(m, axi):
    """Whatever a slave drives, free; the checker constrains it to AXI4."""
    for name, member in axi.signature.members.items():
        if member.flow.name == "In":
            free(m, getattr(axi, name))
