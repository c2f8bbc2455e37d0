"""Small helpers for Amaranth-simulator tests of stream-based blocks.

They work in testbenches and in processes alike: they only `set` signals and read what the
clock edge samples, so a transfer is recorded exactly on the edge where valid and ready are
both high.
"""

import json

from amaranth.sim import Simulator

from hdl.intake.commands import REGISTER_WRITE_OPCODES, CommandKind
from hdl.lib.ecp5 import Ecp5Target
from hdl.fpga.build import write_verilog, yosys
from hdl.intake.intake import ENGINE_PIPES
from hdl.layouts import BUS_WIDTHS
from model.isa import COPY_OPCODES, OPCODE_BITS, OP_BY_OPCODE, Opcode, Pipe, decode, op_pipe

# The widths the blocks' tests run at: every W but 8, whose many narrow beats make the bus
# blocks' tests slow, and which the RTL regression of `make test` runs end to end.
BLOCK_WIDTHS = tuple(w for w in BUS_WIDTHS if w > 8)


async def stream_put(ctx, stream, payload):
    """Offer one payload on a stream the design consumes; returns after it is taken."""
    ctx.set(stream.valid, 1)
    ctx.set(stream.payload, payload)
    await ctx.tick().until(stream.ready)
    ctx.set(stream.valid, 0)


async def stream_get(ctx, stream):
    """Take one payload from a stream the design produces."""
    ctx.set(stream.ready, 1)
    payload, = await ctx.tick().sample(stream.payload).until(stream.valid)
    ctx.set(stream.ready, 0)
    return payload


async def stream_collect(ctx, stream, count, stall=0.0, rng=None):
    """Take `count` payloads, holding ready low on a random `stall` fraction of cycles.
    Returns (cycle, payload) pairs, cycles counted from the call."""
    got, cycle = [], 0
    while len(got) < count:
        ready = int(stall == 0 or rng.random() >= stall)
        ctx.set(stream.ready, ready)
        *_, valid, payload = await ctx.tick().sample(stream.valid, stream.payload)
        cycle += 1
        if valid and ready:
            got.append((cycle, payload))
    ctx.set(stream.ready, 0)
    return got


async def idle(ctx, cycles):
    """Let `cycles` clock edges pass."""
    for _ in range(cycles):
        await ctx.tick()


def run_sim(dut, *benches, background=(), processes=(), timeout=None, vcd=None):
    """Simulates `dut` on the `sync` clock until every bench in `benches` has returned.

    `background` testbenches (e.g. memory models) and `processes` (always background)
    run alongside and are dropped at the end. With `timeout`, the run fails if the
    benches have not all returned after that many cycles."""
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    pending = set(range(len(benches)))

    def tracked(index, bench):
        async def run(ctx):
            await bench(ctx)
            pending.discard(index)
        return run

    for index, bench in enumerate(benches):
        sim.add_testbench(tracked(index, bench))
    for bench in background:
        sim.add_testbench(bench, background=True)
    for proc in processes:
        sim.add_process(proc)
    if timeout is not None:
        async def watchdog(ctx):
            for _ in range(timeout):
                if not pending:
                    return
                await ctx.tick()
            raise AssertionError(f"testbenches still running after {timeout} cycles")
        sim.add_testbench(watchdog)
    if vcd:
        with sim.write_vcd(vcd):
            sim.run()
    else:
        sim.run()


def command_kind_of(op, values):
    """What a pipe waits on before it takes the command
    (hdl.intake.commands.CommandKind)."""
    if op.opcode in COPY_OPCODES:
        return CommandKind.COPY
    if op.opcode in (Opcode.WAIT_FLAG, Opcode.GET_BUF):
        return CommandKind.WAIT_FLAG
    if op.opcode == Opcode.RLS_BUF or (op.opcode == Opcode.SET_FLAG
                                       and values["dst_pipe"] != Pipe.EXTERNAL):
        return CommandKind.SET_FLAG
    return CommandKind.IMMEDIATE


def register_write_bits_of(op):
    """A PipeCommand's `writes` for `op`: its bit of REGISTER_WRITE_OPCODES, if it is a
    register write."""
    return sum(1 << i for i, opcode in enumerate(REGISTER_WRITE_OPCODES)
               if opcode == op.opcode)


def first_word_route(word):
    """(one-word command, pipe, kind, flag_to) of the command `word` starts, from the isa
    tables: the fields of an intake.RoutedWord (flag_to: the pipe's bit of ENGINE_PIPES,
    for a one-word command of an engine pipe)."""
    op = OP_BY_OPCODE.get(word & ((1 << OPCODE_BITS) - 1))
    if op is None:
        return 0, Pipe.EXTERNAL, CommandKind.IMMEDIATE, 0
    _, values = decode([word] + [0] * (op.words - 1))
    flag, pipe = int(op.words == 1), op_pipe(op, values)
    flag_to = 1 << ENGINE_PIPES.index(pipe) if flag and pipe in ENGINE_PIPES else 0
    return flag, pipe, command_kind_of(op, values), flag_to


