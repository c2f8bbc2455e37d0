"""hdl.pipe.checker.CopyChecker against model.rules.check_copy / geometry."""

import collections
import random

import pytest
from amaranth.back import verilog

from hdl.pipe.checker import COPY_KINDS, COUNT_FLAGS, LOOP_COUNTS, CopyChecker, has_loops
from hdl.layouts import CMD_INDEX_BITS, ROW_TERM_BITS
from hdl.pipe.regfile import counts_less_one
from model.isa import (DTYPES, GM_ADDR_BITS, OP_BY_OPCODE, PAD_MAX_BYTES, PROFILES, UB_LINE,
                       ErrorCode, Opcode)
from model.rules import check_copy, geometry
from control_cases import random_copy
from hdl_helpers import (cell_outputs, count_flags, net_sources, pad8, register_cells,
                         register_sources, run_sim, stream_put, synth_ecp5_module)

EXPECTED_CODES = {
    Opcode.COPY_GM_TO_UBUF: {ErrorCode.NONE, ErrorCode.TYPE_UNSUPPORTED,
                             ErrorCode.LEN_NOT_ELEMENT_MULTIPLE, ErrorCode.PAD_WITHOUT_SELECT,
                             ErrorCode.PAD_TOO_LARGE, ErrorCode.UB_MISALIGNED,
                             ErrorCode.STRIDE_OVERLAP, ErrorCode.UB_RANGE, ErrorCode.GM_RANGE},
    Opcode.COPY_UBUF_TO_GM: {ErrorCode.NONE, ErrorCode.TYPE_UNSUPPORTED,
                             ErrorCode.LEN_NOT_ELEMENT_MULTIPLE, ErrorCode.UB_MISALIGNED,
                             ErrorCode.STRIDE_OVERLAP, ErrorCode.UB_RANGE, ErrorCode.GM_RANGE},
    Opcode.COPY_UBUF_TO_UBUF: {ErrorCode.NONE, ErrorCode.TYPE_UNSUPPORTED,
                               ErrorCode.UB_MISALIGNED, ErrorCode.UB_RANGE,
                               ErrorCode.UB_OVERLAP},
}
GEOMETRY_FIELDS = ("src", "dst", "n_burst", "len_burst", "src_stride", "dst_stride",
                   "loop1_count", "loop2_count", "loop1_src", "loop1_dst", "loop2_src",
                   "loop2_dst", "left_bytes", "row_bytes")


def request_payload(kind, values, regs, index=0):
    payload = {"fields": {"opcode": kind, **values}, "index": index}
    if has_loops(kind):
        payload["regs"] = regs
        payload["counts_less_one"] = counts_less_one(OP_BY_OPCODE[kind].pipe, regs)
    return payload


def expected_result(kind, values, regs, profile):
    """(error, geometry dict or None when rejected, passthrough dict) from the model."""
    op = OP_BY_OPCODE[kind]
    error = check_copy(op, values, regs, profile)
    passthrough = {"sid": values["sid"], "cache": values.get("l2_cache_ctl", 0)}
    if error != ErrorCode.NONE:
        return error, None, passthrough
    if "pad_val" in (regs or {}):
        passthrough["pad8"] = pad8(regs["pad_val"], DTYPES[values["dtype"]].size)
    g = geometry(op, values, regs)
    geom = {name: getattr(g, name) for name in GEOMETRY_FIELDS}
    geom.update(es=DTYPES[values["dtype"]].size, empty=int(g.empty),
                select=values.get("data_select_bit", 0))
    geom.update(count_flags({name: getattr(g, name) for name in LOOP_COUNTS}))
    if not g.empty:
        geom.update(src_end=g.src_end(), dst_end=g.dst_end())
    return error, geom, passthrough


def expected_row_terms(length):
    """RowTerms of rows of `length` bytes at W = 32 bytes, whose bursts are cut at 4 KiB."""
    wrap = 1 << ROW_TERM_BITS
    return {"len_m1": (length - 1) % wrap, "end_m1": length + 31,
            "past": (length - 4096 - 1) % wrap}


