"""hdl.intake.intake: CommandIntake and Dispatcher on random isa-encoded command streams."""

import random

import pytest
from amaranth.back import verilog
from amaranth.hdl import Module, Value
from amaranth.lib import wiring

from hdl.intake.commands import command_bits
from hdl.intake.intake import ENGINE_PIPES, CommandIntake, Dispatcher, WholeCommandIntake
from hdl.intake.tokens import BUF_IDS, TICKET_BITS
from hdl_helpers import (cell_outputs, command_kind_of, first_word_route, gates_reached,
                         net_loads, register_cells, register_gates, register_sources,
                         register_write_bits_of, run_sim, stream_put, synth_ecp5_module)
from model.isa import OPCODE_BITS, OP_BY_OPCODE, OPS, Opcode, Pipe, encode, op_pipe


class IntakeAndDispatch(wiring.Component):
    """The two blocks as the engine chains them."""

    def __init__(self, depth=8, mode="words"):
        self.intake = WholeCommandIntake() if mode == "whole" else \
            CommandIntake(mode == "routed")
        self.dispatcher = Dispatcher(depth)
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        m.submodules.intake = self.intake
        m.submodules.dispatcher = self.dispatcher
        wiring.connect(m, self.intake.commands, self.dispatcher.commands)
        return m


def random_values(rng, op):
    """Field values with a strong share of all-ones and zero fields."""
    return {f.name: rng.choice((0, f.max, rng.randrange(f.max + 1), rng.randrange(f.max + 1)))
            for f in op.fields}


BAD_OPCODES = sorted(set(range(1 << OPCODE_BITS)) - {int(op.opcode) for op in OPS})


def random_stream(rng, count, bad_share=0.05):
    """[(op, values, words) or (None, None, [bad word])]: every op, some unknown opcodes."""
    items = []
    for _ in range(count):
        if rng.random() < bad_share:
            word = (rng.getrandbits(32) & ~((1 << OPCODE_BITS) - 1)) | rng.choice(BAD_OPCODES)
            items.append((None, None, [word]))
        else:
            op = rng.choice(OPS)
            values = random_values(rng, op)
            items.append((op, values, encode(op, values)))
    return items


def expected_routes(items):
    """{pipe: [(index, op, values, words, ticket)]} and the number of dropped opcodes.
    A get_buf's ticket counts the get_bufs of its id routed before it (mod 2^TICKET_BITS);
    other commands' is None (unread)."""
    routes = {pipe: [] for pipe in ENGINE_PIPES}
    issued = [0] * BUF_IDS
    index = bad = 0
    for op, values, words in items:
        if op is None:
            bad += 1
            continue
        pipe = op_pipe(op, values)
        if pipe != Pipe.EXTERNAL:
            ticket = None
            if op.opcode == Opcode.GET_BUF:
                ticket = issued[values["buf_id"]]
                issued[values["buf_id"]] = (ticket + 1) % (1 << TICKET_BITS)
            routes[pipe].append((index, op, values, words, ticket))
        index += 1
    return routes, bad


def run_stream(items, stall, rng, depth=8, hold=None, mode="words", gap=0.0):
    """Feeds the words of `items`; collects every pipe's output with random stalls.
    hold: a pipe whose output stays not-ready until every other pipe is done. mode:
    "words", plain words; "routed", RoutedWords with the isa tables' route of each;
    "whole", whole commands to a WholeCommandIntake. gap: the share of words (whole
    commands) that come after an idle cycle, `valid` low and random bits on the payload."""
    dut = IntakeAndDispatch(depth, mode)
    port = dut.intake.commands_in if mode == "whole" else dut.intake.words
    routes, _ = expected_routes(items)
    got = {pipe: [] for pipe in ENGINE_PIPES}
    bad = []

    async def producer(ctx):
        for _, _, words in items:
            for word in [{"raw": command_bits(words)}] if mode == "whole" else words:
                if gap and rng.random() < gap:
                    ctx.set(port.valid, 0)
                    payload = Value.cast(port.payload)
                    ctx.set(payload, rng.getrandbits(len(payload)))
                    await ctx.tick()
                if mode == "routed":
                    flag, pipe, kind, flag_to = first_word_route(word)
                    word = {"word": word, "flag": flag, "pipe": pipe, "kind": kind,
                            "flag_to": flag_to}
                await stream_put(ctx, port, word)
        for _ in range(10):
            await ctx.tick()
        bad.append(ctx.get(dut.intake.bad_opcodes))

    def consumer(pipe):
        out = getattr(dut.dispatcher, pipe.name.lower())

        async def bench(ctx):
            while len(got[pipe]) < len(routes[pipe]):
                others_done = all(len(got[p]) == len(routes[p]) for p in ENGINE_PIPES if p != pipe)
                ready = int(rng.random() >= stall and (pipe != hold or others_done))
                ctx.set(out.ready, ready)
                _, _, valid, payload = await ctx.tick().sample(out.valid, out.payload)
                if valid and ready:
                    got[pipe].append(payload)
            ctx.set(out.ready, 0)
        return bench

    run_sim(dut, producer, *(consumer(p) for p in ENGINE_PIPES), timeout=200000)
    return routes, got, bad[0]


