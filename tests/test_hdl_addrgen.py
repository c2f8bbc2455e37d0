"""hdl.pipe.addrgen.AddressGenerator against the seed's C loops."""

import random

import pytest
from amaranth.back import verilog
from amaranth.hdl import Shape

from hdl.pipe.addrgen import GM_KINDS, ROW_ADDRESSES, AddressGenerator
from hdl.pipe.checker import (COPY_KINDS, LOOP_COUNTS, checked_copy_layout, geometry_layout,
                         has_loops)
from hdl.layouts import FirstSplit
from hdl.datapath.legalizer import first_split, row_terms
from hdl.datapath.ub_reader import ub_words_m1
from axi_model import mark_new_sids
from hdl_helpers import (count_flags, driver_types, register_sources, run_sim, stream_put,
                         synth_ecp5_module)
from model.isa import Opcode

ES = (1, 2, 4, 8)
W = 8           # bus width of the rows' burst splits: a grid of 2 KiB, finer than a page
SPLIT_FIELDS = tuple(FirstSplit.as_shape().members)


def random_checked_copy(rng, kind):
    """A CheckedCopy payload with random addresses and strides (any width, so the address
    halves carry) and small loop counts, not empty (the pipe ends empty copies itself)."""
    layout = geometry_layout(kind)
    width = {name: Shape.cast(layout[name].shape).width for name in layout.members}
    rand = lambda name: rng.randrange(1 << width[name])
    geom = {name: rand(name) for name in ("src", "dst", "src_stride", "dst_stride",
                                          "left_bytes", "row_bytes")}
    geom["len_burst"] = rng.randrange(1, 1 << 21)
    if rng.random() < 0.3:
        # Strides near the top of the field, so the low half wraps on nearly every add.
        for name in ("src_stride", "dst_stride"):
            geom[name] = (1 << width[name]) - rng.randint(1, 64)
    if has_loops(kind):
        geom["n_burst"], geom["loop1_count"], geom["loop2_count"] = rng.choice((
            (rng.randint(1, 4), rng.randint(1, 3), rng.randint(1, 3)),
            (rng.randint(1, 12), 1, 1), (1, 1, 1), (1, rng.randint(1, 5), 1),
            (1, 1, rng.randint(1, 5))))
        for name in ("loop1_src", "loop1_dst", "loop2_src", "loop2_dst"):
            geom[name] = rand(name)
    else:
        geom["n_burst"] = rng.randint(1, 12)
        geom["loop1_count"] = geom["loop2_count"] = 1
    geom["es"] = rng.choice(ES)
    geom["select"] = rng.randint(0, 1) if kind == Opcode.COPY_GM_TO_UBUF else 0
    geom["empty"] = 0
    return {"error": 0, "geom": geom, "sid": rng.randrange(16), "cache": rng.randrange(16),
            "pad8": rng.getrandbits(64), "row_terms": row_terms(geom["len_burst"], W)}


def expected_rows(kind, copy):
    """The seed's C loops: loop2 outer, loop1, n_burst rows."""
    g = copy["geom"]
    layout = geometry_layout(kind)
    rows = []
    for j in range(g["loop2_count"]):
        for k in range(g["loop1_count"]):
            for r in range(g["n_burst"]):
                address = {}
                for side in ("src", "dst"):
                    offset = (j * g.get(f"loop2_{side}", 0) + k * g.get(f"loop1_{side}", 0)
                              + r * g[f"{side}_stride"])
                    address[side] = (g[side] + offset) % (1 << Shape.cast(layout[side].shape).width)
                row = {field: address[side] for field, side in ROW_ADDRESSES[kind].items()}
                row.update(length=g["len_burst"], left=g["left_bytes"], extent=g["row_bytes"],
                           select=g["select"], pad8=copy["pad8"],
                           sid=copy["sid"], cache=copy["cache"], last=0,
                           ub_words_m1=ub_words_m1(row["ub_addr"], g["len_burst"] - 1, W))
                if kind in GM_KINDS:
                    row.update(first_split(row["gm_addr"], g["len_burst"], W))
                rows.append(row)
    rows[-1]["last"] = 1
    return rows