def boundaries_touched(kind, values, regs, profile):
    """The exact range / pad boundaries a copy sits on, and packed rows that pass
    (coverage only)."""
    op = OP_BY_OPCODE[kind]
    if values["dtype"] >= len(DTYPES) or not DTYPES[values["dtype"]].size:
        return set()
    g = geometry(op, values, regs)
    es = DTYPES[values["dtype"]].size
    found = set()
    ub_stride = g.dst_stride if kind == Opcode.COPY_GM_TO_UBUF else g.src_stride
    if (kind != Opcode.COPY_UBUF_TO_UBUF and g.n_burst > 1 and ub_stride % UB_LINE
            and check_copy(op, values, regs, profile) == ErrorCode.NONE):
        found.add("packed")
    if values.get("data_select_bit") and PAD_MAX_BYTES in (values["left_padding"] * es,
                                                           values["right_padding"] * es):
        found.add("pad32")
    if g.empty:
        return found
    for name, limit in (("ub", profile.ub_size), ("gm", 1 << GM_ADDR_BITS)):
        for end in (g.src_end(), g.dst_end()):
            if end == limit:
                found.add(f"{name}_at")
            elif 0 < end - limit <= 32:
                found.add(f"{name}_over")
    return found


@pytest.mark.parametrize("kind,profile,count,stall", [
    (Opcode.COPY_GM_TO_UBUF, "a5", 4000, 0.0),
    (Opcode.COPY_GM_TO_UBUF, "a2a3", 2000, 0.5),
    (Opcode.COPY_UBUF_TO_GM, "a2a3", 3000, 0.3),
    (Opcode.COPY_UBUF_TO_GM, "a5", 1500, 0.3),
    (Opcode.COPY_UBUF_TO_UBUF, "kirin9030", 3000, 0.3),
])
def test_checker_matches_rules(kind, profile, count, stall):
    """Random copies against the model; the consumer refuses a result with probability
    `stall` per cycle, and the producer, between requests, offers another copy's payload
    without `valid` on a random half of cycles."""
    profile = PROFILES[profile]
    rng = random.Random(f"{kind.name}-{profile.name}")
    cases = [random_copy(rng, kind, profile) for _ in range(count)]
    indices = [rng.getrandbits(CMD_INDEX_BITS) for _ in range(count)]
    dut = CopyChecker(kind, profile)
    got = []
    verdicts = []           # per result taken: `result_passes` with it
    busy_errors = []        # cycles where `busy` is not "a copy accepted, result not taken"

    async def producer(ctx):
        idle_rng = random.Random(f"idle-{count}")
        for (values, regs), index in zip(cases, indices):
            while idle_rng.random() < 0.5:
                # A payload without `valid` is no request, whatever it holds.
                ctx.set(dut.request.payload, request_payload(
                    kind, *idle_rng.choice(cases), idle_rng.getrandbits(CMD_INDEX_BITS)))
                await ctx.tick()
            await stream_put(ctx, dut.request, request_payload(kind, values, regs, index))

    async def consumer(ctx):
        ready_rng = random.Random(count)
        holding = 0                     # copies accepted whose result is not yet taken
        cycle = 0
        while len(got) < count:
            ready = int(ready_rng.random() >= stall)
            ctx.set(dut.result.ready, ready)
            sampled = await ctx.tick().sample(
                dut.result.valid, dut.result.payload, dut.result_passes, dut.request.valid,
                dut.request.ready, dut.busy)
            valid, payload, passes, req_valid, req_ready, busy = sampled[2:]
            if busy != (holding > 0):
                busy_errors.append(cycle)
            holding += (req_valid and req_ready) - (valid and ready)
            cycle += 1
            if valid and ready:
                got.append(payload)
                verdicts.append(passes)

    run_sim(dut, producer, consumer,
            timeout=int(count * (dut.latency + 2) / (1 - stall)) + 50)
    assert not busy_errors, busy_errors[:10]
    # `result_passes` says of each result whether it passes.
    assert verdicts == [int(p.error == ErrorCode.NONE and not p.geom.empty) for p in got]

    codes = collections.Counter()
    boundaries = collections.Counter()
    for (values, regs), index, payload in zip(cases, indices, got):
        error, geom, passthrough = expected_result(kind, values, regs, profile)
        codes[error] += 1
        boundaries.update(boundaries_touched(kind, values, regs, profile))
        context = (values, regs)
        assert payload.index == index, context
        assert ErrorCode(payload.error) == error, context
        if geom is None:
            continue
        for name, value in geom.items():
            assert getattr(payload.geom, name) == value, (name, context)
        for name, value in expected_row_terms(geom["len_burst"]).items():
            assert getattr(payload.row_terms, name) == value, (name, context)
        for name, value in passthrough.items():
            assert getattr(payload, name) == value, (name, context)
    for code in EXPECTED_CODES[kind]:
        assert codes[code] >= count // 40, (code, codes)
    wanted = {"ub_at", "ub_over"}
    if kind != Opcode.COPY_UBUF_TO_UBUF:
        wanted |= {"gm_at", "gm_over"}
    if kind == Opcode.COPY_GM_TO_UBUF:
        wanted.add("pad32")
    if profile.packed_rows and kind != Opcode.COPY_UBUF_TO_UBUF:
        wanted.add("packed")
    for name in wanted:
        assert boundaries[name] >= 10, boundaries


