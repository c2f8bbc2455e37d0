"""Random copy commands for the control-block tests, biased so that every rule fires often.

`random_copy(rng, kind, profile)` returns (values, regs): the fields of a copy op and, for
MTE2/MTE3, its pipe's registers, every value within its isa field width. A share of the
cases sits exactly on a boundary (UB end == UB size, GM end == 2^40, pad == 32 bytes), and
a share has a UB row stride equal to len_burst (packed rows on a5, UB_MISALIGNED elsewhere
unless it is a line multiple).
"""

from model.isa import (DTYPES, GM_ADDR_BITS, OP_BY_OPCODE, PAD_MAX_BYTES, PIPE_REGISTERS,
                       UB_LINE, Opcode, dtype_supported)
from model.rules import geometry


def _pick(rng, *choices):
    """choices: (weight, callable) pairs; calls one of them."""
    total = sum(w for w, _ in choices)
    x = rng.random() * total
    for w, f in choices:
        x -= w
        if x < 0:
            return f()
    return choices[-1][1]()


def _dtype(rng, profile):
    good = [d for d in DTYPES if dtype_supported(d, profile)]
    bad = [code for code in range(32)
           if code >= len(DTYPES) or not dtype_supported(DTYPES[code], profile)]
    return rng.choice(bad) if rng.random() < 0.08 else rng.choice(good).code


def _count(rng, width, one=0.4):
    return _pick(rng, (0.04, lambda: 0), (one, lambda: 1), (0.45, lambda: rng.randint(2, 5)),
                 (0.08, lambda: rng.randint(2, (1 << width) - 1)), (0.03, lambda: (1 << width) - 1))


def _ub_address(rng, ub_size, width):
    return _pick(rng, (0.85, lambda: rng.randrange(0, ub_size, UB_LINE)),
                 (0.05, lambda: rng.randrange(0, ub_size)),
                 (0.05, lambda: rng.randrange(0, 1 << width, UB_LINE)),
                 (0.05, lambda: rng.randrange(0, 1 << width)))


