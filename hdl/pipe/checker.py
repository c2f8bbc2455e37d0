"""The copy rule checker: SPEC rules and loop geometry of one copy, in hardware.

Equal to `model.rules.check_copy` and `model.rules.geometry` on every encodable input.
"""

import itertools

from amaranth.hdl import (Array, Cat, Const, Elaboratable, EnableInserter, Module, Mux, Shape,
                          Signal, Value)
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from model.isa import (DTYPES, GM_ADDR_BITS, OP_BY_OPCODE, PAD_MAX_BYTES, PIPE_REGISTERS,
                       PROFILES, UB_LINE, ErrorCode, Opcode, dtype_supported)

from ..lib.arith import compress, sum_mod
from ..lib.multiplier import OPERAND_BITS, RegisteredMultiplier
from ..lib.stream import skid_stage
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


def output_layout(kind):
    """The checker's output register (and its skid register): the result, and whether it
    passes (error NONE, not empty), worked out before it so the pipe reads it from a
    register."""
    return data.StructLayout({"result": checked_copy_layout(kind), "passes": 1})


def _reg(m, value, name, init=0, reset_less=True):
    """A pipeline register (one stage). It loads on every cycle the evaluation advances
    (CopyChecker wraps the evaluation in an EnableInserter). Copies that load the same
    value are kept apart (not merged by synthesis) by different `init` values, which
    nothing reads: a stage's value is read only while its copy is valid, so it needs no
    reset."""
    reg = Signal(Value.cast(value).shape(), name=name, init=init, reset_less=reset_less)
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


class _Stages:
    """A copy's values stage by stage. The evaluation is a pipeline: stage k's registers
    hold the copy accepted k advances ago, stage 0 is the request offered. The request
    itself is carried from stage to stage (`request(k)`, registers `held_k`; synthesis
    keeps only the bits a stage reads), and so is each value worked out for one stage
    and read at a later one (`put`, `at`), by registers of its own."""

    def __init__(self, m, incoming, last):
        self.m = m
        self.requests = [incoming]
        for k in range(1, last + 1):
            held = Signal(incoming.shape(), name=f"held_{k}", reset_less=True)
            m.d.sync += held.eq(self.requests[-1])
            self.requests.append(held)
        self.values = {}

    def request(self, stage):
        return self.requests[stage]

    def put(self, name, value, stage):
        """`value` is the copy's `name` at `stage` (a Const: at every stage)."""
        self.values[name] = {stage: value}

    def at(self, name, stage):
        """The copy's `name` at `stage`, carried from the stage it was worked out for."""
        chain = self.values[name]
        if any(isinstance(value, Const) for value in chain.values()):
            return next(iter(chain.values()))
        return self._carry(chain, stage, name)

    def carry(self, value, stage, to, name):
        """`value` of the copy at `stage`, as it is at stage `to`."""
        return self._carry({stage: value}, to, name)

    def _carry(self, chain, stage, name):
        latest = max(chain)
        assert stage >= min(chain), (name, stage)
        while latest < stage:
            chain[latest + 1] = _reg(self.m, chain[latest], f"{name}_s{latest + 1}")
            latest += 1
        return chain[stage]


