"""The RTL benchmark's arithmetic (tb/bench/metrics.py) on hand-worked examples, and its
programs against the model; no simulation (`make bench` runs that)."""

import math

import pytest

from model.parser import parse
from tb.bench import metrics, suite
from tb.programs import GUARD
from model.engine import COPY_OPCODES
from model.isa import Opcode
from tb.scoreboard import copies_with_registers, copy_rows, expect

W = 32


@pytest.mark.parametrize("addr, length, words", [
    (0, 128, 4),            # aligned
    (5, 200, 7),            # bytes 5..204: words 0..6
    (31, 2, 2),             # two bytes on either side of a word boundary
    (4096 - 200, 512, 17),  # 3896..4407: words 121..137
    (64, 0, 0),
])
def test_words_touched(addr, length, words):
    assert metrics.words_touched(addr, length, W) == words


def beats(text, src, dst):
    return metrics.copy_beats(parse(text, {"src": src, "dst": dst}), W)


def test_tile_32x32_f32():
    text = suite.gm_to_ub(32, 128, 128, 128, "f32")
    way, read, write = beats(text, suite.GM_BASE, 0)
    assert (way, read, write) == ("GM->UB", 128, 128)
    assert metrics.ideal_cycles(way, 32, read, write) == 160
    assert metrics.ideal_cycles(way, 200, read, write) == 328


def test_rows_under_32_bytes():
    # GM rows of 20 B, packed: row k starts at 20k mod 32 = 0, 20, 8, 28, 16, 4, 24, 12
    # (period 8); the ones starting past byte 12 of a word spill into the next: 12 words
    # per 8 rows. Each UB row is one word.
    assert beats(suite.gm_to_ub(64, 20, 20, 32), suite.GM_BASE, 0) == ("GM->UB", 96, 64)


def test_padded_rows_write_their_whole_extent():
    # f16, 2 + 2 pad elements: footprint 4 + 40 + 4 = 48 B, E = align(max(96, 48)) = 96 B,
    # so 3 UB words per row; GM rows [0, 40) and [40, 80) touch 2 words each.
    text = suite.gm_to_ub(2, 40, 40, 96, "f16", pads=(2, 2, 0))
    way, read, write = beats(text, suite.GM_BASE, 0)
    assert (way, read, write) == ("GM->UB", 4, 6)
    assert metrics.ideal_cycles(way, 200, read, write) == 206


def test_unaligned_store():
    # GM rows of 200 B from 5 + 1000k: offsets in the word cycle 5, 13, 21, 29, and only
    # the row at 29 touches 8 words (29 + 200 > 224): 7 + 7 + 7 + 8 per 4 rows.
    way, read, write = beats(suite.ub_to_gm(32, 200, 224, 1000), 0, suite.GM_BASE + 5)
    assert (way, read, write) == ("UB->GM", 32 * 7, 8 * 29)
    assert metrics.ideal_cycles(way, 32, read, write) == 32 + 232


def test_loops_multiply_rows():
    text = suite.ub_to_gm(8, 256, 256, 512, "f16", loop1=(4, 2048, 4096),
                          loop2=(2, 8192, 32768))
    assert beats(text, 0, suite.GM_BASE) == ("UB->GM", 2 * 4 * 8 * 8, 2 * 4 * 8 * 8)


def test_ub_to_ub_has_no_gm_latency():
    way, read, write = beats(suite.ub_to_ub(16, 8, 2, 1), 0, suite.UB_HIGH)
    assert (way, read, write) == ("UB->UB", 128, 128)
    assert metrics.ideal_cycles(way, 200, read, write) == 128


def test_efficiency():
    assert metrics.efficiency(160, 200) == 0.8


SIZES = [32, 64, 128, 256]


def test_half_peak_on_a_sweep_point():
    found = metrics.half_peak(SIZES, [2, 4, 8, 16])
    assert found == {"peak": 16, "point": 128, "interpolated": 128.0}


def test_half_peak_interpolates_in_log_size():
    # half of 8 is 4, halfway between 3 (at 64) and 5 (at 128): log2 K = 6.5
    found = metrics.half_peak(SIZES, [1, 3, 5, 8])
    assert found["point"] == 128
    assert found["interpolated"] == pytest.approx(2 ** 6.5)


