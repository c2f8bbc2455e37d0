"""What the golden model says a program does, and the comparison of an RTL run with it.

`expect(case)` parses a case, runs it on `model.engine.Engine` and returns an
`Expectation`: the command words the RTL is given (everything the assembler can encode,
up to the first error), the pipe status the RTL must report, and the model's memories at
the end and at each drain point (`Checkpoint`). `compare(...)` checks a whole UB image and
every mapped GM window against a checkpoint and describes the first differing byte of
each memory: the op and source line that last wrote it, expected and actual bytes, cycle.

Error programs end in their failing command. The model stops there; the RTL rejects the
command (or, for BUS_ERROR, stops the copy) and goes on, and nothing follows. After a
BUS_ERROR the failing copy's destination footprint is unspecified (docs/semantics.md), so
those bytes are left out of the comparison.
"""

import itertools
from dataclasses import dataclass, field

import numpy as np

from model import isa, rules
from model.assembler import assemble_until_error
from model.engine import COPY_OPCODES, Engine
from model.errors import MteError
from model.isa import ErrorCode, Opcode, Pipe

ENGINE_PIPES = (Pipe.MTE2, Pipe.MTE3, Pipe.V)


def copy_rows(op, values, regs):
    """(source, destination, bytes read, bytes written) of every row of a copy, in order."""
    g = rules.geometry(op, values, regs)
    if g.empty:
        return []
    rows = []
    for j, k, r in itertools.product(range(g.loop2_count), range(g.loop1_count),
                                     range(g.n_burst)):
        rows.append((g.src + j * g.loop2_src + k * g.loop1_src + r * g.src_stride,
                     g.dst + j * g.loop2_dst + k * g.loop1_dst + r * g.dst_stride,
                     g.len_burst, g.row_bytes))
    return rows


def copies_with_registers(instrs):
    """(copy, its pipe's loop registers as the writes before it leave them; None for V)
    for every copy of `instrs`, in order."""
    regs = {pipe: isa.reset_registers(pipe) for pipe in (Pipe.MTE2, Pipe.MTE3)}
    for instr in instrs:
        op = instr.op
        if op.opcode in isa.REGISTER_WRITES:
            pipe, _ = isa.REGISTER_WRITES[op.opcode]
            isa.apply_register_write(regs[pipe], op, instr.values)
        elif op.opcode in COPY_OPCODES:
            yield instr, regs.get(op.pipe)


def untouched_ub(instrs, commands, ub_size):
    """[start, end) ranges of whole 4-byte words of UB that none of the first `commands`
    commands reads or writes, by the model's loop nest."""
    touched = []
    for instr, regs in copies_with_registers(instrs[:commands]):
        rows = copy_rows(instr.op, instr.values, regs)
        if source_space(instr.op) == "ub":
            touched += [(src, src + read) for src, _, read, _ in rows]
        if destination_space(instr.op) == "ub":
            touched += [(dst, dst + written) for _, dst, _, written in rows]
    free, at = [], 0
    for start, end in sorted(touched) + [(ub_size, ub_size)]:
        if (start & ~3) > rules.align_up(at, 4):
            free.append((rules.align_up(at, 4), start & ~3))
        at = max(at, end)
    return free


def source_space(op):
    return "gm" if op.opcode == Opcode.COPY_GM_TO_UBUF else "ub"


def destination_space(op):
    return "gm" if op.opcode == Opcode.COPY_UBUF_TO_GM else "ub"


@dataclass
class Checkpoint:
    """The model's memories once the first `commands` commands have all completed."""
    commands: int
    ub: np.ndarray
    gm: dict                 # window base -> np.ndarray


@dataclass
class PipeExpectation:
    completed: int = 0       # commands this pipe finishes
    error: ErrorCode = ErrorCode.NONE
    error_index: int = 0     # within the program (the harness adds its base)
    error_addr: int = 0      # checked for BUS_ERROR only


@dataclass
class Expectation:
    instrs: list
    words: list                  # words of the commands the RTL is given
    command_words: list          # words per command given, in order
    pipes: dict                  # Pipe -> PipeExpectation
    checkpoints: list            # Checkpoint, the last one after every command
    error: MteError | None       # the model's error, if any
    wrote: int                   # how many leading commands may have written memory
    unspecified: dict = field(default_factory=dict)   # space -> [(start, end)] not compared
    bytes_moved: int = 0

    @property
    def commands(self):
        return len(self.command_words)


def instr_pipe(instr):
    return Pipe(isa.op_pipe(instr.op, instr.values))


def runs_on_engine(instr):
    """False for a flag whose own side is a pipe this engine does not have: it is dropped."""
    return instr_pipe(instr) != Pipe.EXTERNAL


def load_engine(case):
    engine = Engine(case.profile)
    for base, data in case.gm:
        engine.gm.map(base, np.frombuffer(data, dtype=np.uint8))
    engine.ub[:] = np.frombuffer(case.ub, dtype=np.uint8)
    return engine


def _snapshot(engine, commands):
    return Checkpoint(commands, engine.ub.copy(),
                      {r.base: r.data.copy() for r in engine.gm.regions})


