"""Aligner in the Amaranth simulator: every byte of every row lands where it belongs, at
full rate.

W = 32 runs every (src_off, dst_off) pair with the lengths that change the word counts
(1, W-1, W, W+1, 2W, 3W and a random one) in one simulation, rows back to back in random
order; W = 16 runs every pair too, W = 64 and 128 a random sample. Each width from 16
to 128 (the rotator has two stages up to 64, three at 128) also runs with random stalls
on all three streams."""

import random

import pytest
from amaranth.back import verilog

from hdl.datapath.aligner import Aligner, rotate_stages
from hdl_helpers import (BLOCK_WIDTHS, idle, register_cells, register_gates,
                         register_sources, registers_reached, run_sim, stream_put,
                         synth_ecp5_module)


def words_of(offset, length, width):
    return (offset + length + width - 1) // width


def make_case(width, rows, rng):
    """Source words and the expected destination words (data, strb, last) of `rows`.

    Source bytes outside a row are random too, so any of them leaking shows."""
    src, expected = [], []
    for src_off, dst_off, length in rows:
        body = rng.randbytes(length)
        n_in = words_of(src_off, length, width)
        raw = bytearray(rng.randbytes(n_in * width))
        raw[src_off:src_off + length] = body
        src += [int.from_bytes(raw[i * width:(i + 1) * width], "little") for i in range(n_in)]
        n_out = words_of(dst_off, length, width)
        for k in range(n_out):
            word, strb = bytearray(width), 0
            for p in range(width):
                i = k * width + p - dst_off
                if 0 <= i < length:
                    word[p] = body[i]
                    strb |= 1 << p
            expected.append((int.from_bytes(word, "little"), strb, int(k == n_out - 1)))
    return src, expected


def min_cycles(width, rows):
    """What the rows cost at full rate: max(input words, output words) each."""
    return sum(max(words_of(s, n, width), words_of(d, n, width)) for s, d, n in rows)


def byte_mask(strb, width):
    return sum(0xFF << (8 * p) for p in range(width) if strb >> p & 1)


async def collect(ctx, stream, count, fields, stall=0.0, rng=None):
    """Takes `count` words, holding ready low on a random `stall` fraction of cycles, and
    checks the stream rule: once offered, a word stays offered, unchanged, until taken.
    Returns (cycle, *fields of the payload) per word, cycles counted from the call."""
    got, cycle, held = [], 0, None
    while len(got) < count:
        ready = int(stall == 0 or rng.random() >= stall)
        ctx.set(stream.ready, ready)
        _, _, valid, payload = await ctx.tick().sample(stream.valid, stream.payload)
        cycle += 1
        word = tuple(getattr(payload, f) for f in fields) if valid else None
        if held is not None:
            assert word == held, f"word {len(got)} changed or withdrawn while not taken"
        held = None
        if valid and ready:
            got.append((cycle, *word))
        elif valid:
            held = word
    ctx.set(stream.ready, 0)
    return got


def run_aligner(width, rows, rng, in_stall=0.0, out_stall=0.0):
    """Streams `rows` through one Aligner, the inputs idling on a random `in_stall`
    fraction of words and `dst` refusing a random `out_stall` fraction of cycles; checks
    every word; returns the cycle at which the last word left."""
    dut = Aligner(width)
    src, expected = make_case(width, rows, rng)
    got = []

    async def feed_rows(ctx):
        for src_off, dst_off, length in rows:
            if in_stall and rng.random() < in_stall:
                await idle(ctx, rng.randint(1, 3))
            await stream_put(ctx, dut.rows, {"src_off": src_off, "dst_off": dst_off,
                                             "length": length})

    async def feed_src(ctx):
        for word in src:
            if in_stall and rng.random() < in_stall:
                await idle(ctx, rng.randint(1, 3))
            await stream_put(ctx, dut.src, {"data": word})

    async def drain(ctx):
        got.extend(await collect(ctx, dut.dst, len(expected), ("data", "strb", "last"),
                                 out_stall, rng))

    run_sim(dut, feed_rows, feed_src, drain, timeout=8 * (len(src) + len(expected)) + 100)

    n = 0
    for r, (src_off, dst_off, length) in enumerate(rows):
        for k in range(words_of(dst_off, length, width)):
            _, data, strb, last = got[n]
            want_data, want_strb, want_last = expected[n]
            where = f"row {r} (src_off={src_off}, dst_off={dst_off}, length={length}) word {k}"
            assert strb == want_strb, where
            assert last == want_last, where
            assert data & byte_mask(strb, width) == want_data, where
            n += 1
    return got[-1][0]


# Rows taken on edge 1 start at most this many cycles late (see the Aligner docstring):
# set-up 3, rotator L, queue 1, output register 1, plus one for a first row that needs two
# source words.
def latency(width):
    return rotate_stages(width) + 6


