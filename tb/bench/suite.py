"""The benchmark's programs (pure Python): the fixed shape suite, the row-size sweep and
the streams.

Each program is a `tb.programs.Case` whose last `timed` commands are the copies that are
timed (one for a shape or a sweep point, STREAM_COPIES for a stream, twice that for a
concurrent stream); the commands before them set the loop registers (and the pad value)
those copies use. GM sources and UB sources hold random bytes, everything else the guard
byte, so a stray or missing write shows when the memories are compared whole with the
model's.
"""

import random
from dataclasses import dataclass

from model.isa import PROFILES
from model.parser import parse
from tb.programs import GUARD, PAGE, Case
from tb.scoreboard import copies_with_registers, copy_rows, destination_space, source_space

from .metrics import direction, final_copy

GM_BASE = 0x10_0000_0000
UB_HIGH = 128 * 1024                 # UB->UB destinations start here
SWEEP_SIZES = tuple(32 << i for i in range(12))      # 32 B .. 64 KiB
STREAM_SIZES = (32, 64, 128, 256, 1024, 4096)
STREAM_COPIES = 64                   # back-to-back one-row copies per direction


@dataclass(frozen=True)
class BenchCase:
    name: str
    direction: str           # "GM->UB", "UB->GM" or "UB->UB"
    case: Case
    size: int = 0            # sweep and streams: the row's bytes; 0 for a shape
    timed: int = 1           # the program's last commands that are timed, all copies
    kind: str = "shape"      # "shape", "sweep", "stream" or "concurrent"


def _c(value):
    return f"%c{value}_i64"


def _flag(value):
    return "%true" if value else "%false"


def _loops(way, loop1=(1, 0, 0), loop2=(1, 0, 0)):
    """Loop register writes, `way` "outtoub" or "ubtoout"; loopN = (count, src, dst)."""
    return (f"pto.set_loop_size_{way} {_c(loop1[0])}, {_c(loop2[0])} : i64, i64\n"
            f"pto.set_loop1_stride_{way} {_c(loop1[1])}, {_c(loop1[2])} : i64, i64\n"
            f"pto.set_loop2_stride_{way} {_c(loop2[1])}, {_c(loop2[2])} : i64, i64\n")


def gm_to_ub(n, length, gm_stride, ub_stride, dtype="u8", pads=None, loop1=(1, 0, 0),
             loop2=(1, 0, 0)):
    """copy_gm_to_ubuf %src -> %dst; `pads` (left, right, pad value) turns data_select on."""
    setup = _loops("outtoub", loop1, loop2)
    if pads:
        setup += f"pto.set_mov_pad_val {_c(pads[2])} : i64\n"
    return setup + _gm_to_ub_copy("%src", "%dst", n, length, gm_stride, ub_stride, dtype, pads)


def _gm_to_ub_copy(src, dst, n, length, gm_stride, ub_stride, dtype="u8", pads=None):
    left, right, _ = pads or (0, 0, 0)
    return (
        f"pto.copy_gm_to_ubuf {src}, {dst}, %c0_i64, {_c(n)}, {_c(length)}, {_c(left)}, "
        f"{_c(right)}, {_flag(pads)}, %c0_i64, {_c(gm_stride)}, {_c(ub_stride)}\n"
        f"    : !pto.ptr<{dtype}, gm>, !pto.ptr<{dtype}, ub>, "
        f"i64, i64, i64, i64, i64, i1, i64, i64, i64\n")


def ub_to_gm(n, length, ub_stride, gm_stride, dtype="u8", loop1=(1, 0, 0), loop2=(1, 0, 0)):
    """copy_ubuf_to_gm %src -> %dst (loop strides: (count, UB, GM))."""
    return _loops("ubtoout", loop1, loop2) + _ub_to_gm_copy("%src", "%dst", n, length,
                                                            ub_stride, gm_stride, dtype)


def _ub_to_gm_copy(src, dst, n, length, ub_stride, gm_stride, dtype="u8"):
    return (
        f"pto.copy_ubuf_to_gm {src}, {dst}, %c0_i64, {_c(n)}, {_c(length)}, %c0_i64, "
        f"{_c(gm_stride)}, {_c(ub_stride)}\n"
        f"    : !pto.ptr<{dtype}, ub>, !pto.ptr<{dtype}, gm>, i64, i64, i64, i64, i64, i64\n")


