"""hdl.regfile.PipeRegisters and hdl.flags.EventFlags."""

import random

import pytest
from amaranth.back import verilog

from hdl.commands import command_bits
from hdl.flags import EventFlags
from hdl.intake import ENGINE_PIPES
from hdl.regfile import COUNT_REGISTERS, PipeRegisters, counts_less_one
from hdl_helpers import run_sim
from model.isa import (EVENT_ID_BITS, OPS, PIPE_REGISTERS, REGISTER_WRITES, Pipe,
                       apply_register_write, encode, reset_registers)


@pytest.mark.parametrize("pipe", list(PIPE_REGISTERS))
def test_registers_reset_and_writes(pipe):
    rng = random.Random(pipe.name)
    dut = PipeRegisters(pipe)
    model = reset_registers(pipe)

    def snapshot(ctx):
        value = ctx.get(dut.snapshot)
        regs = {r.name: getattr(value, r.name) for r in PIPE_REGISTERS[pipe]}
        less_one = ctx.get(dut.counts_less_one)
        assert {name: getattr(less_one, name) for name in COUNT_REGISTERS} == \
            counts_less_one(pipe, regs)
        return regs

    async def bench(ctx):
        assert snapshot(ctx) == model
        for _ in range(300):
            op = rng.choice(OPS)
            values = {f.name: rng.choice((0, f.max, rng.randrange(f.max + 1))) for f in op.fields}
            write = rng.random() < 0.8
            ctx.set(dut.command.raw, command_bits(encode(op, values)))
            ctx.set(dut.write, write)
            await ctx.tick()
            if write and REGISTER_WRITES.get(op.opcode, (None,))[0] == pipe:
                apply_register_write(model, op, values)
            assert snapshot(ctx) == model

    run_sim(dut, bench)


def test_registers_convert():
    for pipe in PIPE_REGISTERS:
        assert "module" in verilog.convert(PipeRegisters(pipe))


def port(dut, kind, pipe):
    return getattr(dut, f"{kind}_{pipe.name.lower()}")


def test_flags_match_counter_model():
    """Random set / wait traffic on every pipe, compared cycle by cycle with counters: a
    set counts on the edge after the cycle it is offered; a wait decided on a cycle (its
    counter non-zero, or EXTERNAL) is consumed on that edge and shows `granted` on the next
    cycle, during which it is not decided again; the waiter drops it after that cycle."""
    rng = random.Random(1)
    dut = EventFlags(depth=7)
    events = (0, 1, (1 << EVENT_ID_BITS) - 1)
    sides = list(ENGINE_PIPES) + [Pipe.EXTERNAL]
    counts = {}
    grants = {"granted": 0, "external": 0}

    async def bench(ctx):
        waiting = {}
        granted = {pipe: False for pipe in ENGINE_PIPES}   # the model's `granted` registers
        held_sets = {}                                      # last cycle's sets
        for _ in range(3000):
            sets = {}
            for pipe in ENGINE_PIPES:
                if rng.random() < 0.35:
                    sets[pipe] = (rng.choice(sides), rng.choice(events))
                setter = port(dut, "set", pipe)
                ctx.set(setter.valid, pipe in sets)
                if pipe in sets:
                    ctx.set(setter.pipe, sets[pipe][0])
                    ctx.set(setter.event, sets[pipe][1])
                if pipe not in waiting and rng.random() < 0.35:
                    waiting[pipe] = (rng.choice(sides), rng.choice(events))
                waiter = port(dut, "wait", pipe)
                ctx.set(waiter.valid, pipe in waiting)
                if pipe in waiting:
                    ctx.set(waiter.pipe, waiting[pipe][0])
                    ctx.set(waiter.event, waiting[pipe][1])
            for pipe in ENGINE_PIPES:
                assert ctx.get(port(dut, "wait", pipe).granted) == granted[pipe], pipe
            decided = {}
            for dst, (src, event) in waiting.items():
                if not granted[dst]:
                    decided[dst] = (src == Pipe.EXTERNAL
                                    or counts.get((src, dst, event), 0) > 0)
            await ctx.tick()
            for dst in ENGINE_PIPES:
                if granted[dst]:
                    src, _ = waiting.pop(dst)
                    grants["external" if src == Pipe.EXTERNAL else "granted"] += 1
                granted[dst] = decided.get(dst, False)
                if granted[dst] and waiting[dst][0] != Pipe.EXTERNAL:
                    src, event = waiting[dst]
                    counts[(src, dst, event)] -= 1
            for src, (dst, event) in held_sets.items():
                key = (src, dst, event)
                if dst != Pipe.EXTERNAL and counts.get(key, 0) < 7:
                    counts[key] = counts.get(key, 0) + 1
            held_sets = sets

    run_sim(dut, bench)
    assert grants["granted"] > 300 and grants["external"] > 100, grants


def test_flags_saturate_at_depth():
    dut = EventFlags(depth=3)
    setter, waiter = port(dut, "set", Pipe.MTE2), port(dut, "wait", Pipe.V)
    granted = []

    async def bench(ctx):
        ctx.set(setter.pipe, Pipe.V)
        ctx.set(setter.event, 9)
        ctx.set(setter.valid, 1)
        for _ in range(5):
            await ctx.tick()
        ctx.set(setter.valid, 0)
        await ctx.tick()                # the last set counts on this edge
        ctx.set(waiter.pipe, Pipe.MTE2)
        ctx.set(waiter.event, 9)
        ctx.set(waiter.valid, 1)
        for _ in range(12):
            _, _, ok = await ctx.tick().sample(waiter.granted)
            granted.append(ok)

    run_sim(dut, bench)
    # `granted` is a register: a grant shows the cycle after its decision, and the waiter
    # is not decided again that cycle; three grants in all.
    assert granted == [0, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0]


def test_flags_convert():
    assert "module" in verilog.convert(EventFlags())
