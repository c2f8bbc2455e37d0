"""The copy rule checker: SPEC rules and loop geometry of one copy, in hardware.

Equal to `model.rules.check_copy` and `model.rules.geometry` on every encodable input.
"""

import itertools

from amaranth.hdl import Array, Cat, Const, Module, Mux, Shape, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from model.isa import (DTYPES, GM_ADDR_BITS, OP_BY_OPCODE, PAD_MAX_BYTES, PIPE_REGISTERS,
                       PROFILES, UB_LINE, ErrorCode, Opcode, dtype_supported)

from ..lib.arith import compress, sum_mod
from ..lib.multiplier import OPERAND_BITS, RegisteredMultiplier
from ..layouts import (CACHE_BITS, CMD_INDEX_BITS, EXTENT_BITS, LEFT_BITS, LEN_BITS, SID_BITS,
                      RowTerms)
from ..datapath.legalizer import row_terms
from ..intake.commands import op_layout
from .regfile import counts_less_one_layout, registers_layout

COPY_KINDS = (Opcode.COPY_GM_TO_UBUF, Opcode.COPY_UBUF_TO_GM, Opcode.COPY_UBUF_TO_UBUF)
# (source address field, destination address field) of each copy.
ADDRESS_FIELDS = {
    Opcode.COPY_GM_TO_UBUF: ("gm_src", "ub_dst"),
    Opcode.COPY_UBUF_TO_GM: ("ub_src", "gm_dst"),
    Opcode.COPY_UBUF_TO_UBUF: ("ub_src", "ub_dst"),
}
LOOP_COUNTS = ("n_burst", "loop1_count", "loop2_count")     # inner to outer
# The flags worked out of each count: count > 1, count == 2.
COUNT_FLAGS = {"many": lambda count: count > 1, "two": lambda count: count == 2}
LOG2_ES_BITS = 2
ES_BITS = max(d.size for d in DTYPES).bit_length()
LINE_SHIFT = exact_log2(UB_LINE)
MUL_BITS = OPERAND_BITS     # one ECP5 MULT18X18D per partial product
# The end sums' carry-save levels (one LUT level each): at most CSA_LEVELS in a stage of
# their own, and a stage that ends in the carry-propagate add (a carry chain) takes
# FINAL_FANIN vectors (4 -> 3 -> 2, two levels ahead of the chain).
CSA_LEVELS = 4
FINAL_FANIN = 4
PAD8_BITS = 64


def has_loops(kind):
    """MTE2 and MTE3 copies run the two HW loops of their pipe's registers; UB->UB has none."""
    return OP_BY_OPCODE[kind].pipe in PIPE_REGISTERS


def request_layout(kind):
    """What the checker needs: the copy's fields and, for MTE2/MTE3, its pipe's registers;
    and the command's index, which it passes on to the result."""
    op = OP_BY_OPCODE[kind]
    members = {"fields": op_layout(op), "index": CMD_INDEX_BITS}
    if has_loops(kind):
        members["regs"] = registers_layout(op.pipe)
        members["counts_less_one"] = counts_less_one_layout(op.pipe)
    return data.StructLayout(members)


def geometry_layout(kind):
    """`model.rules.CopyGeometry` in bits, plus es, data_select, the empty flag and the
    ends of the source and destination spans (CopyGeometry.src_end() / dst_end()).

    src/dst are the copy's source and destination addresses (GM or UB), all lengths and
    strides are in bytes. A UB->UB copy has loop counts 1 and loop strides 0 (width 0)."""
    op = OP_BY_OPCODE[kind]
    src, dst = ADDRESS_FIELDS[kind]
    if has_loops(kind):
        widths = {r.name: r.width for r in PIPE_REGISTERS[op.pipe]}
        strides = {name: op.field(name).width for name in ("src_stride", "dst_stride")}
        loops = {"loop1_count": widths["loop1_count"], "loop2_count": widths["loop2_count"],
                 **{f"{level}_{side}": widths[f"{level}_{side}_stride"]
                    for level in ("loop1", "loop2") for side in ("src", "dst")}}
    else:
        assert op.field("len_burst").width + LINE_SHIFT <= LEN_BITS
        # (len + gap) lines of 32 bytes
        stride = op.field("len_burst").width + 1 + LINE_SHIFT
        strides = {"src_stride": stride, "dst_stride": stride}
        loops = {"loop1_count": 1, "loop2_count": 1,
                 "loop1_src": 0, "loop1_dst": 0, "loop2_src": 0, "loop2_dst": 0}
    return data.StructLayout({
        "src": op.field(src).width,
        "dst": op.field(dst).width,
        "n_burst": op.field("n_burst").width,
        "len_burst": LEN_BITS,
        **strides,
        **loops,
        "left_bytes": LEFT_BITS,
        "row_bytes": EXTENT_BITS,
        "es": ES_BITS,
        "select": 1,
        "empty": 1,
        # Each count > 1 and each count == 2 (the address generator's first row and its
        # at-end flags after it need no compare), and whether the copy's second row is the
        # last of each loop level (second_row_ends: the at-end flags it loads on taking a
        # copy, each a register).
        **{f"{count}_{flag}": 1 for flag in COUNT_FLAGS for count in LOOP_COUNTS},
        **{f"{count}_second_end": 1 for count in LOOP_COUNTS},
        # One past the last byte read / written (valid for a non-empty copy that passed).
        "src_end": op.field(src).width + 1,
        "dst_end": op.field(dst).width + 1,
    })


