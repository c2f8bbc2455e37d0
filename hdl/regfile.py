"""Per-pipe configuration registers (loop sizes, loop strides, pad value)."""

from amaranth.hdl import Module, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from model.isa import OP_BY_OPCODE, PIPE_REGISTERS, REGISTER_WRITES

from .commands import Command, op_fields


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


class PipeRegisters(wiring.Component):
    """The sticky configuration registers of one pipe (MTE2 or MTE3).

    On a cycle with `write`, a `command` that is one of the pipe's register-write ops
    (isa.REGISTER_WRITES) stores its fields into the registers it names; any other command
    is ignored. `snapshot` is the registers themselves: a write is visible the next cycle.
    Reset gives the isa reset values (loop counts 1, strides and pad value 0).

    `counts_less_one` holds each loop count less one, worked out as the count is written:
    the copy checker multiplies it, and from a register its path into the multipliers is
    only routing.
    """

    def __init__(self, pipe):
        self.pipe = pipe
        super().__init__({
            "command": In(Command),
            "write": In(1),
            "snapshot": Out(registers_layout(pipe), init=registers_reset(pipe)),
            "counts_less_one": Out(counts_less_one_layout(pipe),
                                   init=counts_less_one(pipe, registers_reset(pipe))),
        })

    def elaborate(self, platform):
        m = Module()
        with m.If(self.write):
            with m.Switch(self.command.opcode):
                for op, prefix in register_writes(self.pipe):
                    with m.Case(op.opcode):
                        fields = op_fields(self.command, op.opcode)
                        m.d.sync += [self.snapshot[prefix + f.name].eq(fields[f.name])
                                     for f in op.fields]
                        m.d.sync += [self.counts_less_one[prefix + f.name].eq(
                                         fields[f.name] - 1)
                                     for f in op.fields if prefix + f.name in COUNT_REGISTERS]
        return m
