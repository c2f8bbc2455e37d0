"""Race detection: the commands whose order the engine does not fix (SPEC.md, "Correct
synchronisation and races").

The golden model runs a program in program order; the engine runs its three pipes at
once, so the two agree only when every two commands of different pipes that touch a
common byte (one of them writing it) are ordered by happens-before:

- program order within a pipe;
- a set_flag after every earlier command of its source pipe, its matching wait_flag (the
  k-th wait of a flag consumes its k-th set) before every later command of its
  destination pipe; barriers are such flag pairs already (model/parser.py);
- an rls_buf after every earlier command of its pipe, the get_buf of the same token id
  that next follows it in program order before every later command of its own pipe (the
  parser accepts only programs whose tokens alternate so, docs/semantics.md);
- transitively, through any chain of pipes.

Happens-before is kept as one vector clock per pipe, as dynamic race detectors such as
FastTrack keep theirs: entry q of pipe p's clock is how many of pipe q's copies are known
to have finished before p's next command. A set_flag queues its pipe's clock, the
wait_flag that consumes it joins it into its own pipe's; an rls_buf and the next get_buf
of its token do the same. Each copy is compared only with the other pipes' copies its
clock does not already cover (a numpy filter on their spans picks those worth comparing
row by row), so a well synchronised program costs one pass over its commands. The check
stops at MAX_RACES races and says so.

Footprints are exact at the byte level: a side of a copy is its rows (model/rules.py's
geometry, padding included where it is written), kept as loops of strided rows. Loops
whose rows touch merge into one wider row, loops that continue each other merge into one
loop; the rows left are compared as sorted row starts, so interleaved rows that share no
byte are no race. A side with more than `ROW_LIMIT` distinct rows is compared by its span
only: that pair's check is conservative (it may report a race the rows would not have),
and says so.
"""

import functools
from collections import defaultdict, deque
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import isa, rules
from .engine import Engine
from .errors import MteError
from .isa import COPY_OPCODES, Opcode, Pipe

ENGINE_PIPES = (Pipe.MTE2, Pipe.MTE3, Pipe.V)
ROW_LIMIT = 1 << 22      # distinct rows of one footprint worth listing (32 MiB of starts)
MAX_RACES = 1000         # the check stops at this many: a program that has them needs flags

READ_AFTER_WRITE = "read after write"
WRITE_AFTER_READ = "write after read"
WRITE_AFTER_WRITE = "write after write"


class Rows(NamedTuple):
    """Bytes base + sum(i_k * stride_k) + [0, width) for every 0 <= i_k < count_k."""
    base: int
    loops: tuple             # ((count, stride), ...), smallest stride first
    width: int

    @classmethod
    def of(cls, base, loops, width):
        """The same bytes with as few loops as possible: repeats (stride 0) dropped, rows
        that touch merged into one wider row, a loop that continues another joined to it."""
        loops = sorted((stride, count) for count, stride in loops if count > 1 and stride)
        while loops:
            stride, count = loops[0]
            if stride <= width:
                width += (count - 1) * stride
                del loops[0]
            elif len(loops) > 1 and loops[1][0] == stride * count:
                loops[:2] = [(stride, count * loops[1][1])]
            else:
                break
        return cls(base, tuple((count, stride) for stride, count in loops), width)

    @property
    def end(self):
        return self.base + sum((count - 1) * stride for count, stride in self.loops) + self.width

    def starts(self):
        """The distinct row starts, sorted; None when there are more than ROW_LIMIT."""
        return _row_starts(self, ROW_LIMIT)


@functools.lru_cache(maxsize=8)      # a large footprint is met again by the next copies
def _row_starts(rows, limit):
    starts = np.array([rows.base], dtype=np.int64)
    span = 1                 # of the starts of the loops with smaller strides
    nested = True            # each loop steps over all smaller ones: starts come sorted
    for count, stride in rows.loops:
        nested &= stride >= span
        span += (count - 1) * stride
    for count, stride in reversed(rows.loops):
        if len(starts) * count > limit:
            return None
        steps = np.arange(count, dtype=np.int64) * stride
        starts = (starts[:, None] + steps).ravel()
    if not nested:
        starts.sort()
        starts = starts[np.concatenate(([True], starts[1:] != starts[:-1]))]
    starts.flags.writeable = False
    return starts


class Shared(NamedTuple):
    """The first bytes two footprints share: [lo, hi). `exact` False: a footprint was too
    large to list, [lo, hi) is where the spans overlap, and the rows may share none."""
    lo: int
    hi: int
    exact: bool = True