SPAN_FIELDS = ("src", "src_end", "dst", "dst_end")


def spans_layout(kind):
    """A copy's source and destination spans [src, src_end), [dst, dst_end)."""
    members = geometry_layout(kind).members
    return data.StructLayout({name: members[name] for name in SPAN_FIELDS})


def checked_copy_layout(kind):
    """The checker's result, which is also the address generator's input.

    `cache` is 0 for UB->UB (no such field); `pad8` is MTE2's pad pattern, 8 bytes of which
    byte i is byte (i mod es) of pad_val (layouts.RowJob), 0 for the others; `index` is the
    request's; `row_terms` the rows' RowTerms at the bus width (legalizer.row_terms of
    len_burst)."""
    return data.StructLayout({
        "index": CMD_INDEX_BITS,
        "error": ErrorCode,
        "geom": geometry_layout(kind),
        "sid": SID_BITS,
        "cache": CACHE_BITS,
        "pad8": PAD8_BITS,
        "row_terms": RowTerms,
    })


def second_row_ends(many, two):
    """Per loop level (inner to outer), whether the row after a copy's first is the last
    of its level, from each count's > 1 and == 2 flags: the level that steps after the
    first row (the innermost whose count is > 1, else loop2) is at its end if its count is
    2, every other level if its count is 1. (For a copy of one row, the row after it is
    past loop2's end.)"""
    steps = [many[0], ~many[0] & many[1], ~many[0] & ~many[1]]
    return [Mux(step, two[level], ~many[level]) for level, step in enumerate(steps)]


def _reg(m, value, name, init=0):
    """A free-running pipeline register (one cycle). Copies that load the same value are
    kept apart by different `init` values (see _load)."""
    reg = Signal(value.shape(), name=name, init=init)
    m.d.sync += reg.eq(value)
    return reg


def _capped(value, cap):
    """(value mod 2^cap, value >= 2^cap)."""
    value = Value.cast(value)
    return value[:cap], value[cap:].any() if len(value) > cap else Const(0, 1)


def _by_element_size(log2_es, value):
    """value(k) for the element size 2^k that `log2_es` holds: worked out for every size
    at once and picked after, so the size's register is not in front of that logic."""
    return Array(value(k) for k in range(1 << LOG2_ES_BITS))[log2_es]