def expected_per_copy(kind, copies):
    """expected_rows of each copy, each row marked `new_sid` when its sid differs from
    the row before it: a copy's rows share its sid, so only a copy's first row can be."""
    per_copy = [expected_rows(kind, copy) for copy in copies]
    mark_new_sids([row for rows in per_copy for row in rows])
    return per_copy


def expected_stream(kind, copies):
    """The rows of `copies` in order, as the address generator emits them."""
    return [row for rows in expected_per_copy(kind, copies) for row in rows]


def as_dict(kind, row):
    fields = {name: getattr(row, name) for name in ("gm_addr", "ub_addr", "length", "left",
                                                    "extent", "select", "pad8", "sid",
                                                    "cache", "last", "new_sid",
                                                    "ub_words_m1")}
    if kind in GM_KINDS:
        fields.update({name: getattr(row.split, name) for name in SPLIT_FIELDS})
    return fields


def run_copies(kind, copies, stall, rng, abort_at=None):
    """Streams `copies` in, collects rows with ready low on a `stall` share of cycles.
    abort_at: {row number: copy number} asks to abort that copy for one cycle after taking
    that row.
    Returns (rows, cycles)."""
    dut = AddressGenerator(kind, W)
    rows, clock = [], {"cycles": 0}
    total = len(expected_stream(kind, copies)) if abort_at is None else None

    async def producer(ctx):
        for copy in copies:
            # The checker's flags of the copy's counts.
            geom = copy["geom"]
            flags = count_flags({name: geom[name] for name in LOOP_COUNTS})
            await stream_put(ctx, dut.copy, {**copy, "geom": {**geom, **flags}})

    async def consumer(ctx):
        idle = 0
        while idle < 20 if total is None else len(rows) < total:
            ready = int(rng.random() >= stall)
            ctx.set(dut.rows.ready, ready)
            _, _, valid, payload = await ctx.tick().sample(dut.rows.valid, dut.rows.payload)
            clock["cycles"] += 1
            ctx.set(dut.abort.valid, 0)
            idle = 0 if valid else idle + 1
            if valid and ready:
                rows.append(as_dict(kind, payload))
                if abort_at and len(rows) in abort_at:
                    ctx.set(dut.abort.copy, abort_at[len(rows)])
                    ctx.set(dut.abort.valid, 1)

    run_sim(dut, producer, consumer, timeout=20000)
    return rows, clock["cycles"]


@pytest.mark.parametrize("kind", COPY_KINDS)
def test_rows_follow_c_loops(kind):
    rng = random.Random(kind.name)
    copies = [random_checked_copy(rng, kind) for _ in range(120)]
    rows, _ = run_copies(kind, copies, stall=0.3, rng=rng)
    expected = expected_stream(kind, copies)
    assert len(rows) == len(expected)
    for index, (got, want) in enumerate(zip(rows, expected)):
        assert got == want, index


def test_one_row_per_cycle():
    """No stalls: back-to-back copies come out at one row per cycle."""
    kind = Opcode.COPY_GM_TO_UBUF
    rng = random.Random(7)
    copies = [random_checked_copy(rng, kind) for _ in range(30)]
    rows, cycles = run_copies(kind, copies, stall=0, rng=rng)
    assert rows == expected_stream(kind, copies)
    # the first row is on `rows` one edge after its copy is taken, then one per cycle
    assert cycles == len(rows) + 1


def ended(rows, index):
    """`rows` with row `index` marked as its copy's last."""
    return rows[:index] + [dict(rows[index], last=1)]


