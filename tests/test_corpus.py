"""The corpus (tests/programs/): real-style programs run through `mte run --engine model`,
their whole memories compared with bytes worked out here, independently of the model.

Each program has an entry in EXPECTED: a function that applies, to the program's starting
memories (tb/corpus.py reads them from its `// run:` lines), what the program does, in the
seed's C loops (`gm_to_ub`, `ub_to_gm`, `ub_to_ub` below, written from seed 000 and
SPEC.md, not from the model) or as its source states the result. Every GM window and the
whole UB are compared, so a byte written where it should not be shows as well as one not
written. The RTL runs the same programs in the cocotb regression (tests/test_cocotb.py).
"""

import struct

import pytest

from cli import main
from tb.corpus import cli_arguments, load, programs

LINE = 32


class Memories:
    """GM windows and the whole UB, as a program starts from them."""

    def __init__(self, program):
        self.gm = {base: bytearray(data) for base, data in program.gm}
        self.ub = bytearray(program.ub)

    def window(self, addr, length):
        for base, data in self.gm.items():
            if base <= addr and addr + length <= base + len(data):
                return data, addr - base
        raise AssertionError(f"GM {addr:#x}+{length} is outside every window")

    def read_gm(self, addr, length):
        data, at = self.window(addr, length)
        return bytes(data[at:at + length])

    def write_gm(self, addr, payload):
        data, at = self.window(addr, len(payload))
        data[at:at + len(payload)] = payload


