"""A parsed program: the instructions the model executes and the assembler encodes."""

from dataclasses import dataclass, field

from .isa import ErrorCode, Op


@dataclass
class Instr:
    """One engine command as written in a program.

    `values` holds every field of `op` as a Python int, not yet range-checked: a negative
    or too-wide operand is reported as FIELD_RANGE when the command executes, so the
    commands before it still run. `values["dtype"]` is a `DType.code`.
    `deferred` is an error the parser found that must surface when this command runs
    (a pad value that does not fit its type, pointers of different element sizes).
    """
    op: Op
    values: dict
    line: int
    column: int = 1
    text: str = ""
    deferred: tuple[ErrorCode, str] | None = None
    extra: dict = field(default_factory=dict)

    @property
    def mnemonic(self):
        return self.op.mnemonic
