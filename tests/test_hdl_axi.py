"""AxiReader and AxiWriter in the Amaranth simulator against an AXI4 slave memory model."""

import random

import pytest
from amaranth.back import verilog

from axi_model import (PAGE, AxiMemory, Timing, beats_of, gm_row, mark_new_sids,
                       split_row)
from hdl.lib.axi import Resp
from hdl.datapath.axi_reader import AxiReader
from hdl.datapath.axi_writer import AxiWriter
from hdl_helpers import BLOCK_WIDTHS, idle, run_sim, stream_collect, stream_put
from model.isa import GM_ADDR_BITS, ErrorCode

SIZE = 1 << 17
BASE = (1 << GM_ADDR_BITS) - SIZE      # the top of GM, so all 40 address bits matter
SIDS = (0, 0, 0, 5, 9)                 # mostly one ID, sometimes another (an ID fence)


def random_commands(rng, width, count, max_len=9000):
    """Commands as lists of rows inside the memory: shorter than a word, unaligned,
    straddling 4 KiB boundaries, and long."""
    commands = []
    for _ in range(count):
        sid, cache = rng.choice(SIDS), rng.randrange(16)
        rows = []
        for _ in range(rng.randint(1, 4)):
            kind = rng.randrange(4)
            if kind == 0:
                length = rng.randint(1, width)
            elif kind == 1:
                length = rng.randint(1, 3 * width)
            else:
                length = rng.randint(1, max_len)
            if kind == 3:
                page = rng.randrange(1, (SIZE - length) // PAGE)
                addr = BASE + page * PAGE - rng.randint(1, min(length, PAGE))
            else:
                addr = BASE + rng.randrange(SIZE - length)
            rows.append({"addr": addr, "length": length, "sid": sid, "cache": cache, "last": 0})
        rows[-1]["last"] = 1
        commands.append(rows)
    return commands


def expected_bursts(commands, width):
    return [(a - a % width, beats, row["sid"], row["cache"])
            for rows in commands for row in rows
            for a, _, beats in split_row(row["addr"], row["length"], width)]


def pace(rng, stall):
    return rng.random() < stall


# --- reads -------------------------------------------------------------------------

def expected_read_beats(memory, commands, width):
    """(aligned address, row_last, cmd_last, error, err_addr) of every word, in order."""
    out = []
    for rows in commands:
        for row in rows:
            bursts = split_row(row["addr"], row["length"], width)
            for n, (addr, _, beats) in enumerate(bursts):
                for k in range(beats):
                    a = addr - addr % width + k * width
                    row_last = n == len(bursts) - 1 and k == beats - 1
                    error = memory.error_of(a, a + width) != Resp.OKAY
                    out.append((a, row_last, row_last and bool(row["last"]), error, addr))
    return out


def run_read(width, commands, rng, timing, errors=(), max_outstanding=8, stall_in=0.1,
             stall_out=0.1):
    dut = AxiReader(width, max_outstanding=max_outstanding)
    memory = AxiMemory(BASE, SIZE, width, rng, timing, errors)
    mark_new_sids([row for rows in commands for row in rows])
    expected = expected_read_beats(memory, commands, width)
    got = []

    async def feed(ctx):
        for rows in commands:
            for row in rows:
                if pace(rng, stall_in):
                    await idle(ctx, rng.randint(1, 4))
                await stream_put(ctx, dut.rows, gm_row(row, width))

    async def drain(ctx):
        got.extend(await stream_collect(ctx, dut.beats, len(expected), stall_out, rng))

    run_sim(dut, feed, drain, processes=[memory.read_process(dut.axi)],
            timeout=20 * len(expected) + 2000)

    assert memory.reads.bursts == expected_bursts(commands, width)
    assert 1 <= memory.reads.max_in_flight <= max_outstanding
    for i, ((a, row_last, cmd_last, error, err_addr), (_, beat)) in enumerate(zip(expected, got)):
        where = f"word {i} at {a:#x}"
        assert (beat.row_last, beat.cmd_last, beat.error) == (row_last, cmd_last, error), where
        if error:
            assert beat.err_addr == err_addr, where
        else:
            word = memory.mem[a - BASE:a - BASE + width]
            assert beat.data == int.from_bytes(word, "little"), where
    return memory, got


@pytest.mark.parametrize("width", BLOCK_WIDTHS)
def test_read_random_rows(width):
    rng = random.Random(width)
    commands = random_commands(rng, width, 30)
    timing = Timing(latency=(1, 25), a_ready=0.7, r_valid=0.8)
    run_read(width, commands, rng, timing, stall_in=0.2, stall_out=0.2)


@pytest.mark.parametrize("width", BLOCK_WIDTHS)
def test_read_errors(width):
    """Words that touch an error window come back flagged, with their burst's first
    byte; the others are unaffected."""
    rng = random.Random(10 + width)
    errors = [(BASE + 3 * PAGE + 100, BASE + 3 * PAGE + 700, Resp.SLVERR),
              (BASE + 9 * PAGE, BASE + 11 * PAGE, Resp.DECERR)]
    commands = [[{"addr": BASE + 3 * PAGE - 50, "length": 2000, "sid": 0, "cache": 3,
                  "last": 1}],
                [{"addr": BASE + 9 * PAGE - 7, "length": 3 * PAGE, "sid": 0, "cache": 3,
                  "last": 0},
                 {"addr": BASE + 20 * PAGE + 3, "length": 100, "sid": 0, "cache": 3,
                  "last": 1}]]
    commands += random_commands(rng, width, 12, max_len=4 * PAGE)
    memory, got = run_read(width, commands, rng, Timing(latency=(1, 8), a_ready=0.8),
                           errors)
    assert any(beat.error for _, beat in got)


@pytest.mark.parametrize("width,max_outstanding", [(16, 8), (32, 8), (64, 8), (32, 2)])
def test_read_overlaps_latency(width, max_outstanding):
    """With a long memory latency the reader keeps `max_outstanding` bursts in flight,
    and then streams one word per cycle."""
    rng = random.Random(20 + width)
    short = [[{"addr": BASE + rng.randrange(SIZE - width), "length": rng.randint(1, width),
               "sid": 0, "cache": 0, "last": 1}] for _ in range(24)]
    memory, _ = run_read(width, short, rng, Timing(latency=(40, 40)),
                         max_outstanding=max_outstanding, stall_in=0, stall_out=0)
    assert memory.reads.max_in_flight == max_outstanding

    # A long row: after the first latency, words leave back to back.
    long_row = [[{"addr": BASE + 5, "length": 48 * width * 8, "sid": 0, "cache": 0,
                  "last": 1}]]
    memory, got = run_read(width, long_row, rng, Timing(latency=(40, 40)),
                           max_outstanding=max_outstanding, stall_in=0, stall_out=0)
    if max_outstanding == 8:
        cycles = [c for c, _ in got]
        assert cycles[-1] - cycles[0] == len(cycles) - 1


# --- writes ------------------------------------------------------------------------

def row_words(rng, row, width):
    """The row's GM-aligned words with fresh data, strobes on exactly its bytes."""
    addr, length = row["addr"], row["length"]
    words = []
    start = addr - addr % width
    for k in range(beats_of(addr, length, width)):
        lo = max(addr, start + k * width) - start - k * width
        hi = min(addr + length, start + (k + 1) * width) - start - k * width
        strb = ((1 << hi) - 1) & ~((1 << lo) - 1)
        words.append({"data": int.from_bytes(rng.randbytes(width), "little"), "strb": strb})
    return words


def run_write(width, commands, rng, timing, error_pages=(), max_outstanding=8,
              stall_in=0.1, stall_out=0.1):
    dut = AxiWriter(width, max_outstanding=max_outstanding)
    errors = [(BASE + p * PAGE, BASE + (p + 1) * PAGE, resp) for p, resp in error_pages]
    memory = AxiMemory(BASE, SIZE, width, rng, timing, errors)
    bad_pages = {BASE // PAGE + p for p, _ in error_pages}
    mark_new_sids([row for rows in commands for row in rows])

    # The expected GM: every row in order, except bytes of pages that answer with errors.
    expected = bytearray(memory.mem)
    words = []
    completions = []
    error_bursts = []           # the command number of each failing burst
    for number, rows in enumerate(commands):
        fault = None
        for row in rows:
            row_data = row_words(rng, row, width)
            words += row_data
            start = row["addr"] - row["addr"] % width
            for a in range(row["addr"], row["addr"] + row["length"]):
                if a // PAGE not in bad_pages:
                    k, b = divmod(a - start, width)
                    expected[a - BASE] = row_data[k]["data"] >> 8 * b & 0xff
            for addr, _, _ in split_row(row["addr"], row["length"], width):
                if addr // PAGE in bad_pages:
                    error_bursts.append(number % 256)
                    fault = addr if fault is None else fault
        completions.append((ErrorCode.NONE, 0) if fault is None
                           else (ErrorCode.BUS_ERROR, fault))

    done = []
    pulses = []

    async def feed_rows(ctx):
        for rows in commands:
            for row in rows:
                if pace(rng, stall_in):
                    await idle(ctx, rng.randint(1, 4))
                await stream_put(ctx, dut.rows, gm_row(row, width))

    async def feed_words(ctx):
        for word in words:
            if pace(rng, stall_in):
                await idle(ctx, rng.randint(1, 3))
            await stream_put(ctx, dut.beats, word)

    async def drain(ctx):
        done.extend(await stream_collect(ctx, dut.done, len(commands), stall_out, rng))
        # A Completion can pass with its B response; `abort` follows that edge.
        await idle(ctx, 2)

    async def watch_error(ctx):
        async for _, _, valid, copy in ctx.tick().sample(dut.abort.valid, dut.abort.copy):
            if valid:
                pulses.append(copy)

    run_sim(dut, feed_rows, feed_words, drain,
            processes=[memory.write_process(dut.axi), watch_error],
            timeout=20 * len(words) + 2000)

    assert memory.writes.bursts == expected_bursts(commands, width)
    assert memory.writes.data_beats == len(words)
    assert 1 <= memory.writes.max_in_flight <= max_outstanding
    assert [(c.error, c.address) for _, c in done] == completions
    assert pulses == error_bursts
    assert memory.mem == expected
    return memory, done


@pytest.mark.parametrize("width", BLOCK_WIDTHS)
def test_write_random_rows(width):
    rng = random.Random(30 + width)
    commands = random_commands(rng, width, 30)
    timing = Timing(latency=(1, 25), a_ready=0.7, w_ready=0.7, r_valid=0.8)
    run_write(width, commands, rng, timing, stall_in=0.2, stall_out=0.2)


@pytest.mark.parametrize("width", BLOCK_WIDTHS)
def test_write_errors(width):
    """Bursts into failing pages write nothing; each command reports its first failing
    burst's first byte, and every failing B response asks to abort its command."""
    rng = random.Random(40 + width)
    commands = [[{"addr": BASE + 4 * PAGE - 10, "length": 3 * PAGE, "sid": 0, "cache": 1,
                  "last": 0},
                 {"addr": BASE + 12 * PAGE + 1, "length": 20, "sid": 0, "cache": 1,
                  "last": 1}]]
    commands += random_commands(rng, width, 15, max_len=4 * PAGE)
    memory, done = run_write(width, commands, rng, Timing(latency=(1, 10), a_ready=0.8),
                             error_pages=[(4, Resp.SLVERR), (5, Resp.DECERR),
                                          (12, Resp.SLVERR), (20, Resp.DECERR)])
    assert done[0][1].error == ErrorCode.BUS_ERROR
    assert done[0][1].address == BASE + 4 * PAGE

    # Short commands while `done` is mostly stalled: B responses wait for BREADY, and a
    # failing one pulses `error` once, when it is accepted.
    short = [[{"addr": BASE + rng.choice((4, 7)) * PAGE + rng.randrange(PAGE - width),
               "length": rng.randint(1, width), "sid": 0, "cache": 0, "last": 1}]
             for _ in range(20)]
    run_write(width, short, rng, Timing(latency=(1, 3)), error_pages=[(4, Resp.SLVERR)],
              stall_out=0.9)


@pytest.mark.parametrize("width,max_outstanding", [(16, 8), (32, 8), (64, 8), (32, 2)])
def test_write_overlaps_latency(width, max_outstanding):
    """With a long B latency the writer keeps `max_outstanding` bursts awaiting B, and
    W words go out one per cycle."""
    rng = random.Random(50 + width)
    short = [[{"addr": BASE + rng.randrange(SIZE - width), "length": rng.randint(1, width),
               "sid": 0, "cache": 0, "last": 1}] for _ in range(24)]
    memory, _ = run_write(width, short, rng, Timing(latency=(40, 40)),
                          max_outstanding=max_outstanding, stall_in=0, stall_out=0)
    assert memory.writes.max_in_flight == max_outstanding


@pytest.mark.parametrize("width", BLOCK_WIDTHS)
def test_write_full_rate(width):
    rng = random.Random(60 + width)
    dut = AxiWriter(width)
    memory = AxiMemory(BASE, SIZE, width, rng, Timing(latency=(20, 20)))
    row = {"addr": BASE + 3, "length": 40 * width * 8, "sid": 0, "cache": 0, "last": 1,
           "new_sid": 0}
    words = row_words(rng, row, width)
    cycles = []

    async def feed(ctx):
        await stream_put(ctx, dut.rows, gm_row(row, width))

    async def feed_words(ctx):
        for word in words:
            await stream_put(ctx, dut.beats, word)

    async def drain(ctx):
        await stream_collect(ctx, dut.done, 1)

    async def watch(ctx):
        cycle = 0
        async for _, _, *handshakes in ctx.tick().sample(
                dut.axi.wvalid, dut.axi.wready, dut.axi.bvalid, dut.axi.bready,
                dut.done.valid, dut.done.ready):
            cycle += 1
            for channel, (valid, ready) in zip((cycles, responses, completions),
                                               zip(handshakes[::2], handshakes[1::2])):
                if valid and ready:
                    channel.append(cycle)

    responses, completions = [], []
    run_sim(dut, feed, feed_words, drain,
            processes=[memory.write_process(dut.axi), watch], timeout=10 * len(words))
    assert len(cycles) == len(words)
    assert cycles[-1] - cycles[0] == len(cycles) - 1
    # The Completion passes in the cycle of the last burst's B response.
    assert len(responses) > 1 and completions == [responses[-1]]


# --- Verilog -----------------------------------------------------------------------

@pytest.mark.parametrize("width", BLOCK_WIDTHS)
def test_converts_to_verilog(width):
    reader = verilog.convert(AxiReader(width))
    writer = verilog.convert(AxiWriter(width))
    for name in ("arid", "araddr", "arlen", "arsize", "arburst", "arlock", "arcache",
                 "arprot", "arqos", "arvalid", "arready", "rid", "rdata", "rresp", "rlast",
                 "rvalid", "rready"):
        assert f"axi__{name}" in reader
    for name in ("awaddr", "awlen", "wdata", "wstrb", "wlast", "wvalid", "wready", "bid",
                 "bresp", "bvalid", "bready"):
        assert f"axi__{name}" in writer
    assert f"input [{8 * width - 1}:0] axi__rdata" in reader
