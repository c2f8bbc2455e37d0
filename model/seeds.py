"""The seed programs, run on the golden model: `python -m model.seeds` (`make sim`).

The six examples of seed 000 and the example of seed 001 are kept verbatim; the one-line
example of seed 003 is wrapped in the loop-stride writes and the copy that use its loop
counts. Each comes with the bindings, GM windows and UB contents it needs (deterministic
byte patterns) and the bytes it must leave in UB and GM, which one check compares.
"""

import sys
from dataclasses import dataclass

import numpy as np

from .engine import Engine
from .errors import MteError
from .isa import Pipe
from .parser import parse

# --- seed 000: the six DMA copy examples, verbatim -------------------------------------

TILE_LOAD_F32 = """\
// Simple 2D load — no multi-level loops needed
pto.set_loop_size_outtoub %c1_i64, %c1_i64 : i64, i64

pto.copy_gm_to_ubuf %arg0, %ub_in,
    %c0_i64,       // sid = 0
    %c32_i64,      // n_burst = 32 (32 rows)
    %c128_i64,     // len_burst = 128 bytes per row
    %c0_i64,       // left_padding = 0
    %c0_i64,       // right_padding = 0
    %false,        // data_select_bit = false
    %c0_i64,       // l2_cache_ctl = 0
    %c128_i64,     // src_stride = 128 bytes
    %c128_i64      // dst_stride = 128 bytes
    : !pto.ptr<f32, gm>, !pto.ptr<f32, ub>, i64, i64, i64,
      i64, i64, i1, i64, i64, i64
"""

MATRIX_TILE_LOAD_F16 = """\
// Simple 2D load — no multi-level loops needed
pto.set_loop_size_outtoub %c1_i64, %c1_i64 : i64, i64
pto.set_loop1_stride_outtoub %c0_i64, %c0_i64 : i64, i64
pto.set_loop2_stride_outtoub %c0_i64, %c0_i64 : i64, i64

pto.copy_gm_to_ubuf %gm_ptr, %ub_ptr,
    %c0_i64,       // sid = 0
    %c64_i64,      // n_burst = 64 (64 rows)
    %c256_i64,     // len_burst = 256 bytes per row
    %c0_i64,       // left_padding = 0
    %c0_i64,       // right_padding = 0
    %false,        // data_select_bit = false
    %c0_i64,       // l2_cache_ctl = 0
    %c1024_i64,    // src_stride = 1024 bytes (full matrix row)
    %c256_i64      // dst_stride = 256 bytes (tile row)
    : !pto.ptr<f16, gm>, !pto.ptr<f16, ub>, i64, i64, i64,
      i64, i64, i1, i64, i64, i64
"""

PADDED_LOAD_F16 = """\
pto.set_loop_size_outtoub %c1_i64, %c1_i64 : i64, i64
pto.set_loop1_stride_outtoub %c0_i64, %c0_i64 : i64, i64
pto.set_loop2_stride_outtoub %c0_i64, %c0_i64 : i64, i64

pto.copy_gm_to_ubuf %gm_ptr, %ub_ptr,
    %c0_i64,       // sid = 0
    %c64_i64,      // n_burst = 64
    %c200_i64,     // len_burst = 200 bytes
    %c0_i64,       // left_padding = 0
    %c0_i64,       // right_padding = 0
    %true,         // data_select_bit = true (enable padding)
    %c0_i64,       // l2_cache_ctl = 0
    %c200_i64,     // src_stride = 200 bytes
    %c256_i64      // dst_stride = 256 bytes (32B-aligned)
    : !pto.ptr<f16, gm>, !pto.ptr<f16, ub>, i64, i64, i64,
      i64, i64, i1, i64, i64, i64
"""

TILE_STORE_F32 = """\
// Configure MTE3 strides
pto.set_loop_size_ubtoout %c1_i64, %c1_i64 : i64, i64

pto.copy_ubuf_to_gm %ub_out, %arg1,
    %c0_i64,       // sid = 0
    %c32_i64,      // n_burst = 32
    %c128_i64,     // len_burst = 128 bytes
    %c0_i64,       // reserved = 0
    %c128_i64,     // dst_stride = 128 bytes
    %c128_i64      // src_stride = 128 bytes
    : !pto.ptr<f32, ub>, !pto.ptr<f32, gm>, i64, i64, i64, i64, i64, i64
"""