def pad8(pad_val, es):
    """The pad pattern of 8 UB bytes (layouts.RowJob.pad8): the low es bytes of pad_val,
    repeated."""
    return int.from_bytes(pad_val.to_bytes(8, "little")[:es] * (8 // es), "little")


def count_flags(counts):
    """The checker's flags of a copy's loop counts {n_burst, loop1_count, loop2_count}
    (geometry fields): each count > 1 and == 2, and whether the row after the first, one
    step of the C loops' odometer on (loop2 outer), is the last of each level (a count of
    0, in an empty copy, taken as 1)."""
    names = list(counts)
    second = [0] * len(names)
    stepping = next((level for level, name in enumerate(names) if counts[name] > 1),
                    len(names) - 1)
    second[stepping] = 1
    flags = {}
    for name, index in zip(names, second):
        flags.update({f"{name}_many": int(counts[name] > 1),
                      f"{name}_two": int(counts[name] == 2),
                      f"{name}_second_end": int(index == max(counts[name], 1) - 1)})
    return flags


def synth_ecp5_module(component, top, directory):
    """The Yosys JSON module of `component` after synth_ecp5, its blocks in their ECP5
    primitive form (what `make fpga` builds)."""
    write_verilog(component, top, directory / f"{top}.v", Ecp5Target())
    yosys(f"read_verilog -sv {top}.v; synth_ecp5 -top {top} -json {top}.json", directory)
    return json.loads((directory / f"{top}.json").read_text())["modules"][top]


def driver_types(module, bits):
    """The types of the cells of a synthesized `module` whose output is the nets `bits`."""
    return [cell["type"] for cell in module["cells"].values()
            if any(cell["connections"].get(port) == bits for port in ("Q", "Z", "F"))]


def _drivers(module):
    """{net bit: the cell whose output it is} of a synthesized `module`."""
    drivers = {}
    for cell in module["cells"].values():
        drivers.update(dict.fromkeys(cell_outputs(cell), cell))
    return drivers


def register_cells(module, name):
    """The flip-flops of a synthesized `module` driving netname `name`."""
    targets = set(module["netnames"][name]["bits"])
    return [cell for cell in module["cells"].values()
            if cell["type"] == "TRELLIS_FF" and set(cell["connections"]["Q"]) & targets]


def _register_inputs(module, name):
    """The nets into the flip-flops driving netname `name` (data, enable, reset)."""
    return [bit for cell in register_cells(module, name)
            for port in ("DI", "CE", "LSR") for bit in cell["connections"].get(port, ())
            if not isinstance(bit, str)]        # a string is a constant


def _cell_inputs(cell):
    return [bit for port, direction in cell["port_directions"].items()
            if direction == "input" for bit in cell["connections"][port]
            if not isinstance(bit, str)]


def cell_outputs(cell):
    return {bit for port, direction in cell.get("port_directions", {}).items()
            if direction == "output" for bit in cell["connections"][port]}


def net_loads(module):
    """{net bit: the cells it is an input of} of a synthesized `module`."""
    loads = {}
    for cell in module["cells"].values():
        for bit in _cell_inputs(cell):
            loads.setdefault(bit, []).append(cell)
    return loads


def gates_reached(module, bits):
    """The outputs (bits) of the gates of a synthesized `module` that the nets `bits`
    reach through logic alone, in one cycle."""
    return _gates_reached(net_loads(module), bits)


def _gates_reached(loads, bits):
    pending, reached = list(bits), set()
    while pending:
        for cell in loads.get(pending.pop(), ()):
            if cell["type"] != "TRELLIS_FF":
                new = cell_outputs(cell) - reached
                reached |= new
                pending += new
    return reached


def registers_reached(module, bits):
    """The flip-flops of a synthesized `module` whose inputs the nets `bits` reach
    through logic alone, in one cycle."""
    loads = net_loads(module)
    nets = set(bits) | _gates_reached(loads, bits)
    return [cell for bit in nets for cell in loads.get(bit, ())
            if cell["type"] == "TRELLIS_FF"]


def _register_cone(module, name):
    """(gates, sources) of the flip-flops driving netname `name` of a synthesized
    `module`: the nets (bits) of the logic their next value and enable are worked out
    through in one cycle, and the nets that logic starts from, each a module input or a
    flip-flop output."""
    return _cone(module, _register_inputs(module, name))


def _cone(module, bits):
    """(gates, sources) of the nets `bits` of a synthesized `module`: the nets of the logic
    they are worked out through in one cycle, and the nets that logic starts from, each
    a module input or a flip-flop output."""
    drivers = _drivers(module)
    pending = list(bits)
    gates, sources = set(), set()
    while pending:
        bit = pending.pop()
        if bit in gates or bit in sources:
            continue
        cell = drivers.get(bit)
        if cell is None or cell["type"] == "TRELLIS_FF":
            sources.add(bit)
        else:
            gates.add(bit)
            pending += _cell_inputs(cell)
    return gates, sources


def net_sources(module, bits):
    """The nets (bits) that the nets `bits` of a synthesized `module` are worked out from
    in one cycle, each a module input or a flip-flop output."""
    return _cone(module, bits)[1]


def register_sources(module, name):
    """The nets (bits) that reach the inputs of the flip-flops driving netname `name` of a
    synthesized `module` through logic alone, each a module input or a flip-flop output:
    what the register's next value and enable are worked out from in one cycle."""
    return _register_cone(module, name)[1]


def register_gates(module, name):
    """The outputs (bits) of the gates between the flip-flops driving netname `name` of a
    synthesized `module` and the registers and inputs they are worked out from."""
    return _register_cone(module, name)[0]
