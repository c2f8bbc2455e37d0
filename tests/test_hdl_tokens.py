"""hdl.intake.tokens: the token table and the dispatcher's tickets, in the Amaranth
simulator."""

import gc
import random

import pytest
from amaranth.back import verilog

from hdl.intake.intake import ENGINE_PIPES
from hdl.intake.tokens import BUF_IDS, TICKET_BITS, TokenTable, TokenTickets
from hdl_helpers import run_sim
from model.isa import Pipe


def port(dut, kind, pipe):
    return getattr(dut, f"{kind}_{pipe.name.lower()}")


def token_program(rng, steps, ids):
    """A program order of get_buf / rls_buf that the parser accepts (each id alternates
    a get_buf and its holder's rls_buf), as each pipe's list of (kind, id, ticket), the
    ticket being the get_buf's number among its id's, modulo 2^TICKET_BITS."""
    holder, issued = {}, dict.fromkeys(ids, 0)
    sequences = {pipe: [] for pipe in ENGINE_PIPES}
    for _ in range(steps):
        buf_id = rng.choice(ids)
        if buf_id in holder:
            sequences[holder.pop(buf_id)].append(("rls", buf_id, None))
        else:
            holder[buf_id] = pipe = rng.choice(ENGINE_PIPES)
            sequences[pipe].append(("get", buf_id, issued[buf_id] % (1 << TICKET_BITS)))
            issued[buf_id] += 1
    return sequences


def drive(dut, sequences, rng, events, idle_share):
    """One testbench per pipe: each request in order, a get shown until `granted`, a
    release until `released` and not on that cycle, random idle cycles between them.
    Appends (cycle, pipe, kind, id, ticket) to `events` on the cycle the answer shows."""
    def pipe_bench(pipe):
        get, rls = port(dut, "get", pipe), port(dut, "rls", pipe)

        async def bench(ctx):
            cycle = 0
            for kind, buf_id, ticket in sequences[pipe]:
                while rng.random() < idle_share:
                    await ctx.tick()
                    cycle += 1
                side = get if kind == "get" else rls
                ctx.set(side.buf_id, buf_id)
                if kind == "get":
                    ctx.set(get.ticket, ticket)
                ctx.set(side.valid, 1)
                while True:
                    await ctx.tick()
                    cycle += 1
                    if ctx.get(get.granted if kind == "get" else rls.released):
                        break
                    assert not ctx.get(get.granted) and not ctx.get(rls.released), pipe
                events.append((cycle, pipe, kind, buf_id, ticket))
                ctx.set(side.valid, 0)
                await ctx.tick()            # the pipe's next command shows a cycle later
                cycle += 1
        return bench
    return [pipe_bench(pipe) for pipe in ENGINE_PIPES]


@pytest.mark.parametrize("seed", range(3))
def test_tokens_are_handed_on_in_program_order(seed):
    """Random programs of the parser's rule over a few ids, long enough that the tickets
    wrap: every pipe runs to its end (nothing waits forever), and each id's grants and
    releases alternate in time in its program order, one holder at a time."""
    rng = random.Random(seed)
    ids = (0, 1, BUF_IDS - 1)
    sequences = token_program(rng, 600, ids)
    events = []
    dut = TokenTable(ENGINE_PIPES)
    run_sim(dut, *drive(dut, sequences, rng, events, idle_share=0.3), timeout=20000)
    assert len(events) == sum(map(len, sequences.values()))
    for buf_id in ids:
        mine = sorted(e for e in events if e[3] == buf_id)
        kinds = [kind for _, _, kind, _, _ in mine]
        assert kinds == ["get", "rls"] * (len(kinds) // 2) + ["get"] * (len(kinds) % 2)
        tickets = [ticket for _, _, kind, _, ticket in mine if kind == "get"]
        assert tickets == [k % (1 << TICKET_BITS) for k in range(len(tickets))]
        assert len(tickets) > 1 << TICKET_BITS
        for (t0, pipe0, kind0, _, _), (t1, pipe1, _, _, _) in zip(mine, mine[1:]):
            assert t0 < t1                       # a get after the release before it
            if kind0 == "get":
                assert pipe0 == pipe1            # its holder releases it


def test_answers_and_their_latency():
    """A get whose turn has come, shown at t, shows `granted` at t + 3; a release shown
    at t shows `released` at t + 2; a get waiting for that release is granted the cycle
    after `released` shows. A get of another id is not held up."""
    dut = TokenTable(ENGINE_PIPES)
    # (port, id, ticket, first cycle shown): each shown as a pipe shows it, a get up to
    # and with its `granted` cycle, a release up to its `released` cycle.
    requests = [(port(dut, "get", Pipe.MTE2), 7, 0, 0), (port(dut, "get", Pipe.MTE3), 8, 0, 1),
                (port(dut, "get", Pipe.V), 7, 1, 1), (port(dut, "rls", Pipe.MTE2), 7, None, 3)]
    answered = {}

    async def bench(ctx):
        for cycle in range(12):
            for number, (side, buf_id, ticket, first) in enumerate(requests):
                getting = ticket is not None
                answer = ctx.get(side.granted if getting else side.released)
                if answer:
                    answered.setdefault(number, cycle)
                done = number in answered and (answered[number] < cycle or not getting)
                ctx.set(side.valid, first <= cycle and not done)
                ctx.set(side.buf_id, buf_id)
                if getting:
                    ctx.set(side.ticket, ticket)
            await ctx.tick()

    run_sim(dut, bench)
    assert answered == {0: 3, 1: 4, 3: 5, 2: 6}


def test_tickets_count_each_ids_get_bufs():
    rng = random.Random(5)
    dut = TokenTickets(queued=24)
    issued = [0] * BUF_IDS

    async def bench(ctx):
        for _ in range(500):
            buf_id, take = rng.choice((0, 3, BUF_IDS - 1)), rng.random() < 0.7
            ctx.set(dut.buf_id, buf_id)
            ctx.set(dut.take, take)
            assert ctx.get(dut.ticket) == issued[buf_id]
            await ctx.tick()
            if take:
                issued[buf_id] = (issued[buf_id] + 1) % (1 << TICKET_BITS)

    run_sim(dut, bench)
    assert max(issued) > 0


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_tickets_refuse_queues_that_could_wrap_them():
    assert "module" in verilog.convert(TokenTickets(queued=1 << TICKET_BITS))
    with pytest.raises(ValueError, match="need more than 5-bit tickets"):
        TokenTickets(queued=(1 << TICKET_BITS) + 1)
    gc.collect()        # the refused object's never-used warning, while it is filtered


def test_tokens_convert():
    assert "module" in verilog.convert(TokenTable(ENGINE_PIPES))
