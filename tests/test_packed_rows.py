"""Packed UB rows (SPEC.md, "Packed UB rows (profile a5 only)"): on a5 a UB row stride
equal to len_burst need not be a multiple of 32 when no pad is written, so rows sit back
to back and start mid-line. The expected bytes are worked out here from the seed's C
loops, row by row; the byte-by-byte reference (tests/reference.py) must agree too, and
the whole UB and every GM region are compared, with GUARD bytes around each destination."""

import numpy as np
import pytest

from harness import assert_same_run, run_both
from model.isa import PROFILES, ErrorCode
from strategies import GUARD, command
from test_errors import engine_with_memory, expect_rejected, load, store

RNG = np.random.default_rng(55)
GM = 0x7_0000_1000


def _bytes(n):
    return RNG.integers(0, 256, n, dtype=np.uint8).tobytes()


def _run(profile, regions, ub, *instrs):
    """Both machines through the program; returns the model's engine after a clean run."""
    for line, instr in enumerate(instrs, 1):
        instr.line = line
    outcome = run_both(profile, regions, list(instrs), ub)
    assert_same_run(outcome, regions)
    assert outcome.error is None
    return outcome.engine


def _rows(counts, strides):
    """Row offsets in the seed's loop order: loop2, loop1, n_burst (outermost first)."""
    (c2, c1, n), (s2, s1, s0) = counts, strides
    return [j * s2 + k * s1 + r * s0 for j in range(c2) for k in range(c1) for r in range(n)]


@pytest.mark.parametrize("dtype, length, n, src_stride, ub_dst", [
    ("u8", 40, 3, 50, 0x100),           # rows start at 0x128, 0x150: mid-line
    ("f16", 6, 9, 6, 0x2020),           # 6-byte rows, GM packed too
    ("f32", 36, 5, 100, 0x3fe00),       # 180 bytes up to 108 bytes short of the UB's end
    ("i64", 8, 7, 8, 0x40),
])
def test_packed_gm_to_ub_rows_sit_back_to_back(dtype, length, n, src_stride, ub_dst):
    gm = _bytes(src_stride * n + length)
    ub = bytearray([GUARD]) * PROFILES["a5"].ub_size
    expected = bytearray(ub)
    for r in range(n):                                  # the seed's burst loop
        src = r * src_stride
        expected[ub_dst + r * length:ub_dst + (r + 1) * length] = gm[src:src + length]
    engine = _run("a5", [(GM, gm)], bytes(ub), load(
        gm_src=GM, ub_dst=ub_dst, n_burst=n, len_burst=length, src_stride=src_stride,
        dst_stride=length, dtype=dtype))
    assert engine.ub.tobytes() == bytes(expected)


def test_packed_rows_inside_hardware_loops():
    """Each loop1 iteration packs 3 rows of 20 bytes from a line start; the loop strides
    stay multiples of 32 (loop2 rewrites part of loop1's rows: the later write wins)."""
    length, n, counts = 20, 3, (2, 2, 3)
    gm_strides, ub_strides = (1000, 300, 24), (64, 96, length)
    gm = _bytes(2000)
    ub = bytearray([GUARD]) * PROFILES["a5"].ub_size
    expected = bytearray(ub)
    base = 0x800
    for src, dst in zip(_rows(counts, gm_strides), _rows(counts, ub_strides)):
        expected[base + dst:base + dst + length] = gm[src:src + length]
    engine = _run("a5", [(GM, gm)], bytes(ub),
                  command("set_loop_size_outtoub", loop1_count=2, loop2_count=2),
                  command("set_loop1_stride_outtoub", src_stride=300, dst_stride=96),
                  command("set_loop2_stride_outtoub", src_stride=1000, dst_stride=64),
                  load(gm_src=GM, ub_dst=base, n_burst=n, len_burst=length, src_stride=24,
                       dst_stride=length))
    assert engine.ub.tobytes() == bytes(expected)


@pytest.mark.parametrize("dtype, length, n, dst_stride", [
    ("u8", 33, 4, 40), ("i32", 12, 6, 12), ("bf16", 2, 31, 7)])
