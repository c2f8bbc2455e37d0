"""BypassQueue: order, capacity and latency under random stalls on both sides."""

import random

import pytest

from hdl.lib.queue import BypassQueue
from hdl_helpers import driver_types, run_sim, synth_ecp5_module


def _run(depth, count, put_rate, get_rate, seed, split_at=(), spread=1):
    """Queues the values `spread` * 1 to `spread` * count, modulo 2**16."""
    dut = BypassQueue(width=16, depth=depth, split_at=split_at)
    rng = random.Random(seed)
    sent = [spread * value % (1 << 16) for value in range(1, count + 1)]
    got, levels, refused = [], [], []
    rdys = []           # per cycle ((r_rdy, w_rdy), (r_rdy_next, w_rdy_next))

    async def bench(ctx):
        pending = list(sent)
        while len(got) < count:
            put = bool(pending) and rng.random() < put_rate
            get = rng.random() < get_rate
            ctx.set(dut.w_en, put)
            ctx.set(dut.w_data, pending[0] if put else 0)
            ctx.set(dut.r_en, get)
            *_, w_rdy, w_rdy_next, r_rdy, r_rdy_next, r_data, level = \
                await ctx.tick().sample(dut.w_rdy, dut.w_rdy_next, dut.r_rdy, dut.r_rdy_next,
                                        dut.r_data, dut.level)
            levels.append(level)
            rdys.append(((r_rdy, w_rdy), (r_rdy_next, w_rdy_next)))
            if not w_rdy:
                refused.append(level)
            if put and w_rdy:
                pending.pop(0)
            if get and r_rdy:
                got.append(r_data)

    run_sim(dut, bench, timeout=20 * count)
    # r_rdy_next and w_rdy_next foretell r_rdy and w_rdy: each cycle's is the last
    # cycle's next.
    assert all(now[0] == before[1] for before, now in zip(rdys, rdys[1:]))
    assert len({next_[0] for _, next_ in rdys}) == 2
    return got, levels, refused


@pytest.mark.parametrize("depth", [2, 3, 4, 8])
@pytest.mark.parametrize("seed", range(4))
def test_keeps_order_under_stalls(depth, seed):
    got, levels, refused = _run(depth, 300, 0.7, 0.6, seed)
    assert got == list(range(1, 301))
    assert max(levels) <= depth
    assert refused, "the writer never saw the queue full"
    # UbReader relies on this: its credit rule keeps the level below depth - 1
    assert min(refused) >= depth - 1


@pytest.mark.parametrize("seed", range(2))
def test_output_groups_split_at_given_bits(seed):
    # An odd multiple of 1 to 300 sets bits of every group, so a group loading on a
    # wrong cycle shows.
    got, _, _ = _run(3, 300, 0.7, 0.6, seed, split_at=(3, 9), spread=0x9E37)
    assert got == [0x9E37 * value % (1 << 16) for value in range(1, 301)]


def test_fills_to_depth():
    got, levels, _ = _run(5, 40, 1.0, 0.05, 0)
    assert got == list(range(1, 41))
    assert max(levels) == 5


def test_first_entry_one_edge_after_the_write_and_full_rate():
    dut = BypassQueue(width=8, depth=4)
    seen = []

    async def bench(ctx):
        ctx.set(dut.r_en, 1)
        for cycle in range(12):
            ctx.set(dut.w_en, cycle < 8)
            ctx.set(dut.w_data, cycle + 1)
            *_, r_rdy, r_data = await ctx.tick().sample(dut.r_rdy, dut.r_data)
            if r_rdy:
                seen.append((cycle, r_data))

    run_sim(dut, bench)
    # written at edge c, on the output from edge c + 1 and taken there: one per cycle
    assert seen == [(cycle + 1, cycle + 1) for cycle in range(8)]


def test_drains_without_a_gap_after_a_stall():
    dut = BypassQueue(width=8, depth=4)
    seen = []

    async def bench(ctx):
        for cycle in range(14):
            ctx.set(dut.w_en, cycle < 4 or 6 <= cycle < 9)
            ctx.set(dut.w_data, cycle + 1)
            ctx.set(dut.r_en, cycle >= 3)
            *_, r_rdy, r_data, w_rdy = await ctx.tick().sample(dut.r_rdy, dut.r_data, dut.w_rdy)
            if r_rdy and cycle >= 3:
                seen.append((cycle, r_data))

    run_sim(dut, bench)
    # 4 entries held by edge 3; read from then on: one per cycle, then the next writes
    assert seen == [(3, 1), (4, 2), (5, 3), (6, 4), (7, 7), (8, 8), (9, 9)]


def test_storage_write_enable_is_a_flip_flop(tmp_path):
    """After synth_ecp5, the LUT RAM's write enables come straight from a flip-flop (the
    inner queue has room), so the storage waits on neither handshake."""
    module = synth_ecp5_module(BypassQueue(width=16, depth=5), "queue", tmp_path)
    rams = [cell for cell in module["cells"].values() if cell["type"] == "TRELLIS_DPR16X4"]
    assert rams
    for ram in rams:
        assert driver_types(module, ram["connections"]["WRE"]) == ["TRELLIS_FF"]
