"""The benchmark's arithmetic (pure Python): bus beats, ideal cycles, half-peak size.

A copy's read side is where its bytes come from (GM for GM->UB, UB for UB->GM and
UB->UB), its write side where they go. A side's beats are the W-byte bus words each row
touches on that side, summed over rows: every row is its own burst (or bursts), so two
short rows that share a word each pay for it.
"""

import math

from model import isa
from model.engine import COPY_OPCODES
from model.isa import Opcode, Pipe
from tb.scoreboard import copy_rows

DIRECTIONS = {Opcode.COPY_GM_TO_UBUF: "GM->UB", Opcode.COPY_UBUF_TO_GM: "UB->GM",
              Opcode.COPY_UBUF_TO_UBUF: "UB->UB"}
GM_DIRECTIONS = ("GM->UB", "UB->GM")     # the directions that wait for GM latency


def words_touched(addr, length, width):
    """W-aligned bus words that bytes [addr, addr + length) touch."""
    if not length:
        return 0
    return (addr + length - 1) // width - addr // width + 1


def final_copy(instrs):
    """(op, values, registers) of a program's last command, a copy, with its pipe's loop
    registers as the program's earlier commands leave them (from reset)."""
    regs = {pipe: isa.reset_registers(pipe) for pipe in (Pipe.MTE2, Pipe.MTE3)}
    for instr in instrs[:-1]:
        if instr.op.opcode in isa.REGISTER_WRITES:
            pipe, _ = isa.REGISTER_WRITES[instr.op.opcode]
            isa.apply_register_write(regs[pipe], instr.op, instr.values)
    last = instrs[-1]
    assert last.op.opcode in COPY_OPCODES, f"{last.mnemonic} is not a copy"
    return last.op, last.values, regs.get(last.op.pipe)


def direction(op):
    return DIRECTIONS[op.opcode]


def side_beats(rows, width):
    """(read beats, write beats) of a copy's rows, as tb.scoreboard.copy_rows gives them."""
    read = sum(words_touched(src, n, width) for src, _, n, _ in rows)
    write = sum(words_touched(dst, n, width) for _, dst, _, n in rows)
    return read, write


def copy_beats(instrs, width):
    """(direction, read beats, write beats) of a program's final copy."""
    op, values, regs = final_copy(instrs)
    return (direction(op), *side_beats(copy_rows(op, values, regs), width))


def ideal_cycles(direction_name, latency, read_beats, write_beats):
    """L + max(read, write beats); a UB->UB copy never waits for GM, so it has no L."""
    wait = latency if direction_name in GM_DIRECTIONS else 0
    return wait + max(read_beats, write_beats)


def efficiency(ideal, measured):
    return ideal / measured


def half_peak(sizes, throughputs):
    """Half-peak transfer size of a sweep (sizes ascending).

    peak: the largest throughput observed. point: the smallest swept size whose throughput
    reaches peak / 2. interpolated: where the curve crosses peak / 2, linear in log2(size)
    between `point` and the swept size before it (= point when the first size reaches it)."""
    peak = max(throughputs)
    half = peak / 2
    index = next(i for i, t in enumerate(throughputs) if t >= half)
    point = sizes[index]
    if index == 0:
        return {"peak": peak, "point": point, "interpolated": float(point)}
    below = sizes[index - 1]
    lo, hi = throughputs[index - 1], throughputs[index]
    share = (half - lo) / (hi - lo)
    log_size = math.log2(below) + share * (math.log2(point) - math.log2(below))
    return {"peak": peak, "point": point, "interpolated": 2 ** log_size}
