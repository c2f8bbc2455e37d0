"""The AXI4 master properties on the engine's m_axi: its read half (AxiReader, MTE2's GM
side) and its write half (AxiWriter, MTE3's), which `hdl.top` joins into m_axi member by
member. Each is proved with rows of any address and length coming in, and a slave that
does anything AXI4 allows."""

from amaranth.hdl import Module, Signal, Value
from amaranth.asserts import AnySeq

from hdl.datapath.axi_reader import AxiReader
from hdl.datapath.axi_writer import AxiWriter
from hdl.datapath.legalizer import first_split
from model.isa import GM_ADDR_BITS

from .axi4 import Axi4MasterChecker
from .props import add_block, assume, past, prop, stream_rule


def free(m, *values):
    """Drives each of `values` with a free value on every cycle."""
    for value in values:
        m.d.comb += value.eq(AnySeq(len(value)))


def free_stream(m, name, stream):
    """`stream` (an In stream of the block) offered by a producer that keeps the rules."""
    free(m, stream.valid, Value.cast(stream.payload))
    stream_rule(m, assume, name, stream)


def free_rows(m, rows, width_bytes):
    """GmRows as the address generator sends them: length >= 1, inside GM, the first split
    worked out, `new_sid` set when the sid differs from the row before."""
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


def free_slave(m, axi):
    """Whatever a slave drives, free; the checker constrains it to AXI4."""
    for name, member in axi.signature.members.items():
        if member.flow.name == "In":
            free(m, getattr(axi, name))


def reader_harness(width_bytes, max_outstanding):
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", AxiReader(width_bytes, max_outstanding), mutation)
        free_rows(m, dut.rows, width_bytes)
        free_slave(m, dut.axi)
        free(m, dut.beats.ready)
        Axi4MasterChecker(width_bytes, max_outstanding).add(m, dut.axi)
        consumer_stalled = past(m, dut.beats.valid & ~dut.beats.ready)
        prop(m, "rready_low_only_when_beats_stall", dut.axi.rready | consumer_stalled)
        stream_rule(m, prop, "beats", dut.beats)
        return m
    return build


def writer_harness(width_bytes, max_outstanding):
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", AxiWriter(width_bytes, max_outstanding), mutation)
        free_rows(m, dut.rows, width_bytes)
        free_stream(m, "beats", dut.beats)
        free_slave(m, dut.axi)
        free(m, dut.done.ready)
        Axi4MasterChecker(width_bytes, max_outstanding).add(m, dut.axi)
        consumer_stalled = past(m, dut.done.valid & ~dut.done.ready)
        prop(m, "bready_low_only_when_done_stalls", dut.axi.bready | consumer_stalled)
        stream_rule(m, prop, "done", dut.done)
        return m
    return build