def ub_to_ub(n, lines, src_gap=0, dst_gap=0):
    """copy_ubuf_to_ubuf %src -> %dst, lengths and gaps in 32-byte lines."""
    return (f"pto.copy_ubuf_to_ubuf %src, %dst, %c0_i64, {_c(n)}, {_c(lines)}, {_c(src_gap)}, "
            f"{_c(dst_gap)}\n    : !pto.ptr<u8, ub>, !pto.ptr<u8, ub>, i64, i64, i64, i64, i64\n")


def _spans(rows, side):
    """(start, end) byte spans of the rows' source (side 0) or destination (side 1)."""
    return [(row[side], row[side] + row[2 + side]) for row in rows]


def _gm_windows(spans, fill):
    """Whole-page GM windows covering `spans`, filled by fill(length) -> bytes."""
    pages = sorted({p for lo, hi in spans for p in range(lo // PAGE, (hi - 1) // PAGE + 1)})
    runs = []
    for page in pages:
        if runs and runs[-1][1] == page:
            runs[-1][1] = page + 1
        else:
            runs.append([page, page + 1])
    return tuple((lo * PAGE, fill((hi - lo) * PAGE)) for lo, hi in runs)


def _guard(length):
    return bytes([GUARD]) * length


def make_case(name, text, src, dst, profile="a5", size=0):
    """A BenchCase of `text` with %src and %dst bound, and the memory it starts from."""
    bindings = {"src": src, "dst": dst}
    op, _, _ = final_copy(parse(text, bindings))
    kind = "sweep" if size else "shape"
    return _bench_case(name, direction(op), text, bindings, profile, size, 1, kind)


def _bench_case(name, way, text, bindings, profile, size, timed, kind):
    """The BenchCase with its starting memory: every copy's GM source random, its GM
    destination guard bytes, its UB source random (before any copy writes it)."""
    rng = random.Random(name)
    ub = bytearray([GUARD]) * PROFILES[profile].ub_size
    gm_sources, gm_destinations = [], []
    for instr, regs in copies_with_registers(parse(text, bindings)):
        rows = copy_rows(instr.op, instr.values, regs)
        if source_space(instr.op) == "gm":
            gm_sources += _spans(rows, 0)
        else:
            for lo, hi in _spans(rows, 0):
                ub[lo:hi] = rng.randbytes(hi - lo)
        if destination_space(instr.op) == "gm":
            gm_destinations += _spans(rows, 1)
    gm = _gm_windows(gm_sources, rng.randbytes) + _gm_windows(gm_destinations, _guard)
    case = Case(name, text, bindings, gm, bytes(ub), profile, rerun="python -m tb.bench")
    return BenchCase(name, way, case, size, timed, kind)


def shapes(profile="a5"):
    """The fixed suite: each shape one copy command."""
    f32_tile = dict(n=32, length=128, dtype="f32")
    padded = dict(n=32, length=100, gm_stride=100, ub_stride=128, dtype="f16",
                  pads=(3, 5, 0x3C00))
    specs = [
        ("GM->UB tile 32x32 f32", gm_to_ub(gm_stride=128, ub_stride=128, **f32_tile),
         GM_BASE, 0),
        ("GM->UB tile of a 1024-col f32 matrix",
         gm_to_ub(gm_stride=4096, ub_stride=128, **f32_tile), GM_BASE, 0),
        ("GM->UB padded f16 rows (L3 R5)", gm_to_ub(**padded), GM_BASE, 0),
        ("GM->UB unaligned GM start+stride", gm_to_ub(32, 200, 1000, 224), GM_BASE + 5, 0),
        ("GM->UB rows of 20 B", gm_to_ub(64, 20, 20, 32), GM_BASE, 0),
        ("GM->UB rows crossing 4 KiB", gm_to_ub(16, 512, 4096, 512),
         GM_BASE + PAGE - 200, 0),
        ("GM->UB loop1 x loop2 batches",
         gm_to_ub(8, 256, 512, 256, "f16", loop1=(4, 4096, 2048), loop2=(2, 32768, 8192)),
         GM_BASE, 0),
        ("UB->GM tile 32x32 f32", ub_to_gm(ub_stride=128, gm_stride=128, **f32_tile),
         0, GM_BASE),
        ("UB->GM tile into a 1024-col f32 matrix",
         ub_to_gm(ub_stride=128, gm_stride=4096, **f32_tile), 0, GM_BASE),
        ("UB->GM unaligned GM start+stride", ub_to_gm(32, 200, 224, 1000), 0, GM_BASE + 5),
        ("UB->GM rows of 20 B", ub_to_gm(64, 20, 32, 20), 0, GM_BASE),
        ("UB->GM rows crossing 4 KiB", ub_to_gm(16, 512, 512, 4096), 0,
         GM_BASE + PAGE - 200),
        ("UB->GM loop1 x loop2 batches",
         ub_to_gm(8, 256, 256, 512, "f16", loop1=(4, 2048, 4096), loop2=(2, 8192, 32768)),
         0, GM_BASE),
        ("UB->UB 32 rows of 128 B", ub_to_ub(32, 4), 0, UB_HIGH),
        ("UB->UB rows with gaps", ub_to_ub(16, 8, 2, 1), 0, UB_HIGH),
    ]
    return [make_case(name, text, src, dst, profile) for name, text, src, dst in specs]


def sweep(profile="a5"):
    """One single-row copy per direction and size of SWEEP_SIZES, all aligned."""
    out = []
    for size in SWEEP_SIZES:
        for way, text, src, dst in (("GM->UB", gm_to_ub(1, size, size, size), GM_BASE, 0),
                                    ("UB->GM", ub_to_gm(1, size, size, size), 0, GM_BASE),
                                    ("UB->UB", ub_to_ub(1, size // 32), 0, UB_HIGH)):
            out.append(make_case(f"{way} row of {size} B", text, src, dst, profile, size))
    return out


# Streams: where each direction's copies read and write. GM->UB writes UB's low half,
# UB->GM reads its high half, so both can run at once with no race; a copy's slot wraps
# within its half (the same pipe writes a slot again only after its earlier copy).
STREAM_GM = {"GM->UB": GM_BASE, "UB->GM": GM_BASE + (1 << 30)}
STREAM_UB = {"GM->UB": 0, "UB->GM": UB_HIGH}


def _stream_copy(way, k, size):
    """The k-th copy of a stream: one row of `size` bytes, and the pointers it binds."""
    slot = k % (UB_HIGH // size) * size
    gm, ub = STREAM_GM[way] + k * size, STREAM_UB[way] + slot
    if way == "GM->UB":
        text = _gm_to_ub_copy(f"%s{k}", f"%d{k}", 1, size, size, size)
        return text, {f"s{k}": gm, f"d{k}": ub}
    text = _ub_to_gm_copy(f"%u{k}", f"%g{k}", 1, size, size, size)
    return text, {f"u{k}": ub, f"g{k}": gm}


def stream_case(ways, size, profile="a5", copies=STREAM_COPIES):
    """`copies` one-row copies of `size` bytes per direction of `ways`, interleaved in
    the command stream (one of each in turn), after each direction's loop registers."""
    text, bindings = "", {}
    for way in ways:
        text += _loops("outtoub" if way == "GM->UB" else "ubtoout")
    for k in range(copies):
        for way in ways:
            copy, names = _stream_copy(way, k, size)
            text += copy
            bindings.update(names)
    name = f"{' + '.join(ways)} stream of {copies} x {size} B"
    kind = "concurrent" if len(ways) > 1 else "stream"
    return _bench_case(name, "+".join(ways), text, bindings, profile, size,
                       copies * len(ways), kind)


def streams(profile="a5"):
    """Per size of STREAM_SIZES: a stream of each GM direction alone, then both at once."""
    out = []
    for size in STREAM_SIZES:
        out += [stream_case((way,), size, profile) for way in ("GM->UB", "UB->GM")]
        out.append(stream_case(("GM->UB", "UB->GM"), size, profile))
    return out