def _ub_stride(rng, row, width):
    """A UB start-to-start stride: usually a line multiple that fits the row."""
    fits = -(-max(row, 1) // UB_LINE) * UB_LINE
    return min((1 << width) - 1, _pick(
        rng, (0.6, lambda: fits + UB_LINE * rng.randint(0, 3)),
        (0.1, lambda: max(0, fits - UB_LINE)),
        (0.1, lambda: rng.randrange(0, 1 << width, UB_LINE)),
        (0.05, lambda: fits + rng.randint(1, 31)),
        (0.05, lambda: 0),
        (0.1, lambda: rng.randrange(0, 2048, UB_LINE))))


def _gm_stride(rng, row, width):
    return min((1 << width) - 1, _pick(
        rng, (0.6, lambda: row + rng.randint(0, 64)),
        (0.1, lambda: max(0, row - rng.randint(1, 8))),
        (0.1, lambda: rng.randrange(1 << width)), (0.1, lambda: (1 << width) - 1),
        (0.1, lambda: rng.randint(0, 1 << 20))))


def _length(rng, es, width):
    """len_burst in bytes: usually an element multiple."""
    return min((1 << width) - 1, _pick(
        rng, (0.55, lambda: es * rng.randint(1, 80)), (0.1, lambda: UB_LINE * rng.randint(1, 16)),
        (0.08, lambda: rng.randint(1, 300)), (0.05, lambda: 0),
        (0.12, lambda: es * rng.randint(1, ((1 << width) - 1) // es)),
        (0.05, lambda: ((1 << width) - 1) // es * es), (0.05, lambda: (1 << width) - 1)))


def _pads(rng, es, select):
    limit = PAD_MAX_BYTES // es
    if not select:
        return _pick(rng, (0.85, lambda: (0, 0)),
                     (0.15, lambda: (rng.randint(0, 3), rng.randint(1, 3))))
    one = lambda: _pick(rng, (0.4, lambda: 0), (0.35, lambda: rng.randint(0, limit)),
                        (0.15, lambda: limit), (0.07, lambda: limit + 1), (0.03, lambda: 255))
    return one(), one()


def _regs(rng, pipe, ub_side, row):
    regs = {}
    widths = {r.name: r.width for r in PIPE_REGISTERS[pipe]}
    for level in ("loop1", "loop2"):
        regs[f"{level}_count"] = _count(rng, widths[f"{level}_count"], one=0.5)
    for level in ("loop1", "loop2"):
        for side in ("src", "dst"):
            name = f"{level}_{side}_stride"
            if side == ub_side:
                regs[name] = _pick(rng, (0.8, lambda: rng.randrange(0, 8192, UB_LINE)),
                                   (0.1, lambda: rng.randrange(0, 1 << widths[name])),
                                   (0.1, lambda: rng.randrange(0, 1 << widths[name], UB_LINE)))
            else:
                regs[name] = _gm_stride(rng, row * 4, widths[name])
    if "pad_val" in widths:
        regs["pad_val"] = rng.getrandbits(64)
    return regs


def _place(rng, values, field, width, end, limit, align):
    """Move a base address so the copy's end lands on/near `limit` (the range boundary)."""
    offset = end - values[field]
    base = limit - offset + rng.choice((0, 0, 1, -1, align, -align))
    base -= base % align
    if 0 <= base < 1 << width:
        values[field] = base


def random_copy(rng, kind, profile):
    op = OP_BY_OPCODE[kind]
    dtype = _dtype(rng, profile)
    known = dtype < len(DTYPES) and DTYPES[dtype].size
    es = DTYPES[dtype].size if known else rng.choice((1, 2, 4, 8))
    w = {f.name: f.width for f in op.fields}
    v = {"dtype": dtype, "sid": rng.randrange(1 << w["sid"]), "n_burst": _count(rng, w["n_burst"])}
    if kind == Opcode.COPY_UBUF_TO_UBUF:
        v["len_burst"] = _pick(rng, (0.05, lambda: 0), (0.8, lambda: rng.randint(1, 40)),
                               (0.15, lambda: rng.randrange(1 << w["len_burst"])))
        for gap in ("src_gap", "dst_gap"):
            v[gap] = _pick(rng, (0.6, lambda: rng.randint(0, 8)),
                           (0.4, lambda: rng.randrange(1 << w[gap])))
        v["ub_src"] = _ub_address(rng, profile.ub_size, w["ub_src"])
        v["ub_dst"] = _pick(rng, (0.5, lambda: _ub_address(rng, profile.ub_size, w["ub_dst"])),
                            (0.5, lambda: max(0, v["ub_src"] + UB_LINE * rng.randint(-60, 60))))
        if rng.random() < 0.2:
            g = geometry(op, v, None)
            side = rng.choice(("ub_src", "ub_dst"))
            end = g.src_end() if side == "ub_src" else g.dst_end()
            _place(rng, v, side, w[side], end, profile.ub_size, UB_LINE)
        return v, None

    v["len_burst"] = _length(rng, es, w["len_burst"])
    v["l2_cache_ctl"] = rng.randrange(1 << w["l2_cache_ctl"])
    if kind == Opcode.COPY_GM_TO_UBUF:
        select = rng.random() < 0.6
        left, right = _pads(rng, es, select)
        v.update(data_select_bit=int(select), left_padding=left, right_padding=right)
        ub_row = v["len_burst"] + (left + right) * es
        gm, ub, gm_side, ub_side = "gm_src", "ub_dst", "src", "dst"
    else:
        ub_row = v["len_burst"]
        gm, ub, gm_side, ub_side = "gm_dst", "ub_src", "dst", "src"
    v[f"{ub_side}_stride"] = _pick(
        rng, (0.85, lambda: _ub_stride(rng, ub_row, w[f"{ub_side}_stride"])),
        (0.15, lambda: v["len_burst"]))        # packed rows where the profile has them
    v[f"{gm_side}_stride"] = _gm_stride(rng, v["len_burst"], w[f"{gm_side}_stride"])
    v[ub] = _ub_address(rng, profile.ub_size, w[ub])
    v[gm] = _pick(rng, (0.7, lambda: rng.randrange(1 << 32)),
                  (0.3, lambda: rng.randrange(1 << w[gm])))
    regs = _regs(rng, op.pipe, ub_side, v["len_burst"])
    if rng.random() < 0.3:
        g = geometry(op, v, regs)
        ub_end, gm_end = ((g.dst_end(), g.src_end()) if ub_side == "dst"
                          else (g.src_end(), g.dst_end()))
        if rng.random() < 0.5:
            _place(rng, v, ub, w[ub], ub_end, profile.ub_size, UB_LINE)
        else:
            _place(rng, v, gm, w[gm], gm_end, 1 << GM_ADDR_BITS, 1)
    return v, regs
