"""Command-word layouts, derived from `model.isa.OPS`.

A command is `MAX_COMMAND_WORDS` 32-bit words, little-endian, opcode at bits [0:5) and the
op's fields after it in table order (see the `model.isa` docstring). `Command` views those
bits once per op: `cmd.copy_gm_to_ubuf.n_burst` is the n_burst field of a copy_gm_to_ubuf
command, `cmd.opcode` the opcode of any command, `cmd.raw` the bits themselves. Every width
and offset comes from the isa table; `op_layout` checks that the struct places each field
at the isa offset.
"""

from amaranth.hdl import Cat, Mux, Signal, unsigned
from amaranth.lib import data, enum

from model.isa import (COPY_OPCODES, MAX_COMMAND_WORDS, OP_BY_OPCODE, OPS, REGISTER_WRITES,
                       WORD_BITS, Opcode, Pipe)

from ..layouts import CMD_INDEX_BITS
from .tokens import TICKET_BITS

COMMAND_BITS = MAX_COMMAND_WORDS * WORD_BITS


def op_layout(op):
    """The op's fields as a struct: the opcode, then each field at its isa bit offset."""
    layout = data.StructLayout({"opcode": Opcode,
                                **{f.name: unsigned(f.width) for f in op.fields}})
    for f in op.fields:
        assert layout[f.name].offset == op.offset(f.name), (op.mnemonic, f.name)
    return layout


Command = data.UnionLayout({
    "raw": unsigned(COMMAND_BITS),
    "opcode": Opcode,
    **{op.mnemonic: op_layout(op) for op in OPS},
})


class CommandEntry(data.Struct):
    """A whole command and its position in the command stream since reset (from 0)."""
    cmd: Command
    index: CMD_INDEX_BITS


class CommandKind(enum.Enum, shape=2):
    """What a pipe waits on before it takes a command. An rls_buf waits as a set_flag
    does, and a get_buf as a wait_flag, on the token table instead of the flags."""
    IMMEDIATE = 0   # a register write, or a set_flag whose other side is EXTERNAL
    COPY = 1        # the copy checker's `ready`
    SET_FLAG = 2    # set_flag for another engine pipe, rls_buf: no copy unfinished
    WAIT_FLAG = 3   # the flag's grant; get_buf: the token's grant


def command_kind(m, cmd):
    """The CommandKind of a `Command` view, decoded in `m`."""
    kind = Signal(CommandKind)
    with m.Switch(cmd.opcode):
        with m.Case(*COPY_OPCODES):
            m.d.comb += kind.eq(CommandKind.COPY)
        with m.Case(Opcode.SET_FLAG):
            external = op_fields(cmd, Opcode.SET_FLAG).dst_pipe == Pipe.EXTERNAL
            m.d.comb += kind.eq(Mux(external, CommandKind.IMMEDIATE, CommandKind.SET_FLAG))
        with m.Case(Opcode.WAIT_FLAG, Opcode.GET_BUF):
            m.d.comb += kind.eq(CommandKind.WAIT_FLAG)
        with m.Case(Opcode.RLS_BUF):
            m.d.comb += kind.eq(CommandKind.SET_FLAG)
    return kind


# The register-write ops (isa.REGISTER_WRITES), in table order: a PipeCommand's `writes`
# has one bit per op.
REGISTER_WRITE_OPCODES = tuple(REGISTER_WRITES)


def register_write_bits(opcode):
    """One bit per REGISTER_WRITE_OPCODES: the Value `opcode` is that op."""
    return Cat(opcode == op for op in REGISTER_WRITE_OPCODES)


class PipeCommand(data.Struct):
    """A command as its pipe receives it: the entry, its kind and which register-write op
    it is (`writes`, one bit per REGISTER_WRITE_OPCODES), decoded before it is queued, so
    the pipe's `ready` is a choice by a register and its register file's enables are one
    gate from registers, not an opcode decode. A get_buf carries its ticket
    (`tokens.TokenTickets`); other commands leave it unread."""
    entry: CommandEntry
    kind: CommandKind
    writes: len(REGISTER_WRITE_OPCODES)
    ticket: TICKET_BITS


def op_fields(cmd, opcode):
    """The per-op view of a `Command` view: `op_fields(cmd, Opcode.SET_FLAG).event_id`."""
    return cmd[OP_BY_OPCODE[opcode].mnemonic]


def command_field(cmd, opcode, name):
    """One field of a `Command` view as a Value."""
    return op_fields(cmd, opcode)[name]


def command_bits(words):
    """The raw `Command` value of a command given as isa-encoded words (for testbenches)."""
    return sum(w << (WORD_BITS * i) for i, w in enumerate(words))