def _partial_products(m, go, a, b, cap, name, copies, weight=0):
    """(a*b) << weight, for Values a and b of the request offered (stage 0), as partial
    products of at most MUL_BITS x MUL_BITS bits each, in the form `_carry_save_sum` sums:
    ((value shifted to its weight, flag), stage). Bits of weight 2^cap and up only set the
    flag, so a product wholly above them needs no multiplier, only a nonzero test of its
    factors (stage 2; `copies` numbers those factors' registers, as their `init`, so
    synthesis does not merge those that load the same slice), and has no value (None). A
    multiplier (RegisteredMultiplier, one ECP5 MULT18X18D with its registers inside)
    loads its operands as the request is accepted (stage 1; `go`, the evaluation's
    advance, drives the block's own input registers) and registers its product (stage
    2), so the block's routing in and out is not in series with its delay; the product's
    bits from 2^cap up are tested for nonzero where the sum gathers the flags, so nothing
    but that register follows the block."""
    terms = []
    for i in range(0, len(a), MUL_BITS):
        for j in range(0, len(b), MUL_BITS):
            x, y, shift = a[i:i + MUL_BITS], b[j:j + MUL_BITS], weight + i + j
            if shift >= cap:
                x, y = (_reg(m, v, f"{name}_{i}_{j}_{k}", init=next(copies) % (1 << len(v)))
                        for v, k in ((x, "a"), (y, "b")))
                over = _reg(m, (x != 0) & (y != 0), f"{name}_{i}_{j}_over")
                terms.append(((None, over), 2))
                continue
            mul = m.submodules[f"{name}_{i}_{j}"] = RegisteredMultiplier(len(x), len(y))
            m.d.comb += [mul.a.eq(x), mul.b.eq(y), mul.load.eq(go)]
            keep = cap - shift
            value = mul.p[:keep] << shift
            high = mul.p[keep:]
            terms.append(((value, high.any() if len(high) else Const(0, 1)), 2))
    return terms


