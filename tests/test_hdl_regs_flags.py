"""hdl.pipe.regfile.PipeRegisters and hdl.pipe.flags.EventFlags."""

import random

import pytest
from amaranth.back import verilog

from hdl.intake.commands import command_bits
from hdl.pipe.flags import EventFlags
from hdl.intake.intake import ENGINE_PIPES
from hdl.pipe.regfile import COUNT_REGISTERS, PipeRegisters, counts_less_one
from hdl_helpers import register_sources, register_write_bits_of, run_sim, synth_ecp5_module
from model.isa import (EVENT_ID_BITS, FLAG_DEPTH, OPS, PIPE_REGISTERS, REGISTER_WRITES, Pipe,
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
            ctx.set(dut.writes, register_write_bits_of(op))
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


@pytest.mark.parametrize("depth", [3, FLAG_DEPTH])
def test_flags_match_counter_model(depth):
    """Random set / wait traffic on every pipe, compared cycle by cycle with counters. A
    pipe offers a set until `counted`, and not on that cycle; the set is decided the cycle
    after it is offered, where its counter's room (EXTERNAL: always room) is looked up,
    and counted on the next edge it is still held if that room was there, showing
    `counted` the cycle after, during which it is not counted again. A pipe shows a wait
    until `granted`; the wait is decided on each cycle after one it was shown on, not
    granted then nor shown `granted` since (its counter non-zero, or EXTERNAL), shows
    `granted` on the next cycle and is taken off its counter on the edge after that.
    A pipe waits only on a flag it will get (one already counted, or one whose set is
    offered), so no wait and set hold each other up for ever, as in a program that runs
    to its end."""
    rng = random.Random(depth)
    dut = EventFlags(depth=depth)
    events = (0, 1, (1 << EVENT_ID_BITS) - 1)
    sides = list(ENGINE_PIPES) + [Pipe.EXTERNAL]
    counts = {}
    stats = {"granted": 0, "external": 0, "counted": 0, "held_on_full": 0, "waited": 0}

    def request_set(setting, src):
        if src not in setting and rng.random() < 0.5:
            setting[src] = (rng.choice(sides), rng.choice(events))

    def request_wait(waiting, setting, dst, rate):
        if dst in waiting or rng.random() >= rate:
            return
        coming = [(src, event) for src in ENGINE_PIPES for event in events
                  if counts.get((src, dst, event), 0) or setting.get(src) == (dst, event)]
        if coming and rng.random() < 0.75:
            waiting[dst] = rng.choice(coming)
        else:
            waiting[dst] = (Pipe.EXTERNAL, rng.choice(events))

    async def bench(ctx):
        setting, waiting = {}, {}
        counted = dict.fromkeys(ENGINE_PIPES, False)   # the model's answer registers
        granted = dict.fromkeys(ENGINE_PIPES, False)
        pending = dict.fromkeys(ENGINE_PIPES, False)   # a wait shown, to be decided
        held = {}                                       # the sets offered last cycle
        room = {}                                       # their counters' room then
        for cycle in range(4000):
            offered = {}
            for pipe in ENGINE_PIPES:
                request_set(setting, pipe)
                # Waits come in bursts, so counters fill and drain.
                request_wait(waiting, setting, pipe, 0.6 if (cycle // 200) % 2 else 0.05)
                if pipe in setting and not counted[pipe]:
                    offered[pipe] = setting[pipe]
                for kind, shown in (("set", offered), ("wait", waiting)):
                    side = port(dut, kind, pipe)
                    ctx.set(side.valid, pipe in shown)
                    if pipe in shown:
                        ctx.set(side.pipe, shown[pipe][0])
                        ctx.set(side.event, shown[pipe][1])
            for pipe in ENGINE_PIPES:
                assert ctx.get(port(dut, "set", pipe).counted) == counted[pipe], pipe
                assert ctx.get(port(dut, "wait", pipe).granted) == granted[pipe], pipe
            sets = {}
            for src in held:
                if src in room and not counted[src]:
                    stats["held_on_full"] += not room[src]
                    sets[src] = room[src]
            room = {src: dst == Pipe.EXTERNAL or counts.get((src, dst, event), 0) < depth
                    for src, (dst, event) in held.items()}
            waits = {}
            for dst, (src, event) in waiting.items():
                if pending[dst]:
                    waits[dst] = src == Pipe.EXTERNAL or counts.get((src, dst, event), 0) > 0
                    stats["waited"] += not waits[dst]
            await ctx.tick()
            for src, counting in sets.items():
                dst, event = held[src]
                if counting and dst != Pipe.EXTERNAL:
                    counts[src, dst, event] = counts.get((src, dst, event), 0) + 1
            for dst in ENGINE_PIPES:
                if granted[dst] and waiting[dst][0] != Pipe.EXTERNAL:
                    src, event = waiting[dst]
                    counts[src, dst, event] -= 1
            for pipe in ENGINE_PIPES:
                pending[pipe] = pipe in waiting and not waits.get(pipe) and not granted[pipe]
                if counted[pipe]:
                    setting.pop(pipe)
                    stats["counted"] += 1
                if granted[pipe]:
                    src, _ = waiting.pop(pipe)
                    stats["external" if src == Pipe.EXTERNAL else "granted"] += 1
                counted[pipe] = sets.get(pipe, False)
                granted[pipe] = waits.get(pipe, False)
            held = offered

    run_sim(dut, bench)
    assert stats["granted"] > 300 and stats["external"] > 100, stats
    assert stats["counted"] > 500 and stats["held_on_full"] > 1000, stats
    assert stats["waited"] > 20, stats


def test_flags_hold_a_set_on_a_full_counter():
    """Depth 3: four sets of one flag, offered as a pipe does, count three and hold the
    fourth until a wait takes one off; of five waits four are granted."""
    dut = EventFlags(depth=3)
    setter, waiter = port(dut, "set", Pipe.MTE2), port(dut, "wait", Pipe.V)
    trace = []

    async def bench(ctx):
        ctx.set(setter.pipe, Pipe.V)
        ctx.set(setter.event, 9)
        ctx.set(waiter.pipe, Pipe.MTE2)
        ctx.set(waiter.event, 9)
        sets, waits = 4, 0
        for cycle in range(40):
            counted, granted = ctx.get(setter.counted), ctx.get(waiter.granted)
            trace.append((counted, granted))
            sets -= counted
            waits = 5 if cycle == 14 else waits - granted
            ctx.set(setter.valid, sets > 0 and not counted)
            ctx.set(waiter.valid, waits > 0)
            await ctx.tick()

    run_sim(dut, bench)
    counted_at = [cycle for cycle, (c, _) in enumerate(trace) if c]
    granted_at = [cycle for cycle, (_, g) in enumerate(trace) if g]
    # Four cycles a set while the counter has room. The first wait, offered at cycle 14,
    # is held by the flags at 15 and decided then, shows `granted` at 16 and frees a place
    # on that edge; the held fourth set sees it in its room lookup at 17, is counted at 18
    # and shows `counted` at 19. The waits are granted every third cycle, four of five.
    assert counted_at == [3, 7, 11, 19]
    assert granted_at == [16, 19, 22, 25]


def test_flags_convert():
    assert "module" in verilog.convert(EventFlags())


@pytest.fixture(scope="module")
def synthesized_flags(tmp_path_factory):
    """The event flags after synth_ecp5 (Yosys JSON module)."""
    return synth_ecp5_module(EventFlags(), "flags", tmp_path_factory.mktemp("flags"))


def wait_port_bits(module, fields):
    """The nets (bits) of the `fields` of every pipe's wait port of a synthesized flags
    `module`: where the pipes' command queues reach the flags."""
    return {bit for pipe in ENGINE_PIPES for field in fields
            for bit in module["ports"][f"wait_{pipe.name.lower()}__{field}"]["bits"]}


@pytest.mark.parametrize("register", ["", "_nonzero", "_room"])
def test_counters_update_from_registers_of_their_own(synthesized_flags, register):
    """After synth_ecp5, no counter's next value reads a wait port: a grant is taken off
    from the flags' own registers, so the counters' update does not start at the pipes'
    command queues, where the wait ports come from."""
    waits = wait_port_bits(synthesized_flags, ("valid", "pipe", "event"))
    for src in ENGINE_PIPES:
        for dst in ENGINE_PIPES:
            for event in (0, (1 << EVENT_ID_BITS) - 1):
                counter = f"flag_{src.name}_{dst.name}_{event}{register}"
                sources = register_sources(synthesized_flags, counter)
                assert sources and not sources & waits


@pytest.mark.parametrize("pipe", ENGINE_PIPES, ids=lambda pipe: pipe.name)
@pytest.mark.parametrize("register", ["granted_{}", "wait_{}__granted"], ids=["flags", "port"])
def test_grants_are_decided_from_registers_of_their_own(synthesized_flags, pipe, register):
    """After synth_ecp5, a wait's grant (the flags' register and the port's copy) reads
    no wait port's pipe or event: the lookup of its counter starts at the flags' own copy
    of the wait, not at the pipe's command queue, where the wait ports come from."""
    fields = wait_port_bits(synthesized_flags, ("pipe", "event"))
    sources = register_sources(synthesized_flags, register.format(pipe.name.lower()))
    assert sources and not sources & fields


@pytest.mark.parametrize("pipe", list(PIPE_REGISTERS))
def test_register_enables_are_one_gate_from_write_and_its_op_bit(tmp_path, pipe):
    """After synth_ecp5, every register flip-flop's enable is a LUT4 of `write` and the
    `writes` bit of the one op that writes it, so no opcode decode lies in front of it."""
    module = synth_ecp5_module(PipeRegisters(pipe), "regfile", tmp_path)
    ports = module["ports"]
    write, writes = ports["write"]["bits"], ports["writes"]["bits"]
    luts = {cell["connections"]["Z"][0]: cell for cell in module["cells"].values()
            if cell["type"] == "LUT4"}
    ffs = [cell for cell in module["cells"].values() if cell["type"] == "TRELLIS_FF"]
    assert ffs
    for ff in ffs:
        lut = luts[ff["connections"]["CE"][0]]
        inputs = {bit for pin in "ABCD" for bit in lut["connections"][pin]
                  if not isinstance(bit, str)}
        assert write[0] in inputs
        assert len(inputs - set(write)) == 1 and inputs - set(write) <= set(writes)
