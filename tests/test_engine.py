"""The golden model against the byte-by-byte reference: the six examples of seed 000, the
UB->UB copy of seed 001, padding, sticky registers, overlapping rows, region seams and
empty copies. Every test compares the whole UB and every GM region; destinations start
as GUARD bytes so a stray write shows."""

import numpy as np
import pytest

from harness import assert_same_run, run_both, snapshot
from model.engine import Engine
from model.isa import DTYPE_BY_NAME, PROFILES, UB_LINE, Pipe
from strategies import GUARD, command, pad_bits

RNG = np.random.default_rng(2024)
GUARD_UB = bytes([GUARD]) * PROFILES["a5"].ub_size


def random_bytes(n):
    return RNG.integers(0, 256, n, dtype=np.uint8).tobytes()


def guarded(n):
    return bytes([GUARD]) * n


def ub_with(addr, data):
    """A GUARD-filled a5 UB image with `data` at `addr`."""
    ub = bytearray(GUARD_UB)
    ub[addr:addr + len(data)] = data
    return bytes(ub)


def program(*instrs):
    """Number the commands' lines from 1, as a parser would."""
    for line, instr in enumerate(instrs, 1):
        instr.line = line
    return list(instrs)


def check(regions, instrs, ub=GUARD_UB, profile="a5"):
    outcome = run_both(profile, regions, instrs, ub)
    assert_same_run(outcome, regions)
    assert outcome.error is None
    return outcome.engine


# --- seed 000 examples ----------------------------------------------------------------

GM_TILE = 0x1000
MATRIX = 0x40_0000_0000      # a 1024 x 512 f16 matrix (1024-byte rows)
MATRIX_ROW = 1024


def test_example1_load_32x32_f32_tile():
    tile = random_bytes(32 * 128)
    regions = [(GM_TILE, tile)]
    engine = check(regions, program(
        command("set_loop_size_outtoub", loop1_count=1, loop2_count=1),
        command("copy_gm_to_ubuf", gm_src=GM_TILE, ub_dst=0x2000, n_burst=32, len_burst=128,
                src_stride=128, dst_stride=128, dtype="f32")))
    assert engine.ub[0x2000:0x3000].tobytes() == tile
    assert engine.ub[0x1fff] == engine.ub[0x3000] == GUARD


def matrix_rows(first, count):
    """GM regions holding rows first..first+count-1 of the matrix, plus a row either side."""
    base = MATRIX + (first - 1) * MATRIX_ROW
    return [(base, random_bytes((count + 2) * MATRIX_ROW))]


def test_example2_load_tile_of_larger_matrix():
    regions = matrix_rows(100, 64)
    engine = check(regions, program(
        command("set_loop_size_outtoub", loop1_count=1, loop2_count=1),
        command("set_loop1_stride_outtoub", src_stride=0, dst_stride=0),
        command("set_loop2_stride_outtoub", src_stride=0, dst_stride=0),
        command("copy_gm_to_ubuf", gm_src=MATRIX + 100 * MATRIX_ROW + 256, ub_dst=0,
                n_burst=64, len_burst=256, src_stride=1024, dst_stride=256, dtype="f16")))
    rows = np.frombuffer(regions[0][1], dtype=np.uint8).reshape(-1, MATRIX_ROW)
    assert (engine.ub[:64 * 256].reshape(64, 256) == rows[1:65, 256:512]).all()


def test_example3_load_with_padding():
    data = random_bytes(64 * 200)
    regions = [(GM_TILE, data)]
    engine = check(regions, program(
        command("set_loop_size_outtoub", loop1_count=1, loop2_count=1),
        command("set_loop1_stride_outtoub", src_stride=0, dst_stride=0),
        command("set_loop2_stride_outtoub", src_stride=0, dst_stride=0),
        command("copy_gm_to_ubuf", gm_src=GM_TILE, ub_dst=0x100, n_burst=64, len_burst=200,
                data_select_bit=1, src_stride=200, dst_stride=256, dtype="f16")))
    rows = engine.ub[0x100:0x100 + 64 * 256].reshape(64, 256)
    assert rows[:, :200].tobytes() == data
    assert (rows[:, 200:] == 0).all()                 # pad_val still at reset: 0


def test_example4_store_32x32_f32_tile():
    tile = random_bytes(32 * 128)
    regions = [(GM_TILE - 64, guarded(32 * 128 + 128))]
    engine = check(regions, program(
        command("set_loop_size_ubtoout", loop1_count=1, loop2_count=1),
        command("copy_ubuf_to_gm", ub_src=0x4000, gm_dst=GM_TILE, n_burst=32, len_burst=128,
                dst_stride=128, src_stride=128, dtype="f32")), ub=ub_with(0x4000, tile))
    assert engine.gm.read(GM_TILE, len(tile)).tobytes() == tile
    assert engine.gm.read(GM_TILE - 1, 1)[0] == engine.gm.read(GM_TILE + len(tile), 1)[0] == GUARD