def _carry_save_sum(m, terms, cap, limit, name):
    """Sums ((value, flag), stage) terms: values below 2^cap (None: a flag alone), a flag
    says the true term is 2^cap or more, and a term joins at the stage its value is
    ready. Carry-save levels reduce the vectors, up to CSA_LEVELS per stage, until
    FINAL_FANIN are left with the last terms to join (and no term is still to come); then
    two vectors and their carry-propagate add make the final stage. Each stage's vectors
    and flags are registered into the next, whether reduced or not, as the stage holds
    the next copy's. The vectors are wide enough for the exact sum of all the values (no
    carry is lost).

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
    """Checks copy commands against the SPEC rules and derives their loop geometry, one
    copy per cycle.

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
    carry chain each from the request) spares the address generator's per-row sums
    their carry-save level. FIELD_RANGE never occurs: a field that fits its bits is in
    range.
    result_passes: whether the result offered passes (error NONE, not empty), valid with
    `result.valid`; a bit of the output register, so the pipe decides a start without a
    compare of the error. result_valid_next, result_passes_next: the values
    `result.valid` and `result_passes` take on the next edge, so the pipe can decide a
    cycle ahead whether it takes the result then: `result.ready` may be a register.
    busy: a register, high from the edge that accepts a request until the edge that
    takes its result. busy_next: the value `busy` takes on the next edge.
    upcoming_in_skid, upcoming_skid, upcoming_stage: the spans (`geom`'s src, src_end,
    dst, dst_end) of the result the output register loads next are those of the skid
    register (`upcoming_skid`) if `upcoming_in_skid`, else those of the last stage
    (`upcoming_stage`): each from registers, so a consumer can decide a cycle ahead about
    the result it takes next, working out each candidate's on its own before picking.

    The evaluation is a pipeline of `latency` - 1 stages (_Evaluation) into an output
    register with a skid register behind it (stream.skid_stage), whose `ready` (the skid
    register empty) is both `request.ready` and the enable of every register of the
    evaluation: while the skid register is full the pipeline holds, and it takes no
    request. So a request is taken on every cycle results are taken as they come, and
    the result is offered `latency` cycles after its request was accepted (5 for
    MTE2/MTE3, 4 for UB->UB), from the output register, and held until taken. The
    checker holds at most `holds` copies: one in each stage, the output and the skid
    register's.

    Stages (registers valid n cycles after the request was accepted), each side's end
    summed by `_carry_save_sum` (exact, then kept to the width of the end and an overflow
    flag):
    1 loaded from the incoming request: the request itself (`held_1`, carried on stage
      to stage), element size (decoded from its dtype), UB->UB strides in lines, MTE2's
      left plus right pad, and each multiplier's own operand registers (a slice of
      count - 1 and of the stride);
    2 partial products of the ends (18x18 bits, one ECP5 multiplier each; UB->UB
      multiplies by its stride in lines, one multiplier per side), empty and each
      count > 1 and == 2, whether the UB rows pack (a5: the row stride equals len_burst
      and no pad is written), the field rules (element size, padding; UB->UB
      alignment), the MTE2 row footprint and it and dst_stride aligned up to a line;
    3 MTE2/MTE3: each side's terms (base, row bytes, partial products) carry-save
      reduced to at most four vectors, the alignment and stride overlap rules, MTE2's
      row extent E and its UB bytes; UB->UB: the ends (base + row + product, one
      carry-save level and the add), whether each is past the UB, the earlier rules
      ranked;
    4 MTE2/MTE3: the ends (carry-save down to two vectors and their carry-propagate add)
      and, beside each, whether it is past its memory; the earlier rules ranked;
      UB->UB: the overlap comparisons and the rule priority, into the output register;
    5 MTE2/MTE3: the rule priority into the output register.
    """

    LATENCY = {Opcode.COPY_GM_TO_UBUF: 5, Opcode.COPY_UBUF_TO_GM: 5, Opcode.COPY_UBUF_TO_UBUF: 4}

    def __init__(self, kind, profile, width_bytes=32):
        assert kind in COPY_KINDS
        self.kind = kind
        self.width_bytes = width_bytes
        self.profile = PROFILES.get(profile, profile)
        self.latency = self.LATENCY[kind]
        self.holds = self.latency + 1
        super().__init__({
            "request": In(stream.Signature(request_layout(kind))),
            "result": Out(stream.Signature(checked_copy_layout(kind))),
            "result_passes": Out(1),
            "result_valid_next": Out(1),
            "result_passes_next": Out(1),
            "busy": Out(1),
            "busy_next": Out(1),
            "upcoming_in_skid": Out(1),
            "upcoming_skid": Out(spans_layout(kind)),
            "upcoming_stage": Out(spans_layout(kind)),
        })

    def elaborate(self, platform):
        m = Module()
        go = Signal()
        evaluation = m.submodules.evaluation = EnableInserter({"sync": go})(
            _Evaluation(self.kind, self.profile, self.width_bytes, self.latency))
        taken = Signal()
        skid = Signal(output_layout(self.kind))
        # The output register loads on `result.ready` itself (it is low while no result
        # is offered), so no gate of the handshake lies in front of its enables.
        valid, out, ready = skid_stage(m, evaluation.done, evaluation.word, self.result.ready,
                                       "result", skid_view=(self.upcoming_in_skid, skid),
                                       valid_next=self.result_valid_next)
        stage = evaluation.word
        m.d.comb += [[self.upcoming_skid[name].eq(skid.result.geom[name]),
                      self.upcoming_stage[name].eq(stage.result.geom[name])]
                     for name in SPAN_FIELDS]
        upcoming_passes = Mux(self.upcoming_in_skid, skid.passes, stage.passes)
        m.d.comb += [
            go.eq(ready),
            evaluation.go.eq(ready),
            evaluation.offered.eq(self.request.valid),
            evaluation.request.eq(self.request.payload),
            self.request.ready.eq(ready),
            self.result.valid.eq(valid),
            self.result.payload.eq(out.result),
            self.result_passes.eq(out.passes),
            taken.eq(valid & self.result.ready),
            self.result_passes_next.eq(Mux(~valid | taken, upcoming_passes, out.passes)),
        ]
        accept = self.request.valid & ready
        held = Signal(range(self.holds + 1))
        held_next = Signal.like(held)
        m.d.comb += [held_next.eq(held + accept - taken), self.busy_next.eq(held_next != 0)]
        m.d.sync += [held.eq(held_next), self.busy.eq(self.busy_next)]
        return m


class _Evaluation(Elaboratable):
    """CopyChecker's pipeline: `request` (with `offered`, its `valid`) enters stage 1 on
    every cycle its registers load (CopyChecker's enable, which `go` also is, for the
    multipliers' input registers inside their DSP blocks); `word` is the copy's result
    at the last stage, `latency` - 1, and `done` says a copy is there."""

    def __init__(self, kind, profile, width_bytes, latency):
        self.kind = kind
        self.profile = profile
        self.width_bytes = width_bytes
        self.last = latency - 1
        self.request = Signal(request_layout(kind))
        self.offered = Signal()
        self.go = Signal()
        self.done = Signal()
        self.word = Signal(output_layout(kind))

    def elaborate(self, platform):
        m = Module()
        stages = _Stages(m, self.request, self.last)
        valid = self.offered
        for k in range(1, self.last + 1):
            valid = _reg(m, valid, f"valid_{k}", reset_less=False)
        m.d.comb += self.done.eq(valid)

        self._element_size(m, stages)
        self._count_flags(m, stages)
        if self.kind == Opcode.COPY_GM_TO_UBUF:
            self._row_extent(m, stages)
        ends = self._range_ends(m, stages)
        flags = self._rules(m, stages, ends)
        error = self._priority(m, stages, flags)
        # The output register takes the result one stage after the slowest rule.
        assert max(stage for _, stage in flags.values()) == self.last

        last = self.last
        geom = self._geometry(stages, last)
        geom.update(src_end=ends["src"][0], dst_end=ends["dst"][0])
        request = stages.request(last)
        fields = request.fields
        loaded = {"index": request.index, "error": error, "sid": fields.sid}
        if "l2_cache_ctl" in fields.shape().members:
            loaded["cache"] = fields.l2_cache_ctl
        if "regs" in request.shape().members and "pad_val" in request.regs.shape().members:
            loaded["pad8"] = _by_element_size(stages.at("log2_es", last),
                                              lambda k: _pad8(request.regs.pad_val, 1 << k))
        out = self.word.result
        terms = row_terms(geom["len_burst"], self.width_bytes)
        m.d.comb += [out.geom[name].eq(value) for name, value in geom.items()]
        m.d.comb += [out[name].eq(value) for name, value in loaded.items()]
        m.d.comb += [out.row_terms[name].eq(value) for name, value in terms.items()]
        m.d.comb += self.word.passes.eq((error == ErrorCode.NONE) & ~geom["empty"])
        return m

    def _element_size(self, m, stages):
        """Stage 1, from the incoming request: log2 of the element size and whether the
        type is supported (an unsupported type has log2 0); UB->UB strides in lines."""
        fields = stages.request(0).fields
        log2_es, supported = Signal(LOG2_ES_BITS), Signal()
        with m.Switch(fields.dtype):
            for entry in DTYPES:
                if dtype_supported(entry, self.profile):
                    with m.Case(entry.code):
                        m.d.comb += [log2_es.eq(exact_log2(entry.size)), supported.eq(1)]
        stages.put("log2_es", _reg(m, log2_es, "log2_es"), 1)
        stages.put("supported", _reg(m, supported, "supported"), 1)
        if not has_loops(self.kind):
            # Row strides in lines: len + gap.
            for side in ("src", "dst"):
                stages.put(f"{side}_lines",
                           _reg(m, fields.len_burst + fields[f"{side}_gap"], f"{side}_lines"),
                           1)

    def _count_flags(self, m, stages):
        """Stage 2, from the request at stage 1: empty, and each count > 1 and == 2.
        Their compares of up to 84 bits take several LUT levels, which here start at the
        checker's own request register, not at the pipe's register snapshot. Stage 3,
        from those: whether the second row ends each loop level."""
        request = stages.request(1)
        fields = request.fields
        counts = {"n_burst": fields.n_burst}
        if has_loops(self.kind):
            counts.update(loop1_count=request.regs.loop1_count,
                          loop2_count=request.regs.loop2_count)
        empty = fields.len_burst == 0
        for value in counts.values():
            empty |= value == 0
        stages.put("empty", _reg(m, empty, "empty"), 2)
        for name in LOOP_COUNTS:
            for flag, test in COUNT_FLAGS.items():
                # A UB->UB copy's loop counts are 1: its flags of them are constants.
                stages.put(f"{name}_{flag}", _reg(m, test(counts[name]), f"{name}_{flag}")
                           if name in counts else Const(test(1), 1), 2)
        each = {flag: [stages.at(f"{name}_{flag}", 2) for name in LOOP_COUNTS]
                for flag in COUNT_FLAGS}
        for name, end in zip(LOOP_COUNTS, second_row_ends(each["many"], each["two"])):
            stages.put(f"{name}_second_end", _reg(m, end, f"{name}_second_end"), 3)

    def _geometry(self, stages, stage):
        """The result's geometry fields at `stage`, as Values."""
        request = stages.request(stage)
        fields = request.fields
        log2_es = stages.at("log2_es", stage)
        src, dst = ADDRESS_FIELDS[self.kind]
        geom = {"src": fields[src], "dst": fields[dst], "n_burst": fields.n_burst,
                "es": Const(1, ES_BITS) << log2_es, "empty": stages.at("empty", stage)}
        geom.update({f"{count}_{flag}": stages.at(f"{count}_{flag}", stage)
                     for count in LOOP_COUNTS for flag in (*COUNT_FLAGS, "second_end")})
        if not has_loops(self.kind):
            length = fields.len_burst << LINE_SHIFT
            geom.update(len_burst=length, row_bytes=length, loop1_count=1, loop2_count=1,
                        src_stride=stages.at("src_lines", stage) << LINE_SHIFT,
                        dst_stride=stages.at("dst_lines", stage) << LINE_SHIFT)
            return geom
        regs = request.regs
        geom.update(len_burst=fields.len_burst, src_stride=fields.src_stride,
                    dst_stride=fields.dst_stride,
                    loop1_count=regs.loop1_count, loop2_count=regs.loop2_count,
                    **{f"{level}_{side}": regs[f"{level}_{side}_stride"]
                       for level in ("loop1", "loop2") for side in ("src", "dst")})
        if self.kind == Opcode.COPY_GM_TO_UBUF:
            select = fields.data_select_bit
            geom.update(select=select, left_bytes=Mux(select, fields.left_padding << log2_es, 0),
                        row_bytes=stages.at("row_bytes", stage))
        else:
            geom.update(row_bytes=fields.len_burst)
        return geom

    @staticmethod
    def _row_extent(m, stages):
        """MTE2 UB row: footprint L*es + len + R*es, and it and dst_stride aligned up to a
        line (stage 2, from the request at stage 1 and its element size, so no route from
        the pipe's command queue is in front of their carry chains); extent
        E = align_up(max(dst_stride, footprint), 32), the larger aligned value, and the
        row's UB bytes (E with data_select, else len_burst; stage 3, where they join the
        destination end's sum)."""
        incoming, fields = stages.request(0).fields, stages.request(1).fields
        log2_es = stages.at("log2_es", 1)
        # L + R elements, loaded with the request (a short add), so the footprint is
        # (L + R) * es + len.
        pads = _reg(m, incoming.left_padding + incoming.right_padding, "pads")
        # The footprint, and it aligned up, each one carry chain (after a carry-save
        # level for the rounding), worked out for every element size at once and picked
        # by it after the chains, so the pads' shift is not in front of them. It is below
        # 2^22: len < 2^21, and each pad at most 255 * 8 bytes.
        bits = LEN_BITS + 1

        def footprint_plus(extra):
            return _by_element_size(log2_es, lambda k: sum_mod(
                [pads << k, fields.len_burst, *extra], bits))

        row = _reg(m, footprint_plus([UB_LINE - 1])[LINE_SHIFT:] << LINE_SHIFT,
                   "footprint_aligned")
        stride = _reg(m, _align_up(fields.dst_stride), "dst_stride_aligned")
        extent = Mux(row > stride, row, stride)[:EXTENT_BITS]
        # The row's UB bytes, E with data_select, else the data alone: registers, so the
        # destination end's sum takes them with no select in front, from a copy of its own
        # (the other goes to the result, which is read far from the sum).
        later = stages.request(2).fields
        row_bytes = Mux(later.data_select_bit, extent, later.len_burst)
        stages.put("footprint", _reg(m, footprint_plus([]), "footprint"), 2)
        stages.put("row_bytes", _reg(m, row_bytes, "row_bytes"), 3)
        stages.put("row_bytes_sum", _reg(m, row_bytes, "row_bytes_sum", init=1), 3)

    def _range_ends(self, m, stages):
        """One past the last source and destination byte, as (value, beyond, stage): base +
        the offsets of the last row on each loop level + the row's bytes, kept to the
        width of the result's src_end / dst_end, and whether it is past the end of its
        memory (GM or the UB)."""
        layout = geometry_layout(self.kind)
        fields = stages.request(1).fields
        length = fields.len_burst if has_loops(self.kind) else fields.len_burst << LINE_SHIFT
        ends = {}
        copies = itertools.count()
        for side, field in zip(("src", "dst"), ADDRESS_FIELDS[self.kind]):
            # E (MTE2 destination rows with data_select) is ready at stage 3, in a
            # register of the sum's own.
            if self.kind == Opcode.COPY_GM_TO_UBUF and side == "dst":
                row, row_stage = stages.at("row_bytes_sum", 3), 3
            else:
                row, row_stage = length, 1
            cap = Shape.cast(layout.members[f"{side}_end"]).width
            terms = [(_capped(fields[field], cap), 1), (_capped(row, cap), row_stage)]
            for level, count_m1, stride, weight in self._level_offsets(stages, side):
                terms += _partial_products(m, self.go, count_m1, stride, cap,
                                           f"{side}_{level}", copies, weight)
            ends[side] = _carry_save_sum(m, terms, cap, self._memory_size(side),
                                         f"{side}_end")
        return ends

    def _gm_side(self):
        """The side ("src" or "dst") of the copy that is in GM; None for UB->UB."""
        return {Opcode.COPY_GM_TO_UBUF: "src", Opcode.COPY_UBUF_TO_GM: "dst"}.get(self.kind)

    def _memory_size(self, side):
        return 1 << GM_ADDR_BITS if side == self._gm_side() else self.profile.ub_size

    def _level_offsets(self, stages, side):
        """(level, count - 1, stride, weight of the stride's unit) of each loop level of
        `side`, as Values of the incoming request (the multipliers load them with it):
        (count - 1) * stride << weight is the offset of the level's last row."""
        incoming = stages.request(0)
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

    def _rules(self, m, stages, ends):
        """{ErrorCode: (condition, stage it is ready)} for every rule of this kind."""
        end_stage = max(stage for _, _, stage in ends.values())
        flags = {ErrorCode.TYPE_UNSUPPORTED: (~stages.at("supported", 1), 1)}
        if has_loops(self.kind):
            flags.update(self._mte_rules(m, stages, ends, end_stage))
        else:
            flags.update(self._ub_to_ub_rules(m, stages, ends, end_stage))
        return flags

    def _ub_to_ub_rules(self, m, stages, ends, end_stage):
        first, at_end = stages.request(1).fields, stages.request(end_stage).fields
        nonempty = ~stages.at("empty", end_stage)
        src_end, dst_end = ends["src"][0], ends["dst"][0]
        misaligned = self._misaligned(first.ub_src) | self._misaligned(first.ub_dst)
        beyond = ends["src"][1] | ends["dst"][1]
        return {
            ErrorCode.UB_MISALIGNED: (_reg(m, misaligned, "misaligned"), 2),
            ErrorCode.UB_RANGE: (nonempty & beyond, end_stage),
            # Spans [start, end) of source and destination intersect (UB_RANGE, which
            # takes precedence, covers ends beyond their width).
            ErrorCode.UB_OVERLAP: (nonempty & (at_end.ub_src < dst_end)
                                   & (at_end.ub_dst < src_end), end_stage),
        }

    def _mte_rules(self, m, stages, ends, end_stage):
        """The rules of an MTE2 or MTE3 copy: the field rules at stage 2 from the request
        at stage 1, alignment and stride overlap at stage 3 from it at stage 2 (with the
        count flags and the footprint), the ranges with the ends."""
        fields = stages.request(1).fields
        log2_es = stages.at("log2_es", 1)
        gm = self._gm_side()
        ub = "dst" if gm == "src" else "src"
        es_mask = (Const(1, 1 << LOG2_ES_BITS) << log2_es) - 1
        flags = {ErrorCode.LEN_NOT_ELEMENT_MULTIPLE: (
            _reg(m, (fields.len_burst & es_mask) != 0, "len_not_multiple"), 2)}

        later = stages.request(2)
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
            ub_row = stages.at("footprint", 2)
        else:
            ub_row = later.fields.len_burst

        many = {level: stages.at(f"{count}_many", 2) for level, count in
                (("row", "n_burst"), ("loop1", "loop1_count"), ("loop2", "loop2_count"))}
        address = dict(zip(("src", "dst"), ADDRESS_FIELDS[self.kind]))
        row_misaligned = many["row"] & self._misaligned(later.fields[f"{ub}_stride"])
        if self.profile.packed_rows:
            row_misaligned &= ~self._packs_rows(m, fields, ub)
        misaligned = (self._misaligned(later.fields[address[ub]]) | row_misaligned
                      | (many["loop1"] & self._misaligned(later.regs[f"loop1_{ub}_stride"]))
                      | (many["loop2"] & self._misaligned(later.regs[f"loop2_{ub}_stride"])))
        flags[ErrorCode.UB_MISALIGNED] = (_reg(m, misaligned, "misaligned"), 3)
        overlap = many["row"] & ((later.fields[f"{gm}_stride"] < later.fields.len_burst)
                                 | (later.fields[f"{ub}_stride"] < ub_row))
        flags[ErrorCode.STRIDE_OVERLAP] = (_reg(m, overlap, "stride_overlap"), 3)

        nonempty = ~stages.at("empty", end_stage)
        flags[ErrorCode.UB_RANGE] = (nonempty & ends[ub][1], end_stage)
        flags[ErrorCode.GM_RANGE] = (nonempty & ends[gm][1], end_stage)
        return flags

    def _packs_rows(self, m, fields, ub):
        """Stage 2, from the request at stage 1: the UB row stride equals len_burst and
        the copy writes no pad, so its rows may sit back to back (SPEC.md, "Packed UB
        rows")."""
        packed = fields[f"{ub}_stride"] == fields.len_burst
        if self.kind == Opcode.COPY_GM_TO_UBUF:
            packed &= ~fields.data_select_bit
        return _reg(m, packed, "packed_rows")

    @staticmethod
    def _misaligned(value):
        return value[:LINE_SHIFT] != 0

    @staticmethod
    def _priority(m, stages, flags):
        """The lowest ErrorCode whose condition holds (model.rules.check_copy's order).
        The rules ready before the last stage all have lower codes than those of the last
        stage, so they are carried to the stage before it and ranked there, into
        registers, and the error is a choice between that and the last stage's rules."""
        last = max(stage for _, stage in flags.values())
        early = {code: stages.carry(cond, stage, last - 1, f"rule_{code.name.lower()}")
                 for code, (cond, stage) in flags.items() if stage < last}
        late = {code: cond for code, (cond, stage) in flags.items() if stage == last}
        assert max(early) < min(late)
        early_error = _reg(m, _lowest(early), "early_error")
        early_any = _reg(m, Cat(*early.values()).any(), "early_any")
        return Mux(early_any, early_error, _lowest(late))