def _pad8(pad_val, es):
    """8 pad bytes: byte i is byte (i mod es) of pad_val."""
    return Cat(*[pad_val[:8 * es]] * (8 // es))


def _align_up(value):
    """value rounded up to a whole number of UB lines."""
    return ((value + (UB_LINE - 1)) >> LINE_SHIFT) << LINE_SHIFT


def _load(m, capture, value, name, init=0):
    """A register loaded with the request on every cycle `capture` (the checker's
    `request.ready`) is high: valid at stage 1 after an accept, and held while the copy is
    evaluated, as `request.ready` stays low until its result loads. Registers that load
    the same value are kept apart (not merged by synthesis) by giving them different
    `init` values, which nothing reads: the result is valid only after an accept, so the
    register needs no reset either."""
    reg = Signal(value.shape(), name=name, init=init, reset_less=True)
    with m.If(capture):
        m.d.sync += reg.eq(value)
    return reg


def _partial_products(m, capture, a, b, cap, name, copies, weight=0):
    """(a*b) << weight, for Values a and b of the request being accepted, as partial
    products of at most MUL_BITS x MUL_BITS bits each, in the form `_carry_save_sum` sums:
    ((value shifted to its weight, flag), stage). Bits of weight 2^cap and up only set the
    flag, so a product wholly above them needs no multiplier, only a nonzero test of its
    factors (stage 2; `copies` numbers those factors' registers, as their `init`, so
    synthesis does not merge those that load the same slice), and has no value (None). A
    multiplier (RegisteredMultiplier, one ECP5 MULT18X18D with its registers inside)
    loads its operands with the request (stage 1) and registers its product (stage 2), so
    the block's routing in and out is not in series with its delay; the product's bits
    from 2^cap up are tested for nonzero where the sum gathers the flags, so nothing but
    that register follows the block."""
    terms = []
    for i in range(0, len(a), MUL_BITS):
        for j in range(0, len(b), MUL_BITS):
            x, y, shift = a[i:i + MUL_BITS], b[j:j + MUL_BITS], weight + i + j
            if shift >= cap:
                x, y = (_load(m, capture, v, f"{name}_{i}_{j}_{k}",
                              init=next(copies) % (1 << len(v)))
                        for v, k in ((x, "a"), (y, "b")))
                over = _reg(m, (x != 0) & (y != 0), f"{name}_{i}_{j}_over")
                terms.append(((None, over), 2))
                continue
            mul = m.submodules[f"{name}_{i}_{j}"] = RegisteredMultiplier(len(x), len(y))
            m.d.comb += [mul.a.eq(x), mul.b.eq(y), mul.load.eq(capture)]
            keep = cap - shift
            value = mul.p[:keep] << shift
            high = mul.p[keep:]
            terms.append(((value, high.any() if len(high) else Const(0, 1)), 2))
    return terms


def _carry_save_sum(m, terms, cap, limit, name):
    """Sums ((value, flag), stage) terms: values below 2^cap (None: a flag alone), a flag
    says the true term is 2^cap or more, and a term joins at the stage its value is ready
    (and stays valid: the request is held). Carry-save levels reduce the vectors, up to
    CSA_LEVELS per stage, until FINAL_FANIN are left with the last terms to join (and no
    term is still to come); then two vectors and their carry-propagate add make the final
    stage. The vectors are wide
    enough for the exact sum of all the values (no carry is lost).

    Whether the true sum is beyond `limit` (below 2^cap) is registered beside it, from the
    same vectors: sum > limit exactly when sum + (2^width - 1 - limit) carries out of the
    vectors' width, one carry chain beside the sum's; a flag makes it so too. So no
    compare follows the sum. Returns (sum mod 2^cap, beyond, stage of the sum)."""
    assert 0 <= limit < 1 << cap
    width = cap + (sum(value is not None for (value, _), _ in terms) - 1).bit_length()
    stage = min(s for _, s in terms)
    vectors, flags, waiting = [], [], list(terms)
    while True:
        joining = [term for term, s in waiting if s == stage]
        waiting = [(term, s) for term, s in waiting if s != stage]
        vectors += [value for value, _ in joining if value is not None]
        flags += [flag for _, flag in joining]
        if not waiting and len(vectors) <= FINAL_FANIN:
            above = sum_mod(vectors + [(1 << width) - 1 - limit], width + 1)[width]
            while len(vectors) > 2:
                vectors = compress(vectors, width)
            total = _reg(m, sum(vectors[1:], vectors[0])[:cap], f"{name}_s{stage + 1}")
            beyond = _reg(m, Cat(*flags).any() | above, f"{name}_s{stage + 1}_beyond")
            return total, beyond, stage + 1
        # Values that join next, when they are the last, count against the final
        # stage's fan-in: reduce to leave room for them.
        joining_last = [value for (value, _), s in waiting
                        if value is not None and s == stage + 1]
        if all(s == stage + 1 for _, s in waiting):
            target = max(FINAL_FANIN - len(joining_last), 2)
        else:
            target = FINAL_FANIN
        if len(vectors) > target:
            for _ in range(CSA_LEVELS):
                if len(vectors) > target:
                    vectors = compress(vectors, width)
            vectors = [_reg(m, vector, f"{name}_s{stage + 1}_{k}")
                       for k, vector in enumerate(vectors)]
            # A register per flag: a flag from a multiplier is the nonzero test of its
            # product's high bits, after the route out of its block, so no OR across
            # blocks is added here; the final stage ORs them beside the carry chain.
            flags = [_reg(m, flag, f"{name}_s{stage + 1}_over{k}")
                     for k, flag in enumerate(flags)]
        stage += 1


def _lowest(conditions):
    """The lowest ErrorCode of {ErrorCode: condition} whose condition holds, else NONE."""
    error = ErrorCode.NONE
    for code in sorted(conditions, reverse=True):
        error = Mux(conditions[code], code, error)
    return error


class CopyChecker(wiring.Component):
    """Checks one copy command against the SPEC rules and derives its loop geometry.

    `kind` is the copy's Opcode; `profile` an isa Profile or its name (UB size, f8 types);
    `width_bytes` the bus and UB word width W, for the result's `row_terms`.

    request: `request_layout(kind)`: {fields: the op's struct (commands.op_layout),
    regs: the pipe's register snapshot, counts_less_one: its loop counts less one (both
    MTE2/MTE3 only)}.
    result: `checked_copy_layout(kind)`: {error, geom, sid, cache, pad8, row_terms};
    `error` is the first rule broken (model.rules.check_copy) or NONE, `geom` as
    model.rules.geometry plus es, select, empty (any count or len_burst 0),
    n_burst_many / loop1_count_many / loop2_count_many (that count > 1), the same with
    _two (that count == 2) and _second_end (second_row_ends), and src_end / dst_end (one
    past the last byte of each side's span); `row_terms` (RowTerms at W, one
    carry chain each from the held request) spares the address generator's per-row sums
    their carry-save level. FIELD_RANGE never occurs: a field that fits its bits is in
    range.
    passing: high on the cycle before `result.valid` rises when that result will pass
    (error NONE, not empty), so a consumer can register its decision to start the copy
    and start it as the result arrives (`result.payload` still holds the previous
    result on that cycle). upcoming: the spans of the copy being evaluated (`geom`'s
    src, src_end, dst, dst_end), valid with `passing`. busy_next: the value `busy` takes
    on the next edge. busy: a register, high from the
    edge that accepts a request until the edge that takes its result.

    Evaluation and result overlap: the request is held in a register and a free-running
    pipeline evaluates it; at its last stage the whole result is loaded into the result
    register, and the next request is accepted on that cycle. The result is valid
    `LATENCY[kind]` cycles after the request was accepted (5 for MTE2/MTE3, 4 for
    UB->UB) and stays until taken; a copy whose result register is still full waits at its
    last stage. `request.ready` and the load are registers, neither waiting on
    `result.ready` in its cycle, so one copy per `latency` - 1 cycles while
    results are taken on arrival: faster than any copy's command words reach a pipe. The
    result register also means the consumer reads every field from a flip-flop, not through
    the geometry's shifts and muxes.

    Stages (registers valid n cycles after the request was accepted), each side's end
    summed by `_carry_save_sum` (exact, then kept to the width of the end and an overflow
    flag):
    1 loaded from the incoming request: element size (decoded from its dtype), UB->UB
      strides in lines, the MTE2 row footprint and it and dst_stride aligned up to a
      line, and each multiplier's own operand registers (a slice of count - 1 and of
      the stride);
    2 partial products of the ends (18x18 bits, one ECP5 multiplier each; UB->UB
      multiplies by its stride in lines, one multiplier per side), from the held
      request empty and each count > 1 and == 2, whether the UB rows pack (a5: the row
      stride equals len_burst and no pad is written), the field rules (element size,
      padding; UB->UB alignment), the MTE2 row extent E;
    3 MTE2/MTE3: each side's terms (base, row bytes, partial products) carry-save
      reduced to at most four vectors, the alignment and stride overlap rules; UB->UB:
      the ends (base + row + product, one carry-save level and the add), whether each
      is past the UB, the earlier rules ranked;
    4 MTE2/MTE3: the ends (carry-save down to two vectors and their carry-propagate add)
      and, beside each, whether it is past its memory; the earlier rules ranked;
      UB->UB: the overlap comparisons and the rule priority, into the result register;
    5 MTE2/MTE3: the rule priority into the result register.
    """

    LATENCY = {Opcode.COPY_GM_TO_UBUF: 5, Opcode.COPY_UBUF_TO_GM: 5, Opcode.COPY_UBUF_TO_UBUF: 4}

    def __init__(self, kind, profile, width_bytes=32):
        assert kind in COPY_KINDS
        self.kind = kind
        self.width_bytes = width_bytes
        self.profile = PROFILES.get(profile, profile)
        self.latency = self.LATENCY[kind]
        super().__init__({
            "request": In(stream.Signature(request_layout(kind))),
            "result": Out(stream.Signature(checked_copy_layout(kind))),
            "passing": Out(1),
            "busy": Out(1),
            "busy_next": Out(1),
            "upcoming": Out(spans_layout(kind)),
        })

    def elaborate(self, platform):
        m = Module()
        accept = self.request.valid & self.request.ready
        # The request's registers load on every cycle the checker is ready, whether or not
        # a request is offered, so their enable is a register: only the handshake's few
        # registers wait on `request.valid`.
        capture = self.request.ready
        incoming = self.request.payload
        held = Signal(request_layout(self.kind))
        with m.If(capture):
            m.d.sync += held.eq(incoming)

        log2_es, supported = self._element_size(m, incoming.fields.dtype)
        derived = self._first_stage(m, capture, incoming, log2_es, supported)
        derived.update(self._count_flags(m, held))
        if self.kind == Opcode.COPY_GM_TO_UBUF:
            derived.update(self._row_extent(m, capture, incoming, held, derived["log2_es"]))
        geom = self._geometry(held, derived)
        ends = self._range_ends(m, capture, incoming, geom, derived.get("row_bytes_sum"))
        geom.update(src_end=ends["src"][0], dst_end=ends["dst"][0])
        flags = self._rules(m, held, derived, geom, ends)
        next_error = self._priority(m, flags)
        # The result register is one stage after the slowest rule.
        assert max(stage for _, stage in flags.values()) + 1 == self.latency
        load = self._handshake(m, accept, self.latency)
        m.d.comb += self.passing.eq(load & (next_error == ErrorCode.NONE) & ~derived["empty"])

        out = self.result.payload
        fields = held.fields
        loaded = {"index": held.index, "error": next_error, "sid": fields.sid}
        if "l2_cache_ctl" in fields.shape().members:
            loaded["cache"] = fields.l2_cache_ctl
        if "regs" in held.shape().members and "pad_val" in held.regs.shape().members:
            loaded["pad8"] = _by_element_size(derived["log2_es"],
                                              lambda k: _pad8(held.regs.pad_val, 1 << k))
        m.d.comb += [self.upcoming[name].eq(geom[name]) for name in SPAN_FIELDS]
        terms = row_terms(geom["len_burst"], self.width_bytes)
        with m.If(load):
            m.d.sync += [out.geom[name].eq(value) for name, value in geom.items()]
            m.d.sync += [out[name].eq(value) for name, value in loaded.items()]
            m.d.sync += [out.row_terms[name].eq(value) for name, value in terms.items()]
        return m

    def _handshake(self, m, accept, latency):
        """A copy is evaluated from its accept until stage `latency` - 1, where it waits
        until the result register is free and is loaded into it (`result` is valid
        `latency` cycles after the accept at the earliest, until it is taken). The next
        request is accepted on the cycle the previous one is loaded. `request.ready` and
        `load` are registers, worked out a cycle ahead: neither waits on `result.ready` in
        its cycle, and `age` is read by the handshake's registers alone. Returns `load`."""
        age = Signal(range(latency))
        load = Signal()
        valid_next = Signal()
        m.d.comb += valid_next.eq(self.result.valid)
        with m.If(load):
            m.d.comb += valid_next.eq(1)
        with m.Elif(self.result.ready):
            m.d.comb += valid_next.eq(0)
        # The age after this edge if no request is accepted: from registers and
        # `result.ready` alone.
        age_kept = Signal.like(age)
        m.d.comb += age_kept.eq(age)
        with m.If(load):
            m.d.comb += age_kept.eq(0)
        with m.Elif((age != 0) & (age != latency - 1)):
            m.d.comb += age_kept.eq(age + 1)

        def loads_at(age_next):
            return (age_next == latency - 1) & ~valid_next

        def ready_at(age_next):
            return (age_next == 0) | loads_at(age_next)

        def after_edge(at):
            # A choice on `accept` between values worked out without it, so the request's
            # `valid` is one LUT from the register.
            return Mux(accept, at(Const(1, len(age))), at(age_kept))

        # `load` enables the whole result register and `request.ready` every request
        # register: were either a gate on `age`, the placer would put that gate out among
        # those loads, and the handshake's own next state, which shares it, with it.
        ready = Signal(init=1)
        m.d.sync += [
            age.eq(Mux(accept, 1, age_kept)),
            self.result.valid.eq(valid_next),
            ready.eq(after_edge(ready_at)),
            load.eq(after_edge(loads_at)),
            self.busy.eq(self.busy_next),
        ]
        m.d.comb += [self.request.ready.eq(ready),
                     self.busy_next.eq(accept | (age_kept != 0) | valid_next)]
        return load

    def _element_size(self, m, dtype):
        """(log2 of the element size, supported) of the incoming dtype, combinational (an
        unsupported type has log2 0)."""
        log2_es, supported = Signal(LOG2_ES_BITS), Signal()
        with m.Switch(dtype):
            for entry in DTYPES:
                if dtype_supported(entry, self.profile):
                    with m.Case(entry.code):
                        m.d.comb += [log2_es.eq(exact_log2(entry.size)), supported.eq(1)]
        return log2_es, supported

    def _first_stage(self, m, capture, incoming, log2_es, supported):
        """Stage 1, captured with the request: element size, UB->UB strides in lines."""
        fields = incoming.fields
        derived = {"log2_es": Signal(LOG2_ES_BITS), "supported": Signal()}
        with m.If(capture):
            m.d.sync += [derived["log2_es"].eq(log2_es), derived["supported"].eq(supported)]
            if not has_loops(self.kind):
                # Row strides in lines: len + gap.
                for side in ("src", "dst"):
                    lines = derived[f"{side}_lines"] = Signal(len(fields.len_burst) + 1,
                                                            name=f"{side}_lines")
                    m.d.sync += lines.eq(fields.len_burst + fields[f"{side}_gap"])
        return derived

    def _count_flags(self, m, held):
        """Stage 2, from the held request: empty, and each count > 1 and == 2.
        Their compares of up to 84 bits take several LUT levels, which here start at the
        checker's own request register, not at the pipe's register snapshot. Stage 3,
        from those: whether the second row ends each loop level."""
        fields = held.fields
        counts = {"n_burst": fields.n_burst}
        if has_loops(self.kind):
            counts.update(loop1_count=held.regs.loop1_count,
                          loop2_count=held.regs.loop2_count)
        empty = fields.len_burst == 0
        for value in counts.values():
            empty |= value == 0
        flags = {"empty": _reg(m, empty, "empty")}
        for name in LOOP_COUNTS:
            for flag, test in COUNT_FLAGS.items():
                # A UB->UB copy's loop counts are 1: its flags of them are constants.
                flags[f"{name}_{flag}"] = (_reg(m, test(counts[name]), f"{name}_{flag}")
                                           if name in counts else Const(test(1), 1))
        # Stage 3, from the flags.
        each = {flag: [flags[f"{name}_{flag}"] for name in LOOP_COUNTS] for flag in COUNT_FLAGS}
        for name, end in zip(LOOP_COUNTS, second_row_ends(each["many"], each["two"])):
            flags[f"{name}_second_end"] = _reg(m, end, f"{name}_second_end")
        return flags

    def _geometry(self, held, derived):
        """The result's geometry fields as Values (stable once the copy is evaluated)."""
        fields = held.fields
        src, dst = ADDRESS_FIELDS[self.kind]
        geom = {"src": fields[src], "dst": fields[dst], "n_burst": fields.n_burst,
                "es": Const(1, ES_BITS) << derived["log2_es"], "empty": derived["empty"]}
        geom.update({f"{count}_{flag}": derived[f"{count}_{flag}"]
                     for count in LOOP_COUNTS for flag in (*COUNT_FLAGS, "second_end")})
        if not has_loops(self.kind):
            length = fields.len_burst << LINE_SHIFT
            geom.update(len_burst=length, row_bytes=length, loop1_count=1, loop2_count=1,
                        src_stride=derived["src_lines"] << LINE_SHIFT,
                        dst_stride=derived["dst_lines"] << LINE_SHIFT)
            return geom
        regs = held.regs
        geom.update(len_burst=fields.len_burst, src_stride=fields.src_stride,
                    dst_stride=fields.dst_stride,
                    loop1_count=regs.loop1_count, loop2_count=regs.loop2_count,
                    **{f"{level}_{side}": regs[f"{level}_{side}_stride"]
                       for level in ("loop1", "loop2") for side in ("src", "dst")})
        if self.kind == Opcode.COPY_GM_TO_UBUF:
            select = fields.data_select_bit
            geom.update(select=select,
                        left_bytes=Mux(select, fields.left_padding << derived["log2_es"], 0),
                        row_bytes=derived["row_bytes"])
        else:
            geom.update(row_bytes=fields.len_burst)
        return geom

    @staticmethod
    def _row_extent(m, capture, incoming, held, log2_es):
        """MTE2 UB row: footprint L*es + len + R*es, and it and dst_stride aligned up to a
        line (stage 2, from the held request and its element size, so no route from the
        pipe's command queue is in front of their carry chains); extent
        E = align_up(max(dst_stride, footprint), 32), the larger aligned value, and the row's
        UB bytes (E with data_select, else len_burst; stage 3, where they join the
        destination end's sum)."""
        fields = held.fields
        # L + R elements, captured with the request (a short add), so the footprint is
        # (L + R) * es + len.
        pads = Signal(len(fields.left_padding) + 1, name="pads")
        with m.If(capture):
            m.d.sync += pads.eq(incoming.fields.left_padding + incoming.fields.right_padding)
        # The footprint, and it aligned up, each one carry chain (after a carry-save
        # level for the rounding), worked out for every element size at once and picked
        # by it after the chains, so the pads' shift is not in front of them. It is below
        # 2^22: len < 2^21, and each pad at most 255 * 8 bytes.
        bits = LEN_BITS + 1

        def footprint_plus(extra):
            return _by_element_size(log2_es, lambda k: sum_mod(
                [pads << k, fields.len_burst, *extra], bits))

        footprint = footprint_plus([])
        row = _reg(m, footprint_plus([UB_LINE - 1])[LINE_SHIFT:] << LINE_SHIFT,
                   "footprint_aligned")
        stride = _reg(m, _align_up(fields.dst_stride), "dst_stride_aligned")
        extent = Mux(row > stride, row, stride)[:EXTENT_BITS]
        # The row's UB bytes, E with data_select, else the data alone: registers, so the
        # destination end's sum takes them with no select in front, from a copy of its own
        # (the other goes to the result, which is read far from the sum).
        row_bytes = Mux(fields.data_select_bit, extent, fields.len_burst)
        return {"footprint": _reg(m, footprint, "footprint"),
                "row_bytes": _reg(m, row_bytes, "row_bytes"),
                "row_bytes_sum": _reg(m, row_bytes, "row_bytes_sum", init=1)}

    def _range_ends(self, m, capture, incoming, geom, dst_row=None):
        """One past the last source and destination byte, as (value, beyond, stage): base +
        the offsets of the last row on each loop level + the row's bytes, kept to the
        width of the result's src_end / dst_end, and whether it is past the end of its
        memory (GM or the UB). `dst_row`, if given, is the destination row's bytes in a
        register of the sum's own (else geom's row_bytes)."""
        layout = geometry_layout(self.kind)
        ends = {}
        copies = itertools.count()
        for side in ("src", "dst"):
            if side == "src":
                row = geom["len_burst"]
            else:
                row = geom["row_bytes"] if dst_row is None else dst_row
            # E (MTE2 destination rows with data_select) is ready at stage 3.
            row_stage = 3 if self.kind == Opcode.COPY_GM_TO_UBUF and side == "dst" else 1
            cap = Shape.cast(layout.members[f"{side}_end"]).width
            terms = [(_capped(geom[side], cap), 1), (_capped(row, cap), row_stage)]
            for level, count_m1, stride, weight in self._level_offsets(incoming, side):
                terms += _partial_products(m, capture, count_m1, stride, cap,
                                           f"{side}_{level}", copies, weight)
            ends[side] = _carry_save_sum(m, terms, cap, self._memory_size(side),
                                         f"{side}_end")
        return ends

    def _gm_side(self):
        """The side ("src" or "dst") of the copy that is in GM; None for UB->UB."""
        return {Opcode.COPY_GM_TO_UBUF: "src", Opcode.COPY_UBUF_TO_GM: "dst"}.get(self.kind)

    def _memory_size(self, side):
        return 1 << GM_ADDR_BITS if side == self._gm_side() else self.profile.ub_size

    def _level_offsets(self, incoming, side):
        """(level, count - 1, stride, weight of the stride's unit) of each loop level of
        `side`, as Values of the incoming request (the multipliers load them with it):
        (count - 1) * stride << weight is the offset of the level's last row."""
        fields = incoming.fields

        def minus_one(value):
            return (value - 1)[:len(value)]

        if not has_loops(self.kind):
            # The stride in lines (len + gap, 17 bits): one 18x18 multiplier, where the
            # stride in bytes (22 bits) would take two and an adder level more.
            lines = fields.len_burst + fields[f"{side}_gap"]
            return [("n_burst", minus_one(fields.n_burst), lines, LINE_SHIFT)]
        regs, less_one = incoming.regs, incoming.counts_less_one
        return [("n_burst", minus_one(fields.n_burst), fields[f"{side}_stride"], 0),
                ("loop1", less_one.loop1_count, regs[f"loop1_{side}_stride"], 0),
                ("loop2", less_one.loop2_count, regs[f"loop2_{side}_stride"], 0)]

    def _rules(self, m, held, derived, geom, ends):
        """{ErrorCode: (condition, stage it is ready)} for every rule of this kind."""
        end_stage = max(stage for _, _, stage in ends.values())
        flags = {ErrorCode.TYPE_UNSUPPORTED: (~derived["supported"], 1)}
        if has_loops(self.kind):
            flags.update(self._mte_rules(m, held, derived, geom, ends, end_stage))
        else:
            flags.update(self._ub_to_ub_rules(m, derived, geom, ends, end_stage))
        return flags

    def _ub_to_ub_rules(self, m, derived, geom, ends, end_stage):
        nonempty = ~derived["empty"]
        src_end, dst_end = ends["src"][0], ends["dst"][0]
        misaligned = self._misaligned(geom["src"]) | self._misaligned(geom["dst"])
        beyond = ends["src"][1] | ends["dst"][1]
        return {
            ErrorCode.UB_MISALIGNED: (_reg(m, misaligned, "misaligned"), 2),
            ErrorCode.UB_RANGE: (nonempty & beyond, end_stage),
            # Spans [start, end) of source and destination intersect (UB_RANGE, which
            # takes precedence, covers ends beyond their width).
            ErrorCode.UB_OVERLAP: (nonempty & (geom["src"] < dst_end) & (geom["dst"] < src_end),
                                   end_stage),
        }

    def _mte_rules(self, m, held, derived, geom, ends, end_stage):
        fields = held.fields
        log2_es = derived["log2_es"]
        many = {level: derived[f"{count}_many"] for level, count in
                (("row", "n_burst"), ("loop1", "loop1_count"), ("loop2", "loop2_count"))}
        gm = self._gm_side()
        ub = "dst" if gm == "src" else "src"
        es_mask = (Const(1, 1 << LOG2_ES_BITS) << log2_es) - 1
        flags = {ErrorCode.LEN_NOT_ELEMENT_MULTIPLE: (
            _reg(m, (fields.len_burst & es_mask) != 0, "len_not_multiple"), 2)}

        if self.kind == Opcode.COPY_GM_TO_UBUF:
            left, right = fields.left_padding, fields.right_padding
            pad_without_select = ~fields.data_select_bit & ((left | right) != 0)
            # A pad of L elements is too large when L * es > PAD_MAX_BYTES, that is when
            # L > PAD_MAX_BYTES >> log2(es).
            pad_too_large = _by_element_size(
                log2_es,
                lambda k: (left > (PAD_MAX_BYTES >> k)) | (right > (PAD_MAX_BYTES >> k)))
            flags[ErrorCode.PAD_WITHOUT_SELECT] = (
                _reg(m, pad_without_select, "pad_without_select"), 2)
            flags[ErrorCode.PAD_TOO_LARGE] = (_reg(m, pad_too_large, "pad_too_large"), 2)
            ub_row = derived["footprint"]
        else:
            ub_row = fields.len_burst

        row_misaligned = many["row"] & self._misaligned(geom[f"{ub}_stride"])
        if self.profile.packed_rows:
            row_misaligned &= ~self._packs_rows(m, fields, ub)
        misaligned = (self._misaligned(geom[ub]) | row_misaligned
                      | (many["loop1"] & self._misaligned(geom[f"loop1_{ub}"]))
                      | (many["loop2"] & self._misaligned(geom[f"loop2_{ub}"])))
        # The counts' flags, whether rows pack (and MTE2's footprint) are ready at stage 2.
        flags[ErrorCode.UB_MISALIGNED] = (_reg(m, misaligned, "misaligned"), 3)
        overlap = many["row"] & ((geom[f"{gm}_stride"] < fields.len_burst)
                                 | (geom[f"{ub}_stride"] < ub_row))
        flags[ErrorCode.STRIDE_OVERLAP] = (_reg(m, overlap, "stride_overlap"), 3)

        nonempty = ~derived["empty"]
        flags[ErrorCode.UB_RANGE] = (nonempty & ends[ub][1], end_stage)
        flags[ErrorCode.GM_RANGE] = (nonempty & ends[gm][1], end_stage)
        return flags

    def _packs_rows(self, m, fields, ub):
        """Stage 2, from the held request: the UB row stride equals len_burst and the copy
        writes no pad, so its rows may sit back to back (SPEC.md, "Packed UB rows")."""
        packed = fields[f"{ub}_stride"] == fields.len_burst
        if self.kind == Opcode.COPY_GM_TO_UBUF:
            packed &= ~fields.data_select_bit
        return _reg(m, packed, "packed_rows")

    @staticmethod
    def _misaligned(value):
        return value[:LINE_SHIFT] != 0

    @staticmethod
    def _priority(m, flags):
        """The lowest ErrorCode whose condition holds (model.rules.check_copy's order).
        The rules ready before the last stage all have lower codes than those of the last
        stage, so they are ranked a stage ahead, into registers, and the error is a
        choice between that and the last stage's rules."""
        last = max(stage for _, stage in flags.values())
        early = {code: cond for code, (cond, stage) in flags.items() if stage < last}
        late = {code: cond for code, (cond, stage) in flags.items() if stage == last}
        assert max(early) < min(late)
        early_error = _reg(m, _lowest(early), "early_error")
        early_any = _reg(m, Cat(*early.values()).any(), "early_any")
        return Mux(early_any, early_error, _lowest(late))
