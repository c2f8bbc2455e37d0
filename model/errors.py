"""Errors the model reports: SPEC rule violations and program-text errors."""

from .isa import ErrorCode


class MteError(Exception):
    """A SPEC rule violation (or a bus error) at one command of a program."""

    def __init__(self, code: ErrorCode, message, *, line=None, op=None, address=None):
        self.code = ErrorCode(code)
        self.message = message
        self.line = line
        self.op = op
        self.address = address
        super().__init__(str(self))

    def __str__(self):
        where = f"line {self.line}: " if self.line is not None else ""
        op = f"{self.op}: " if self.op else ""
        return f"{self.code.name}: {where}{op}{self.message}"


# A program-text message quotes the text it found; a token of megabytes is cut to this.
MAX_MESSAGE = 400


class ProgramError(Exception):
    """Malformed program text: syntax, unknown op, unbound name, operand or type count."""

    def __init__(self, message, line, column=1):
        if len(message) > MAX_MESSAGE:
            message = f"{message[:MAX_MESSAGE]}... ({len(message)} characters)"
        self.message, self.line, self.column = message, line, column
        super().__init__(f"line {line}, column {column}: {message}")


class BindingError(Exception):
    """A binding given to the parser that the program never reads: unused, hidden by the
    program's own definition of the name, or the name of a constant."""

    def __init__(self, name, message, line=None, column=None):
        self.name, self.message, self.line, self.column = name, message, line, column
        super().__init__(f"{name}: {message}")
