"""Random legal MTE programs, with the memory they run on, as Hypothesis strategies.

`scenarios()` draws a `Scenario`: a profile, GM regions, an initial UB image and a list
of `program.Instr` (register writes, copies of every kind, flags). Every copy passes
`rules.check_copy` and every GM row it touches is mapped, so a correct engine runs the
whole list without error. Registers are sticky across copies and only sometimes
rewritten; strides and loop counts are drawn so that destination rows often overlap
(later rows must win), and on a5 UB rows are sometimes packed (SPEC.md). Sources hold
random bytes; destinations and the bytes around them start as GUARD, so a stray or
missing write shows.

Each copy's GM lies in its own quarter of the 40-bit space, sometimes against the top of
GM, sometimes split into two adjacent regions. `gm_align` rounds regions out to whole
pages, as an AXI testbench needs.
"""

import struct
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from model import isa, rules
from model.isa import DTYPES, OP_BY_MNEMONIC, PROFILES, UB_LINE, ErrorCode, Pipe
from model.program import Instr

GUARD = 0xAA
GM_SLOT_BITS = isa.GM_ADDR_BITS - 2        # four slots, one per copy
MAX_COPIES = 1 << (isa.GM_ADDR_BITS - GM_SLOT_BITS)
COPY_MNEMONICS = ("copy_gm_to_ubuf", "copy_ubuf_to_gm", "copy_ubuf_to_ubuf")
GM_MARGIN = 40                            # up to this many guard bytes around GM rows
FLOAT_PAD_TYPES = ("f16", "bf16", "f32")


def command(mnemonic, line=1, dtype="u8", **values):
    """An Instr with every field of the op: the given values, `dtype` by name, others 0."""
    op = OP_BY_MNEMONIC[mnemonic]
    fields = {f.name: 0 for f in op.fields}
    unknown = set(values) - set(fields)
    if unknown:
        raise KeyError(f"{mnemonic} has no field {', '.join(sorted(unknown))}")
    fields.update(values)
    if "dtype" in fields:
        fields["dtype"] = isa.DTYPE_BY_NAME[dtype].code
    return Instr(op, fields, line)


def pad_bits(value, dtype_name):
    """The pad_val register for `set_mov_pad_val value : T`: the bit pattern of the value in
    T (IEEE / bfloat16 for floats, two's complement for negative integers), zero-extended."""
    dtype = isa.DTYPE_BY_NAME[dtype_name]
    bits = 8 * dtype.size
    if isinstance(value, float):
        if dtype_name == "f16":
            return int(np.array(value, dtype=np.float16).view(np.uint16))
        single = struct.unpack("<I", struct.pack("<f", value))[0]
        return single >> 16 if dtype_name == "bf16" else single
    return value & ((1 << bits) - 1)


def describe(instr):
    """One line per command, for readable failure reports."""
    fields = ", ".join(f"{name}={value}" for name, value in instr.values.items())
    return f"{instr.line}: {instr.mnemonic} {fields}"


@dataclass
class Scenario:
    profile: str
    regions: list          # [(base, bytes)] mapped GM, in no particular order
    ub: bytes              # the UB image before the program runs
    instrs: list           # program.Instr, lines numbered from 1

    def __repr__(self):
        regions = ", ".join(f"[{base:#x}, +{len(data)})" for base, data in self.regions)
        program = "".join(f"\n  {describe(instr)}" for instr in self.instrs)
        return f"Scenario({self.profile}, GM {regions or 'none'}){program}"


def _align_down(x, a):
    return x // a * a


