"""SPEC rules on encoded command fields: the one rule function.

`check_copy` sees exactly what the hardware checker sees (the decoded fields of a copy
command plus a snapshot of its pipe's registers) and returns the first `ErrorCode` that
applies, lowest code first, or `ErrorCode.NONE`. FIELD_RANGE cannot arise here: a value
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


def _misaligned(*addresses):
    return any(a % UB_LINE for a in addresses)


def check_copy(op, values, regs, profile):
    """First SPEC rule a copy command breaks, or ErrorCode.NONE."""
    dtype = DTYPES[values["dtype"]] if values["dtype"] < len(DTYPES) else None
    if dtype is None or not dtype_supported(dtype, profile):
        return ErrorCode.TYPE_UNSUPPORTED
    es = dtype.size
    g = geometry(op, values, regs)
    n = values["n_burst"]

    if op.opcode == Opcode.COPY_UBUF_TO_UBUF:
        if _misaligned(g.src, g.dst):
            return ErrorCode.UB_MISALIGNED
        if g.empty:
            return ErrorCode.NONE
        if g.src_end() > profile.ub_size or g.dst_end() > profile.ub_size:
            return ErrorCode.UB_RANGE
        if g.src < g.dst_end() and g.dst < g.src_end():
            return ErrorCode.UB_OVERLAP
        return ErrorCode.NONE

    if values["len_burst"] % es:
        return ErrorCode.LEN_NOT_ELEMENT_MULTIPLE
    if op.opcode == Opcode.COPY_GM_TO_UBUF:
        pads = (values["left_padding"], values["right_padding"])
        if not values["data_select_bit"] and any(pads):
            return ErrorCode.PAD_WITHOUT_SELECT
        if any(p * es > PAD_MAX_BYTES for p in pads):
            return ErrorCode.PAD_TOO_LARGE
        ub, ub_stride, ub_l1, ub_l2 = g.dst, g.dst_stride, g.loop1_dst, g.loop2_dst
        ub_row = footprint(values, es)
        gm_stride = g.src_stride
    else:
        ub, ub_stride, ub_l1, ub_l2 = g.src, g.src_stride, g.loop1_src, g.loop2_src
        ub_row = g.len_burst
        gm_stride = g.dst_stride
    if (_misaligned(ub) or (n > 1 and _misaligned(ub_stride))
            or (g.loop1_count > 1 and _misaligned(ub_l1))
            or (g.loop2_count > 1 and _misaligned(ub_l2))):
        return ErrorCode.UB_MISALIGNED
    if n > 1 and (gm_stride < g.len_burst or ub_stride < ub_row):
        return ErrorCode.STRIDE_OVERLAP
    if g.empty:
        return ErrorCode.NONE
    if op.opcode == Opcode.COPY_GM_TO_UBUF:
        ub_end, gm_end = g.dst_end(), g.src_end()
    else:
        ub_end, gm_end = g.src_end(), g.dst_end()
    if ub_end > profile.ub_size:
        return ErrorCode.UB_RANGE
    if gm_end > 1 << GM_ADDR_BITS:
        return ErrorCode.GM_RANGE
    return ErrorCode.NONE