def test_half_peak_takes_the_first_crossing():
    found = metrics.half_peak(SIZES, [1, 9, 5, 10])
    assert (found["peak"], found["point"]) == (10, 64)
    assert math.log2(found["interpolated"]) == pytest.approx(5.5)


def test_half_peak_at_the_smallest_size():
    assert metrics.half_peak(SIZES[:3], [10, 12, 16])["interpolated"] == 32


def test_every_program_is_legal_and_starts_guarded():
    programs = suite.shapes() + suite.sweep()
    assert len({p.name for p in programs}) == len(programs)
    assert len(suite.sweep()) == 3 * len(suite.SWEEP_SIZES)
    for bench in programs:
        expectation = expect(bench.case)
        assert expectation.error is None, bench.name
        assert beats(bench.case.text, **bench.case.bindings)[0] == bench.direction
        if bench.direction == "UB->GM":
            assert all(set(data) == {GUARD} for _, data in bench.case.gm), bench.name
        if bench.size:
            assert expectation.bytes_moved == bench.size


def test_bench_builds_for_l200_and_says_so():
    from tb.bench.__main__ import argument_parser, report
    args = argument_parser().parse_args([])
    # 4-beat bursts need about (L + 4) / 4 + 1 in flight to cover L = 200
    assert args.max_outstanding >= (200 + 4) // 4 + 1
    assert argument_parser().parse_args(["--max-outstanding", "8"]).max_outstanding == 8
    text = report([], {}, [], "a5", [], 8)
    assert "max_outstanding = 8 AXI bursts" in text.splitlines()[1]


def test_streams_are_legal_guarded_and_disjoint():
    """Each stream's copies move size bytes each, GM destinations start as guard bytes,
    and the two directions of a concurrent stream touch disjoint UB halves (no race)."""
    streams = suite.streams()
    assert len(streams) == 3 * len(suite.STREAM_SIZES)
    for bench in streams:
        expectation = expect(bench.case)
        assert expectation.error is None, bench.name
        copies = expectation.instrs[-bench.timed:]
        assert all(instr.op.opcode in COPY_OPCODES for instr in copies), bench.name
        assert bench.timed == suite.STREAM_COPIES * (2 if bench.kind == "concurrent" else 1)
        assert expectation.bytes_moved == bench.timed * bench.size, bench.name
        ub_ranges = {}
        for instr, regs in copies_with_registers(expectation.instrs):
            [(src, dst, read, written)] = copy_rows(instr.op, instr.values, regs)
            ub = dst if instr.op.opcode == Opcode.COPY_GM_TO_UBUF else src
            ub_ranges.setdefault(instr.op.opcode, []).append((ub, ub + bench.size))
        lows = [lo for ranges in ub_ranges.values() for lo, _ in ranges]
        assert all(0 <= lo and lo + bench.size <= suite.UB_HIGH * 2 for lo in lows)
        if bench.kind == "concurrent":
            reads = ub_ranges[Opcode.COPY_UBUF_TO_GM]
            writes = ub_ranges[Opcode.COPY_GM_TO_UBUF]
            assert max(hi for _, hi in writes) <= min(lo for lo, _ in reads), bench.name
        gm_dst = [base for base, _ in bench.case.gm if base >= suite.STREAM_GM["UB->GM"]]
        for base, data in bench.case.gm:
            if base in gm_dst:
                assert set(data) == {GUARD}, bench.name


def test_stream_rates():
    from tb.bench.__main__ import Stream
    # 64 copies of 32 B on one pipe, completions from cycle 40 to 40 + 63 * 2: one per 2
    single = Stream("GM->UB", 32, 32, 64, cycles=200, steady=126)
    assert single.bytes_per_cycle == 16.0
    assert single.total_bytes_per_cycle == 64 * 32 / 200
    assert single.goal() == 0.8 * W
    # both directions: every copy but each pipe's first, over the longer pipe's span
    both = Stream("GM->UB+UB->GM", 32, 4096, 128, cycles=8300, steady=8064)
    assert both.bytes_per_cycle == 126 * 4096 / 8064 == 64.0
    assert both.goal() == 1.9 * W
    assert Stream("UB->GM", 32, 128, 64, 1, 1).goal() is None


def test_goals_by_latency():
    from tb.bench.__main__ import goals
    assert goals(32) == (0.93, 0.97)
    assert goals(200) == (0.96, None)
    assert goals(40) == goals(32) and goals(1000) == goals(200)
