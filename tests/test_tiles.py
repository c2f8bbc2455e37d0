"""Tile-level memory ops (model/tiles.py): pto.tassign, views, pto.tload / tprefetch /
tstore lowered to engine commands.

Expected memories come from the seed's formula, `dst[i, j] = src[r0 + i, c0 + j]` for
the tile's valid region (and the tile's pad value over the rest of each valid row), with
the GlobalTensor's five dimensions flattened into tile rows (ND) or columns (DN); never
from the model. Every memory is compared whole, around guard bytes.
"""

import itertools
from dataclasses import dataclass, replace

import numpy as np
import pytest

from model.assembler import assemble
from cli import main
from model.engine import Engine
from model.errors import MteError, ProgramError
from model.isa import DTYPE_BY_NAME, PROFILES, ErrorCode
from model.memory import GlobalMemory
from model.parser import parse

GM_IN, GM_OUT, GM_BYTES = 0x10000, 0x20000, 0x4000
UB_SPAN = 0x4000         # the UB bytes compared: the tiles live below it
PADS = {"none": 0, "zero": 1, "max": 2, "min": 3}
# The pad element of each (type, PadValue) as its little-endian bytes, from the types'
# definitions: IEEE infinities, the integers' extremes, E4M3's largest finite 448.
PAD_BYTES = {
    ("f16", "max"): (0x7C00).to_bytes(2, "little"),
    ("f32", "min"): (0xFF800000).to_bytes(4, "little"),
    ("bf16", "max"): (0x7F80).to_bytes(2, "little"),
    ("i8", "min"): bytes([0x80]), ("u16", "max"): b"\xff\xff",
    ("i32", "max"): (0x7FFFFFFF).to_bytes(4, "little"), ("u8", "min"): b"\x00",
    ("f8e4m3", "max"): bytes([0x7E]), ("f8e4m3", "min"): bytes([0xFE]),
    ("i64", "zero"): bytes(8),
}


@dataclass
class Case:
    """A Vec tile and the GM view it moves to or from."""
    dtype: str
    rows: int
    cols: int
    valid: tuple
    shape: tuple          # the view's shape, outermost first (the tensor_view's sizes)
    strides: tuple        # elements
    offsets: tuple        # partition offsets into a tensor of `extent`
    extent: tuple
    layout: str = "nd"
    pad: str = "none"
    ub: int = 0x400

    @property
    def es(self):
        return DTYPE_BY_NAME[self.dtype].size

    @property
    def tile_type(self):
        blayout = ", blayout=col_major" if self.layout == "dn" else ""
        return (f"!pto.tile_buf<vec, {self.rows}x{self.cols}x{self.dtype}, "
                f"valid={self.valid[0]}x{self.valid[1]}{blayout}, pad={PADS[self.pad]}>")

    def view_type(self, dims, kind="tensor_view"):
        return f"!pto.{kind}<{'x'.join(map(str, dims))}x{self.dtype}>"


def constants(values):
    return "\n".join(f"    %k{v} = arith.constant {v} : index" for v in sorted(set(values)))


def names(values):
    return ", ".join(f"%k{v}" for v in values)


def case_values(case):
    return case.extent + case.strides + case.offsets + case.shape + (case.ub,)


def statements(case, direction, tag="", gm="%gm", spelling="AS-2", op="tload"):
    """Assign the tile, make the view and move the tile's valid region; the names end in
    `tag`."""
    tile, view, part = f"%t{tag}", f"%v{tag}", f"%p{tag}"
    full, part_type = case.view_type(case.extent), case.view_type(case.shape,
                                                                  "partition_tensor_view")
    if spelling == "AS-2":
        assign = f"pto.tassign ins({tile}, %k{case.ub} : {case.tile_type}, index)"
        move = (f"pto.{op} ins({part} : {part_type}) outs({tile} : {case.tile_type})"
                if direction == "load" else
                f"pto.tstore ins({tile} : {case.tile_type}) outs({part} : {part_type})")
    else:
        tile_type = case.tile_type.replace("tile_buf", "tile")
        assign = f"pto.tassign {tile}, %k{case.ub} : {tile_type}, index"
        move = (f"{tile} = pto.{op} {part} : {part_type} -> {tile_type}" if direction == "load"
                else f"pto.tstore {tile}, {part} : ({tile_type}, {part_type}) -> ()")
    return [assign,
            f"{view} = pto.make_tensor_view {gm}, shape = [{names(case.extent)}], "
            f"strides = [{names(case.strides)}] {{layout = #pto.layout<{case.layout}>}} "
            f": {full}",
            f"{part} = pto.partition_view {view}, offsets = [{names(case.offsets)}], "
            f"sizes = [{names(case.shape)}] : {full} -> {part_type}",
            move]


