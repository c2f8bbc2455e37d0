"""SPEC rules on encoded command fields: the one rule function.

`check_copy` sees exactly what the hardware checker sees (the decoded fields of a copy
command plus a snapshot of its pipe's registers) and returns the first `ErrorCode` that
applies, lowest code first, or `ErrorCode.NONE`; `first_violation` returns it with the
message the model reports, which names the operand or stride that breaks the rule and
its value (`ub_dst = 0x1010`, `loop1 dst stride 48`). FIELD_RANGE cannot arise here: a value
that does not fit its field cannot be encoded (the assembler raises it).

Points SPEC.md leaves open, settled here and in docs/semantics.md:
- A copy with any count 0 or len_burst 0 touches nothing, so the extent rules (UB_RANGE,
  GM_RANGE, UB_OVERLAP) do not apply to it; the per-field rules still do.
- UB_OVERLAP compares the spans [first byte, last byte] of source and destination.
"""

from dataclasses import dataclass

from .isa import (DTYPES, GM_ADDR_BITS, PAD_MAX_BYTES, UB_LINE, ErrorCode, Opcode,
                  dtype_supported)


def align_up(x, a):
    return -(-x // a) * a


@dataclass(frozen=True)
class CopyGeometry:
    """Everything the loop nest needs, in bytes, for either copy direction."""
    src: int
    dst: int
    n_burst: int
    len_burst: int          # data bytes per row
    src_stride: int
    dst_stride: int
    loop1_count: int
    loop2_count: int
    loop1_src: int
    loop1_dst: int
    loop2_src: int
    loop2_dst: int
    left_bytes: int = 0     # MTE2 with data_select: pad bytes before the data
    row_bytes: int = 0      # bytes written per destination row (E, or len_burst)

    @property
    def empty(self):
        return 0 in (self.n_burst, self.len_burst, self.loop1_count, self.loop2_count)

    def last_row_offset(self, side):
        """Offset of the last row's start from the first row's, on 'src' or 'dst'."""
        g = self
        if side == "src":
            return ((g.loop2_count - 1) * g.loop2_src + (g.loop1_count - 1) * g.loop1_src
                    + (g.n_burst - 1) * g.src_stride)
        return ((g.loop2_count - 1) * g.loop2_dst + (g.loop1_count - 1) * g.loop1_dst
                + (g.n_burst - 1) * g.dst_stride)

    def src_end(self):
        """One past the last source byte read."""
        return self.src + self.last_row_offset("src") + self.len_burst

    def dst_end(self):
        """One past the last destination byte written."""
        return self.dst + self.last_row_offset("dst") + self.row_bytes


def element_size(values):
    return DTYPES[values["dtype"]].size if values["dtype"] < len(DTYPES) else 0


def footprint(values, es):
    """MTE2 UB row footprint: L*es + len_burst + R*es."""
    return (values["left_padding"] + values["right_padding"]) * es + values["len_burst"]


def row_extent(values, es):
    """MTE2 UB row extent E = align_up(max(dst_stride, footprint), 32)."""
    return align_up(max(values["dst_stride"], footprint(values, es)), UB_LINE)


def geometry(op, values, regs):
    """The loop-nest geometry of a copy command, in bytes."""
    if op.opcode == Opcode.COPY_UBUF_TO_UBUF:
        length = values["len_burst"] * UB_LINE
        return CopyGeometry(
            src=values["ub_src"], dst=values["ub_dst"], n_burst=values["n_burst"],
            len_burst=length,
            src_stride=(values["len_burst"] + values["src_gap"]) * UB_LINE,
            dst_stride=(values["len_burst"] + values["dst_gap"]) * UB_LINE,
            loop1_count=1, loop2_count=1, loop1_src=0, loop1_dst=0, loop2_src=0, loop2_dst=0,
            row_bytes=length)
    loops = dict(loop1_count=regs["loop1_count"], loop2_count=regs["loop2_count"],
                 loop1_src=regs["loop1_src_stride"], loop1_dst=regs["loop1_dst_stride"],
                 loop2_src=regs["loop2_src_stride"], loop2_dst=regs["loop2_dst_stride"])
    if op.opcode == Opcode.COPY_GM_TO_UBUF:
        es = element_size(values)
        select = values["data_select_bit"]
        return CopyGeometry(
            src=values["gm_src"], dst=values["ub_dst"], n_burst=values["n_burst"],
            len_burst=values["len_burst"], src_stride=values["src_stride"],
            dst_stride=values["dst_stride"],
            left_bytes=values["left_padding"] * es if select else 0,
            row_bytes=row_extent(values, es) if select else values["len_burst"], **loops)
    assert op.opcode == Opcode.COPY_UBUF_TO_GM
    return CopyGeometry(
        src=values["ub_src"], dst=values["gm_dst"], n_burst=values["n_burst"],
        len_burst=values["len_burst"], src_stride=values["src_stride"],
        dst_stride=values["dst_stride"], row_bytes=values["len_burst"], **loops)


@dataclass(frozen=True)
class Violation:
    """The first rule a copy breaks: its code, and a message that names the operand or
    stride that breaks it and its value."""
    code: ErrorCode
    message: str = ""


PASSES = Violation(ErrorCode.NONE)

# The operand that holds each side's base address, by copy kind.
_BASE_NAMES = {
    Opcode.COPY_GM_TO_UBUF: {"src": "gm_src", "dst": "ub_dst"},
    Opcode.COPY_UBUF_TO_GM: {"src": "ub_src", "dst": "gm_dst"},
    Opcode.COPY_UBUF_TO_UBUF: {"src": "ub_src", "dst": "ub_dst"},
}


def check_copy(op, values, regs, profile):
    """First SPEC rule a copy command breaks, or ErrorCode.NONE."""
    return first_violation(op, values, regs, profile).code


def first_violation(op, values, regs, profile):
    """First SPEC rule a copy command breaks (a Violation), or PASSES."""
    dtype = DTYPES[values["dtype"]] if values["dtype"] < len(DTYPES) else None
    if dtype is None or not dtype_supported(dtype, profile):
        name = dtype.name if dtype is not None else f"#{values['dtype']}"
        where = ("on any profile (it is sub-byte)" if dtype is not None and dtype.size == 0
                 else f"on profile {profile.name}")
        return Violation(ErrorCode.TYPE_UNSUPPORTED,
                         f"element type {name} is not supported {where}")
    g = geometry(op, values, regs)
    if op.opcode == Opcode.COPY_UBUF_TO_UBUF:
        return (_misaligned_base(op, g, ("src", "dst")) or _ub_range(op, g, ("src", "dst"), profile)
                or _ub_overlap(g) or PASSES)
    es = dtype.size
    ub_side = "dst" if op.opcode == Opcode.COPY_GM_TO_UBUF else "src"
    return (_field_rules(op, values, es) or _misaligned_base(op, g, (ub_side,))
            or _misaligned_strides(op, values, g, ub_side, profile)
            or _stride_overlap(op, values, g, ub_side, es) or _ub_range(op, g, (ub_side,), profile)
            or _gm_range(op, g, "src" if ub_side == "dst" else "dst") or PASSES)


def _field_rules(op, values, es):
    """LEN_NOT_ELEMENT_MULTIPLE, PAD_WITHOUT_SELECT, PAD_TOO_LARGE, or None."""
    if values["len_burst"] % es:
        return Violation(ErrorCode.LEN_NOT_ELEMENT_MULTIPLE,
                         f"len_burst {values['len_burst']} is not a multiple of the "
                         f"{es}-byte element")
    if op.opcode != Opcode.COPY_GM_TO_UBUF:
        return None
    pads = f"left/right padding {values['left_padding']}/{values['right_padding']}"
    if not values["data_select_bit"] and (values["left_padding"] or values["right_padding"]):
        return Violation(ErrorCode.PAD_WITHOUT_SELECT, f"{pads} with data_select_bit 0")
    if max(values["left_padding"], values["right_padding"]) * es > PAD_MAX_BYTES:
        return Violation(ErrorCode.PAD_TOO_LARGE,
                         f"{pads} of {es}-byte elements exceeds {PAD_MAX_BYTES} bytes")
    return None


def _misaligned_base(op, g, sides):
    """UB_MISALIGNED of the first UB base address (of `sides`) off a line, or None."""
    for side in sides:
        address = getattr(g, side)
        if address % UB_LINE:
            return Violation(ErrorCode.UB_MISALIGNED,
                             f"{_BASE_NAMES[op.opcode][side]} = {address:#x} is not a "
                             f"multiple of {UB_LINE}")
    return None


def packs_rows(op, values, profile):
    """The UB rows of this copy may be packed (SPEC.md, "Packed UB rows"): on a profile
    that has them, when the copy writes no pad (MTE2 without data_select; MTE3 always)."""
    return profile.packed_rows and not (op.opcode == Opcode.COPY_GM_TO_UBUF
                                        and values["data_select_bit"])


def _misaligned_strides(op, values, g, side, profile):
    """UB_MISALIGNED of a UB row or loop stride that is applied and off a line (a row
    stride equal to len_burst is fine where rows may be packed), or None."""
    stride = getattr(g, f"{side}_stride")
    if g.n_burst > 1 and stride % UB_LINE:
        packable = packs_rows(op, values, profile)
        if not (packable and stride == g.len_burst):
            why = (f", nor len_burst {g.len_burst} (packed rows)" if packable else
                   " (a padded row is never packed)" if profile.packed_rows else "")
            return Violation(ErrorCode.UB_MISALIGNED,
                             f"{side}_stride {stride} is not a multiple of {UB_LINE}{why} "
                             f"with n_burst {g.n_burst}")
    for level in ("loop1", "loop2"):
        count, stride = getattr(g, f"{level}_count"), getattr(g, f"{level}_{side}")
        if count > 1 and stride % UB_LINE:
            return Violation(ErrorCode.UB_MISALIGNED,
                             f"{level} {side} stride {stride} is not a multiple of {UB_LINE} "
                             f"with {level} count {count}")
    return None


def _stride_overlap(op, values, g, ub_side, es):
    """STRIDE_OVERLAP of a row stride smaller than its row (n_burst > 1), or None."""
    if g.n_burst < 2:
        return None
    gm_side = "src" if ub_side == "dst" else "dst"
    ub_row, row_name = g.len_burst, f"len_burst {g.len_burst}"
    if op.opcode == Opcode.COPY_GM_TO_UBUF:
        ub_row = footprint(values, es)
        row_name = f"the row's footprint {ub_row} (L*es + len_burst + R*es)"
    for side, row, name in ((gm_side, g.len_burst, f"len_burst {g.len_burst}"),
                            (ub_side, ub_row, row_name)):
        stride = getattr(g, f"{side}_stride")
        if stride < row:
            return Violation(ErrorCode.STRIDE_OVERLAP,
                             f"{side}_stride {stride} is smaller than {name}")
    return None


def _ub_range(op, g, sides, profile):
    """UB_RANGE of the first side (of `sides`) whose span passes the UB's end, or None."""
    if g.empty:
        return None
    for side in sides:
        end = g.src_end() if side == "src" else g.dst_end()
        if end > profile.ub_size:
            return Violation(ErrorCode.UB_RANGE,
                             f"{_BASE_NAMES[op.opcode][side]} = {getattr(g, side):#x}: the "
                             f"copy reaches UB byte {end - 1:#x}, beyond the "
                             f"{profile.ub_size}-byte UB")
    return None


def _gm_range(op, g, side):
    """GM_RANGE when the GM side's span passes 2^40, or None."""
    end = g.src_end() if side == "src" else g.dst_end()
    if g.empty or end <= 1 << GM_ADDR_BITS:
        return None
    return Violation(ErrorCode.GM_RANGE,
                     f"{_BASE_NAMES[op.opcode][side]} = {getattr(g, side):#x}: the copy "
                     f"reaches GM byte {end - 1:#x}, beyond {(1 << GM_ADDR_BITS) - 1:#x}")


def _ub_overlap(g):
    """UB_OVERLAP of a UB->UB copy whose source and destination spans intersect, or None."""
    if g.empty or not (g.src < g.dst_end() and g.dst < g.src_end()):
        return None
    return Violation(ErrorCode.UB_OVERLAP,
                     f"source [{g.src:#x}, {g.src_end():#x}) and destination "
                     f"[{g.dst:#x}, {g.dst_end():#x}) intersect")