def test_abort_cuts_the_copy_short():
    kind = Opcode.COPY_UBUF_TO_GM
    rng = random.Random(11)
    big = random_checked_copy(rng, kind)
    big["geom"].update(n_burst=5, loop1_count=4, loop2_count=3)
    small = random_checked_copy(rng, kind)
    small["geom"].update(n_burst=2, loop1_count=1, loop2_count=2)
    # big is copy 1
    copies = [small, big, small]
    want = expected_per_copy(kind, copies)
    for stall in (0, 0.5):
        for cut in (1, 7, 58):
            rows, _ = run_copies(kind, copies, stall=stall, rng=rng,
                                 abort_at={len(want[0]) + cut: 1})
            rows = rows[len(want[0]):]
            end = next(i for i, row in enumerate(rows) if row["last"])
            # The rows generated before the request go out, then one more ends the copy.
            assert cut <= end <= cut + 2
            assert rows[:end + 1] == ended(want[1], end)
            assert rows[end + 1:] == want[2]


@pytest.mark.parametrize("copy_number", [0, 2, 255])
def test_abort_of_another_copy_does_nothing(copy_number):
    """Requests naming a copy that is over, or not begun, leave the walked copy alone."""
    kind = Opcode.COPY_GM_TO_UBUF
    rng = random.Random(5)
    first = random_checked_copy(rng, kind)
    first["geom"].update(n_burst=3, loop1_count=1, loop2_count=1)
    second = random_checked_copy(rng, kind)
    second["geom"].update(n_burst=4, loop1_count=2, loop2_count=1)
    rows, _ = run_copies(kind, [first, second], stall=0, rng=rng,
                         abort_at={2: copy_number, 4: copy_number})
    assert rows == expected_stream(kind, [first, second])


@pytest.mark.parametrize("kind", COPY_KINDS)
def test_addrgen_converts(kind):
    assert "module" in verilog.convert(AddressGenerator(kind))


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory):
    """The MTE2 address generator after synth_ecp5 (Yosys JSON module)."""
    return synth_ecp5_module(AddressGenerator(COPY_KINDS[0], W), "generator",
                             tmp_path_factory.mktemp("generator"))


def test_ending_is_a_flip_flop(synthesized):
    """After synth_ecp5, "the walked row ends the copy" (last row or aborted) is a
    flip-flop's output, so no gate of the two lies in front of the at-end flags."""
    assert driver_types(synthesized, synthesized["netnames"]["ending"]["bits"]) == ["TRELLIS_FF"]


@pytest.mark.parametrize("register", ["n_burst_left", "loop1_count_left", "loop2_count_left",
                                      "src_low0", "dst_low2", "src_carry", "step",
                                      "next_step", "ending"])
def test_walk_registers_do_not_wait_on_copy_valid(synthesized, register):
    """After synth_ecp5, the walk's registers (loop counters, address bases, step flags)
    load the incoming copy on every cycle none is walked: the pipe's `copy.valid` reaches
    none of their inputs; only `walking` and the copy number wait on a copy being taken."""
    valid = set(synthesized["ports"]["copy__valid"]["bits"])
    assert valid & register_sources(synthesized, "walking")
    assert not valid & register_sources(synthesized, register)


# (n_burst's at-end flag is never read: no step leaves the row level as it is.)
@pytest.mark.parametrize("register", ["ending", "next_step", "loop1_count_at_end",
                                      "loop2_count_at_end"])
def test_at_end_flags_take_a_copy_from_the_checkers_registers(synthesized, register):
    """After synth_ecp5, of the incoming copy the at-end flags, `ending` and the next step
    read only the checker's second-row flags (`{count}_second_end`, flip-flops there),
    none of the count flags the second row's ends follow from."""
    bits = synthesized["ports"]["copy__payload"]["bits"]
    geom = checked_copy_layout(COPY_KINDS[0])["geom"]
    second_end = {bits[geom.offset + geom.shape[f"{name}_second_end"].offset]
                  for name in LOOP_COUNTS}
    read = set(bits) & register_sources(synthesized, register)
    assert read and read <= second_end
