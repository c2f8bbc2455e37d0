"""`python -m model.bench`: how fast the golden model copies, next to numpy.

Prints one row per (direction, total, row size): the model's time for one copy command
divided by the time numpy's own strided copy takes for the same bytes with the same
strides (best of several runs each), then the time per command of a small tile copy, then
the race check's time on footprints of a million rows and on thousands of copies.
The machine is shared and noisy, so this reports; it does not fail.
"""

import time

import numpy as np

from .engine import Engine
from .isa import DTYPE_BY_NAME, OP_BY_MNEMONIC, UB_LINE
from .parser import parse
from .program import Instr
from .races import analyse

KIB, MIB = 1 << 10, 1 << 20
WINDOW = 128 * KIB          # the UB bytes one pass of a big transfer covers
GM_BASE = 0x10_0000_0000
RATIO_GOAL = 3.0
COMMAND_GOAL_US = 50.0
TOTALS = (1 * MIB, 64 * MIB)
ROWS = (64, 256, 4 * KIB)

HEADER = f"""\
MTE golden model speed (profile a5). ratio = model time / numpy time for the same bytes;
numpy time = one np.copyto between the same strided (pass, row, byte) views. Best of N runs.
  GM->UB: the UB (256 KiB) cannot hold 1 or 64 MiB, so loop1 runs total/{WINDOW // KIB} KiB passes
          over a {WINDOW // KIB} KiB UB window, each pass one {UB_LINE}-byte line after the previous
          (loop1 dst stride {UB_LINE}): passes overlap, later passes win, every byte is moved.
  UB->GM: loop1 re-reads one {WINDOW // KIB} KiB UB window per pass (src stride 0) into consecutive
          GM (dst stride {WINDOW // KIB} KiB): the whole total lands in distinct GM bytes."""


def _command(mnemonic, dtype="u8", **values):
    op = OP_BY_MNEMONIC[mnemonic]
    fields = {f.name: 0 for f in op.fields} | values
    if "dtype" in fields:
        fields["dtype"] = DTYPE_BY_NAME[dtype].code
    return Instr(op, fields, line=1)


def _best_seconds(action, runs):
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def _view(buffer, shape, strides):
    return np.ndarray(shape, dtype=np.uint8, buffer=buffer, strides=strides + (1,))


def _runs(total):
    return 3 if total > 8 * MIB else 15


def bench_gm_to_ub(total, row, rng):
    """(model seconds, numpy seconds) for a GM->UB transfer of `total` bytes."""
    passes, n = total // WINDOW, WINDOW // row
    engine = Engine()
    source = engine.gm.map(GM_BASE, total)
    source[:] = rng.integers(0, 256, total, dtype=np.uint8)
    engine.run([_command("set_loop_size_outtoub", loop1_count=passes, loop2_count=1),
                _command("set_loop1_stride_outtoub", src_stride=WINDOW, dst_stride=UB_LINE)])
    copy = _command("copy_gm_to_ubuf", gm_src=GM_BASE, ub_dst=0, n_burst=n, len_burst=row,
                    src_stride=row, dst_stride=row)
    model = _best_seconds(lambda: engine.execute(copy), _runs(total))
    src = _view(source, (passes, n, row), (WINDOW, row))
    dst = _view(engine.ub, (passes, n, row), (UB_LINE, row))
    return model, _best_seconds(lambda: np.copyto(dst, src), _runs(total))


def bench_ub_to_gm(total, row, rng):
    """(model seconds, numpy seconds) for a UB->GM transfer of `total` bytes."""
    passes, n = total // WINDOW, WINDOW // row
    engine = Engine()
    engine.ub[:WINDOW] = rng.integers(0, 256, WINDOW, dtype=np.uint8)
    target = engine.gm.map(GM_BASE, total)
    engine.run([_command("set_loop_size_ubtoout", loop1_count=passes, loop2_count=1),
                _command("set_loop1_stride_ubtoout", src_stride=0, dst_stride=WINDOW)])
    copy = _command("copy_ubuf_to_gm", ub_src=0, gm_dst=GM_BASE, n_burst=n, len_burst=row,
                    dst_stride=row, src_stride=row)
    model = _best_seconds(lambda: engine.execute(copy), _runs(total))
    src = _view(engine.ub, (passes, n, row), (0, row))
    dst = _view(target, (passes, n, row), (WINDOW, row))
    return model, _best_seconds(lambda: np.copyto(dst, src), _runs(total))