class _Builder:
    """Grows one scenario copy by copy, tracking the registers as the engine will see them."""

    def __init__(self, draw, profile, gm_align):
        self.draw = draw
        self.profile = PROFILES[profile]
        self.gm_align = gm_align
        self.rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        self.ub = np.full(self.profile.ub_size, GUARD, dtype=np.uint8)
        self.regions = []
        self.instrs = []
        self.regs = {pipe: isa.reset_registers(pipe) for pipe in (Pipe.MTE2, Pipe.MTE3)}
        self.slots = iter(draw(st.permutations(range(MAX_COPIES))))

    def emit(self, mnemonic, **values):
        instr = command(mnemonic, line=len(self.instrs) + 1, **values)
        if instr.op.opcode in isa.REGISTER_WRITES:
            pipe, _ = isa.REGISTER_WRITES[instr.op.opcode]
            isa.apply_register_write(self.regs[pipe], instr.op, instr.values)
        self.instrs.append(instr)
        return instr

    # --- drawing values --------------------------------------------------------------

    def dtype(self):
        legal = [t for t in DTYPES if isa.dtype_supported(t, self.profile)]
        return self.draw(st.sampled_from(legal))

    def count(self):
        return self.draw(st.sampled_from((1, 2, 3, 1, 2, 0)))

    def anywhere(self, limit):
        """0..limit, often one of the ends."""
        return self.draw(st.sampled_from((0, limit)) | st.integers(0, limit))

    def loop_registers(self, pipe, ub_side, suffix):
        """Sometimes rewrite the loop registers; always leave UB loop strides aligned where
        their count is above 1, since a legal program must."""
        regs = self.regs[pipe]
        if self.draw(st.booleans()):
            self.emit(f"set_loop_size_{suffix}", loop1_count=self.count(),
                      loop2_count=self.count())
        for level in ("loop1", "loop2"):
            repeats = regs[f"{level}_count"] > 1
            misaligned = regs[f"{level}_{ub_side}_stride"] % UB_LINE
            if (repeats and misaligned) or self.draw(st.booleans()):
                ub_stride = (UB_LINE * self.draw(st.integers(0, 8)) if repeats
                             else self.draw(st.integers(0, 300)))
                gm_stride = self.draw(st.integers(0, 600))
                strides = ({"src_stride": gm_stride, "dst_stride": ub_stride} if ub_side == "dst"
                           else {"src_stride": ub_stride, "dst_stride": gm_stride})
                self.emit(f"set_{level}_stride_{suffix}", **strides)

    def pad_value(self, dtype):
        """A raw 64-bit register value, or the pattern of a negative or float pad value."""
        bits = 8 * dtype.size
        choices = st.integers(0, (1 << 64) - 1) | st.integers(-(1 << (bits - 1)), -1).map(
            lambda v: pad_bits(v, dtype.name))
        if dtype.name in FLOAT_PAD_TYPES:
            width = 16 if dtype.name == "f16" else 32
            choices |= st.floats(width=width, allow_nan=False).map(
                lambda v: pad_bits(v, dtype.name))
        return self.draw(choices)

    def row_strides(self, n, gm_row, ub_row, packable):
        """(GM stride, UB stride): legal start-to-start distances for n rows; where the
        profile packs rows and the copy writes no pad (`packable`), sometimes packed UB
        rows (a stride of exactly the row, off a line)."""
        if n > 1:
            gm_stride = gm_row + self.draw(st.integers(0, 64))
            if packable and self.profile.packed_rows and self.draw(st.booleans()):
                return gm_stride, ub_row
            return gm_stride, rules.align_up(ub_row, UB_LINE) + UB_LINE * self.draw(
                st.integers(0, 2))
        return self.draw(st.integers(0, 300)), self.draw(st.integers(0, 200))

    # --- placing memory --------------------------------------------------------------

    def ub_place(self, span):
        """A 32-byte aligned UB address with `span` bytes after it inside the UB."""
        return UB_LINE * self.anywhere((self.profile.ub_size - span) // UB_LINE)

    def ub_source(self, span):
        addr = self.ub_place(span)
        self.ub[addr:addr + span] = self.rng.integers(0, 256, span, dtype=np.uint8)
        return addr

    def gm_place(self, span, source):
        """A GM address with `span` mapped bytes after it in a fresh region (random bytes
        for a source, GUARD for a destination), framed by guard margins."""
        slot_lo = next(self.slots) << GM_SLOT_BITS
        slot_hi = slot_lo + (1 << GM_SLOT_BITS)
        before, after = (self.draw(st.integers(0, GM_MARGIN)) for _ in range(2))
        top = slot_hi - span - after
        addr = self.draw(st.sampled_from((top, slot_lo + before)) | st.integers(
            slot_lo + before, slot_lo + before + 4096))
        lo = max(_align_down(addr - before, self.gm_align), slot_lo)
        hi = min(rules.align_up(addr + span + after, self.gm_align), slot_hi)
        data = (self.rng.integers(0, 256, hi - lo, dtype=np.uint8) if source
                else np.full(hi - lo, GUARD, dtype=np.uint8))
        self.map_region(lo, data.tobytes())
        return addr

    def map_region(self, lo, data):
        """Map a region, sometimes as two adjacent ones (copies must cross the seam)."""
        cuts = range(self.gm_align, len(data), self.gm_align)
        if len(cuts) and self.draw(st.booleans()):
            cut = self.draw(st.sampled_from(cuts))
            self.regions += [(lo, data[:cut]), (lo + cut, data[cut:])]
        else:
            self.regions.append((lo, data))

    # --- one copy each ---------------------------------------------------------------

    def copy_gm_to_ubuf(self):
        dtype = self.dtype()
        es = dtype.size
        self.loop_registers(Pipe.MTE2, "dst", "outtoub")
        if self.draw(st.booleans()):
            self.emit("set_mov_pad_val", pad_val=self.pad_value(dtype))
        length = es * self.draw(st.integers(0, 160 // es))
        select = self.draw(st.booleans())
        pads = [self.draw(st.integers(0, isa.PAD_MAX_BYTES // es)) if select else 0
                for _ in range(2)]
        n = self.draw(st.integers(0, 5))
        src_stride, dst_stride = self.row_strides(n, length, length + sum(pads) * es,
                                                  packable=not select)
        values = dict(gm_src=0, ub_dst=0, sid=self.draw(st.integers(0, 15)), n_burst=n,
                      len_burst=length, left_padding=pads[0], right_padding=pads[1],
                      data_select_bit=int(select), l2_cache_ctl=self.draw(st.integers(0, 15)),
                      src_stride=src_stride, dst_stride=dst_stride)
        src_span, dst_span = self.spans("copy_gm_to_ubuf", values, dtype, self.regs[Pipe.MTE2])
        values["ub_dst"] = self.ub_place(dst_span)
        values["gm_src"] = self.gm_place(src_span, source=True)
        self.emit_copy("copy_gm_to_ubuf", dtype, values, self.regs[Pipe.MTE2])

    def copy_ubuf_to_gm(self):
        dtype = self.dtype()
        es = dtype.size
        self.loop_registers(Pipe.MTE3, "src", "ubtoout")
        length = es * self.draw(st.integers(0, 160 // es))
        n = self.draw(st.integers(0, 5))
        dst_stride, src_stride = self.row_strides(n, length, length, packable=True)
        values = dict(ub_src=0, gm_dst=0, sid=self.draw(st.integers(0, 15)), n_burst=n,
                      len_burst=length, l2_cache_ctl=self.draw(st.integers(0, 15)),
                      dst_stride=dst_stride, src_stride=src_stride)
        src_span, dst_span = self.spans("copy_ubuf_to_gm", values, dtype, self.regs[Pipe.MTE3])
        values["ub_src"] = self.ub_source(src_span)
        values["gm_dst"] = self.gm_place(dst_span, source=False)
        self.emit_copy("copy_ubuf_to_gm", dtype, values, self.regs[Pipe.MTE3])

    def copy_ubuf_to_ubuf(self):
        dtype = self.dtype()
        values = dict(ub_src=0, ub_dst=0, sid=self.draw(st.integers(0, 15)),
                      n_burst=self.draw(st.integers(0, 4)), len_burst=self.draw(st.integers(0, 4)),
                      src_gap=self.draw(st.integers(0, 3)), dst_gap=self.draw(st.integers(0, 3)))
        src_span, dst_span = (rules.align_up(span, UB_LINE) for span in
                              self.spans("copy_ubuf_to_ubuf", values, dtype, None))
        gap = UB_LINE * self.draw(st.integers(0, 4))
        first = self.ub_place(src_span + gap + dst_span)
        if self.draw(st.booleans()):
            values["ub_src"], values["ub_dst"] = first, first + src_span + gap
        else:
            values["ub_dst"], values["ub_src"] = first, first + dst_span + gap
        self.ub[values["ub_src"]:values["ub_src"] + src_span] = self.rng.integers(
            0, 256, src_span, dtype=np.uint8)
        self.emit_copy("copy_ubuf_to_ubuf", dtype, values, None)

    @staticmethod
    def spans(mnemonic, values, dtype, regs):
        """(source bytes, destination bytes) from the first row's start to the last row's end.
        An empty copy still names addresses: give each a byte to point at."""
        g = rules.geometry(OP_BY_MNEMONIC[mnemonic], dict(values, dtype=dtype.code), regs)
        if g.empty:
            return 1, 1
        return g.src_end() - g.src, g.dst_end() - g.dst

    def emit_copy(self, mnemonic, dtype, values, regs):
        instr = self.emit(mnemonic, dtype=dtype.name, **values)
        code = rules.check_copy(instr.op, instr.values, regs, self.profile)
        assert code == ErrorCode.NONE, f"strategy drew an illegal {mnemonic}: {code.name}"

    def flag(self):
        kind = self.draw(st.sampled_from(("set_flag", "wait_flag")))
        self.emit(kind, src_pipe=self.draw(st.integers(0, 3)),
                  dst_pipe=self.draw(st.integers(0, 3)), event_id=self.draw(st.integers(0, 15)))


@st.composite
def scenarios(draw, ops=COPY_MNEMONICS, profiles=tuple(PROFILES), max_copies=3, gm_align=1):
    """A random legal program of 1..max_copies copies drawn from `ops`."""
    assert max_copies <= MAX_COPIES
    builder = _Builder(draw, draw(st.sampled_from(profiles)), gm_align)
    for _ in range(draw(st.integers(1, max_copies))):
        getattr(builder, draw(st.sampled_from(ops)))()
        if draw(st.booleans()):
            builder.flag()
    return Scenario(builder.profile.name, builder.regions, builder.ub.tobytes(),
                    builder.instrs)
