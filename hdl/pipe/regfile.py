"""Per-pipe configuration registers (loop sizes, loop strides, pad value)."""

from amaranth.hdl import Cat, Module, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from model.isa import OP_BY_OPCODE, PIPE_REGISTERS, REGISTER_WRITES

from ..lib.kept_lut import load_in_groups
from ..intake.commands import REGISTER_WRITE_OPCODES, Command, op_fields


def registers_layout(pipe):
    """The registers of a pipe (isa.PIPE_REGISTERS) as a struct, in table order."""
    return data.StructLayout({r.name: unsigned(r.width) for r in PIPE_REGISTERS[pipe]})


def registers_reset(pipe):
    return {r.name: r.reset for r in PIPE_REGISTERS[pipe]}


COUNT_REGISTERS = ("loop1_count", "loop2_count")


def counts_less_one_layout(pipe):
    """Each loop count register less one, modulo its width."""
    layout = registers_layout(pipe)
    return data.StructLayout({name: layout[name].shape for name in COUNT_REGISTERS})


def counts_less_one(pipe, regs):
    """`counts_less_one_layout`'s value for a dict of register values (for testbenches)."""
    layout = registers_layout(pipe)
    return {name: (regs[name] - 1) % (1 << layout[name].shape.width)
            for name in COUNT_REGISTERS}


def register_writes(pipe):
    """(op, register prefix) of every register-write op of a pipe."""
    return [(OP_BY_OPCODE[opcode], prefix)
            for opcode, (target, prefix) in REGISTER_WRITES.items() if target == pipe]


def _loads(write, this):
    """A register loads: a command is taken (`write`) and is the op that writes it."""
    return write & this


class PipeRegisters(wiring.Component):
    """The sticky configuration registers of one pipe (MTE2 or MTE3).

    On a cycle with `write`, a `command` that is one of the pipe's register-write ops
    (isa.REGISTER_WRITES), as its `writes` bit says (one bit per
    commands.REGISTER_WRITE_OPCODES, decoded before the command is queued), stores its
    fields into the registers it names; any other command is ignored. `snapshot` is the
    registers themselves: a write is visible the next cycle. Reset gives the isa reset
    values (loop counts 1, strides and pad value 0).

    `counts_less_one` holds each loop count less one, worked out as the count is written:
    the copy checker multiplies it, and from a register its path into the multipliers is
    only routing.

    Each register takes its enable from a cell of its own (kept_lut.load_in_groups) of
    `write` and its op's `writes` bit, both registers at the head of the pipe's command
    queue: one gate, which the placer can put beside the register's bits.
    """

    def __init__(self, pipe):
        self.pipe = pipe
        super().__init__({
            "command": In(Command),
            "write": In(1),
            "writes": In(len(REGISTER_WRITE_OPCODES)),
            "snapshot": Out(registers_layout(pipe), init=registers_reset(pipe)),
            "counts_less_one": Out(counts_less_one_layout(pipe),
                                   init=counts_less_one(pipe, registers_reset(pipe))),
        })

    def elaborate(self, platform):
        m = Module()
        for op, prefix in register_writes(self.pipe):
            this = self.writes[REGISTER_WRITE_OPCODES.index(op.opcode)]
            fields = op_fields(self.command, op.opcode)
            for f in op.fields:
                name = prefix + f.name
                pairs = [(self.snapshot[name], fields[f.name])]
                if name in COUNT_REGISTERS:
                    pairs.append((self.counts_less_one[name], fields[f.name] - 1))
                load_in_groups(m, name, _loads, Cat(self.write, this), pairs)
        return m
