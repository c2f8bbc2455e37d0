"""Instructions <-> the engine's 32-bit command words (the layout is `isa.encode`'s).

An instruction that cannot be encoded (a field out of range, or an error the parser
deferred) is reported as the MteError the engine would raise when it runs, with its line.
"""

from . import isa
from .errors import MteError
from .isa import ErrorCode


def encode_instr(instr):
    """The command words of one instruction; raises MteError if it has none."""
    try:
        words = isa.encode(instr.op, instr.values)
    except isa.EncodingError as e:
        problem = "is negative" if e.value < 0 else f"does not fit {e.field.width} bits"
        raise MteError(ErrorCode.FIELD_RANGE, f"{e.field.name} = {e.value} {problem}",
                       line=instr.line, op=instr.mnemonic) from None
    if instr.deferred is not None:        # after the fields: FIELD_RANGE comes first
        code, message = instr.deferred
        raise MteError(code, message, line=instr.line, op=instr.mnemonic)
    return words


def assemble_until_error(instrs):
    """(words, lines, error): the words of every command before the first one that cannot
    be encoded, the source line of each command encoded, and that command's MteError (or
    None). An RTL run executes the words, then reports the error."""
    words, lines = [], []
    for instr in instrs:
        try:
            words += encode_instr(instr)
        except MteError as error:
            return words, lines, error
        lines.append(instr.line)
    return words, lines, None


def assemble(instrs):
    """32-bit command words of a whole program; raises the first MteError."""
    words, _, error = assemble_until_error(instrs)
    if error is not None:
        raise error
    return words


def disassemble(words):
    """[(isa.Op, values)] of a word stream. Raises ValueError on an unknown opcode or a
    stream that ends inside a command."""
    commands = isa.decode_stream(list(words))
    if sum(op.words for op, _ in commands) != len(words):
        raise ValueError(f"the last command, {commands[-1][0].mnemonic}, is truncated")
    return commands