def test_example5_store_tile_into_larger_matrix():
    tile = random_bytes(64 * 256)
    regions = matrix_rows(7, 64)
    before = np.frombuffer(regions[0][1], dtype=np.uint8).reshape(-1, MATRIX_ROW)
    engine = check(regions, program(
        command("set_loop_size_ubtoout", loop1_count=1, loop2_count=1),
        command("set_loop1_stride_ubtoout", src_stride=0, dst_stride=0),
        command("set_loop2_stride_ubtoout", src_stride=0, dst_stride=0),
        command("copy_ubuf_to_gm", ub_src=0, gm_dst=MATRIX + 7 * MATRIX_ROW + 256, n_burst=64,
                len_burst=256, dst_stride=1024, src_stride=256, dtype="f16")),
        ub=ub_with(0, tile))
    after = engine.gm.read(regions[0][0], len(regions[0][1])).reshape(-1, MATRIX_ROW)
    assert after[1:65, 256:512].tobytes() == tile
    outside = np.ones(after.shape, dtype=bool)
    outside[1:65, 256:512] = False
    assert (after[outside] == before[outside]).all()


def test_example6_batch_of_tiles_with_loop1():
    tensor = random_bytes(4 * 8 * 256)
    regions = [(GM_TILE, tensor)]
    engine = check(regions, program(
        command("set_loop_size_outtoub", loop1_count=4, loop2_count=1),
        command("set_loop1_stride_outtoub", src_stride=2048, dst_stride=2048),
        command("set_loop2_stride_outtoub", src_stride=0, dst_stride=0),
        command("copy_gm_to_ubuf", gm_src=GM_TILE, ub_dst=0x8000, n_burst=8, len_burst=256,
                src_stride=256, dst_stride=256, dtype="f16")))
    assert engine.ub[0x8000:0x8000 + len(tensor)].tobytes() == tensor


# --- UB -> UB (seed 001) ----------------------------------------------------------------

def test_copy_ubuf_to_ubuf_gaps_are_end_to_start_in_lines():
    source = random_bytes(0x400)
    engine = check([], program(command(
        "copy_ubuf_to_ubuf", ub_src=0x1000, ub_dst=0x3000, n_burst=3, len_burst=2,
        src_gap=1, dst_gap=2, dtype="i16")), ub=ub_with(0x1000, source))
    for r in range(3):
        src, dst = r * 3 * UB_LINE, 0x3000 + r * 4 * UB_LINE
        assert engine.ub[dst:dst + 2 * UB_LINE].tobytes() == source[src:src + 2 * UB_LINE]
        assert (engine.ub[dst + 2 * UB_LINE:dst + 4 * UB_LINE] == GUARD).all()
    assert engine.stats.bytes_moved[Pipe.V] == 3 * 2 * UB_LINE


# --- padding ----------------------------------------------------------------------------

PAD_CASES = [          # (type, value written in set_mov_pad_val, left, right, dst_stride)
    ("i8", -3, 5, 7, 0),
    ("u8", 0x5C, 0, 32, 96),
    ("i16", -2, 3, 1, 0),
    ("f16", -1.5, 16, 16, 160),
    ("bf16", 3.25, 2, 0, 0),
    ("f32", -0.0, 8, 8, 0),
    ("f32", 1e-3, 1, 2, 128),
    ("i32", -123456, 0, 3, 0),
    ("i64", -2, 4, 4, 0),
    ("u64", 0x0123_4567_89AB_CDEF, 1, 0, 256),
    ("f8e4m3", 0x38, 3, 1, 0),
]