def kernel(lines, cases):
    values = [v for case in cases for v in case_values(case)]
    body = "\n".join(f"    {line}" for line in lines)
    return f"""module {{
  func.func @kernel(%gm: !pto.ptr<u8, gm>, %out: !pto.ptr<u8, gm>) {{
{constants(values)}
{body}
    return
  }}
}}
"""


def tile_program(case, direction, spelling="AS-2", op="tload"):
    return kernel(statements(case, direction, spelling=spelling, op=op), [case])


MTE2_TO_MTE3 = ["pto.set_flag[PIPE_MTE2, PIPE_MTE3, EVENT_ID0]",
                "pto.wait_flag[PIPE_MTE2, PIPE_MTE3, EVENT_ID0]"]


def round_trip(case):
    """Load the case's region into the tile, then, once MTE2 is done, store it to the same
    place in the tensor at %out."""
    return kernel(statements(case, "load") + MTE2_TO_MTE3
                  + statements(case, "store", tag="s", gm="%out"), [case])


def guard(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def element_offsets(case):
    """Byte offset in GM, from the tensor's start, of tile element (i, j) of the valid
    region: the view's dimensions flattened into tile rows (ND: dimension 4 is the
    column) or columns (DN: dimension 3 is the row), the partition's offsets added."""
    rank = len(case.shape)
    along = rank - 1 if case.layout == "nd" else rank - 2
    outer = [d for d in range(rank) if d != along]
    offsets = {}
    for flat, index in enumerate(itertools.product(*(range(case.shape[d]) for d in outer))):
        for k in range(case.shape[along]):
            position = dict(zip(outer, index))
            position[along] = k
            element = sum((case.offsets[d] + position[d]) * case.strides[d]
                          for d in range(rank))
            i, j = (flat, k) if case.layout == "nd" else (k, flat)
            offsets[i, j] = element * case.es
    return offsets


def tile_address(case, i, j):
    if case.layout == "nd":
        return case.ub + (i * case.cols + j) * case.es
    return case.ub + (j * case.rows + i) * case.es


def expected_load(case, gm_bytes, ub_before):
    ub = ub_before.copy()
    for (i, j), offset in element_offsets(case).items():
        at = tile_address(case, i, j)
        ub[at:at + case.es] = gm_bytes[offset:offset + case.es]
    if case.pad != "none":
        pattern = np.frombuffer(PAD_BYTES[case.dtype, case.pad], dtype=np.uint8)
        if case.layout == "nd":
            pads = itertools.product(range(case.valid[0]), range(case.valid[1], case.cols))
        else:
            pads = itertools.product(range(case.valid[0], case.rows), range(case.valid[1]))
        for i, j in pads:
            at = tile_address(case, i, j)
            ub[at:at + case.es] = pattern
    return ub


def expected_store(case, ub_bytes, gm_before):
    gm = gm_before.copy()
    for (i, j), offset in element_offsets(case).items():
        at = tile_address(case, i, j)
        gm[offset:offset + case.es] = ub_bytes[at:at + case.es]
    return gm


def run_model(text, gm_bytes, ub_bytes, profile="a5"):
    gm = GlobalMemory()
    gm.map(GM_IN, gm_bytes)
    engine = Engine(profile, gm)
    engine.ub[:UB_SPAN] = ub_bytes
    engine.run(parse(text, {"gm": GM_IN}, profile))
    return engine.gm.read(GM_IN, GM_BYTES), engine.ub[:UB_SPAN].copy()


LOADS = [
    # a 2-D partition at an offset, a padded row (f16 +inf)
    Case("f16", 8, 32, (5, 20), (5, 20), (64, 1), (2, 3), (16, 64), pad="max"),
    # f32 with -inf pad, the whole tile width used by the valid columns but one
    Case("f32", 4, 16, (3, 15), (3, 15), (40, 1), (1, 20), (8, 40), pad="min"),
    # four dimensions: loop1 over dimension 2, 4 rows each; no pad
    Case("i8", 12, 64, (12, 40), (3, 4, 40), (300, 64, 1), (0, 2, 5), (3, 8, 64)),
    # five dimensions: a software loop over dimension 0, loop2, loop1, n_burst
    Case("u16", 24, 16, (24, 10), (2, 3, 2, 2, 10), (900, 300, 100, 20, 1),
         (1, 0, 1, 3, 4), (3, 3, 3, 5, 20), pad="max"),
    # DN: columns of 12 rows, the tile column-major, padded below the valid rows
    Case("i32", 16, 6, (12, 5), (12, 5), (1, 40), (4, 1), (40, 8), layout="dn", pad="max"),
    Case("f8e4m3", 2, 32, (2, 7), (2, 7), (31, 1), (0, 0), (2, 31), pad="min"),
    Case("i64", 2, 4, (2, 3), (2, 3), (3, 1), (0, 0), (2, 3), pad="zero"),
]


@pytest.mark.parametrize("case", LOADS, ids=lambda c: f"{c.dtype}-{c.layout}-{len(c.shape)}d")
def test_a_tile_load_moves_the_valid_region_as_the_formula_says(case):
    gm_bytes, ub_before = guard(GM_BYTES, 1), guard(UB_SPAN, 2)
    gm_after, ub_after = run_model(tile_program(case, "load"), gm_bytes, ub_before)
    assert np.array_equal(ub_after, expected_load(case, gm_bytes, ub_before))
    assert np.array_equal(gm_after, gm_bytes)


@pytest.mark.parametrize("case", LOADS[:5], ids=lambda c: f"{c.dtype}-{c.layout}-{len(c.shape)}d")
def test_a_tile_store_writes_the_valid_region_as_the_formula_says(case):
    gm_before, ub_bytes = guard(GM_BYTES, 3), guard(UB_SPAN, 4)
    gm_after, ub_after = run_model(tile_program(case, "store"), gm_before, ub_bytes)
    assert np.array_equal(gm_after, expected_store(case, ub_bytes, gm_before))
    assert np.array_equal(ub_after, ub_bytes)


def test_the_formula_catches_a_moved_element():
    """The check above fails if the model moved a single element elsewhere."""
    case = LOADS[0]
    gm_bytes, ub_before = guard(GM_BYTES, 1), guard(UB_SPAN, 2)
    text = tile_program(case, "load").replace("offsets = [%k2, %k3]", "offsets = [%k2, %k2]")
    _, ub_after = run_model(text, gm_bytes, ub_before)
    assert not np.array_equal(ub_after, expected_load(case, gm_bytes, ub_before))


def test_the_view_dimensions_become_loops_burst_and_software_loop():
    """pto-isa's A5 TLoad: dimensions 1, 2, 3 are loop2, loop1, n_burst; the valid
    columns len_burst; dimension 0 one copy each."""
    case = LOADS[3]
    instrs = parse(tile_program(case, "load"), {"gm": GM_IN})
    by_op = {}
    for instr in instrs:
        by_op.setdefault(instr.mnemonic, []).append(instr.values)
    assert by_op["set_loop_size_outtoub"] == [{"loop1_count": 2, "loop2_count": 3}]
    assert by_op["set_loop1_stride_outtoub"] == [{"src_stride": 200, "dst_stride": 64}]
    assert by_op["set_loop2_stride_outtoub"] == [{"src_stride": 600, "dst_stride": 128}]
    assert by_op["set_mov_pad_val"] == [{"pad_val": 0xFFFF}]
    copies = by_op["copy_gm_to_ubuf"]
    assert [(c["gm_src"] - GM_IN, c["ub_dst"]) for c in copies] == \
        [((900 + 100 + 60 + 4) * 2, 0x400), ((2 * 900 + 100 + 60 + 4) * 2, 0x400 + 384)]
    assert {(c["n_burst"], c["len_burst"], c["src_stride"], c["dst_stride"],
             c["data_select_bit"]) for c in copies} == {(2, 20, 40, 32, 1)}


HAND_WRITTEN = """
    pto.set_loop_size_outtoub %c2, %c3 : i64, i64
    pto.set_loop1_stride_outtoub %c200, %c64 : i64, i64
    pto.set_loop2_stride_outtoub %c600, %c128 : i64, i64
    %pad = arith.constant 0xFFFF : u16
    pto.set_mov_pad_val %pad : u16
    pto.copy_gm_to_ubuf %g0, %c1024, %c0, %c2, %c20, %c0, %c0, %true, %c0, %c40, %c32
        : !pto.ptr<u16, gm>, !pto.ptr<u16, ub>, i64, i64, i64, i64, i64, i1, i64, i64, i64
    pto.copy_gm_to_ubuf %g1, %c1408, %c0, %c2, %c20, %c0, %c0, %true, %c0, %c40, %c32
        : !pto.ptr<u16, gm>, !pto.ptr<u16, ub>, i64, i64, i64, i64, i64, i1, i64, i64, i64
    pto.set_flag[PIPE_MTE2, PIPE_MTE3, EVENT_ID0]
    pto.wait_flag[PIPE_MTE2, PIPE_MTE3, EVENT_ID0]
    pto.set_loop_size_ubtoout %c2, %c3 : i64, i64
    pto.set_loop1_stride_ubtoout %c64, %c200 : i64, i64
    pto.set_loop2_stride_ubtoout %c128, %c600 : i64, i64
    pto.copy_ubuf_to_gm %c1024, %h0, %c0, %c2, %c20, %c0, %c40, %c32
        : !pto.ptr<u16, ub>, !pto.ptr<u16, gm>, i64, i64, i64, i64, i64, i64
    pto.copy_ubuf_to_gm %c1408, %h1, %c0, %c2, %c20, %c0, %c40, %c32
        : !pto.ptr<u16, ub>, !pto.ptr<u16, gm>, i64, i64, i64, i64, i64, i64
"""


def test_a_tile_program_equals_the_dma_program_it_lowers_to(tmp_path):
    """`mte asm` gives the tile program and the hand-written commands the same words, and
    `mte run` leaves the same memories, which are the formula's."""
    case = LOADS[3]
    out = GM_IN + GM_BYTES // 2
    first = (900 + 100 + 60 + 4) * 2
    bindings = {"tile": {"gm": GM_IN, "out": out},
                "hand": {"g0": GM_IN + first, "g1": GM_IN + first + 1800, "h0": out + first,
                         "h1": out + first + 1800}}
    (tmp_path / "gm.bin").write_bytes(guard(GM_BYTES, 5).tobytes())
    (tmp_path / "ub.bin").write_bytes(guard(UB_SPAN, 6).tobytes())
    results = {}
    for name, text in (("tile", round_trip(case)), ("hand", HAND_WRITTEN)):
        program = tmp_path / f"{name}.pto"
        program.write_text(text)
        binds = [arg for bound, value in bindings[name].items()
                 for arg in ("--bind", f"{bound}={value}")]
        words, gm, ub = (tmp_path / f"{name}.{kind}" for kind in ("words", "gm", "ub"))
        assert main(["asm", str(program), "--format", "bin", "-o", str(words)] + binds) == 0
        assert main(["run", str(program), "--gm", f"{GM_IN}={tmp_path / 'gm.bin'}",
                     "--ub", f"0={tmp_path / 'ub.bin'}", "--dump-gm", f"{GM_IN}:{GM_BYTES}={gm}",
                     "--dump-ub", f"0:{UB_SPAN}={ub}"] + binds) == 0
        results[name] = [path.read_bytes() for path in (words, gm, ub)]
    assert len(results["tile"][0]) > 40
    assert results["tile"] == results["hand"]
    gm_in, half = guard(GM_BYTES, 5), GM_BYTES // 2
    want = gm_in.copy()
    want[half:] = expected_store(case, expected_load(case, gm_in, guard(UB_SPAN, 6)),
                                 gm_in[half:])
    assert results["tile"][1] == want.tobytes()


@pytest.mark.parametrize("op", ["tload", "tprefetch"])
def test_the_as1_spelling_and_tprefetch_lower_as_the_as2_tload(op):
    case = LOADS[4]
    want = assemble(parse(tile_program(case, "load"), {"gm": GM_IN}))
    assert assemble(parse(tile_program(case, "load", "AS-1", op), {"gm": GM_IN})) == want
    as1_store = parse(tile_program(case, "store", "AS-1"), {"gm": GM_IN})
    assert assemble(as1_store) == assemble(parse(tile_program(case, "store"), {"gm": GM_IN}))


def test_keyed_compact_and_positional_tile_types_are_one_type():
    case = LOADS[0]
    keyed = ("!pto.tile_buf<loc=vec, dtype=f16, rows=8, cols=32, v_row=5, v_col=20, "
             "blayout=row_major, slayout=none_box, fractal=512, pad=2>")
    text = tile_program(case, "load")
    assert assemble(parse(text.replace(case.tile_type, keyed), {"gm": GM_IN})) == \
        assemble(parse(text, {"gm": GM_IN}))
    whole = replace(case, valid=(8, 32), shape=(8, 32), offsets=(2, 3))
    positional = "!pto.tile<vec, f16, 8, 32, row_major, none_box, 512, 2>"
    text = tile_program(whole, "load")
    assert assemble(parse(text.replace(whole.tile_type, positional), {"gm": GM_IN})) == \
        assemble(parse(text, {"gm": GM_IN}))


def test_show_lowering_prints_each_command_with_the_tile_op_line(tmp_path, capsys):
    case = LOADS[0]
    program = tmp_path / "tile.pto"
    program.write_text(tile_program(case, "load"))
    assert main(["run", str(program), "--bind", f"gm={GM_IN:#x}", "--gm",
                 f"{GM_IN:#x}:{GM_BYTES}", "--show-lowering"]) == 0
    lines = capsys.readouterr().out.splitlines()
    line = 1 + tile_program(case, "load").splitlines().index(
        next(s for s in tile_program(case, "load").splitlines() if "pto.tload" in s))
    assert lines[0] == f"line {line}: pto.tload ins(%p : {case.view_type((5, 20), 'partition_tensor_view')}) outs(%t : {case.tile_type})"
    assert [s.split()[2] for s in lines[1:6]] == [
        "set_loop_size_outtoub", "set_loop1_stride_outtoub", "set_loop2_stride_outtoub",
        "set_mov_pad_val", "copy_gm_to_ubuf"]
    assert all(s.startswith(f"line {line}:   ") for s in lines[1:6])
    assert "pad_val=0x7c00" in lines[4]
    assert f"gm_src={GM_IN + (2 * 64 + 3) * 2:#x} ub_dst=0x400" in lines[5]
    assert lines[6] == "ops run: 5"


# --- checks ----------------------------------------------------------------------------

def assign(tile_type, address, profile="a5"):
    return parse(f"pto.tassign ins(%t, %a : {tile_type}, index)", {"a": address}, profile)


def assign_error(tile_type, address, profile="a5"):
    with pytest.raises(ProgramError) as info:
        assign(tile_type, address, profile)
    return info.value.message


def test_sa_0351_a_memory_space_the_engine_lacks():
    for loc in ("mat", "acc", "left", "right", "bias", "scaling"):
        message = assign_error(f"!pto.tile_buf<{loc}, 16x16xf16>", 0)
        assert message.startswith("SA-0351: Memory space is not available on this "
                                  "architecture."), message
        assert "out of scope" in message
    assert assign("!pto.tile_buf<vec, 16x16xf16>", 0) == []


def test_sa_0352_the_tile_does_not_fit_the_profiles_ub():
    big = "!pto.tile_buf<vec, 256x256xf32>"           # seed 002's bad1: 256 KiB
    assert assign_error(big, 0, "a2a3").startswith(
        "SA-0352: Tile storage size exceeds memory space capacity. (256x256xf32 is 262144 "
        "bytes, UB of a2a3 196608)")
    assert assign(big, 0, "a5") == []               # a5's UB is 256 KiB


def test_sa_0353_address_plus_size_beyond_the_capacity():
    tile = "!pto.tile_buf<vec, 128x128xf32>"          # seed 002's bad2: 64 KiB
    assert assign_error(tile, 0x20001, "a2a3") == (
        "SA-0353: addr + tile_size exceeds memory space capacity (out of bounds). "
        "(0x20001 + 65536 > 196608, UB of a2a3)")
    assert assign_error(tile, 0x20020, "a2a3").startswith("SA-0353")
    assert assign(tile, 0x20000, "a2a3") == []       # ends exactly at 192 KiB
    assert assign_error(tile, -32).startswith("SA-0353")
    for profile in PROFILES.values():
        assert assign_error(tile, profile.ub_size - 65536 + 32, profile.name).startswith(
            "SA-0353")


def test_sa_0354_an_address_off_the_32_byte_grid():
    tile = "!pto.tile_buf<vec, 16x16xf16>"
    assert assign_error(tile, 0x1010) == ("SA-0354: addr is not properly aligned for the "
                                          "target memory space. (0x1010 is not a multiple "
                                          "of 32)")
    assert assign(tile, 0x1020) == []


@pytest.mark.parametrize("tile_type, message", [
    ("!pto.tile_buf<vec, 16x16xf16, slayout=row_major>",
     "blayout=row_major, slayout=row_major: a Vec tile here is ND (row_major, none_box) or "
     "DN (col_major, none_box); fractal layouts (NZ, ZN) are not supported yet"),
    ("!pto.tile_buf<vec, 4x10xf16>",
     "the tile's row (cols x 2) is 20 bytes, not a multiple of 32: a Vec tile's rows start "
     "32-byte aligned in UB"),
    ("!pto.tile_buf<vec, 10x4xf16, blayout=col_major>",
     "the tile's column (rows x 2) is 20 bytes, not a multiple of 32"),
    ("!pto.tile_buf<vec, 16x16xf16, valid=?x?>",
     "a dynamic valid region ('?') is given by alloc_tile's valid_row = %r valid_col = %c, "
     "not by tassign"),
    ("!pto.tile_buf<vec, ?x16xf16>", "rows is dynamic ('?'): this engine needs it as a number"),
    ("!pto.tile_buf<vec, 16x16xf16, valid=17x16>",
     "valid region 17x16 exceeds the tile's 16x16"),
    ("!pto.tile_buf<vec, 16x16xf16, pad=4>", "unknown pad 4 (0 none, 1 zero, 2 max, 3 min)"),
    ("!pto.tile_buf<vec, 16x16xf4e2m1>", "a tile of sub-byte f4e2m1 is not supported"),
    ("!pto.tile_buf<16x16xf16>", "!pto.tile_buf<16x16xf16> gives no loc"),
    ("!pto.tile<vec, f16, 16, 16, row_major, none_box, 512>",
     "unknown tile type field 'f16'"),
    ("!pto.tile<acc, f32, 16, 16, row_major, none_box, 512, 0>", "SA-0351"),
    ("!pto.tile_buf<vec, 16x16xf16, colour=red>", "unknown tile type field 'colour=red'"),
    ("!pto.tensor_view<16x16xf16>", "expected !pto.tile<...> or !pto.tile_buf<...>"),
])
def test_tile_types_the_engine_cannot_place_are_named_errors(tile_type, message):
    assert assign_error(tile_type, 0).startswith(message)


def move_error(case, direction, old, new):
    with pytest.raises(ProgramError) as info:
        parse(tile_program(case, direction).replace(old, new), {"gm": GM_IN})
    return info.value.message


@pytest.mark.parametrize("direction", ["load", "store"])
def test_moves_the_engine_cannot_lower_are_named_errors(direction):
    case = LOADS[0]
    assert move_error(case, direction, "#pto.layout<nd>", "#pto.layout<dn>") == (
        "ND tile, DN view: a Vec tile moves ND to ND or DN to DN only")
    assert move_error(case, direction, "#pto.layout<nd>", "#pto.layout<nz>").startswith(
        "GM layout nz: a Vec tile moves ND to ND or DN to DN")
    assert move_error(case, direction, "sizes = [%k5, %k20]", "sizes = [%k3, %k20]") \
        .startswith("the view's shape 1x1x1x3x20 is not the tile's valid region 5x20")
    assert move_error(case, direction, "strides = [%k64, %k1]", "strides = [%k64, %k2]") \
        .startswith("the view's dimension 4 has stride 2: its elements must be contiguous")
    assert move_error(case, direction, "offsets = [%k2, %k3]", "offsets = [%k2, %k64]") \
        .startswith("dimension 1: offset 64 + size 20 exceeds the view's 64")
    assert move_error(case, direction, "pto.tassign ins(%t", "pto.tassign ins(%u") == (
        "tile %t has no UB address: pto.tassign it first")
    assert move_error(case, direction, f"%t : {case.tile_type}",
                      f"%t : {case.tile_type.replace('pad=2', 'pad=1')}").startswith(
        "%t was assigned as a different tile type")


def test_element_sizes_must_be_equal():
    """seed 004: sizeof(tile.dtype) == sizeof(gtensor.dtype); the copy is rejected with
    TYPE_UNSUPPORTED and moves no byte, as a copy of mixed-size pointers is."""
    case = LOADS[0]
    text = tile_program(case, "load").replace("x16xf16", "x16xf32").replace(
        "4x20xf16", "4x20xf32").replace("5x20xf16>", "5x20xf32>").replace(
        "16x64xf16", "16x64xf32")
    gm_bytes, ub_before = guard(GM_BYTES, 1), guard(UB_SPAN, 2)
    with pytest.raises(MteError) as info:
        run_model(text, gm_bytes, ub_before)
    assert info.value.code == ErrorCode.TYPE_UNSUPPORTED
    assert info.value.message == (
        "tile element type f16 (2 bytes) and view element type f32 (4 bytes) differ in "
        "size: sizeof(tile.dtype) == sizeof(gtensor.dtype) (seed 004)")
    same_size = LOADS[2]                               # an i8 tile from a u8 view
    text = tile_program(same_size, "load").replace("xi8>", "xu8>").replace(
        same_size.tile_type.replace("xi8", "xu8"), same_size.tile_type)
    _, ub_after = run_model(text, gm_bytes, ub_before)
    assert np.array_equal(ub_after, expected_load(same_size, gm_bytes, ub_before))


@pytest.mark.parametrize("old, new, message", [
    ("pto.tassign ins(%t, %k1024 :", "%r = pto.tassign ins(%t, %k1024 :", "tassign has no result"),
    ("%v = pto.make_tensor_view", "pto.make_tensor_view", "make_tensor_view needs a result name"),
    ("ins(%t, %k1024 :", "ins(%t :", "tassign: ins(...) takes 2 operands and 2 types, found 1 and 2"),
    ("strides = [%k300, %k64, %k1]", "strides = [%k300, %k64]",
     "make_tensor_view: shape and strides need the same number of dimensions, 1 to 5"),
    (", strides = [%k300, %k64, %k1]", "", "make_tensor_view needs strides = [...]"),
    ("offsets = [%k0, %k2, %k5], sizes = [%k3, %k4, %k40]", "offsets = [%k2, %k5], sizes = [%k4, %k40]",
     "partition_view of a 3-dimensional view takes 3 offsets and sizes"),
    ("partition_view %v,", "partition_view %t,",
     "%t is not a tensor view (make_tensor_view or partition_view)"),
    ("partition_view %v, offsets = [%k0,", "partition_view %v, offsets = [%n,",
     "offset %n = -1 is below 0"),
    ("outs(%p : !pto.partition_tensor_view<3x4x40xi8>)", "outs(%p : !pto.partition_tensor_view<3x4x40xf16>)",
     "%p has element type i8, not that of !pto.partition_tensor_view<3x4x40xf16>"),
    ("outs(%p : !pto.partition_tensor_view<3x4x40xi8>)", "outs(%p, %p : !pto.partition_tensor_view<3x4x40xi8>)",
     "tstore: outs(...) takes 1 operands and 1 types, found 2 and 1"),
    ("pto.tstore ins(", "%r = pto.tstore ins(", "tstore has no result"),
    ("%p = pto.partition_view", "%v = pto.partition_view", "%v is already defined"),
    ("%p = pto.partition_view", "%k1 = pto.partition_view", "%k1 is already defined"),
    ("!pto.tensor_view<3x8x64xi8>", "!pto.tensor_view<3x8x64xq9>", "unknown element type 'q9'"),
])
def test_malformed_tile_statements_are_named_errors(old, new, message):
    text = tile_program(LOADS[2], "store")
    assert old in text
    with pytest.raises(ProgramError) as info:
        parse(text.replace(old, new), {"gm": GM_IN, "n": -1})
    assert info.value.message == message


def test_as1_load_names_its_tile_as_its_result():
    text = tile_program(LOADS[2], "load", "AS-1")
    with pytest.raises(ProgramError) as info:
        parse(text.replace("%t = pto.tload", "pto.tload"), {"gm": GM_IN})
    assert info.value.message.startswith("tload %view : view type -> tile type names its tile")


def test_a_view_of_more_copies_than_the_limit_is_refused():
    """Only an empty view can get there: a tile's valid rows fit in UB."""
    case = Case("u8", 32, 32, (0, 32), (70000, 1, 1, 0, 32), (32, 32, 32, 32, 1),
                (0, 0, 0, 0, 0), (70000, 1, 1, 0, 32))
    with pytest.raises(ProgramError) as info:
        parse(tile_program(case, "load"), {"gm": GM_IN})
    assert info.value.message == "dimension 0 of the view unrolls into more than 65536 copies"


def test_pad_max_of_hifloat8_is_refused():
    case = Case("hifloat8", 2, 32, (2, 7), (2, 7), (31, 1), (0, 0), (2, 31), pad="max")
    with pytest.raises(ProgramError) as info:
        parse(tile_program(case, "load"), {"gm": GM_IN})
    assert info.value.message.startswith("pad=2 (max) of hifloat8 is not supported")
    zero = Case("hifloat8", 2, 32, (2, 7), (2, 7), (31, 1), (0, 0), (2, 31), pad="zero")
    assert parse(tile_program(zero, "load"), {"gm": GM_IN})[3].values == {"pad_val": 0}


def test_mutated_tile_programs_give_program_errors_only():
    """Characters cut and spliced at random into tile programs: the parser answers each
    with a ProgramError or instructions, never another exception (this caught a view
    type with a comma in it)."""
    rng = np.random.default_rng(7)
    texts = [round_trip(c) for c in LOADS] + [tile_program(c, "load", "AS-1") for c in LOADS]
    pieces = ["(", ")", "<", ">", ",", ":", "=", "[", "]", "?", "x", "%k0", "%t", "-1",
              "99999999999999999999", "vec", "mat", "pad=", "valid=", "!pto.tile_buf<",
              "->", "{", "}", "ins(", "outs(", "f16", "#pto.layout<dn>", "", ", ", "x, "]
    for _ in range(3000):
        text = texts[rng.integers(len(texts))]
        for _ in range(rng.integers(1, 4)):
            i = int(rng.integers(len(text)))
            text = text[:i] + pieces[rng.integers(len(pieces))] + text[i + int(rng.integers(13)):]
        try:
            parse(text, {"gm": GM_IN, "out": GM_IN + GM_BYTES // 2})
        except ProgramError:
            pass


def test_tile_programs_on_the_rtl_move_what_the_formula_says():
    """One RTL run (tb/rtl_engine.py): three loads (ND padded over five dimensions, DN,
    ND at an offset), then, after MTE2 is done, a store of the first tile. Whole UB and
    the whole GM window against the formula."""
    from tb.rtl_engine import run_on_rtl
    first, dn, offset = LOADS[3], replace(LOADS[4], ub=0x1000), replace(LOADS[0], ub=0x2000)
    lines = (statements(first, "load", "a") + statements(dn, "load", "b")
             + statements(offset, "load", "c") + MTE2_TO_MTE3
             + statements(first, "store", "s", gm="%out"))
    half = GM_BYTES // 2
    instrs = parse(kernel(lines, [first, dn, offset]), {"gm": GM_IN, "out": GM_IN + half})
    gm_bytes, ub_before = guard(GM_BYTES, 8), guard(UB_SPAN, 9)
    gm = GlobalMemory()
    gm.map(GM_IN, gm_bytes)
    result = run_on_rtl(instrs, "a5", gm, [(0, ub_before.tobytes())])
    assert result.error is None
    want_ub = ub_before
    for case in (first, dn, offset):
        want_ub = expected_load(case, gm_bytes, want_ub)
    ub = np.frombuffer(result.read_ub(0, PROFILES["a5"].ub_size), dtype=np.uint8)
    assert np.array_equal(ub[:UB_SPAN], want_ub)
    assert not ub[UB_SPAN:].any()
    want_gm = gm_bytes.copy()
    want_gm[half:] = expected_store(first, want_ub, gm_bytes[half:])
    assert result.read_gm(GM_IN, GM_BYTES) == want_gm.tobytes()


def alloc_program(case, placement):
    """The case's load with its tile placed by PTOAS's alloc_tile instead of tassign."""
    text = tile_program(case, "load")
    assign = next(line for line in text.splitlines() if "pto.tassign" in line)
    return text.replace(assign, f"    %t = pto.alloc_tile {placement}")


def test_alloc_tile_places_a_tile_as_tassign_does():
    case = LOADS[0]
    want = assemble(parse(tile_program(case, "load"), {"gm": GM_IN}))
    static = alloc_program(case, f"addr = %k1024 : {case.tile_type}")
    assert assemble(parse(static, {"gm": GM_IN})) == want
    dynamic_type = case.tile_type.replace("valid=5x20", "valid=?x?")
    dynamic = alloc_program(case, f"addr = %k1024 valid_row = %k5 valid_col = %k20 : "
                                  f"{dynamic_type}").replace(
        f"outs(%t : {case.tile_type})", f"outs(%t : {dynamic_type})")
    assert assemble(parse(dynamic, {"gm": GM_IN})) == want


@pytest.mark.parametrize("placement, message", [
    ("valid_row = %k5 : !pto.tile_buf<vec, 8x32xf16, valid=5x20, pad=2>",
     "alloc_tile needs addr = %a: this engine places a tile where the program says (no "
     "compiler placement)"),
    ("addr = %k1024 valid_row = %k5 : !pto.tile_buf<vec, 8x32xf16, valid=5x20, pad=2>",
     "valid_row = %x goes with a dynamic ('?') valid row count, and only with one"),
    ("addr = %k1024 valid_row = %k5 : !pto.tile_buf<vec, 8x32xf16, valid=?x?, pad=2>",
     "valid_col = %x goes with a dynamic ('?') valid column count, and only with one"),
    ("addr = %k1024 valid_row = %k20 valid_col = %k20 : !pto.tile_buf<vec, 8x32xf16, "
     "valid=?x?, pad=2>", "valid region 20x20 exceeds the tile's 8x32"),
    ("addr = %k5 : !pto.tile_buf<vec, 8x32xf16, valid=5x20, pad=2>",
     "SA-0354: addr is not properly aligned for the target memory space. (0x5 is not a "
     "multiple of 32)"),
    ("%k5, addr = %k1024 : !pto.tile_buf<vec, 8x32xf16, valid=5x20, pad=2>",
     "alloc_tile takes addr = %a [valid_row = %r valid_col = %c] and one tile type"),
])
def test_alloc_tile_errors(placement, message):
    with pytest.raises(ProgramError) as info:
        parse(alloc_program(LOADS[0], placement), {"gm": GM_IN})
    assert info.value.message == message


def test_an_atomic_store_is_out_of_scope():
    text = tile_program(LOADS[0], "store")
    store = next(line for line in text.splitlines() if "pto.tstore" in line)
    with pytest.raises(ProgramError) as info:
        parse(text.replace(store, store + " {atomic_type = #pto.atomic_type<add>}"),
              {"gm": GM_IN})
    assert info.value.message == ("an atomic store (atomic_type = #pto.atomic_type<add>) is "
                                  "out of scope: this engine writes GM, it does not add to it")
    quiet = text.replace(store, store + " {atomic_type = #pto.atomic_type<none>}")
    assert assemble(parse(quiet, {"gm": GM_IN})) == assemble(parse(text, {"gm": GM_IN}))


def test_view_shapes_and_strides_bound_from_outside():
    """A view's shape, strides and offsets may be free names given by --bind."""
    case = LOADS[0]
    text = tile_program(case, "load").replace("strides = [%k64,", "strides = [%rs,").replace(
        "offsets = [%k2, %k3]", "offsets = [%r0, %col]")
    bound = parse(text, {"gm": GM_IN, "rs": 64, "r0": 2, "col": 3})
    assert assemble(bound) == assemble(parse(tile_program(case, "load"), {"gm": GM_IN}))
    moved = parse(text, {"gm": GM_IN, "rs": 64, "r0": 3, "col": 3})
    assert moved[-1].values["gm_src"] == GM_IN + (3 * 64 + 3) * 2
