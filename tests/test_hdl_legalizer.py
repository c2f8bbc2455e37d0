"""BurstSplitter in the Amaranth simulator: bursts tile each row, legally, at full rate."""

import random

import pytest
from amaranth.back import verilog

from hdl.layouts import BUS_WIDTHS, LEN_BITS
from hdl.datapath.legalizer import PAGE_BYTES, BurstIssuer, BurstSplitter
from model.isa import GM_ADDR_BITS
from axi_model import beats_of, gm_row, mark_new_sids, split_row
from hdl_helpers import (driver_types, idle, run_sim, stream_collect, stream_put,
                         synth_ecp5_module)

TOP = 1 << GM_ADDR_BITS
MAX_LEN = (1 << LEN_BITS) - 1


def random_rows(rng, width, count):
    """Rows of every shape that matters: shorter than a word, unaligned, ending on or
    straddling a 4 KiB boundary, exactly 256 and 257 words, long, and at the top of GM."""
    rows = []
    for _ in range(count):
        kind = rng.randrange(8)
        if kind == 0:
            length = rng.randint(1, width - 1) if width > 1 else 1
            addr = rng.randrange(TOP - length)
        elif kind == 1:
            length = rng.randint(1, 3 * PAGE_BYTES)
            addr = rng.randrange(1, TOP >> 12) * PAGE_BYTES - rng.randint(0, 2 * width)
        elif kind == 2:
            length = 256 * width + rng.choice((0, 1, -1, width, -width))
            start = rng.choice((0, 0, rng.randrange(PAGE_BYTES)))
            addr = rng.randrange(TOP >> 12) * PAGE_BYTES + start
        elif kind == 3:
            length = rng.randint(1, 40000)
            addr = rng.randrange(TOP - length)
        elif kind == 4:
            length = rng.randint(1, PAGE_BYTES)
            addr = rng.randrange(TOP >> 12) * PAGE_BYTES + PAGE_BYTES - length
        else:
            length = rng.randint(1, 3 * width)
            addr = rng.randrange(TOP - length)
        rows.append({"addr": addr, "length": length, "sid": rng.randrange(16),
                     "cache": rng.randrange(16), "last": int(rng.random() < 0.3)})
    # One row of the largest length, ending at the last GM byte.
    rows.append({"addr": TOP - MAX_LEN, "length": MAX_LEN, "sid": 5, "cache": 9, "last": 1})
    return mark_new_sids(rows)


def run_splitter(width, rows, rng, stall_in, stall_out):
    dut = BurstSplitter(width)
    expected = sum(len(split_row(r["addr"], r["length"], width)) for r in rows)
    got = []

    async def feed(ctx):
        for row in rows:
            if rng.random() < stall_in:
                await idle(ctx, rng.randint(1, 3))
            await stream_put(ctx, dut.rows, gm_row(row, width))

    async def drain(ctx):
        got.extend(await stream_collect(ctx, dut.bursts, expected, stall_out, rng))

    run_sim(dut, feed, drain, timeout=4 * expected + 20 * len(rows) + 100)
    return got


def check_bursts(width, rows, got):
    i = 0
    for row in rows:
        ref = split_row(row["addr"], row["length"], width)
        pos = row["addr"]
        for n, (addr, length, beats) in enumerate(ref):
            _, b = got[i]
            i += 1
            words = b.axlen + 1
            assert (b.addr, b.length, words) == (addr, length, beats), (row, n)
            assert b.new_sid == (n == 0 and row["new_sid"])
            assert b.last_of_row == (n == len(ref) - 1)
            assert b.last == (b.last_of_row and row["last"])
            assert (b.sid, b.cache) == (row["sid"], row["cache"])
            # Legality, independently of the reference: contiguous, within one 4 KiB
            # page, at most 256 words, and the word count matches the byte range.
            assert b.addr == pos
            pos += b.length
            assert b.addr // PAGE_BYTES == (b.addr + b.length - 1) // PAGE_BYTES
            aligned = b.addr - b.addr % width
            assert aligned // PAGE_BYTES == (aligned + words * width - 1) // PAGE_BYTES
            assert words == beats_of(b.addr, b.length, width)
        assert pos == row["addr"] + row["length"]
    assert i == len(got)


@pytest.mark.parametrize("width", BUS_WIDTHS)
def test_splitter_tiles_rows(width):
    rng = random.Random(width)
    rows = random_rows(rng, width, 250)
    got = run_splitter(width, rows, rng, stall_in=0.2, stall_out=0.3)
    check_bursts(width, rows, got)


@pytest.mark.parametrize("width", BUS_WIDTHS)
def test_splitter_one_burst_per_cycle(width):
    """With rows always offered and bursts always taken, bursts leave back to back,
    across row boundaries too (short rows are one burst each)."""
    rng = random.Random(100 + width)
    rows = [{"addr": rng.randrange(TOP >> 1), "length": rng.choice((1, width, 5000, 9000)),
             "sid": 1, "cache": 2, "last": 0} for _ in range(60)]
    mark_new_sids(rows)
    got = run_splitter(width, rows, rng, stall_in=0, stall_out=0)
    check_bursts(width, rows, got)
    cycles = [c for c, _ in got]
    assert cycles == list(range(cycles[0], cycles[0] + len(cycles)))
    assert cycles[0] == 1           # the first burst in the cycle its row is offered


@pytest.mark.parametrize("width", [16, 64])
def test_splitter_converts(width):
    assert "bursts__payload" in verilog.convert(BurstSplitter(width))


def test_issuer_reads_its_queue_from_registers(tmp_path):
    """After synth_ecp5, the burst issuer's queue (LUT RAM) is read at an address that
    comes straight from flip-flops: no response handshake lies in front of the read."""
    module = synth_ecp5_module(BurstIssuer(32, 8, 4), "issuer", tmp_path)
    rams = [cell for cell in module["cells"].values() if cell["type"] == "TRELLIS_DPR16X4"]
    # the burst queue (8 entries, three address bits) among them
    assert any(sum(isinstance(bit, int) for bit in ram["connections"]["RAD"]) == 3
               for ram in rams)
    for ram in rams:
        for bit in ram["connections"]["RAD"]:
            if isinstance(bit, int):
                assert driver_types(module, [bit]) == ["TRELLIS_FF"]