def drain_points(instrs):
    """Command counts after which a run may drain and compare: after each wait_flag
    between two of the engine's pipes, and each get_buf of one (its token was released
    earlier in program order, so the engine drains there)."""
    return [i + 1 for i, instr in enumerate(instrs)
            if runs_on_engine(instr) and (
                (instr.op.opcode == Opcode.WAIT_FLAG and instr.values["src_pipe"] != Pipe.EXTERNAL)
                or instr.op.opcode == Opcode.GET_BUF)]


def expect(case, drains=False):
    """Run a case on the model. With `drains`, also snapshot at every drain point."""
    instrs = case.instrs()
    words, lines, assembly_error = assemble_until_error(instrs)
    given = len(lines)
    command_words = [len(isa.encode(instr.op, instr.values)) for instr in instrs[:given]]
    engine = load_engine(case)
    pipes = {pipe: PipeExpectation() for pipe in ENGINE_PIPES}
    points = set(drain_points(instrs[:given])) if drains else set()
    checkpoints, error, unspecified, wrote = [], None, {}, given
    for index, instr in enumerate(instrs[:given]):
        pipe = instr_pipe(instr)
        try:
            engine.execute(instr)
        except MteError as e:
            error = e
            if pipe != Pipe.EXTERNAL:
                pipes[pipe].error, pipes[pipe].error_index = e.code, index
                pipes[pipe].error_addr = e.address or 0
            if e.code == ErrorCode.BUS_ERROR:
                unspecified = _destination(instr, engine)
            else:
                wrote = index
        if pipe != Pipe.EXTERNAL:
            pipes[pipe].completed += 1
        if error is not None:
            break
        if index + 1 in points and index + 1 < given:
            checkpoints.append(_snapshot(engine, index + 1))
    if assembly_error is not None and error is None:
        error = assembly_error
    checkpoints.append(_snapshot(engine, given))
    return Expectation(instrs, words, command_words, pipes, checkpoints, error, wrote,
                       unspecified, sum(engine.stats.bytes_moved.values()))


def _destination(instr, engine):
    """The destination byte ranges of a copy, as the engine's registers stand now."""
    regs = engine.regs.get(instr.op.pipe)
    space = destination_space(instr.op)
    return {space: [(dst, dst + written) for _, dst, _, written
                    in copy_rows(instr.op, instr.values, regs)]}


# --- comparison ---------------------------------------------------------------------

@dataclass
class Mismatch:
    space: str
    address: int
    expected: int
    actual: int
    differing: int              # bytes that differ in this memory
    writer: str                 # the op and line that last wrote the address, per the model
    cycle: int
    case: str

    def __str__(self):
        return (f"{self.case}: {self.space.upper()} {self.address:#x}: expected "
                f"{self.expected:#04x}, got {self.actual:#04x} ({self.differing} bytes differ); "
                f"{self.writer}; cycle {self.cycle}")


def last_writer(instrs, upto, space, address):
    """Which of the first `upto` instructions last wrote a byte, by the model's loop nest."""
    found = None
    for instr, regs in copies_with_registers(instrs[:upto]):
        if destination_space(instr.op) == space:
            rows = copy_rows(instr.op, instr.values, regs)
            if any(dst <= address < dst + written for _, dst, _, written in rows):
                found = instr
    if found is None:
        return "no op of the program writes this byte (a stray write, or a missed one)"
    text = found.text if len(found.text) <= 120 else found.text[:117] + "..."
    return f"last written by {found.mnemonic} at line {found.line}: {text}"


def _mask(length, base, ranges):
    """A bool mask over [base, base+length) that is False on the given ranges."""
    keep = np.ones(length, dtype=bool)
    for start, end in ranges:
        lo, hi = max(start, base), min(end, base + length)
        if lo < hi:
            keep[lo - base:hi - base] = False
    return keep


def _first_difference(base, expected, actual, skip):
    actual = np.frombuffer(bytes(actual), dtype=np.uint8)
    differ = (expected != actual) & _mask(len(expected), base, skip)
    hits = np.flatnonzero(differ)
    if not len(hits):
        return None
    first = int(hits[0])
    return base + first, int(expected[first]), int(actual[first]), len(hits)


def compare(expectation, checkpoint, ub, gm, cycle, case_name):
    """Mismatches (at most one per memory) between an RTL state and a model checkpoint.

    `ub`: the RTL's whole UB; `gm`: {window base: bytes} of every mapped window."""
    final = checkpoint.commands == expectation.commands     # the last: after every command
    skip = expectation.unspecified if final else {}
    out = []
    memories = [("ub", 0, checkpoint.ub, ub)]
    memories += [("gm", base, data, gm[base]) for base, data in checkpoint.gm.items()]
    for space, base, expected, actual in memories:
        diff = _first_difference(base, expected, actual, skip.get(space, ()))
        if diff is None:
            continue
        address, want, got, count = diff
        writer = last_writer(expectation.instrs, min(checkpoint.commands, expectation.wrote),
                             space, address)
        out.append(Mismatch(space, address, want, got, count, writer, cycle, case_name))
    return out