def _align(value):
    return -(-value // LINE) * LINE


def _rows(n, src_stride, dst_stride, loop1, loop2):
    """(source offset, destination offset) of every row, in the seed's loop order."""
    (c1, s1, d1), (c2, s2, d2) = loop1, loop2
    return [(j * s2 + k * s1 + r * src_stride, j * d2 + k * d1 + r * dst_stride)
            for j in range(c2) for k in range(c1) for r in range(n)]


def gm_to_ub(m, gm, ub, n, length, gm_stride, ub_stride, loop1=(1, 0, 0), loop2=(1, 0, 0),
             pad=None):
    """copy_gm_to_ubuf. `pad`: (one pad element's bytes, left, right) writes the whole
    row extent align_up(max(ub_stride, footprint), 32): left pads, data, pads."""
    for src, dst in _rows(n, gm_stride, ub_stride, loop1, loop2):
        data = m.read_gm(gm + src, length)
        if pad is None:
            m.ub[ub + dst:ub + dst + length] = data
            continue
        element, left, right = pad
        extent = _align(max(ub_stride, (left + right) * len(element) + length))
        row = bytearray(element[o % len(element)] for o in range(extent))
        row[left * len(element):left * len(element) + length] = data
        m.ub[ub + dst:ub + dst + extent] = row


def ub_to_gm(m, ub, gm, n, length, ub_stride, gm_stride, loop1=(1, 0, 0), loop2=(1, 0, 0)):
    """copy_ubuf_to_gm: `length` bytes of each UB row to its GM row. Loops as
    (count, UB stride, GM stride)."""
    for src, dst in _rows(n, ub_stride, gm_stride, loop1, loop2):
        m.write_gm(gm + dst, m.ub[ub + src:ub + src + length])


def ub_to_ub(m, src, dst, n, length, src_gap, dst_gap):
    """copy_ubuf_to_ubuf: length and gaps in 32-byte lines, gaps end to start."""
    for r in range(n):
        s, d = src + r * (length + src_gap) * LINE, dst + r * (length + dst_gap) * LINE
        m.ub[d:d + length * LINE] = m.ub[s:s + length * LINE]


def f16(value):
    return struct.pack("<e", value)


# --- what each program does --------------------------------------------------------------

def seed_tile_roundtrip(m, b):
    gm_to_ub(m, b["arg0"], b["ub_tile"], 32, 128, 128, 128)
    ub_to_gm(m, b["ub_tile"], b["out"], 32, 128, 128, 128)


def ptoas_weights_copy(m, b):
    gm_to_ub(m, b["arg0"], 0, 16, 256, 256, 256)
    gm_to_ub(m, b["arg0"] + 4096, 4096, 16, 256, 256, 256)
    ub_to_gm(m, 0, b["arg1"], 16, 256, 256, 256)


def grouped_pad_f16(m, b):
    gm_to_ub(m, b["src"], 0x800, 6, 20, 40, 64, pad=(f16(-1.5), 1, 1))
    ub_to_gm(m, 0x800, b["dst"], 6, 24, 64, 24)


def grouped_two_loops(m, b):
    gm_to_ub(m, b["in"], b["ub"], 4, 32, 128, 32, loop1=(3, 32, 256), loop2=(2, 512, 1024))
    ub_to_gm(m, b["ub"], b["out"], 4, 32, 32, 32, loop1=(3, 256, 256), loop2=(2, 1024, 128))


def ub_to_ub_quoted_flags(m, b):
    gm_to_ub(m, b["in"], b["a"], 1, 512, 512, 512)
    ub_to_ub(m, b["a"], b["b"], 4, 2, 2, 1)
    ub_to_ub(m, b["b"], b["c"], 2, 1, 1, 1)
    ub_to_gm(m, b["b"], b["out"], 1, 256, 256, 256)


def sticky_registers(m, b):
    pad = (struct.pack("<H", 0x7E7F), 2, 1)
    for src, dst in ((b["src"], b["dst"]), (b["src2"], b["dst2"])):
        gm_to_ub(m, src, dst, 3, 12, 40, 32, loop1=(2, 256, 128), pad=pad)


def software_loops(m, b):
    for i in range(3):
        gm_to_ub(m, b["in"] + i * 1024, b["ub"] + i * 2048, 2, 64, 64, 64,
                 loop1=(2, 128, 128), loop2=(2, 256, 512))


def ascendc_datacopypad(m, b):
    """The example's stated result, not a loop: each 22-byte row in its own block,
    followed by five zero halves; then the rows packed back in GM."""
    source = m.read_gm(b["x"], 44)
    for r in range(2):
        m.ub[0x200 + 32 * r:0x200 + 32 * (r + 1)] = source[22 * r:22 * (r + 1)] + bytes(10)
    m.write_gm(b["z"], source)


def ascendc_a5_packed_rows(m, b):
    gm_to_ub(m, b["src"], 0x400, 5, 40, 100, 40, loop1=(2, 1000, 224))
    ub_to_gm(m, 0x400, b["out"], 5, 40, 40, 48, loop1=(2, 224, 240))


def ptoas_tile_kernel(m, b):
    """The tile's rows: 80 bytes of data, then -inf (f32 0xFF800000) to its 128 bytes."""
    pad = (struct.pack("<I", 0xFF800000), 0, 0)
    gm_to_ub(m, b["arg0"] + (4 * 48 + 8) * 4, 0x1000, 6, 80, 192, 128,
             loop1=(2, 6144, 768), pad=pad)
    ub_to_gm(m, 0x1000, b["arg1"], 6, 80, 128, 80, loop1=(2, 768, 480))


def ptoas_vadd_skip_compute(m, b):
    gm_to_ub(m, b["arg0"], 0, 16, 256, 256, 256)
    gm_to_ub(m, b["arg1"], 4096, 16, 256, 256, 256)
    ub_to_gm(m, 0, b["arg2"], 16, 256, 256, 256)


def keyword_type_lists(m, b):
    gm_to_ub(m, b["in"], 0x400, 3, 40, 160, 64, loop1=(2, 512, 256), loop2=(2, 2048, 1024),
             pad=(struct.pack("<f", 2.5), 1, 2))
    ub_to_gm(m, 0x400, b["out"], 3, 48, 64, 48, loop1=(2, 256, 144), loop2=(2, 1024, 288))


def signed_types(m, b):
    gm_to_ub(m, b["in"], 0x600, 4, 14, 14, 32, pad=(struct.pack("<h", -2), 1, 1))
    gm_to_ub(m, b["in2"], 0x800, 1, 64, 64, 64)
    ub_to_gm(m, 0x800, b["out"], 1, 64, 64, 64)


def scf_for_tiles(m, b):
    for t in range(4):
        gm_to_ub(m, b["src"] + t * 768, 0x2000 + t * 768, 8, 96, 96, 96)
        ub_to_gm(m, 0x2000 + t * 768, b["dst"] + t * 1024, 8, 96, 96, 128)


def block_idx_split(m, b):
    share = 4096 // b["block_num"]
    start = b["block_idx"] * share
    gm_to_ub(m, b["x"] + start, 0x1000, share // 32, 32, 32, 32)
    ub_to_gm(m, 0x1000, b["y"] + start, share // 32, 32, 32, 32)


def scf_if_tail(m, b):
    for start in range(0, b["length"], 256):
        length = min(256, b["length"] - start)
        gm_to_ub(m, b["in"] + start, 0x3000 + start, 1, length, 256, 256)
        ub_to_gm(m, 0x3000 + start, b["out"] + start, 1, length, 256, 256)


def iter_args_pingpong(m, b):
    for t in range(6):
        buffer = 0x800 * (t % 2)
        gm_to_ub(m, b["in"] + t * 512, buffer, 4, 128, 128, 128)
        ub_to_gm(m, buffer, b["out"] + t * 512, 4, 128, 128, 128)
    gm_to_ub(m, b["in"], 0, 4, 128, 128, 128)


def tokens_and_attribute_flags(m, b):
    gm_to_ub(m, b["in"], b["a"], 4, 64, 64, 64)
    ub_to_gm(m, b["a"], b["out"], 4, 64, 64, 96)
    ub_to_ub(m, b["a"], b["b"], 1, 2, 0, 0)


def ascendc_add_custom(m, b):
    """AddCustom with its Compute skipped: each tile's CopyOut writes x's tile."""
    core = b["block_idx"] * 2048 * 2
    for i in range(16):
        x_local, y_local = (i % 2) * 256, 512 + (i % 2) * 256
        gm_to_ub(m, b["x"] + core + i * 256, x_local, 1, 256, 256, 256)
        gm_to_ub(m, b["y"] + core + i * 256, y_local, 1, 256, 256, 256)
        ub_to_gm(m, x_local, b["z"] + core + i * 256, 1, 256, 256, 256)


def ascendc_datacopy_params(m, b):
    """DataCopyParams' gaps in 32-byte blocks: block i at (blockLen + gap) * 32 * i."""
    block_len, src_gap, dst_gap = 2, 1, 3
    for i in range(4):
        block = m.read_gm(b["src"] + i * (block_len + src_gap) * LINE, block_len * LINE)
        at = 0x400 + i * (block_len + dst_gap) * LINE
        m.ub[at:at + block_len * LINE] = block
        m.write_gm(b["dst"] + i * (block_len + dst_gap) * LINE, block)


def register_loops_both_pipes(m, b):
    one = struct.pack("<f", 1.0)[2:]          # bfloat16: the upper half of the f32
    gm_to_ub(m, b["in"], b["ub"], 2, 48, 256, 64, loop1=(2, 96, 128), loop2=(3, 1024, 512),
             pad=(one, 0, 0))
    ub_to_gm(m, b["ub"], b["out"], 2, 64, 64, 96, loop1=(2, 128, 192), loop2=(3, 512, 384))


def f8_rows_a5(m, b):
    gm_to_ub(m, b["in"], 0x2000, 5, 17, 17, 32, pad=(bytes([0x38]), 3, 0))
    ub_to_gm(m, 0x2000, b["out"], 5, 20, 32, 20)


def ptoas_double_buffer_tokens(m, b):
    """Tile i through UB buffer i % 2; the tokens keep each buffer's load after the store
    of the tile before it there."""
    for i in range(4):
        ub = 0x100 * (i % 2)
        gm_to_ub(m, b["arg0"] + 256 * i, ub, 1, 256, 256, 256)
        ub_to_gm(m, ub, b["arg1"] + 256 * i, 1, 256, 256, 256)


def tokens_typed_relay(m, b):
    gm_to_ub(m, b["in"], b["a"], 1, 256, 256, 256)
    ub_to_ub(m, b["a"], b["b"], 4, 1, 1, 0)
    ub_to_gm(m, b["b"], b["out"], 1, 128, 128, 128)
    gm_to_ub(m, b["in2"], b["a"], 1, 256, 256, 256)


EXPECTED = {f.__name__: f for f in (
    seed_tile_roundtrip, ptoas_weights_copy, grouped_pad_f16, grouped_two_loops,
    ub_to_ub_quoted_flags, sticky_registers, software_loops, ascendc_datacopypad,
    ascendc_a5_packed_rows, ptoas_tile_kernel,
    ptoas_vadd_skip_compute, keyword_type_lists, signed_types, scf_for_tiles,
    block_idx_split, scf_if_tail, iter_args_pingpong, tokens_and_attribute_flags,
    ascendc_add_custom, ascendc_datacopy_params, register_loops_both_pipes, f8_rows_a5,
    ptoas_double_buffer_tokens, tokens_typed_relay)}


# --- running them ------------------------------------------------------------------------

def run_model(program, directory, capsys):
    """`mte run --engine model`: (exit status, {GM base: bytes}, whole UB)."""
    ub_size = len(program.ub)
    dumps = [f"--dump-ub=0:{ub_size}={directory / 'ub.out'}"]
    dumps += [f"--dump-gm={base:#x}:{len(data)}={directory / f'{base:x}.out'}"
              for base, data in program.gm]
    status = main(["run", *cli_arguments(program, directory), "--engine", "model", *dumps])
    out, err = capsys.readouterr()
    assert status == 0, err
    gm = {base: (directory / f"{base:x}.out").read_bytes() for base, _ in program.gm}
    return gm, (directory / "ub.out").read_bytes()


def first_difference(space, base, want, got):
    at = next(i for i, (a, b) in enumerate(zip(want, got)) if a != b)
    return f"{space} differs first at {base + at:#x}: expected {want[at]:#04x}, got {got[at]:#04x}"


def check(program, directory, capsys):
    memories = Memories(program)
    EXPECTED[program.name](memories, program.bindings)
    gm, ub = run_model(program, directory, capsys)
    assert ub == bytes(memories.ub), first_difference("UB", 0, memories.ub, ub)
    for base, want in memories.gm.items():
        assert gm[base] == bytes(want), first_difference("GM", base, want, gm[base])


CORPUS = programs()


def test_every_program_has_its_expected_bytes():
    assert sorted(p.name for p in CORPUS) == sorted(EXPECTED)
    assert len(CORPUS) >= 20


@pytest.mark.parametrize("program", CORPUS, ids=lambda p: p.name)
def test_program(program, tmp_path, capsys):
    check(program, tmp_path, capsys)


def test_expected_bytes_catch_a_changed_program(tmp_path, capsys):
    """The comparison fails when a program moves one row one line further: a stride
    changed in the text, nothing else."""
    original = load(CORPUS[0].path.parent / "grouped_two_loops.pto")
    changed = tmp_path / "grouped_two_loops.pto"
    changed.write_text(original.text.replace("nburst(%c4_i64, %c128_i64, %c32_i64)",
                                             "nburst(%c4_i64, %c128_i64, %c64_i64)"))
    with pytest.raises(AssertionError, match="differs first"):
        check(load(changed), tmp_path, capsys)


def test_expected_bytes_catch_a_stray_write(tmp_path, capsys):
    """A byte written outside every destination (a guard byte of UB) fails the
    comparison: the whole UB is compared, not only the destinations."""
    program = load(CORPUS[0].path.parent / "seed_tile_roundtrip.pto")
    stray = tmp_path / "seed_tile_roundtrip.pto"
    stray.write_text(program.text + "pto.copy_gm_to_ubuf %arg0, %c0, %c0, %c1, %c32, %c0, "
                                    "%c0, %false, %c0, %c32, %c32 : !pto.ptr<u8, gm>, "
                                    "!pto.ptr<u8, ub>, i64 x5, i1, i64 x3\n")
    with pytest.raises(AssertionError, match="UB differs first at 0x0"):
        check(load(stray), tmp_path, capsys)