def check_routes(routes, got):
    for pipe in ENGINE_PIPES:
        assert len(got[pipe]) == len(routes[pipe])
        for (index, op, values, words, ticket), queued in zip(routes[pipe], got[pipe]):
            assert queued.kind == command_kind_of(op, values), (op.mnemonic, values)
            assert ticket is None or queued.ticket == ticket, (index, values)
            assert queued.writes == register_write_bits_of(op), op.mnemonic
            entry = queued.entry
            assert entry.index == index
            assert entry.cmd.opcode == op.opcode
            assert entry.cmd.raw == command_bits(words)
            fields = getattr(entry.cmd, op.mnemonic)
            for name, value in values.items():
                assert getattr(fields, name) == value, (op.mnemonic, name)


@pytest.mark.parametrize("gap", [0.0, 0.3])
@pytest.mark.parametrize("mode", ["words", "routed", "whole"])
def test_every_op_decoded_and_routed(mode, gap):
    """With `gap`, idle cycles come between words, between the words of a command and
    between commands: the random bits on the payload while `valid` is low reach no
    command and count as no word."""
    rng = random.Random(1)
    items = random_stream(rng, 400)
    assert {op.opcode for op, _, _ in items if op} == set(Opcode)
    routes, got, bad = run_stream(items, stall=0.3, rng=rng, mode=mode, gap=gap)
    check_routes(routes, got)
    assert bad == sum(1 for op, _, _ in items if op is None)


def test_flags_route_by_their_own_side():
    """set_flag goes to its src_pipe, wait_flag to its dst_pipe; EXTERNAL sides are dropped."""
    items = []
    for opcode in (Opcode.SET_FLAG, Opcode.WAIT_FLAG):
        op = OP_BY_OPCODE[opcode]
        for src in Pipe:
            for dst in Pipe:
                values = {"src_pipe": int(src), "dst_pipe": int(dst), "event_id": 5}
                items.append((op, values, encode(op, values)))
    routes, got, _ = run_stream(items, stall=0, rng=random.Random(2))
    check_routes(routes, got)
    assert [len(routes[p]) for p in ENGINE_PIPES] == [8, 8, 8]


def test_a_stalled_pipe_does_not_block_the_others():
    """With the V pipe not taking anything, MTE2 and MTE3 still get every command as long
    as V's FIFO holds V's commands."""
    rng = random.Random(3)
    v_op = OP_BY_OPCODE[Opcode.COPY_UBUF_TO_UBUF]
    items = []
    for k in range(40):
        mte_ops = [o for o in OPS if o.pipe in (Pipe.MTE2, Pipe.MTE3)]
        op = v_op if k % 8 == 0 else rng.choice(mte_ops)
        values = random_values(rng, op)
        items.append((op, values, encode(op, values)))
    routes, got, _ = run_stream(items, stall=0, rng=rng, depth=8, hold=Pipe.V)
    check_routes(routes, got)


def test_intake_takes_one_word_per_cycle():
    rng = random.Random(4)
    items = random_stream(rng, 60, bad_share=0)
    words = [w for _, _, ws in items for w in ws]
    dut = CommandIntake()
    cycles = []

    async def producer(ctx):
        ctx.set(dut.commands.ready, 1)
        ctx.set(dut.words.valid, 1)
        for word in words:
            ctx.set(dut.words.payload, word)
            _, _, ready = await ctx.tick().sample(dut.words.ready)
            cycles.append(ready)
        ctx.set(dut.words.valid, 0)

    run_sim(dut, producer)
    assert all(cycles)


def ticketed(op, values):
    """A get_buf for an engine pipe, which the dispatcher takes with its ticket."""
    return op is not None and op.opcode == Opcode.GET_BUF \
        and op_pipe(op, values) != Pipe.EXTERNAL