def first_shared(a, b):
    """The lowest byte two footprints share and the rest of the two rows around it, or None
    when they share no byte."""
    lo, hi = max(a.base, b.base), min(a.end, b.end)
    if lo >= hi:
        return None
    starts_a, starts_b = a.starts(), b.starts()
    if starts_a is None or starts_b is None:
        return Shared(lo, hi, exact=False)
    starts_a = starts_a[(starts_a + a.width > lo) & (starts_a < hi)]
    # for each row of a, the first row of b that ends after it starts
    after = np.searchsorted(starts_b, starts_a - b.width, side="right")
    inside = after < len(starts_b)
    starts_a, after = starts_a[inside], after[inside]
    other = starts_b[after]
    hit = other < starts_a + a.width
    if not hit.any():
        return None
    starts_a, other = starts_a[hit], other[hit]
    first = np.maximum(starts_a, other)
    i = int(np.argmin(first))
    return Shared(int(first[i]), int(min(starts_a[i] + a.width, other[i] + b.width)))


class Access(NamedTuple):
    space: str               # "gm" or "ub"
    rows: Rows


def copy_accesses(op, values, regs):
    """(read, write) Accesses of a copy command; None for a copy that touches nothing."""
    g = rules.geometry(op, values, regs)
    if g.empty:
        return None
    src_space, dst_space = op.fields[0].space, op.fields[1].space
    counts = (g.loop2_count, g.loop1_count, g.n_burst)
    read = Rows.of(g.src, zip(counts, (g.loop2_src, g.loop1_src, g.src_stride)), g.len_burst)
    write = Rows.of(g.dst, zip(counts, (g.loop2_dst, g.loop1_dst, g.dst_stride)), g.row_bytes)
    return Access(src_space, read), Access(dst_space, write)


@dataclass(frozen=True)
class Race:
    kind: str
    space: str
    earlier: object          # Instr
    later: object            # Instr
    shared: Shared

    def __str__(self):
        def side(instr, verb):
            pipe = Pipe(isa.op_pipe(instr.op, instr.values)).name
            return f"line {instr.line} {instr.mnemonic} (PIPE_{pipe}) {verb}"
        first, second = {READ_AFTER_WRITE: ("writes", "reads"),
                         WRITE_AFTER_READ: ("reads", "writes"),
                         WRITE_AFTER_WRITE: ("writes", "writes")}[self.kind]
        s = self.shared
        where = f"{self.space.upper()} [{s.lo:#x}, {s.hi:#x})"
        text = (f"RACE: {self.kind} on {where}: {side(self.earlier, first)}, "
                f"{side(self.later, second)}, and no flag, barrier or token orders them")
        if not s.exact:
            text += (f" (conservative: a footprint has more than {ROW_LIMIT} rows, "
                     "compared by its span)")
        return text


def _conflicts(earlier, later):
    """(kind, space, Shared) for each way two copies' accesses meet."""
    (read1, write1), (read2, write2) = earlier, later
    for kind, a, b in ((READ_AFTER_WRITE, write1, read2), (WRITE_AFTER_READ, read1, write2),
                       (WRITE_AFTER_WRITE, write1, write2)):
        if a.space == b.space:
            shared = first_shared(a.rows, b.rows)
            if shared is not None:
                yield kind, a.space, shared


class _History:
    """One pipe's copies so far, in order (the k-th is its pipe's epoch k + 1), and their
    spans as numpy columns, which pick out the few copies whose rows need comparing."""
    SPACES = {"gm": 0, "ub": 1}

    def __init__(self):
        self.copies = []                 # (instr, (read Access, write Access))
        self.spans = np.zeros((64, 4), dtype=np.int64)    # read lo, hi, write lo, hi
        self.spaces = np.zeros((64, 2), dtype=np.int8)    # read space, write space

    def add(self, instr, accesses):
        n = len(self.copies)
        if n == len(self.spans):
            self.spans = np.concatenate([self.spans, np.zeros_like(self.spans)])
            self.spaces = np.concatenate([self.spaces, np.zeros_like(self.spaces)])
        read, write = accesses
        self.spans[n] = (read.rows.base, read.rows.end, write.rows.base, write.rows.end)
        self.spaces[n] = (self.SPACES[read.space], self.SPACES[write.space])
        self.copies.append((instr, accesses))

    def meeting(self, since, accesses):
        """The copies from the since-th on whose spans meet the accesses' in a way that
        may race: their write and this read or write, their read and this write."""
        spans, spaces = self.spans[since:len(self.copies)], self.spaces[since:len(self.copies)]
        read, write = accesses
        meet = np.zeros(len(spans), dtype=bool)
        for theirs, mine in ((1, read), (0, write), (1, write)):
            meet |= ((spaces[:, theirs] == self.SPACES[mine.space])
                     & (spans[:, 2 * theirs] < mine.rows.end)
                     & (spans[:, 2 * theirs + 1] > mine.rows.base))
        return [self.copies[since + i] for i in np.flatnonzero(meet)]


