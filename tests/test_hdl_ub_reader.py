"""UbReader against a UB read port model: every row's words in order, at full rate."""

import random

import pytest

from hdl.datapath.ub_reader import UbReader
from hdl_helpers import driver_types, run_sim, synth_ecp5_module

W = 32


def word(addr):
    return (addr * 0x9E3779B1 + 7) % (1 << (8 * W))


def run_reader(rows, rng, ub_ready, words_ready, latency=(3, 3)):
    """Offers `rows` ((first, last) word numbers) and returns (words taken, per cycle:
    (rows offered, ub request made, row taken, word taken)). `words_ready` is the chance
    per cycle that `words` is ready, or a function of the cycle giving its value."""
    dut = UbReader(W)
    expected = sum(last - first + 1 for first, last in rows)
    got, trace = [], []

    async def bench(ctx):
        pending, due, cycle, free_at = list(rows), {}, 0, 0
        while len(got) < expected:
            assert cycle < 20 * expected + 100, "no progress"
            ready = rng.random() < ub_ready
            take = (words_ready(cycle) if callable(words_ready)
                    else rng.random() < words_ready)
            ctx.set(dut.ub.ready, ready)
            ctx.set(dut.words.ready, take)
            ctx.set(dut.rows.valid, bool(pending))
            if pending:
                first, last = pending[0]
                ctx.set(dut.rows.payload, {"first": first, "words_m1": last - first})
            landing = due.pop(cycle, None)
            ctx.set(dut.ub.rvalid, landing is not None)
            ctx.set(dut.ub.rdata, word(landing) if landing is not None else 0)
            *_, valid, addr, row_ready, w_valid, w_data = await ctx.tick().sample(
                dut.ub.valid, dut.ub.addr, dut.rows.ready, dut.words.valid,
                dut.words.payload)
            if valid and ready:
                # in order, three or more cycles later (the UB's contract)
                free_at = max(free_at + 1, cycle + rng.randint(*latency))
                due[free_at] = addr
            trace.append((bool(pending), bool(valid and ready), bool(pending and row_ready),
                          bool(w_valid and take)))
            if pending and row_ready:
                pending.pop(0)
            if w_valid and take:
                got.append(w_data)
            cycle += 1

    run_sim(dut, bench)
    return got, trace


def expected_words(rows):
    return [word(a) for first, last in rows for a in range(first, last + 1)]


@pytest.mark.parametrize("seed", range(3))
def test_rows_under_random_stalls(seed):
    rng = random.Random(seed)
    rows = []
    for _ in range(60):
        first = rng.randrange(4000)
        rows.append((first, first + rng.choice((0, 0, 1, 2, rng.randrange(20)))))
    got, _ = run_reader(rows, rng, ub_ready=0.7, words_ready=0.6, latency=(3, 6))
    assert got == expected_words(rows)


def test_full_rate_and_first_request_with_the_row():
    rng = random.Random(9)
    rows = [(10, 10), (11, 13), (40, 40), (41, 41), (100, 107)]
    got, trace = run_reader(rows, rng, ub_ready=1.0, words_ready=1.0)
    assert got == expected_words(rows)
    requests = [cycle for cycle, (_, asked, _, _) in enumerate(trace) if asked]
    # the first word is asked for in the first cycle, then one word per cycle
    assert requests == list(range(len(got)))
    assert trace[0][:3] == (True, True, True)
    # each word goes on from the landing register, four cycles after its request (three
    # in the UB, one landing): nothing is queued
    taken = [cycle for cycle, (*_, took) in enumerate(trace) if took]
    assert taken == [cycle + 4 for cycle in requests]


def test_drains_at_full_rate_after_a_stall():
    rng = random.Random(4)
    rows = [(200, 259)]
    stall = range(12, 22)
    got, trace = run_reader(rows, rng, ub_ready=1.0,
                            words_ready=lambda cycle: cycle not in stall)
    assert got == expected_words(rows)
    taken = [cycle for cycle, (*_, took) in enumerate(trace) if took]
    # after the stall the queue drains while requests go on: a word on every cycle
    after = taken[taken.index(stall.stop):]
    assert after == list(range(stall.stop, stall.stop + len(after)))
    assert len(after) > 40


def test_words_valid_is_a_flip_flop(tmp_path):
    """After synth_ecp5, `words.valid` is a flip-flop's output with no gate after it, so
    the consumer's decisions to take a word start at a register."""
    module = synth_ecp5_module(UbReader(4), "reader", tmp_path)
    assert driver_types(module, module["ports"]["words__valid"]["bits"]) == ["TRELLIS_FF"]


def test_rows_ready_waits_on_no_row():
    """An idle reader whose UB port is ready shows `rows.ready` with no row offered, and
    drops it while the port is not ready: it is a gate of registers and `ub.ready`, not
    of the row queue's `valid`."""
    dut = UbReader(W)

    async def bench(ctx):
        ctx.set(dut.rows.valid, 0)
        for ub_ready in (1, 0, 1):
            ctx.set(dut.ub.ready, ub_ready)
            await ctx.delay(1e-9)
            assert ctx.get(dut.rows.ready) == ub_ready
            assert ctx.get(dut.ub.valid) == 0
            await ctx.tick()

    run_sim(dut, bench)
