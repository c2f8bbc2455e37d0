"""The byte-exact golden model of the MTE DMA engine.

Commands run in program order (the result of a correctly synchronised program). A copy is
checked by `rules.first_violation` before any byte moves, then performed as a few numpy
operations on strided views of the memories:

- the loop nest (loop2, loop1, n_burst) becomes a 4-D view (loop2, loop1, n_burst, bytes)
  of each side;
- where destination rows may overlap, later rows must win, so the outer loops run one
  iteration at a time, in loop order, until each part's rows are disjoint; rows that a
  later row rewrites completely (a loop whose destination stride is 0) are skipped;
- where a GM access does not lie inside one mapped region, the nest is split in loop order
  too, down to single rows, which then read or write GM region by region; the first row
  that touches an unmapped byte raises BUS_ERROR after every earlier row has completed.
  When every byte the nest spans is mapped (in adjacent regions), no row can fault, so
  rewritten rows are skipped before the split, as on the one-region path: the time
  depends on the rows that land, not on how GM was mapped.

A long copy reports its progress to the engine's `progress` callable, if it has one:
`progress(instr, rows_done, rows)` after each group of rows it moves.
"""

from dataclasses import dataclass, field
from itertools import product
from math import prod
from typing import NamedTuple

import numpy as np

from . import isa, rules
from .assembler import encode_instr
from .errors import MteError
from .isa import COPY_OPCODES, ErrorCode, Opcode, Pipe
from .memory import GlobalMemory, UnmappedAddressError, new_ub

# Each op's (field, largest value): a command whose fields all fit needs no trial encoding.
_FIELD_LIMITS = {op.opcode: tuple((f.name, f.max) for f in op.fields) for op in isa.OPS}

# How each copy moves data: (source memory, destination memory).
_SPACES = {
    Opcode.COPY_GM_TO_UBUF: ("gm", "ub"),
    Opcode.COPY_UBUF_TO_GM: ("ub", "gm"),
    Opcode.COPY_UBUF_TO_UBUF: ("ub", "ub"),
}


def _fields_fit(instr):
    values = instr.values
    for name, top in _FIELD_LIMITS[instr.op.opcode]:
        if not 0 <= values[name] <= top:
            return False
    return True


@dataclass
class EngineStats:
    ops: int = 0                                   # commands completed
    bytes_moved: dict = field(                     # data bytes (padding excluded) per pipe
        default_factory=lambda: {Pipe.MTE2: 0, Pipe.MTE3: 0, Pipe.V: 0})


class _Transfer(NamedTuple):
    """What is the same for every row of one copy."""
    pipe: Pipe
    src_space: str                # "gm" or "ub"
    dst_space: str
    length: int                   # data bytes read per row
    width: int                    # bytes written per destination row
    left: int                     # where the data starts in the destination row
    pattern: np.ndarray | None    # one destination row of pad bytes, when the copy pads


def _extent(counts, strides, width):
    """Bytes from the first row's start to the end of the last row (strides are >= 0)."""
    return sum((c - 1) * s for c, s in zip(counts, strides)) + width


def _may_overlap(counts, strides, width):
    """False when no two rows of these loops share a byte. A sufficient test: each loop,
    in order of stride, must step over everything the smaller loops cover."""
    extent = width
    for stride, count in sorted([(s, c) for c, s in zip(counts, strides) if c > 1]):
        if stride < extent:
            return True
        extent += (count - 1) * stride
    return False


class _Nest(NamedTuple):
    """A rectangular part of a copy's loop nest, in bytes.

    Row (i0, i1, ...) reads at src + sum(i*src_strides) and writes at dst + sum(i*dst_strides);
    loops are listed outermost first, so row-major order is the hardware's loop order.
    """
    src: int
    dst: int
    counts: tuple
    src_strides: tuple
    dst_strides: tuple

    @property
    def rows(self):
        return prod(self.counts)

    def without_rewritten_rows(self):
        """Keep only the last iteration of loops whose destination stride is 0: every row
        of an earlier iteration is rewritten, byte for byte, by the same row of a later one."""
        repeats = [c > 1 and d == 0 for c, d in zip(self.counts, self.dst_strides)]
        if not any(repeats):
            return self
        src = self.src + sum((c - 1) * s for c, s, r in zip(self.counts, self.src_strides, repeats)
                             if r)
        counts = tuple(1 if r else c for c, r in zip(self.counts, repeats))
        return self._replace(src=src, counts=counts)

    def loops_to_unroll(self, width):
        """How many outer loops must run one iteration at a time so that within each
        iteration no two destination rows share a byte (usually 0; the burst loop alone
        never overlaps itself, the rules see to that)."""
        loops = 0
        while _may_overlap(self.counts[loops:], self.dst_strides[loops:], width):
            loops += 1
        return loops

    def halves(self):
        """The nest split in two along its outermost loop with count > 1, in loop order."""
        i = next(i for i, c in enumerate(self.counts) if c > 1)
        first = self.counts[i] // 2

        def part(count, skip):
            return self._replace(src=self.src + skip * self.src_strides[i],
                                 dst=self.dst + skip * self.dst_strides[i],
                                 counts=self.counts[:i] + (count,) + self.counts[i + 1:])

        return part(first, 0), part(self.counts[i] - first, first)