def test_whole_intake_takes_a_command_per_cycle():
    """Whole commands, each offered until taken, into the dispatcher whose pipes take
    every cycle: each is taken on the cycle it is offered (a copy_gm_to_ubuf of 7 words
    too; a get_buf for an engine pipe on its third, its ticket looked up from
    registers), and an unknown opcode is taken and dropped."""
    rng = random.Random(6)
    items = random_stream(rng, 80, bad_share=0.1)
    dut = IntakeAndDispatch(mode="whole")
    cycles = []

    async def producer(ctx):
        for pipe in ENGINE_PIPES:
            ctx.set(getattr(dut.dispatcher, pipe.name.lower()).ready, 1)
        ctx.set(dut.intake.commands_in.valid, 1)
        for _, _, words in items:
            ctx.set(dut.intake.commands_in.payload, {"raw": command_bits(words)})
            count = 1
            while not (await ctx.tick().sample(dut.intake.commands_in.ready))[2]:
                count += 1
            cycles.append(count)
        ctx.set(dut.intake.commands_in.valid, 0)
        assert ctx.get(dut.intake.bad_opcodes) == sum(op is None for op, _, _ in items)
        assert not ctx.get(dut.intake.busy)

    run_sim(dut, producer)
    assert any(ticketed(op, values) for op, values, _ in items)
    assert cycles == [3 if ticketed(op, values) else 1 for op, values, _ in items]


def test_intake_is_busy_while_a_command_is_incomplete():
    """Between the words of a 7-word copy the intake reports busy, so the engine is not
    idle (a CPU's done interrupt must not fire after the first word). The last word waits
    until the command is taken, and the intake is idle once it is."""
    op = OP_BY_OPCODE[Opcode.COPY_GM_TO_UBUF]
    words = encode(op, random_values(random.Random(5), op))
    dut = CommandIntake()
    busy = []

    async def producer(ctx):
        ctx.set(dut.commands.ready, 0)
        busy.append(ctx.get(dut.busy))
        for word in words[:-1]:
            await stream_put(ctx, dut.words, word)
            await ctx.tick().repeat(3)             # a slow CPU between words
            busy.append(ctx.get(dut.busy))
        ctx.set(dut.words.payload, words[-1])
        ctx.set(dut.words.valid, 1)
        for _ in range(3):                          # nobody takes the command: it waits
            assert ctx.get(dut.commands.valid) and not ctx.get(dut.words.ready)
            await ctx.tick()
            busy.append(ctx.get(dut.busy))
        ctx.set(dut.commands.ready, 1)
        assert ctx.get(dut.words.ready)
        await ctx.tick()
        ctx.set(dut.words.valid, 0)
        busy.append(ctx.get(dut.busy))

    run_sim(dut, producer)
    assert busy == [0] + [1] * (len(words) - 1) + [1] * 3 + [0]


def test_a_command_is_offered_with_its_last_word():
    """No edge between a command's last word and the command: a one-word command is on
    `commands` the cycle its word is on `words`."""
    op = OP_BY_OPCODE[Opcode.SET_FLAG]
    values = {"src_pipe": int(Pipe.MTE2), "dst_pipe": int(Pipe.MTE3), "event_id": 3}
    (word,) = encode(op, values)
    dut = CommandIntake()

    async def producer(ctx):
        ctx.set(dut.commands.ready, 1)
        ctx.set(dut.words.payload, word)
        ctx.set(dut.words.valid, 1)
        assert ctx.get(dut.commands.valid)
        assert ctx.get(dut.commands.payload.entry.cmd.raw) == command_bits([word])
        assert ctx.get(dut.commands.payload.entry.index) == 0
        assert ctx.get(dut.commands.payload.pipe) == Pipe.MTE2
        await ctx.tick()
        assert ctx.get(dut.commands.payload.entry.index) == 1

    run_sim(dut, producer)


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory):
    """The routed intake after synth_ecp5 (Yosys JSON module)."""
    return synth_ecp5_module(CommandIntake(routed=True), "intake",
                             tmp_path_factory.mktemp("intake"))


@pytest.mark.parametrize("register", ["held", "held_pipe", "pending", "last", "last_to"])
def test_held_command_registers_do_not_wait_on_commands_ready(synthesized, register):
    """After synth_ecp5, a command's held words and where it ends load without
    `commands.ready` (a pipe queue's room, from afar); `first` waits on it."""
    ready = set(synthesized["ports"]["commands__ready"]["bits"])
    assert ready & register_sources(synthesized, "first")
    assert not ready & register_sources(synthesized, register)


def test_first_is_set_through_gates_of_its_own(synthesized):
    """After synth_ecp5, the gates from `commands.ready` to `first` feed nothing but one
    another and `first`. The command number, which waits on `commands.ready` too, loads
    through gates of its own: a gate it shared with `first` would be placed out by the
    dispatcher's queues, where the command number goes."""
    ready = set(synthesized["ports"]["commands__ready"]["bits"])
    path = gates_reached(synthesized, ready) & register_gates(synthesized, "first")
    assert path
    first = register_cells(synthesized, "first")
    loads = net_loads(synthesized)
    for bit in path:
        for cell in loads[bit]:
            assert cell in first or cell_outputs(cell) <= path


def test_intake_and_dispatcher_convert():
    assert "module" in verilog.convert(CommandIntake())
    assert "module" in verilog.convert(Dispatcher(depth=4))