def test_packed_ub_to_gm_rows_read_back_to_back(dtype, length, n, dst_stride):
    ub_src = 0x1240
    ub = bytearray([GUARD]) * PROFILES["a5"].ub_size
    ub[ub_src:ub_src + n * length] = _bytes(n * length)
    span = (n - 1) * dst_stride + length
    gm = bytes([GUARD]) * (span + 64)
    expected = bytearray(gm)
    for r in range(n):
        src = ub_src + r * length
        expected[32 + r * dst_stride:32 + r * dst_stride + length] = ub[src:src + length]
    engine = _run("a5", [(GM, gm)], bytes(ub), store(
        ub_src=ub_src, gm_dst=GM + 32, n_burst=n, len_burst=length, src_stride=length,
        dst_stride=dst_stride, dtype=dtype))
    assert engine.gm.read(GM, len(gm)).tobytes() == bytes(expected)


@pytest.mark.parametrize("profile", ["a2a3", "kirin9030", "kirinx90"])
@pytest.mark.parametrize("instr", [
    load(n_burst=3, len_burst=40, src_stride=40, dst_stride=40),
    store(n_burst=2, len_burst=24, src_stride=24, dst_stride=24)])
def test_other_profiles_keep_ub_misaligned(profile, instr):
    error = expect_rejected(ErrorCode.UB_MISALIGNED, instr, engine=engine_with_memory(profile))
    stride = "dst_stride 40" if instr.mnemonic == "copy_gm_to_ubuf" else "src_stride 24"
    assert stride in error.message


@pytest.mark.parametrize("instr, names", [
    # A padded row is never packed, even without pad bytes to write.
    (load(n_burst=2, len_burst=40, src_stride=40, dst_stride=40, data_select_bit=1),
     ("dst_stride 40", "padded row")),
    # Packed means a stride of exactly len_burst.
    (load(n_burst=2, len_burst=40, src_stride=40, dst_stride=41),
     ("dst_stride 41", "len_burst 40")),
    (store(n_burst=2, len_burst=24, src_stride=25, dst_stride=24),
     ("src_stride 25", "len_burst 24")),
    # The UB pointer and the loop strides still must be lines.
    (load(ub_dst=0x28, n_burst=2, len_burst=40, src_stride=40, dst_stride=40),
     ("ub_dst = 0x28",)),
])
def test_what_a5_does_not_pack(instr, names):
    error = expect_rejected(ErrorCode.UB_MISALIGNED, instr)
    assert all(name in error.message for name in names), error.message


def test_a_packed_rows_loop_stride_must_still_be_a_line():
    error = expect_rejected(
        ErrorCode.UB_MISALIGNED,
        command("set_loop_size_ubtoout", loop1_count=2, loop2_count=1),
        command("set_loop1_stride_ubtoout", src_stride=48, dst_stride=0),
        store(n_burst=2, len_burst=24, src_stride=24, dst_stride=24))
    assert "loop1 src stride 48" in error.message


def test_packed_rows_still_meet_the_range_rule():
    """Packed rows end at ub + n_burst * len_burst: up to the UB's last byte they run, one
    byte beyond is UB_RANGE."""
    top = PROFILES["a5"].ub_size - 64
    engine = engine_with_memory()
    engine.execute(load(ub_dst=top, n_burst=4, len_burst=16, src_stride=16, dst_stride=16))
    error = expect_rejected(ErrorCode.UB_RANGE, load(ub_dst=top, n_burst=3, len_burst=22,
                                                     src_stride=22, dst_stride=22))
    assert f"ub_dst = {top:#x}" in error.message


def test_mte_run_packs_on_a5_and_names_the_stride_elsewhere(capsys):
    """The corpus's packed-rows kernel runs on a5; on a2a3 `mte run` exits 1 with one line
    that names the row stride and its value."""
    from cli import main
    from tb.corpus import CORPUS
    args = ["run", str(CORPUS / "ascendc_a5_packed_rows.pto"), "--gm", "0x10000:4096",
            "--gm", "0x30000:4096", "--bind", "src=0x10010", "--bind", "out=0x30008"]
    assert main(args + ["--profile", "a5"]) == 0
    capsys.readouterr()
    assert main(args + ["--profile", "a2a3"]) == 1
    assert capsys.readouterr().err == (
        "UB_MISALIGNED: line 24: copy_gm_to_ubuf: dst_stride 40 is not a multiple of 32 "
        "with n_burst 5\n")