def bench_tile_command(count=2000):
    """Seconds per copy_gm_to_ubuf of a 32x32 f32 tile (seed example 1)."""
    engine = Engine()
    engine.gm.map(GM_BASE, 32 * 128)
    copy = _command("copy_gm_to_ubuf", gm_src=GM_BASE, ub_dst=0, n_burst=32, len_burst=128,
                    src_stride=128, dst_stride=128, dtype="f32")

    def many():
        for _ in range(count):
            engine.execute(copy)

    return _best_seconds(many, 5) / count


_U8_TYPES = "!pto.ptr<u8, gm>, !pto.ptr<u8, ub>"
RACE_GOAL_S = 1.0


def interleaved_rows(gm_offset):
    """MTE2 reading 2^20 GM rows of 32 bytes (2048 rows, 512 times) and MTE3 writing 2^20
    between them, `gm_offset` bytes after them; no flag between."""
    block = 2048 * 64 + 16
    return [f"pto.mte_gm_ub %c0, %c0, %c0, %c32 nburst(%c2048, %c64, %c32) "
            f"loop(%c512, %c{block}, %c0) : {_U8_TYPES}, i64 x8",
            f"pto.mte_ub_gm %c65536, %c{gm_offset}, %c32 nburst(%c2048, %c32, %c64) "
            f"loop(%c512, %c0, %c{block}) : !pto.ptr<u8, ub>, !pto.ptr<u8, gm>, i64 x7"]


def disjoint_copies(copies):
    """`copies` one-row MTE2 loads and as many MTE3 stores (software loops), no flag
    between, no byte shared: every pair is compared and none races."""
    loops = "loop(%c1, %c0, %c0) loop(%c1, %c0, %c0) " f"loop(%c{copies}, %c32, %c32)"
    return [f"pto.mte_gm_ub %c1048576, %c0, %c0, %c32 nburst(%c1, %c0, %c0) {loops} "
            f": {_U8_TYPES}, i64 x14",
            f"pto.mte_ub_gm %c131072, %c2097152, %c32 nburst(%c1, %c0, %c0) {loops} "
            ": !pto.ptr<u8, ub>, !pto.ptr<u8, gm>, i64 x13"]


def bench_races():
    """(what, seconds, races found) of the race check on the two programs above."""
    rows, copies = parse("\n".join(interleaved_rows(32))), parse("\n".join(disjoint_copies(3000)))
    return [(what, _best_seconds(lambda: analyse(instrs), 3), len(analyse(instrs).races))
            for what, instrs in (("2^20 interleaved rows a side", rows),
                                 ("3000 x 3000 unordered one-row copies", copies))]


def _size(n):
    return f"{n // MIB} MiB" if n >= MIB else f"{n // KIB} KiB" if n >= KIB else f"{n} B"


def _verdict(ok):
    return "PASS" if ok else "MISS"


def main():
    rng = np.random.default_rng(0)
    print(HEADER)
    print()
    print(f"{'direction':<9} {'total':>7} {'row':>6} {'model ms':>9} {'numpy ms':>9} "
          f"{'ratio':>6}  goal     result")
    for name, bench in (("GM->UB", bench_gm_to_ub), ("UB->GM", bench_ub_to_gm)):
        for total in TOTALS:
            for row in ROWS:
                model, reference = bench(total, row, rng)
                ratio = model / reference
                print(f"{name:<9} {_size(total):>7} {_size(row):>6} {model * 1e3:9.2f} "
                      f"{reference * 1e3:9.2f} {ratio:6.2f}  <= {RATIO_GOAL:.0f}x   "
                      f"{_verdict(ratio <= RATIO_GOAL)}")
    per_command = bench_tile_command() * 1e6
    print()
    print(f"copy_gm_to_ubuf, 32x32 f32 tile (32 rows of 128 B), per command: "
          f"{per_command:.1f} us  goal <= {COMMAND_GOAL_US:.0f} us  "
          f"{_verdict(per_command <= COMMAND_GOAL_US)}")
    print()
    for what, seconds, races in bench_races():
        print(f"race check, {what}: {seconds:.2f} s, {races} races  "
              f"goal <= {RACE_GOAL_S:.0f} s  {_verdict(seconds <= RACE_GOAL_S)}")


if __name__ == "__main__":
    main()