def special_lengths(width, rng):
    return [1, width - 1, width, width + 1, 2 * width, 3 * width, rng.randint(1, 3 * width)]


def test_every_offset_pair_w32_full_rate():
    width, rng = 32, random.Random(32)
    rows = [(s, d, n) for s in range(width) for d in range(width)
            for n in special_lengths(width, rng)]
    rng.shuffle(rows)
    cycles = run_aligner(width, rows, rng)
    assert cycles <= min_cycles(width, rows) + latency(width)


@pytest.mark.parametrize("width, sampled", [
    (16, 1.0), pytest.param(64, 0.3, marks=pytest.mark.long),
    pytest.param(128, 0.03, marks=pytest.mark.long)])
def test_sampled_offsets_full_rate(width, sampled):
    rng = random.Random(width)
    # A `sampled` fraction of the (src_off, dst_off) pairs, and every pair with an offset
    # of 0 or W - 1.
    pairs = [(s, d) for s in range(width) for d in range(width)
             if rng.random() < sampled or {s, d} & {0, width - 1}]
    rows = [(s, d, rng.choice(special_lengths(width, rng))) for s, d in pairs for _ in range(2)]
    rng.shuffle(rows)
    cycles = run_aligner(width, rows, rng)
    assert cycles <= min_cycles(width, rows) + latency(width)


@pytest.mark.parametrize("width", BLOCK_WIDTHS)
@pytest.mark.parametrize("in_stall, out_stall", [(0.3, 0.3), (0.0, 0.7), (0.6, 0.0)])
def test_random_stalls(width, in_stall, out_stall):
    rng = random.Random(100 + width)
    rows = [(rng.randrange(width), rng.randrange(width),
             rng.choice(special_lengths(width, rng))) for _ in range(300)]
    run_aligner(width, rows, rng, in_stall, out_stall)


def test_every_offset_pair_w32_random_stalls():
    width, rng = 32, random.Random(320)
    rows = [(s, d, rng.choice(special_lengths(width, rng)))
            for s in range(width) for d in range(width)]
    rng.shuffle(rows)
    run_aligner(width, rows, rng, 0.3, 0.3)


@pytest.mark.parametrize("kind", ["short", "spanning", "one_more", "one_fewer", "aligned"])
def test_uniform_streams_one_word_per_cycle(kind):
    """Streams of one row shape: one word per cycle on the busier side, exactly."""
    width, rng = 32, random.Random(7)
    shapes = {
        "short": lambda: (rng.randrange(16), rng.randrange(16), rng.randint(1, 16)),
        "spanning": lambda: (5, 3, 2 * width),           # 3 words in, 3 out, dst < src
        "one_more": lambda: (0, 31, 33),                  # 2 in, 3 out
        "one_fewer": lambda: (31, 0, 33),                 # 3 in, 2 out
        "aligned": lambda: (0, 0, 3 * width),
    }
    rows = [shapes[kind]() for _ in range(200)]
    cycles = run_aligner(width, rows, rng)
    assert cycles <= min_cycles(width, rows) + latency(width)


@pytest.mark.parametrize("width", BLOCK_WIDTHS)
def test_converts_to_verilog(width):
    dut = Aligner(width)
    text = verilog.convert(dut, name="aligner")
    assert "module aligner" in text


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory):
    """An aligner (W = 16) after synth_ecp5 (Yosys JSON module)."""
    return synth_ecp5_module(Aligner(16), "aligner", tmp_path_factory.mktemp("aligner"))


@pytest.mark.parametrize("merge", ["live", "rd", "filled"])
def test_output_queue_and_merge_share_no_gate(synthesized, merge):
    """After synth_ecp5, the merge's control (which ring entries stay, the read pointer,
    the fill) and the output queue's are worked out through no common gate, and the merge
    reads its own copy of the queue's room: no path runs out of one and back."""
    merge_gates = register_gates(synthesized, merge)
    for queue in ("out_full", "out_wr", "out_room", "out_valid"):
        assert register_gates(synthesized, queue)
        assert not merge_gates & register_gates(synthesized, queue)
    out_room = set(synthesized["netnames"]["out_room"]["bits"])
    assert not out_room & register_sources(synthesized, merge)


@pytest.mark.parametrize("control", ["rd", "uses_hi", "first", "last"])
def test_lanes_read_copies_of_the_merge_control(synthesized, control):
    """After synth_ecp5, the merge's control registers reach no output queue entry in
    one cycle: the lanes' ring indices and strobes read copies of them, so the placer
    keeps the control's own registers by the gates that decide the next output, not out
    across the datapath."""
    entries = [cell for name in ("out0", "out1") for cell in register_cells(synthesized, name)]
    assert entries
    bits = synthesized["netnames"][control]["bits"]
    reached = registers_reached(synthesized, bits)
    assert reached and not any(cell is entry for cell in reached for entry in entries)
