"""A plain reference of SPEC.md's happens-before and conflicts, for tests: the bytes of
every copy as Python sets (one element per byte), the ordering as a vector clock per pipe
ticked by every command. It shares no code with model/races.py beyond the rows of
tb/scoreboard.py, and assumes a program whose every command runs (no rule violation).
"""

import itertools

from model import isa
from model.isa import COPY_OPCODES, Opcode, Pipe
from tb.scoreboard import copies_with_registers, copy_rows, destination_space, source_space

PIPES = (Pipe.MTE2, Pipe.MTE3, Pipe.V)


def flag_key(instr):
    return instr.values["src_pipe"], instr.values["dst_pipe"], instr.values["event_id"]


def _joined(clock, seen):
    return {q: max(v, seen[q]) for q, v in clock.items()}


def happens_before(instrs):
    """For each copy, (instr, pipe, vector clock) under the flag semantics: program order
    within a pipe; a set_flag orders everything its pipe did before it ahead of the
    matching wait_flag's later commands, an rls_buf ahead of the next get_buf of its id.
    Flags and tokens naming a pipe the engine lacks order nothing."""
    clocks = {p: {q: 0 for q in PIPES} for p in PIPES}
    pending = {}
    released = {}
    copies = []
    for instr in instrs:
        pipe = Pipe(isa.op_pipe(instr.op, instr.values))
        if pipe == Pipe.EXTERNAL:
            continue
        if instr.op.opcode == Opcode.SET_FLAG:
            key = flag_key(instr)
            if key[1] != Pipe.EXTERNAL:
                pending.setdefault(key, []).append(dict(clocks[pipe]))
        elif instr.op.opcode == Opcode.WAIT_FLAG:
            key = flag_key(instr)
            if key[0] != Pipe.EXTERNAL:
                clocks[pipe] = _joined(clocks[pipe], pending[key].pop(0))
        elif instr.op.opcode == Opcode.RLS_BUF:
            released[instr.values["buf_id"]] = dict(clocks[pipe])
        elif instr.op.opcode == Opcode.GET_BUF and instr.values["buf_id"] in released:
            clocks[pipe] = _joined(clocks[pipe], released.pop(instr.values["buf_id"]))
        clocks[pipe][pipe] += 1
        if instr.op.opcode in COPY_OPCODES:
            copies.append((instr, pipe, dict(clocks[pipe])))
    return copies


def footprints(instrs):
    """(bytes read, bytes written) of each copy, in program order: sets of (space, byte)."""
    out = []
    for instr, regs in copies_with_registers(instrs):
        rows = copy_rows(instr.op, instr.values, regs)
        src, dst = source_space(instr.op), destination_space(instr.op)
        reads = {(src, b) for s, _, n, _ in rows for b in range(s, s + n)}
        writes = {(dst, b) for _, d, _, n in rows for b in range(d, d + n)}
        out.append((reads, writes))
    return out


def conflicts(instrs, prints=None):
    """(a, b) of every two copies of different pipes, a before b, one writing a byte the
    other touches. `prints`: footprints(instrs) when known already."""
    copies = [(instr, pipe) for instr, pipe, _ in happens_before(instrs)]
    prints = footprints(instrs) if prints is None else prints
    out = []
    for ((i, pipe_i), (reads_i, writes_i)), ((j, pipe_j), (reads_j, writes_j)) in \
            itertools.combinations(zip(copies, prints, strict=True), 2):
        if pipe_i != pipe_j and (writes_i & (reads_j | writes_j) or reads_i & writes_j):
            out.append((i, j))
    return out


def unordered(instrs, pairs):
    """The (a, b) of `pairs` (copies of `instrs`) that happens-before leaves unordered."""
    clocks = {id(instr): (pipe, clock) for instr, pipe, clock in happens_before(instrs)}
    out = []
    for a, b in pairs:
        pipe_a, clock_a = clocks[id(a)]
        if clock_a[pipe_a] > clocks[id(b)][1][pipe_a]:
            out.append((a, b))
    return out