MATRIX_TILE_STORE_F16 = """\
// Configure MTE3 strides
pto.set_loop_size_ubtoout %c1_i64, %c1_i64 : i64, i64
pto.set_loop1_stride_ubtoout %c0_i64, %c0_i64 : i64, i64
pto.set_loop2_stride_ubtoout %c0_i64, %c0_i64 : i64, i64

pto.copy_ubuf_to_gm %ub_ptr, %gm_ptr,
    %c0_i64,       // sid = 0
    %c64_i64,      // n_burst = 64
    %c256_i64,     // len_burst = 256 bytes
    %c0_i64,       // reserved = 0
    %c1024_i64,    // dst_stride = 1024 bytes (GM row)
    %c256_i64      // src_stride = 256 bytes (UB row)
    : !pto.ptr<f16, ub>, !pto.ptr<f16, gm>, i64, i64, i64, i64, i64, i64
"""

BATCH_LOAD_LOOP1 = """\
// loop1_count = 4 batches, loop2_count = 1 (not used)
pto.set_loop_size_outtoub %c4_i64, %c1_i64 : i64, i64

// loop1 stride: advance by one batch (2048 bytes) in both GM and UB
pto.set_loop1_stride_outtoub %c2048_i64, %c2048_i64 : i64, i64
pto.set_loop2_stride_outtoub %c0_i64, %c0_i64 : i64, i64

pto.copy_gm_to_ubuf %gm_ptr, %ub_ptr,
    %c0_i64,       // sid = 0
    %c8_i64,       // n_burst = 8 rows per batch
    %c256_i64,     // len_burst = 256 bytes per row
    %c0_i64,       // left_padding = 0
    %c0_i64,       // right_padding = 0
    %false,        // data_select_bit = false
    %c0_i64,       // l2_cache_ctl = 0
    %c256_i64,     // src_stride = 256 (contiguous rows)
    %c256_i64      // dst_stride = 256 (contiguous rows)
    : !pto.ptr<f16, gm>, !pto.ptr<f16, ub>, i64, i64, i64,
      i64, i64, i1, i64, i64, i64
"""

# --- seed 001: the grouped UB->UB copy, verbatim -------------------------------------

UB_TO_UB_I16 = """\
pto.mte_ub_ub %ub_src, %ub_dst, %len32b
  nburst(%rows, %src_gap, %dst_gap)
  : !pto.ptr<i16, ub>, !pto.ptr<i16, ub>, i64, i64, i64, i64
"""

# --- seed 003: the loop-count write, verbatim, then the copy that uses it ------------

LOOP_SIZE_UBTOOUT = "pto.set_loop_size_ubtoout %loop1_count, %loop2_count : i64, i64"

LOOPED_STORE_I16 = LOOP_SIZE_UBTOOUT + """
// loop1: UB +256, GM +512; loop2: UB +512, GM +1024; 4 rows of 64 bytes, GM rows 128 apart
pto.set_loop1_stride_ubtoout %c256_i64, %c512_i64 : i64, i64
pto.set_loop2_stride_ubtoout %c512_i64, %c1024_i64 : i64, i64
pto.copy_ubuf_to_gm %ub_src, %gm_dst, %c0_i64, %c4_i64, %c64_i64, %c0_i64, %c128_i64, %c64_i64
    : !pto.ptr<i16, ub>, !pto.ptr<i16, gm>, i64, i64, i64, i64, i64, i64
"""


def byte_pattern(n, seed):
    """n deterministic, non-repeating-looking bytes."""
    return ((np.arange(n, dtype=np.uint64) * 2654435761 + seed * 40503) >> 11).astype(np.uint8)


MATRIX_BASE = 0x40_0000_0000          # a 1024x512 f16 matrix high in the 40-bit GM
MATRIX_ROW = 512 * 2
MATRIX = byte_pattern(1024 * MATRIX_ROW, 2)
TILE_32X32_F32 = byte_pattern(32 * 128, 1)


def matrix_at(row, col):
    return MATRIX_BASE + row * MATRIX_ROW + col * 2


def _rows_then_zeros(data, row, pitch):
    """`data` cut into rows of `row` bytes, each followed by zeros up to `pitch` bytes."""
    rows = data.reshape(-1, row)
    out = np.zeros((len(rows), pitch), dtype=np.uint8)
    out[:, :row] = rows
    return out.reshape(-1)


def _matrix_with_tile(row, col, tile):
    """The matrix after a 64x128 f16 tile is stored at (row, col)."""
    expected = MATRIX.reshape(1024, MATRIX_ROW).copy()
    expected[row:row + 64, col * 2:col * 2 + 256] = tile.reshape(64, 256)
    return expected.reshape(-1)


PADDED_ROWS = byte_pattern(64 * 200, 3)
BATCHES = byte_pattern(4 * 8 * 256, 4)
TILE_64X128_F16 = byte_pattern(64 * 256, 5)
UB_ROWS = byte_pattern(8 * 3 * 32, 6)
LOOPED_ROWS = byte_pattern(3 * 2 * 4 * 64, 7)


