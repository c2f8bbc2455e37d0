"""RowFork: every branch gets every row, in order, reshaped; `ready` follows the queues'
levels exactly as documented, under random stalls on every branch."""

import random

import pytest
from amaranth.lib import data

from hdl.layouts import LEN_BITS
from hdl.datapath.rowfork import RowFork
from hdl_helpers import run_sim

DEPTHS = {"short": 2, "mid": 3, "long": 5}


def _fork():
    """Branch payloads that differ per branch, so a mixed-up select would show."""
    return RowFork({
        "short": (data.StructLayout({"length": LEN_BITS}), DEPTHS["short"],
                  lambda row: {"length": row.length}),
        "mid": (data.StructLayout({"ub": 8}), DEPTHS["mid"],
                lambda row: {"ub": row.ub_addr[:8]}),
        "long": (data.StructLayout({"length": LEN_BITS, "last": 1}), DEPTHS["long"],
                 lambda row: {"length": row.length, "last": row.last}),
    })


EXPECTED = {"short": lambda k: {"length": k},
            "mid": lambda k: {"ub": (3 * k) & 0xFF},
            "long": lambda k: {"length": k, "last": int(k % 7 == 0)}}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("put_rate, get_rate", [(1.0, 1.0), (0.8, 0.5), (0.5, 0.9)])
def test_rows_reach_every_branch_in_order_and_ready_tracks_the_levels(seed, put_rate,
                                                                      get_rate):
    """`ready`, a register, is high exactly when every queue held at most depth - 2 rows
    after the previous cycle's take, not counting that cycle's reads (from reset: low for
    the first cycle)."""
    count = 200
    dut = _fork()
    rng = random.Random(seed)
    got = {name: [] for name in DEPTHS}
    stats = {"not_ready": 0}

    async def bench(ctx):
        levels = dict.fromkeys(DEPTHS, 0)
        ready_now = 0
        sent = 1
        branches = [getattr(dut, name) for name in DEPTHS]
        while any(len(rows) < count for rows in got.values()):
            offer = sent <= count and rng.random() < put_rate
            ctx.set(dut.rows.valid, offer)
            ctx.set(dut.rows.payload.length, sent)
            ctx.set(dut.rows.payload.ub_addr, 3 * sent)
            ctx.set(dut.rows.payload.last, sent % 7 == 0)
            takes = [rng.random() < get_rate for _ in branches]
            for branch, take in zip(branches, takes):
                ctx.set(branch.ready, take)
            sampled = await ctx.tick().sample(
                *(b.valid for b in branches), *(b.payload for b in branches), dut.rows.ready)
            *_, ready = sampled
            valids = sampled[2:2 + len(branches)]
            payloads = sampled[2 + len(branches):-1]
            assert ready == ready_now
            stats["not_ready"] += not ready
            taken = offer and ready
            sent += taken
            ready_now = all(levels[name] + taken <= DEPTHS[name] - 2 for name in DEPTHS)
            for name, valid, payload, take in zip(DEPTHS, valids, payloads, takes):
                read = valid and take
                if read:
                    got[name].append({field: int(payload[field])
                                      for field in EXPECTED[name](0)})
                levels[name] += taken - read
                assert 0 <= levels[name] <= DEPTHS[name] - 1

    run_sim(dut, bench, timeout=20 * count)
    for name in DEPTHS:
        assert got[name] == [EXPECTED[name](k) for k in range(1, count + 1)]
    if get_rate < 1.0:
        assert stats["not_ready"] > 10