class Clocks:
    """Happens-before of a program's commands, as one vector clock per pipe."""

    def __init__(self):
        self.clock = {pipe: [0] * len(ENGINE_PIPES) for pipe in ENGINE_PIPES}
        self.flags = defaultdict(deque)      # (src, dst, event) -> clocks of unconsumed sets
        self.released = {}                   # token id -> clock of its last rls_buf

    def tick(self, pipe):
        """One more copy of `pipe`, which other pipes may have to wait for."""
        self.clock[pipe][pipe] += 1

    def join(self, pipe, clock):
        mine = self.clock[pipe]
        for q, seen in enumerate(clock):
            mine[q] = max(mine[q], seen)

    def flag(self, instr):
        values = instr.values
        src, dst = Pipe(values["src_pipe"]), Pipe(values["dst_pipe"])
        if Pipe.EXTERNAL in (src, dst):
            return                            # the other side is no pipe of this engine
        key = (src, dst, values["event_id"])
        if instr.op.opcode == Opcode.SET_FLAG:
            self.flags[key].append(list(self.clock[src]))
        elif self.flags[key]:
            self.join(dst, self.flags[key].popleft())

    def token(self, instr):
        pipe, buf_id = Pipe(instr.values["pipe"]), instr.values["buf_id"]
        if pipe == Pipe.EXTERNAL:
            return                            # the engine drops it
        if instr.op.opcode == Opcode.RLS_BUF:
            self.released[buf_id] = list(self.clock[pipe])
        elif buf_id in self.released:
            self.join(pipe, self.released.pop(buf_id))


@dataclass
class Analysis:
    races: list              # Race, in program order of the later command
    error: MteError | None   # the first rule a command breaks; later commands never run
    commands: int            # commands analysed (those before the error, or the cut)
    cut: bool = False        # stopped at MAX_RACES races: later commands not analysed

    def lines(self):
        """The report: one line per race, and one saying where the check stopped."""
        out = [str(race) for race in self.races]
        if self.cut:
            out.append(f"RACE: the check stopped at {MAX_RACES} races, after command "
                       f"{self.commands}: later commands may race too")
        return out


def analyse(instrs, profile=isa.DEFAULT_PROFILE):
    """Every race among the commands that run: those before the first rule violation
    (every SPEC rule that needs no memory contents is checked, in program order)."""
    engine = Engine(profile)
    clocks = Clocks()
    history = {pipe: _History() for pipe in ENGINE_PIPES}
    races = []
    for count, instr in enumerate(instrs):
        try:
            engine.validate(instr)
        except MteError as error:
            return Analysis(races, error, count)
        op = instr.op
        if op.opcode in isa.REGISTER_WRITES:
            pipe, _ = isa.REGISTER_WRITES[op.opcode]
            isa.apply_register_write(engine.regs[pipe], op, instr.values)
        elif op.opcode in (Opcode.SET_FLAG, Opcode.WAIT_FLAG):
            clocks.flag(instr)
        elif op.opcode in (Opcode.GET_BUF, Opcode.RLS_BUF):
            clocks.token(instr)
        elif op.opcode in COPY_OPCODES:
            accesses = copy_accesses(op, instr.values, engine.regs.get(op.pipe))
            if accesses is not None:
                races += _races_with(history, clocks, op.pipe, instr, accesses)
                clocks.tick(op.pipe)
                history[op.pipe].add(instr, accesses)
                if len(races) >= MAX_RACES:
                    return Analysis(races, None, count + 1, cut=True)
    return Analysis(races, None, len(instrs))


def _races_with(history, clocks, pipe, instr, accesses):
    """Races of a copy of `pipe` with the other pipes' copies its clock does not cover."""
    clock = clocks.clock[pipe]
    races = []
    for other in ENGINE_PIPES:
        if other == pipe:
            continue
        for earlier, their_accesses in history[other].meeting(clock[other], accesses):
            for kind, space, shared in _conflicts(their_accesses, accesses):
                races.append(Race(kind, space, earlier, instr, shared))
    races.sort(key=lambda race: (race.earlier.line, race.earlier.column))
    return races