@dataclass(frozen=True)
class Example:
    name: str
    program: str
    bindings: dict
    expect: tuple                            # ("gm" | "ub", address, bytes it must hold after)
    gm: tuple = ()                           # (address, bytes) windows to map
    ub: tuple = ()                           # (address, bytes) to preload
    profile: str = "a5"

    def check(self, engine):
        """Whether every expected range holds its bytes."""
        return all(np.array_equal(_read(engine, space, addr, len(data)), data)
                   for space, addr, data in self.expect)


def _read(engine, space, addr, n):
    return engine.ub[addr:addr + n] if space == "ub" else engine.gm.read(addr, n)


EXAMPLES = (
    Example("000/1 tile load f32", TILE_LOAD_F32, {"arg0": 0x1000, "ub_in": 0},
            expect=(("ub", 0, TILE_32X32_F32),), gm=((0x1000, TILE_32X32_F32),)),
    Example("000/2 matrix tile load f16", MATRIX_TILE_LOAD_F16,
            {"gm_ptr": matrix_at(256, 128), "ub_ptr": 0x8000},
            expect=(("ub", 0x8000,
                     MATRIX.reshape(1024, MATRIX_ROW)[256:320, 256:512].reshape(-1)),),
            gm=((MATRIX_BASE, MATRIX),)),
    Example("000/3 padded load f16", PADDED_LOAD_F16, {"gm_ptr": 0x2000, "ub_ptr": 0x100},
            expect=(("ub", 0x100, _rows_then_zeros(PADDED_ROWS, 200, 256)),),
            gm=((0x2000, PADDED_ROWS),),
            ub=((0x100, np.full(64 * 256, 0xEE, dtype=np.uint8)),)),
    Example("000/4 tile store f32", TILE_STORE_F32, {"ub_out": 0x4000, "arg1": 0x3000},
            expect=(("gm", 0x3000, TILE_32X32_F32),),
            gm=((0x3000, 4096),), ub=((0x4000, TILE_32X32_F32),)),
    Example("000/5 matrix tile store f16", MATRIX_TILE_STORE_F16,
            {"ub_ptr": 0, "gm_ptr": matrix_at(512, 256)},
            expect=(("gm", MATRIX_BASE, _matrix_with_tile(512, 256, TILE_64X128_F16)),),
            gm=((MATRIX_BASE, MATRIX),), ub=((0, TILE_64X128_F16),)),
    Example("000/6 batch load loop1", BATCH_LOAD_LOOP1, {"gm_ptr": 0x6000, "ub_ptr": 0x10000},
            expect=(("ub", 0x10000, BATCHES),), gm=((0x6000, BATCHES),)),
    Example("001 mte_ub_ub i16", UB_TO_UB_I16,
            {"ub_src": 0, "ub_dst": 0x20000, "len32b": 2, "rows": 8, "src_gap": 1, "dst_gap": 3},
            expect=(("ub", 0x20000,
                     _rows_then_zeros(UB_ROWS.reshape(8, 3 * 32)[:, :64], 64, 5 * 32)),),
            ub=((0, UB_ROWS),)),
    Example("003 looped store i16", LOOPED_STORE_I16,
            {"loop1_count": 2, "loop2_count": 3, "ub_src": 0, "gm_dst": 0x9000},
            expect=(("gm", 0x9000, _rows_then_zeros(LOOPED_ROWS, 64, 128)),),
            gm=((0x9000, 3072),), ub=((0, LOOPED_ROWS),)),
)


def prepare(example):
    """An engine holding the example's GM windows and UB contents."""
    engine = Engine(example.profile)
    for addr, data in example.gm:
        engine.gm.map(addr, data)
    for addr, data in example.ub:
        engine.ub[addr:addr + len(data)] = data
    return engine


def run(example):
    """(engine, error): the engine after running the example, and its MteError or None."""
    engine = prepare(example)
    try:
        engine.run(parse(example.program, example.bindings))
    except MteError as error:
        return engine, error
    return engine, None


def main():
    header = (f"{'example':<30} {'ops':>4} {'MTE2 bytes':>11} {'MTE3 bytes':>11} "
              f"{'V bytes':>8}  result")
    print(header)
    print("-" * len(header))
    failures = 0
    for example in EXAMPLES:
        engine, error = run(example)
        ok = error is None and example.check(engine)
        failures += not ok
        moved = engine.stats.bytes_moved
        result = "OK" if ok else (str(error) if error else "WRONG RESULT")
        print(f"{example.name:<30} {engine.stats.ops:>4} {moved[Pipe.MTE2]:>11} "
              f"{moved[Pipe.MTE3]:>11} {moved[Pipe.V]:>8}  {result}")
    print(f"{len(EXAMPLES) - failures}/{len(EXAMPLES)} examples OK")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