@pytest.mark.parametrize("dtype, value, left, right, dst_stride", PAD_CASES)
def test_padding_repeats_the_pad_element(dtype, value, left, right, dst_stride):
    pad_val = pad_bits(value, dtype)
    es = DTYPE_BY_NAME[dtype].size
    length = 6 * es
    n = 3
    stride = dst_stride or UB_LINE * -(-((left + right) * es + length) // UB_LINE)
    data = random_bytes(n * length)
    engine = check([(GM_TILE, data)], program(
        command("set_mov_pad_val", pad_val=pad_val),
        command("copy_gm_to_ubuf", gm_src=GM_TILE, ub_dst=0x200, n_burst=n, len_burst=length,
                left_padding=left, right_padding=right, data_select_bit=1, src_stride=length,
                dst_stride=stride, dtype=dtype)))
    pattern = pad_val.to_bytes(8, "little")[:es] * (stride // es)
    for r in range(n):
        row = engine.ub[0x200 + r * stride:0x200 + (r + 1) * stride].tobytes()
        data_at = left * es
        assert row[:data_at] == pattern[:data_at]
        assert row[data_at:data_at + length] == data[r * length:(r + 1) * length]
        assert row[data_at + length:] == pattern[data_at + length:]
    assert engine.ub[0x200 + n * stride] == GUARD


def test_pad_row_extent_rounds_a_single_rows_stride_up_to_a_line():
    """n_burst 1: dst_stride need not be aligned; E = align_up(max(stride, footprint), 32)."""
    engine = check([(GM_TILE, random_bytes(8))], program(
        command("set_mov_pad_val", pad_val=0x11),
        command("copy_gm_to_ubuf", gm_src=GM_TILE, ub_dst=0, n_burst=1, len_burst=8,
                data_select_bit=1, dst_stride=70, dtype="u8")))
    assert (engine.ub[8:96] == 0x11).all() and engine.ub[96] == GUARD


def test_without_data_select_only_the_data_is_written():
    engine = check([(GM_TILE, random_bytes(2 * 40))], program(
        command("set_mov_pad_val", pad_val=0x77),
        command("copy_gm_to_ubuf", gm_src=GM_TILE, ub_dst=0, n_burst=2, len_burst=40,
                src_stride=40, dst_stride=64, dtype="u8")))
    assert (engine.ub[40:64] == GUARD).all() and (engine.ub[104:128] == GUARD).all()


# --- registers --------------------------------------------------------------------------

def test_registers_are_sticky_and_per_pipe():
    source = random_bytes(4096)
    regions = [(GM_TILE, source), (0x9000, guarded(4096))]
    engine = check(regions, program(
        command("set_loop_size_outtoub", loop1_count=2, loop2_count=2),
        command("set_loop1_stride_outtoub", src_stride=64, dst_stride=64),
        command("set_loop2_stride_outtoub", src_stride=512, dst_stride=256),
        command("set_mov_pad_val", pad_val=0xEE),
        command("copy_gm_to_ubuf", gm_src=GM_TILE, ub_dst=0, n_burst=1, len_burst=32,
                data_select_bit=1, dst_stride=64, dtype="u8"),
        command("set_flag", src_pipe=Pipe.MTE2, dst_pipe=Pipe.MTE3, event_id=0),
        command("wait_flag", src_pipe=Pipe.MTE2, dst_pipe=Pipe.MTE3, event_id=0),
        # MTE3 still has its reset loops: one row each, whatever MTE2 holds
        command("copy_ubuf_to_gm", ub_src=0, gm_dst=0x9000, n_burst=1, len_burst=64),
        # the second MTE2 copy reuses every MTE2 register set above
        command("copy_gm_to_ubuf", gm_src=GM_TILE + 1024, ub_dst=0x1000, n_burst=1,
                len_burst=32, data_select_bit=1, dst_stride=64, dtype="u8")))
    for base in (0, 0x1000):
        assert (engine.ub[base + 32:base + 64] == 0xEE).all()
        assert (engine.ub[base + 256 + 64 + 32:base + 256 + 128] == 0xEE).all()
    assert engine.gm.read(0x9040, 1)[0] == GUARD
    assert engine.regs[Pipe.MTE2]["loop2_src_stride"] == 512
    engine.reset()
    assert engine.regs[Pipe.MTE2]["loop1_count"] == 1 and engine.regs[Pipe.MTE2]["pad_val"] == 0


# --- overlapping destinations: later rows win -------------------------------------------

def test_loop_destinations_that_overlap_keep_the_later_rows():
    source = random_bytes(8192)
    check([(GM_TILE, source)], program(
        command("set_loop_size_outtoub", loop1_count=5, loop2_count=3),
        command("set_loop1_stride_outtoub", src_stride=300, dst_stride=32),
        command("set_loop2_stride_outtoub", src_stride=1500, dst_stride=96),
        command("copy_gm_to_ubuf", gm_src=GM_TILE, ub_dst=0x400, n_burst=4, len_burst=100,
                data_select_bit=1, left_padding=2, src_stride=100, dst_stride=128,
                dtype="u16")))


def test_repeated_destination_keeps_the_last_iteration():
    source = random_bytes(16 * 256)
    engine = check([(GM_TILE, source)], program(
        command("set_loop_size_outtoub", loop1_count=16, loop2_count=1),
        command("set_loop1_stride_outtoub", src_stride=256, dst_stride=0),
        command("copy_gm_to_ubuf", gm_src=GM_TILE, ub_dst=0, n_burst=2, len_burst=128,
                src_stride=128, dst_stride=128)))
    assert engine.ub[:256].tobytes() == source[15 * 256:]
    assert engine.stats.bytes_moved[Pipe.MTE2] == 16 * 256


def test_gm_destinations_that_overlap_keep_the_later_rows():
    ub = ub_with(0, random_bytes(4096))
    check([(0x7000, guarded(1024))], program(
        command("set_loop_size_ubtoout", loop1_count=3, loop2_count=2),
        command("set_loop1_stride_ubtoout", src_stride=128, dst_stride=7),
        command("set_loop2_stride_ubtoout", src_stride=1024, dst_stride=50),
        command("copy_ubuf_to_gm", ub_src=0, gm_dst=0x7010, n_burst=3, len_burst=40,
                dst_stride=41, src_stride=64)), ub=ub)


def test_single_row_extent_overlapping_the_next_iteration():
    """n_burst 1 with a wide row extent E: loop1 rows overlap through their padding."""
    check([(GM_TILE, random_bytes(256))], program(
        command("set_mov_pad_val", pad_val=0xF00D),
        command("set_loop_size_outtoub", loop1_count=4, loop2_count=1),
        command("set_loop1_stride_outtoub", src_stride=16, dst_stride=32),
        command("copy_gm_to_ubuf", gm_src=GM_TILE, ub_dst=0, n_burst=1, len_burst=16,
                data_select_bit=1, dst_stride=100, dtype="i16")))


# --- GM region seams --------------------------------------------------------------------

def test_copy_reads_across_adjacent_gm_regions():
    regions = [(GM_TILE, random_bytes(300)), (GM_TILE + 300, random_bytes(700))]
    check(regions, program(
        command("set_loop_size_outtoub", loop1_count=2, loop2_count=1),
        command("set_loop1_stride_outtoub", src_stride=480, dst_stride=1024),
        command("copy_gm_to_ubuf", gm_src=GM_TILE + 10, ub_dst=0, n_burst=6, len_burst=72,
                left_padding=1, data_select_bit=1, src_stride=80, dst_stride=96,
                dtype="i32")))


def test_copy_writes_across_adjacent_gm_regions():
    regions = [(0x5000 + 64 * i, guarded(64)) for i in range(8)]
    check(regions, program(
        command("copy_ubuf_to_gm", ub_src=0, gm_dst=0x5003, n_burst=5, len_burst=90,
                dst_stride=99, src_stride=96)), ub=ub_with(0, random_bytes(512)))


# --- empty copies -----------------------------------------------------------------------

@pytest.mark.parametrize("field, value", [("n_burst", 0), ("len_burst", 0),
                                          ("loop1_count", 0), ("loop2_count", 0)])
def test_a_zero_count_copies_nothing_and_completes(field, value):
    fields = {"loop1_count": 2, "loop2_count": 2, "n_burst": 2, "len_burst": 64} | {field: value}
    counts = {name: fields[name] for name in ("loop1_count", "loop2_count")}
    copy = {name: fields[name] for name in ("n_burst", "len_burst")}
    engine = Engine()
    engine.gm.map(GM_TILE, random_bytes(64))
    before = snapshot(engine)
    # the source rows beyond the first 64 bytes are unmapped: an empty copy reads none
    engine.run(program(
        command("set_loop_size_outtoub", **counts),
        command("copy_gm_to_ubuf", gm_src=GM_TILE, ub_dst=0, src_stride=64, dst_stride=64,
                data_select_bit=1, **copy),
        command("set_loop_size_ubtoout", **counts),
        command("copy_ubuf_to_gm", ub_src=0, gm_dst=0x10_0000, src_stride=64, dst_stride=64,
                **copy)))
    assert snapshot(engine)[:2] == before[:2]
    assert engine.stats.ops == 4
    assert engine.stats.bytes_moved == {Pipe.MTE2: 0, Pipe.MTE3: 0, Pipe.V: 0}


def test_empty_ubuf_to_ubuf_completes():
    engine = Engine()
    engine.run([command("copy_ubuf_to_ubuf", ub_src=0, ub_dst=0, n_burst=0, len_burst=4)])
    assert engine.stats.ops == 1 and not engine.ub.any()


def test_unknown_profile_is_named():
    with pytest.raises(ValueError, match="unknown profile 'a9'"):
        Engine("a9")