class Engine:
    """Executes MTE commands (`program.Instr`) on a GM and a UB."""

    def __init__(self, profile=isa.DEFAULT_PROFILE, gm=None, progress=None):
        if isinstance(profile, str):
            if profile not in isa.PROFILES:
                raise ValueError(f"unknown profile {profile!r}; known: {', '.join(isa.PROFILES)}")
            profile = isa.PROFILES[profile]
        self.profile = profile
        self.gm = GlobalMemory() if gm is None else gm
        self.ub = new_ub(profile)
        self.stats = EngineStats()
        self.progress = progress
        self._current = None       # (instr, rows done so far) of the copy running
        self.reset()

    def reset(self):
        """Every pipe configuration register back to its reset value."""
        self.regs = {pipe: isa.reset_registers(pipe) for pipe in (Pipe.MTE2, Pipe.MTE3)}

    # --- checking ------------------------------------------------------------------

    def validate(self, instr):
        """Raise MteError for the first error of a command, as it would run now."""
        if instr.deferred is not None or not _fields_fit(instr):
            encode_instr(instr)       # raises the error, worded as the assembler words it
        if instr.op.opcode in COPY_OPCODES:
            violation = rules.first_violation(instr.op, instr.values,
                                              self._copy_registers(instr.op), self.profile)
            if violation.code != ErrorCode.NONE:
                raise self._error(instr, violation.code, violation.message)

    def _copy_registers(self, op):
        """A snapshot of the registers the copy's pipe uses (UB->UB has none)."""
        regs = self.regs.get(op.pipe)
        return None if regs is None else dict(regs)

    @staticmethod
    def _error(instr, code, message, address=None):
        return MteError(code, message, line=instr.line, op=instr.mnemonic, address=address)

    # --- running -------------------------------------------------------------------

    def run(self, instrs):
        """Execute commands in order; the first error is raised with the state as it was
        left by that command."""
        for instr in instrs:
            self.execute(instr)

    def execute(self, instr):
        """Check one command, then perform it."""
        self.validate(instr)
        op = instr.op
        if op.opcode in isa.REGISTER_WRITES:
            pipe, _ = isa.REGISTER_WRITES[op.opcode]
            isa.apply_register_write(self.regs[pipe], op, instr.values)
        elif op.opcode in COPY_OPCODES:
            self._copy(instr)
        # set_flag / wait_flag: program order already is the synchronised order.
        self.stats.ops += 1

    def _copy(self, instr):
        op = instr.op
        g = rules.geometry(op, instr.values, self.regs.get(op.pipe))
        if g.empty:
            return
        transfer = self._transfer(op, instr.values, g)
        nest = _Nest(g.src, g.dst, (g.loop2_count, g.loop1_count, g.n_burst),
                     (g.loop2_src, g.loop1_src, g.src_stride),
                     (g.loop2_dst, g.loop1_dst, g.dst_stride))
        self._current = [instr, 0, nest.rows]
        try:
            self._run_nest(transfer, nest)
        except UnmappedAddressError as e:
            access = "read from" if transfer.src_space == "gm" else "write to"
            raise self._error(instr, ErrorCode.BUS_ERROR,
                              f"bus error: {access} unmapped GM address {e.address:#x}",
                              address=e.address) from None

    def _transfer(self, op, values, g):
        """The per-row constants of a copy, with its pad row built from pad_val."""
        src_space, dst_space = _SPACES[op.opcode]
        pattern = None
        if op.opcode == Opcode.COPY_GM_TO_UBUF and values["data_select_bit"]:
            es = rules.element_size(values)
            pad_bytes = self.regs[Pipe.MTE2]["pad_val"].to_bytes(8, "little")
            pattern = np.resize(np.frombuffer(pad_bytes[:es], dtype=np.uint8), g.row_bytes)
        return _Transfer(op.pipe, src_space, dst_space, g.len_burst, g.row_bytes,
                         g.left_bytes, pattern)

    def _run_nest(self, t, nest):
        """Perform every row of a nest in loop order; raise UnmappedAddressError at the
        first row that touches unmapped GM, after the rows before it."""
        src = self._span(t.src_space, nest.src, _extent(nest.counts, nest.src_strides, t.length))
        dst = self._span(t.dst_space, nest.dst, _extent(nest.counts, nest.dst_strides, t.width))
        if src is not None and dst is not None:
            self._move_in_order(t, nest.without_rewritten_rows(), (src, nest.src), (dst, nest.dst))
        elif nest.rows == 1:
            self._move_row_across_regions(t, nest)
        else:
            self._split(t, nest)
            return      # the parts counted their own bytes
        self.stats.bytes_moved[t.pipe] += nest.rows * t.length
        self._advance(nest.rows)

    def _split(self, t, nest):
        """A nest that no single GM region holds: without its rewritten rows when no row
        can fault, else in halves, in loop order."""
        kept = nest.without_rewritten_rows()
        if kept.rows < nest.rows and self._all_mapped(t, nest):
            self._run_nest(t, kept)
            skipped = nest.rows - kept.rows
            self.stats.bytes_moved[t.pipe] += skipped * t.length
            self._advance(skipped)
            return
        for half in nest.halves():
            self._run_nest(t, half)

    def _all_mapped(self, t, nest):
        """Whether GM maps every byte from the nest's first row to its last, on each side."""
        return all(self.gm.first_unmapped(addr, _extent(nest.counts, strides, width)) is None
                   for space, addr, strides, width in (
                       (t.src_space, nest.src, nest.src_strides, t.length),
                       (t.dst_space, nest.dst, nest.dst_strides, t.width))
                   if space == "gm")

    def _advance(self, rows):
        """Count rows of the running copy as done, and report them."""
        self._current[1] += rows
        if self.progress is not None:
            self.progress(*self._current)

    def _span(self, space, addr, n):
        """A 1-D view of [addr, addr+n), or None when no single GM region holds it."""
        if space == "ub":
            return self.ub[addr:addr + n]
        return self.gm.view(addr, n)

    def _move_in_order(self, t, nest, src, dst):
        """Rows of a nest whose memory is all in `src` and `dst` ((view, address of its
        first byte) pairs): one strided assignment, or one per iteration of the outer
        loops whose rows may overlap, in loop order so that later rows win."""
        rows = self._rows(src, nest.src, nest.counts, nest.src_strides, t.length)
        out = self._rows(dst, nest.dst, nest.counts, nest.dst_strides, t.width)
        loops = nest.loops_to_unroll(t.width)
        if loops == 0:
            self._fill(t, out, rows)
            return
        instr, done, total = self._current
        rows_per_index = prod(nest.counts[loops:])
        for step, index in enumerate(product(*(range(count) for count in nest.counts[:loops]))):
            self._fill(t, out[index], rows[index])
            if self.progress is not None:
                self.progress(instr, done + (step + 1) * rows_per_index, total)

    @staticmethod
    def _rows(span, addr, counts, strides, width):
        view, origin = span
        return np.ndarray(counts + (width,), dtype=np.uint8, buffer=view,
                          offset=addr - origin, strides=strides + (1,))

    def _move_row_across_regions(self, t, nest):
        """One row whose GM side spans several regions or touches unmapped GM."""
        if t.src_space == "gm":
            row = self.gm.read(nest.src, t.length)
            self._fill(t, self.ub[nest.dst:nest.dst + t.width], row)
        else:
            self.gm.write(nest.dst, self.ub[nest.src:nest.src + t.length])

    @staticmethod
    def _fill(t, out, rows):
        """Destination rows: the data, framed by pad bytes when the copy pads."""
        if t.pattern is None:
            out[...] = rows
            return
        end = t.left + t.length
        out[..., :t.left] = t.pattern[:t.left]
        out[..., t.left:end] = rows
        out[..., end:] = t.pattern[end:]