@pytest.mark.parametrize("kind", COPY_KINDS)
def test_checker_throughput_and_latency(kind):
    """Back to back, results taken on arrival: a copy per cycle, each result LATENCY
    cycles after its accept; and with the results refused, the checker fills to `holds`
    copies and takes no more until one leaves."""
    profile = PROFILES["a5"]
    rng = random.Random(3)
    cases = [random_copy(rng, kind, profile) for _ in range(20)]
    dut = CopyChecker(kind, profile)
    accepts, results, held = [], [], []

    async def bench(ctx):
        pending = list(cases)
        for cycle in range(20 + 3 * dut.latency + 10):
            # Refused for a while, then taken on arrival.
            ctx.set(dut.result.ready, int(not 10 <= cycle < 10 + 2 * dut.latency))
            if pending:
                ctx.set(dut.request.valid, 1)
                ctx.set(dut.request.payload, request_payload(kind, *pending[0]))
            else:
                ctx.set(dut.request.valid, 0)
            _, _, req_ready, res_valid, res_ready = await ctx.tick().sample(
                dut.request.ready, dut.result.valid, dut.result.ready)
            if pending and req_ready:
                accepts.append(cycle)
                pending.pop(0)
            if res_valid and res_ready:
                results.append(cycle)
            held.append(len(accepts) - len(results))

    run_sim(dut, bench)
    assert len(accepts) == len(results) == 20
    assert accepts[:10] == list(range(10))
    assert results[:10 - dut.latency] == [a + dut.latency for a in accepts[:10 - dut.latency]]
    assert max(held) == dut.holds
    assert results[-1] - results[-2] == 1 and accepts[-1] - accepts[-2] == 1


@pytest.mark.parametrize("kind", COPY_KINDS)
def test_checker_converts(kind):
    assert "module" in verilog.convert(CopyChecker(kind, "a5"))


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory):
    return synth_ecp5_module(CopyChecker(Opcode.COPY_GM_TO_UBUF, "a5"), "checker",
                             tmp_path_factory.mktemp("checker"))


@pytest.mark.long
def test_count_flags_start_at_the_held_request(synthesized):
    """After synth_ecp5, empty, each count > 1 and == 2 (compares of up to 84 bits) and
    whether the second row ends each loop level are worked out from the checker's held
    request: no input port (the pipe's register snapshot, across the device) reaches
    their registers' inputs."""
    request = {bit for name, port in synthesized["ports"].items()
               if name.startswith("request__payload") for bit in port["bits"]}
    for name in ("empty", *(f"{count}_{flag}" for count in LOOP_COUNTS
                            for flag in (*COUNT_FLAGS, "second_end"))):
        sources = register_sources(synthesized, f"evaluation.{name}")
        assert sources and not request & sources, name


@pytest.mark.long
def test_evaluation_advances_on_a_register(synthesized):
    """After synth_ecp5, every register of the evaluation's request stages loads on one
    flip-flop's output (the skid register's valid, inverted at the flip-flops' CE), with
    no gate in front of its enable: the pipeline's enable, which reaches thousands of
    flip-flops, waits on no handshake in its cycle; and `request.ready` is worked out
    from that flip-flop alone."""
    drivers = {bit: cell for cell in synthesized["cells"].values()
               for bit in cell_outputs(cell)}
    cells = register_cells(synthesized, "evaluation.held_1")
    enables = {bit for cell in cells for bit in cell["connections"]["CE"]}
    assert len(enables) == 1 and drivers[next(iter(enables))]["type"] == "TRELLIS_FF"
    ready = synthesized["ports"]["request__ready"]["bits"]
    assert net_sources(synthesized, ready) == enables
