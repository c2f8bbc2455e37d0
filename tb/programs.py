"""Seeded random PTO programs, with the memory they run on, for the RTL regression and
the model tests (pure Python: no cocotb here).

`generate(seed, error=AUTO, profile="a5")` returns a `Case`: the program TEXT (legacy
`set_loop_*` / `copy_*` statements and v0.6 grouped `mte_gm_ub` / `mte_ub_gm` /
`mte_ub_ub` with nburst / loop / pad clauses, pointers from bindings, `castptr` and
`addptr`, constants by name and by `arith.constant`), the bindings of its free names, the
GM windows (whole 4 KiB pages) and the whole initial UB. Everything derives from the seed;
`Case.rerun` is the command line that runs the same case on the RTL again.

What the programs exercise: unaligned GM, rows shorter than 32 bytes, rows crossing 4 KiB
pages, packed UB rows on a5 (a UB row stride of len_burst, rows starting mid-line),
padding at every element size, two hardware loops and software loops, loop destinations
that overlap (the later write wins), sticky registers, and the three pipes running
concurrently. The model runs a program in order; the RTL runs its pipes at once,
so whenever a command touches bytes that an earlier command of another pipe wrote or
reads (or reads bytes it writes), a `set_flag` / `wait_flag` pair orders the two, or now
and then a `pto.barrier` of every pipe (drawn apart from the program, so that a seed's
copies and memory do not depend on it). In a share of the programs (TOKEN_SHARE, drawn
apart too) buffer-ID tokens do all of the ordering instead: the earlier pipe releases a
token (`rls_buf`) that the later one takes (`get_buf`), the earlier pipe first taking it
from its holder if another pipe holds it. The text takes PTOAS's spellings now and then,
drawn apart from the program in the same way (siN element types, an l2_cache_ctl(...)
clause, clause keywords heading their types): they never change the commands.

With `error` set to an `ErrorCode`, the program's last command breaks that rule (every
command before it is legal); with AUTO, the seed decides whether and which. Sources start
as random bytes, everything else as GUARD, so a stray or missing write shows.
"""

import argparse
import itertools
import random
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from model.isa import (BUF_ID_BITS, DTYPE_BY_NAME, DTYPES, EVENT_ID_BITS, GM_ADDR_BITS,
                       OP_BY_MNEMONIC, PROFILES, SIGNED_SPELLINGS, UB_LINE, ErrorCode, Pipe,
                       reset_registers)
from model.parser import parse
from model.rules import align_up

PAGE = 4096
GM_SIZE = 1 << GM_ADDR_BITS
GUARD = 0xAA
AUTO = "auto"
ERROR_CLASSES = tuple(code for code in ErrorCode if code != ErrorCode.NONE)
ERROR_SHARE = 0.15          # share of AUTO cases that end in an error command
SPELLING_SHARE = 0.3        # share of each PTOAS spelling (si types, clause keywords, ...)
SIGNED_NAMES = {plain: signed for signed, plain in SIGNED_SPELLINGS.items()}
PACKED_SHARE = 0.35         # share of multi-row copies without pad that pack their UB rows
TOKEN_SHARE = 0.3           # share of programs ordered by buffer-ID tokens alone
MAX_ROWS = 48               # rows per copy, all loops included
BARRIER_SHARE = 0.1         # share of orderings written as a barrier of every pipe
BARRIER_SPELLINGS = ("pto.barrier <PIPE_ALL>", "pto.barrier #pto.pipe<PIPE_ALL>",
                     'pto.barrier "PIPE_ALL"')
PIPE_TEXT = {Pipe.MTE2: "PIPE_MTE2", Pipe.MTE3: "PIPE_MTE3", Pipe.V: "PIPE_V"}
EXTERNAL_PIPES = ("PIPE_S", "PIPE_MTE1", "PIPE_FIX", "PIPE_M")
SUB_BYTE = ("i4", "u4", "f4e2m1", "f4e1m2")
SID_MAX = OP_BY_MNEMONIC["copy_gm_to_ubuf"].field("sid").max
CACHE_MAX = OP_BY_MNEMONIC["copy_gm_to_ubuf"].field("l2_cache_ctl").max


@dataclass(frozen=True)
class Case:
    """One program and the memory it starts from."""
    name: str
    text: str
    bindings: dict
    gm: tuple                   # ((base, bytes), ...): page-aligned, whole pages
    ub: bytes                   # the whole UB
    profile: str = "a5"
    fault_pages: tuple = ()     # pages the bus answers SLVERR for; unmapped for the model
    error: ErrorCode | None = None   # the rule the last command was built to break
    seed: int | None = None
    rerun: str = ""
    skip_compute: bool = False       # the program's compute ops are skipped (mte run's flag)

    def instrs(self):
        """The program parsed, its compute ops skipped if the case says so."""
        return parse(self.text, self.bindings,
                     skipped=Counter() if self.skip_compute else None)


def case_seed(run_seed, index):
    """The seed of the index-th random case of a regression started with run_seed."""
    return random.Random(f"mte-case:{run_seed}:{index}").getrandbits(32)


def spec(seed, error=AUTO):
    """The text that names a case on the command line: SEED or SEED/ERROR_CODE."""
    return f"{seed:#x}" if error == AUTO else f"{seed:#x}/{ErrorCode(error).name}"


def parse_spec(text):
    seed, _, error = text.partition("/")
    return int(seed, 0), (ErrorCode[error] if error else AUTO)


# --- footprints ------------------------------------------------------------------------

def _merge(intervals):
    out = []
    for lo, hi in sorted(intervals):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def _intersect(a, b):
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][0] < b[j][1] and b[j][0] < a[i][1]:
            return True
        if a[i][1] <= b[j][1]:
            i += 1
        else:
            j += 1
    return False


@dataclass
class Footprint:
    """The bytes a command reads and writes: per space ("gm", "ub"), merged intervals."""
    reads: dict = field(default_factory=dict)
    writes: dict = field(default_factory=dict)

    @classmethod
    def of(cls, reads, writes):
        def group(accesses):
            spaces = {}
            for space, start, length in accesses:
                if length:
                    spaces.setdefault(space, []).append((start, start + length))
            return {space: _merge(iv) for space, iv in spaces.items()}
        return cls(group(reads), group(writes))

    def conflicts(self, other):
        """True when the two commands must not run at the same time."""
        def meet(x, y):
            return any(_intersect(iv, y.get(space, ())) for space, iv in x.items())
        return (meet(self.writes, other.writes) or meet(self.writes, other.reads)
                or meet(self.reads, other.writes))


# --- copies ----------------------------------------------------------------------------

@dataclass
class Copy:
    """One copy statement before it is written out.

    kind: "gm_ub" (MTE2), "ub_gm" (MTE3) or "ub_ub". Lengths and strides in bytes, except
    ub_ub, where `length` is in 32-byte lines and the strides are the two gaps, in lines.
    `loops` are (count, src_stride, dst_stride): loop1, loop2, then (grouped only) the
    software loops, innermost first.
    """
    kind: str
    dtype: str
    src: int = 0
    dst: int = 0
    n: int = 1
    length: int = 0
    src_stride: int = 0
    dst_stride: int = 0
    loops: list = field(default_factory=lambda: [(1, 0, 0), (1, 0, 0)])
    grouped: bool = False
    select: bool = False
    left: int = 0
    right: int = 0
    pad: tuple | None = None        # (value, type name) of set_mov_pad_val / pad(...)
    pad_operands: int = 3           # pad(%v) or pad(%v, %l, %r)
    sid: int = 0
    cache: int = 0
    cache_operand: bool = True      # mte_ub_gm may leave out l2_cache_ctl
    dtype2: str | None = None       # the second pointer's type, when it differs

    @property
    def pipe(self):
        return {"gm_ub": Pipe.MTE2, "ub_gm": Pipe.MTE3, "ub_ub": Pipe.V}[self.kind]

    @property
    def es(self):
        return DTYPE_BY_NAME[self.dtype].size

    def row_bytes(self):
        """Bytes written per destination row."""
        if self.kind == "ub_ub":
            return self.length * UB_LINE
        if self.kind == "gm_ub" and self.select:
            footprint = (self.left + self.right) * self.es + self.length
            return align_up(max(self.dst_stride, footprint), UB_LINE)
        return self.length

    def read_bytes(self):
        return self.length * UB_LINE if self.kind == "ub_ub" else self.length

    def row_strides(self):
        if self.kind == "ub_ub":
            return ((self.length + self.src_stride) * UB_LINE,
                    (self.length + self.dst_stride) * UB_LINE)
        return self.src_stride, self.dst_stride

    def row_offsets(self):
        """(src, dst) offset of every row from the first, in loop order."""
        src_stride, dst_stride = self.row_strides()
        levels = [(self.n, src_stride, dst_stride)]
        if self.kind != "ub_ub":
            levels = list(reversed(self.loops)) + levels      # outermost first
        out = []
        for index in itertools.product(*(range(c) for c, _, _ in levels)):
            out.append((sum(i * s for i, (_, s, _) in zip(index, levels)),
                        sum(i * d for i, (_, _, d) in zip(index, levels))))
        return out

    def rows(self):
        return [(self.src + s, self.dst + d) for s, d in self.row_offsets()]

    def spans(self):
        """Bytes from the first row's start to the last byte's end, (source, destination)."""
        offsets = self.row_offsets()
        if not offsets:
            return 0, 0
        return (max(s for s, _ in offsets) + self.read_bytes(),
                max(d for _, d in offsets) + self.row_bytes())

    def spaces(self):
        return {"gm_ub": ("gm", "ub"), "ub_gm": ("ub", "gm"), "ub_ub": ("ub", "ub")}[self.kind]

    def footprint(self):
        src_space, dst_space = self.spaces()
        rows = self.rows()
        return Footprint.of([(src_space, s, self.read_bytes()) for s, _ in rows],
                            [(dst_space, d, self.row_bytes()) for _, d in rows])

    def hardware_loops(self):
        return (list(self.loops[:2]) + [(1, 0, 0)] * 2)[:2]


# --- the generator ---------------------------------------------------------------------

class _Program:
    """Builds one case: memory layout, statements, registers and synchronisation."""

    def __init__(self, rng, profile, barriers, spelling, by_tokens=False):
        self.rng = rng
        self.barriers = barriers                 # draws which orderings are barriers
        self.spelling = spelling                 # draws PTOAS's spellings of the same text
        self.profile = PROFILES[profile]
        self.lines = []
        self.bindings = {}
        self.arg_types = {}
        self.serial = itertools.count()
        self.regs = {pipe: reset_registers(pipe) for pipe in (Pipe.MTE2, Pipe.MTE3)}
        self.history = []                       # (pipe, number, Footprint) of every copy
        self.issued = {pipe: 0 for pipe in PIPE_TEXT}
        self.known = {b: {a: 0 for a in PIPE_TEXT} for b in PIPE_TEXT}
        self.events = itertools.cycle(range(1 << EVENT_ID_BITS))
        self.by_tokens = by_tokens
        self.token_ids = None                   # the two ids a program's tokens use
        self.holders = {}                       # token id -> the pipe holding it
        self.reads = []                          # (space, start, length) of source bytes
        self.used = {"ub": [0], "gm": []}        # addresses worth reusing, for hazards
        self.windows = self._windows()
        self.fault_pages = []

    # memory layout

    def _windows(self):
        """2 to 4 windows of 1 to 3 pages, with at least two unmapped pages between."""
        rng, windows = self.rng, []
        wanted = rng.randint(2, 4)
        while len(windows) < wanted:
            pages = rng.randint(1, 3)
            where = rng.random()
            if where < 0.4:
                base = rng.randrange(0, 1 << 12) * PAGE
            elif where < 0.55:
                base = GM_SIZE - pages * PAGE
            else:
                base = rng.randrange(0, GM_SIZE // PAGE - pages) * PAGE
            end = base + pages * PAGE
            if all(end + 2 * PAGE <= b or e + 2 * PAGE <= base for b, e in windows):
                windows.append((base, end))
        return sorted(windows)

    def pick_gm(self, span, crossing_length=0):
        """A GM address with `span` mapped bytes after it, or None."""
        rng = self.rng
        fits = [(b, e) for b, e in self.windows if e - b >= span]
        if not fits:
            return None
        reuse = [a for a in self.used["gm"] if any(b <= a and a + span <= e for b, e in fits)]
        choice = rng.random()
        if reuse and choice < 0.3:
            return rng.choice(reuse)
        base, end = rng.choice(fits)
        if choice < 0.5 and crossing_length > 1 and end - base > PAGE:
            cross = base + PAGE - rng.randint(1, crossing_length - 1)
            if base <= cross and cross + span <= end:
                return cross
        if choice < 0.6:
            return end - span
        return base + rng.randint(0, end - base - span)

    def pick_ub(self, span):
        """A 32-byte aligned UB address with `span` bytes after it, or None."""
        rng, size = self.rng, self.profile.ub_size
        if span > size:
            return None
        top = (size - span) // UB_LINE * UB_LINE
        reuse = [a for a in self.used["ub"] if a + span <= size]
        choice = rng.random()
        if reuse and choice < 0.45:
            return rng.choice(reuse)
        if choice < 0.55:
            return top
        if choice < 0.85:
            return min(top, rng.randrange(0, 16384, UB_LINE))
        return rng.randrange(0, top + 1, UB_LINE)

    # values and names

    def name(self, prefix):
        return f"%{prefix}{next(self.serial)}"

    def integer(self, value):
        """An i64 operand holding `value`, spelled one of the ways the text allows."""
        rng = self.rng
        choice = rng.random()
        if choice < 0.6:
            return f"%c{value}_i64"
        if choice < 0.75:
            return f"%c{value}"
        if choice < 0.9:
            name = self.name("k")
            self.lines.append(f"{name} = arith.constant {value} : i64")
            return name
        name = self.name("n")
        self.bindings[name[1:]] = value
        return name

    def boolean(self, value):
        if self.rng.random() < 0.8:
            return "%true" if value else "%false"
        name = self.name("b")
        self.lines.append(f"{name} = arith.constant {'true' if value else 'false'}")
        return name

    def pointer(self, addr, dtype, space):
        """A pointer operand: a bound name, a castptr, or an addptr off either."""
        rng = self.rng
        ptr_type = f"!pto.ptr<{dtype}, {space}>"
        es = DTYPE_BY_NAME[dtype].size
        choice = rng.random()
        if choice < 0.2 and es and addr >= es:
            elements = rng.randint(1, min(64, addr // es))
            base = self.pointer(addr - elements * es, dtype, space)
            name = self.name("q")
            self.lines.append(f"{name} = pto.addptr {base}, {self.integer(elements)} "
                              f": {ptr_type}, i64 -> {ptr_type}")
            return name
        if choice < 0.5:
            name = self.name("p")
            self.lines.append(f"{name} = pto.castptr {self.integer(addr)} : i64 -> {ptr_type}")
            return name
        name = self.name("gm" if space == "gm" else "ub")
        self.bindings[name[1:]] = addr
        self.arg_types[name[1:]] = ptr_type
        return name

    def pad_value(self, type_name):
        """(operand, value) for a pad value of element type `type_name`."""
        rng = self.rng
        dtype = DTYPE_BY_NAME[type_name]
        name = self.name("v")
        if type_name in ("f16", "bf16", "f32"):
            if rng.random() < 0.5:
                bits = rng.getrandbits(dtype.size * 8)
                literal = f"{bits:#x}"
            else:
                literal = repr(rng.choice([0.0, 1.0, -2.5, 0.375, 65504.0 if type_name == "f16"
                                           else 3.0e5, -0.0]))
        elif type_name in ("f8e4m3", "f8e5m2"):
            literal = repr(rng.choice([0.0, 1.0, -2.0, 0.5, 12.0]))
        elif type_name == "hifloat8":
            literal = f"{rng.getrandbits(8):#x}"
        else:
            bits = dtype.size * 8
            low = -(1 << (bits - 1)) if type_name.startswith("i") else 0
            value = rng.randint(low, (1 << bits) - 1 if low == 0 else (1 << (bits - 1)) - 1)
            if rng.random() < 0.5 and -4096 < value < 4096:
                return f"%c{value}_i64", value
            literal = str(value)
        self.lines.append(f"{name} = arith.constant {literal} : {type_name}")
        return name, literal

    # statements

    def statement(self, op, operands, types, clauses=()):
        """Write one statement, on one line or spread over several."""
        rng = self.rng
        head = f"{'pto.' if rng.random() < 0.85 else ''}{op}"
        clause_text = " ".join(f"{name}({', '.join(args)})" for name, args in clauses)
        type_text = ", ".join(types)
        if rng.random() < 0.5:
            self.lines.append(" ".join(filter(None, [head, ", ".join(operands), clause_text,
                                                     ":", type_text])))
            return
        body = ",\n    ".join(operands)
        note = f"    // {op} #{next(self.serial)}"
        self.lines.append(f"{head} {body}{' ' + clause_text if clause_text else ''}\n"
                          f"{note}\n    : {type_text}")

    def flag(self, which, src, dst, event):
        style = self.rng.randrange(3)
        if style == 0:
            items = f"<{src}>, <{dst}>, <EVENT_ID{event}>"
        elif style == 1:
            items = f'"{src}", "{dst}", "EVENT_ID{event}"'
        else:
            items = f"{src}, {dst}, EVENT_ID{event}"
        self.lines.append(f"pto.{which}[{items}]")

    def token(self, which, pipe_text, buf_id):
        rng = self.rng
        mode = rng.randrange(2)
        style = rng.randrange(3)
        if style == 0:
            self.lines.append(f'pto.{which} "{pipe_text}", {buf_id}, {mode}')
        elif style == 1:
            operands = f"{self.integer(buf_id)}, {self.integer(mode)}"
            self.lines.append(f"pto.{which} #pto.pipe<{pipe_text}>, {operands} : i64, i64")
        else:
            self.lines.append(f"{which} <{pipe_text}>, {buf_id}, {mode}")

    def sync(self, a, b):
        """Order every command of pipe a so far before pipe b's next one: a flag pair, a
        barrier of every pipe, which orders every pipe's commands so far before every
        pipe's next ones, or in a program ordered by tokens a token handed on."""
        if self.by_tokens:
            self.hand_on(a, b)
            return
        if self.barriers.random() < BARRIER_SHARE:
            self.lines.append(self.barriers.choice(BARRIER_SPELLINGS))
            for later in PIPE_TEXT:
                self.known[later] = dict(self.issued)
            return
        event = next(self.events)
        self.flag("set_flag", PIPE_TEXT[a], PIPE_TEXT[b], event)
        self.flag("wait_flag", PIPE_TEXT[a], PIPE_TEXT[b], event)
        self.ordered(a, b)

    def hand_on(self, a, b):
        """The tokens' sync: a releases a token that b takes next, having taken it first
        from its holder (which orders the holder before a) if a does not hold it."""
        if self.token_ids is None:
            self.token_ids = self.rng.sample(range(1 << BUF_ID_BITS), 2)
        buf_id = self.rng.choice(self.token_ids)
        holder = self.holders.get(buf_id)
        if holder != a:
            if holder is not None:
                self.token("rls_buf", PIPE_TEXT[holder], buf_id)
            self.token("get_buf", PIPE_TEXT[a], buf_id)
            if holder is not None:
                self.ordered(holder, a)
        self.token("rls_buf", PIPE_TEXT[a], buf_id)
        self.token("get_buf", PIPE_TEXT[b], buf_id)
        self.ordered(a, b)
        self.holders[buf_id] = b

    def release_tokens(self):
        """Each token's holder releases it: the engine keeps tokens from one program to
        the next. From here on flags order the program (an error command's: the RTL is
        given no command after a FIELD_RANGE one, so a token it took would stay held)."""
        for buf_id, holder in sorted(self.holders.items()):
            self.token("rls_buf", PIPE_TEXT[holder], buf_id)
        self.holders.clear()
        self.by_tokens = False

    def ordered(self, a, b):
        """Pipe b's next commands follow pipe a's so far, and what those follow."""
        self.known[b][a] = self.issued[a]
        for q in PIPE_TEXT:
            if q not in (a, b):
                self.known[b][q] = max(self.known[b][q], self.known[a][q])

    def noise_flag(self):
        """A flag or token with a pipe this engine does not have: it must change nothing."""
        rng = self.rng
        if self.by_tokens:
            self.token(rng.choice(["get_buf", "rls_buf"]), rng.choice(EXTERNAL_PIPES),
                       rng.randrange(1 << BUF_ID_BITS))
            return
        ours, theirs = PIPE_TEXT[rng.choice(list(PIPE_TEXT))], rng.choice(EXTERNAL_PIPES)
        pair = (ours, theirs) if rng.random() < 0.5 else (theirs, ours)
        self.flag(rng.choice(["set_flag", "wait_flag"]), *pair, rng.randrange(1 << EVENT_ID_BITS))

    def order_before(self, pipe, footprint):
        """Insert the flags that make `footprint` safe against other pipes' earlier copies."""
        for other in PIPE_TEXT:
            if other == pipe:
                continue
            pending = (fp for p, number, fp in self.history
                       if p == other and number > self.known[pipe][other])
            if any(fp.conflicts(footprint) for fp in pending):
                self.sync(other, pipe)

    def record(self, copy):
        footprint = copy.footprint()
        self.issued[copy.pipe] += 1
        self.history.append((copy.pipe, self.issued[copy.pipe], footprint))
        src_space, dst_space = copy.spaces()
        for row in copy.rows()[:4]:
            for space, addr in zip((src_space, dst_space), row):
                # A packed row may start mid-line; a UB pointer may not.
                self.used[space].append(addr - addr % UB_LINE if space == "ub" else addr)
        self.reads += [(src_space, s, copy.read_bytes()) for s, _ in copy.rows()]

    # copies written out

    def emit(self, copy, ordered=True):
        """Write a copy (and the register writes it needs), with flags right before it.

        The flags go after the copy's operand definitions: a flag statement has no type
        list to end it, so a `%x = ...` line after it would read as its operand."""
        if copy.kind == "ub_ub":
            self.emit_ub_ub(copy)
        elif copy.grouped:
            self.emit_grouped(copy)
        else:
            self.emit_legacy(copy)
        statement = self.lines.pop()
        if ordered:
            self.order_before(copy.pipe, copy.footprint())
        if self.rng.random() < 0.05:
            self.noise_flag()
        if self.rng.random() < 0.08:
            self.sync(*self.rng.sample(list(PIPE_TEXT), 2))     # a flag no hazard needs
        self.lines.append(statement)

    def pointers(self, copy):
        src_space, dst_space = copy.spaces()
        second = copy.dtype2 or copy.dtype
        return ([self.pointer(copy.src, copy.dtype, src_space),
                 self.pointer(copy.dst, second, dst_space)],
                [f"!pto.ptr<{self.spelled(copy.dtype)}, {src_space}>",
                 f"!pto.ptr<{self.spelled(second)}, {dst_space}>"])

    def spelled(self, type_name):
        """An iN element type, sometimes in MLIR's signed spelling siN (the same type)."""
        signed = SIGNED_NAMES.get(type_name)
        return signed if signed and self.spelling.random() < SPELLING_SHARE else type_name

    def emit_ub_ub(self, copy):
        ptrs, types = self.pointers(copy)
        if copy.grouped:
            self.statement("mte_ub_ub", ptrs + [self.integer(copy.length)], types + ["i64"] * 4,
                           [("nburst", [self.integer(v) for v in
                                        (copy.n, copy.src_stride, copy.dst_stride)])])
            return
        values = (copy.sid, copy.n, copy.length, copy.src_stride, copy.dst_stride)
        spelled = "i64 x5" if self.rng.random() < 0.5 else "i64, i64, i64, i64, i64"
        self.statement("copy_ubuf_to_ubuf", ptrs + [self.integer(v) for v in values],
                       types + [spelled])

    def direction(self, copy):
        return "outtoub" if copy.kind == "gm_ub" else "ubtoout"

    def set_registers(self, copy):
        """The legacy register writes this copy needs (and sometimes ones it does not)."""
        regs, rng, direction = self.regs[copy.pipe], self.rng, self.direction(copy)
        (c1, s1, d1), (c2, s2, d2) = copy.hardware_loops()
        if (regs["loop1_count"], regs["loop2_count"]) != (c1, c2) or rng.random() < 0.2:
            self.statement(f"set_loop_size_{direction}", [self.integer(c1), self.integer(c2)],
                           ["i64", "i64"])
        for level, src, dst in (("loop1", s1, d1), ("loop2", s2, d2)):
            if (regs[f"{level}_src_stride"], regs[f"{level}_dst_stride"]) != (src, dst) \
                    or rng.random() < 0.2:
                self.statement(f"set_{level}_stride_{direction}",
                               [self.integer(src), self.integer(dst)], ["i64", "i64"])
        self.write_loop_registers(copy)

    def write_loop_registers(self, copy):
        regs = self.regs[copy.pipe]
        (c1, s1, d1), (c2, s2, d2) = copy.hardware_loops()
        regs.update(loop1_count=c1, loop2_count=c2, loop1_src_stride=s1, loop1_dst_stride=d1,
                    loop2_src_stride=s2, loop2_dst_stride=d2)

    def emit_legacy(self, copy):
        self.set_registers(copy)
        if copy.pad is not None:
            value, type_name = copy.pad
            self.statement("set_mov_pad_val", [value], [type_name])
        ptrs, types = self.pointers(copy)
        if copy.kind == "gm_ub":
            fields = [self.integer(copy.sid), self.integer(copy.n), self.integer(copy.length),
                      self.integer(copy.left), self.integer(copy.right),
                      self.boolean(copy.select), self.integer(copy.cache),
                      self.integer(copy.src_stride), self.integer(copy.dst_stride)]
            scalars = ["i64"] * 5 + ["i1"] + ["i64"] * 3
            self.statement("copy_gm_to_ubuf", ptrs + fields, types + scalars)
        else:
            fields = [self.integer(v) for v in (copy.sid, copy.n, copy.length, copy.cache,
                                                copy.dst_stride, copy.src_stride)]
            self.statement("copy_ubuf_to_gm", ptrs + fields, types + ["i64"] * 6)

    def emit_grouped(self, copy):
        """Either spelling of each part PTOAS offers, drawn apart from the program: the
        cache control as operand or l2_cache_ctl(...) clause, the type list flat or with
        each loop and pad clause's types headed by its keyword."""
        ptrs, types = self.pointers(copy)
        operands, scalars = list(ptrs), list(types)
        has_cache = copy.kind == "gm_ub" or copy.cache_operand
        cache_clause = has_cache and self.spelling.random() < SPELLING_SHARE
        headed = self.spelling.random() < SPELLING_SHARE
        if has_cache and not cache_clause:
            operands.append(self.integer(copy.cache))
            scalars.append("i64")
        operands.append(self.integer(copy.length))
        scalars.append("i64")
        clauses = [("nburst", [self.integer(v) for v in
                               (copy.n, copy.src_stride, copy.dst_stride)])]
        scalars += ["i64"] * 3
        if cache_clause:
            clauses.append(("l2_cache_ctl", [self.integer(copy.cache)]))
            scalars.append("i64")
        for loop in copy.loops:
            clauses.append(("loop", [self.integer(v) for v in loop]))
            scalars += ["loop i64" if headed else "i64", "i64", "i64"]
        if copy.kind == "gm_ub" and copy.select:
            value, type_name = copy.pad
            args, arg_types = [value], [f"pad {type_name}" if headed else type_name]
            if copy.pad_operands == 3:
                args += [self.integer(copy.left), self.integer(copy.right)]
                arg_types += ["i64", "i64"]
            clauses.append(("pad", args))
            scalars += arg_types
        self.statement("mte_gm_ub" if copy.kind == "gm_ub" else "mte_ub_gm", operands, scalars,
                       clauses)
        self.write_loop_registers(copy)

    # drawing legal copies

    def dtype(self):
        names = [t.name for t in DTYPES if t.size and (self.profile.f8 or not t.f8)]
        return self.rng.choice(names)

    def length(self, es):
        rng = self.rng
        choice = rng.random()
        if choice < 0.35:
            elements = rng.randint(1, max(1, 31 // es))           # a row under 32 bytes
        elif choice < 0.8:
            elements = rng.randint(1, 320 // es)
        else:
            elements = rng.randint(1, 1400 // es)
        return elements * es

    def row_count(self):
        return self.rng.choice([1, 1, 1, 2, 2, 3, 4, 5, 8])

    def loops(self, copy, gm_side, ub_span, gm_span, software):
        """Hardware (and software) loops; UB strides aligned, sometimes overlapping.
        `ub_span`, `gm_span`: roughly the bytes one iteration of the rows covers."""
        rng = self.rng
        copy.loops = []
        rows = copy.n
        levels = 3 if software else 2 if not copy.grouped else rng.choice([0, 1, 2, 2])
        for level in range(levels):
            count = rng.choice([1, 1, 1, 2, 2, 3]) if level < 2 else rng.choice([1, 2])
            if rows * count > MAX_ROWS:
                count = 1
            rows *= count
            ub_stride = self.ub_loop_stride(ub_span, count)
            gm_stride = rng.choice([0, gm_span, gm_span + rng.randint(0, 700),
                                    rng.randint(0, 3000)])
            copy.loops.append((count, gm_stride, ub_stride) if gm_side == "src"
                              else (count, ub_stride, gm_stride))

    def ub_loop_stride(self, inner_span, count):
        rng = self.rng
        if count == 1 and rng.random() < 0.3:
            return rng.randint(0, 5000)         # unused: any value is legal
        choice = rng.random()
        if choice < 0.25:
            return rng.choice([0, UB_LINE])     # destinations overlap
        return align_up(inner_span, UB_LINE) + UB_LINE * rng.choice([0, 0, 1, 4])

    def packs_rows(self):
        """Whether a copy that writes no pad packs its UB rows (a stride of len_burst,
        rows starting mid-line), where the profile has packed rows."""
        return self.profile.packed_rows and self.rng.random() < PACKED_SHARE

    def grouped_pad(self, copy):
        rng = self.rng
        pad_type = copy.dtype if rng.random() < 0.7 else self.dtype()
        copy.pad = self.pad_value(pad_type)[0], pad_type

    def draw_gm_ub(self):
        rng = self.rng
        copy = Copy("gm_ub", self.dtype(), grouped=rng.random() < 0.5)
        es = copy.es
        copy.length = self.length(es)
        copy.n = self.row_count()
        copy.select = rng.random() < 0.5
        if copy.select:
            copy.pad_operands = 3 if not copy.grouped or rng.random() < 0.6 else 1
            if copy.pad_operands == 3:
                copy.left = rng.choice([0, rng.randint(0, 32 // es)])
                copy.right = rng.choice([0, rng.randint(0, 32 // es)])
            self.grouped_pad(copy)
            if not copy.grouped and rng.random() < 0.3:
                copy.pad = None          # the pad value already set stays in effect
        footprint = (copy.left + copy.right) * es + copy.length
        if copy.n > 1:
            copy.dst_stride = align_up(footprint, UB_LINE) + UB_LINE * rng.choice([0, 0, 1, 3])
            if not copy.select and self.packs_rows():
                copy.dst_stride = copy.length
            copy.src_stride = copy.length + rng.choice([0, 0, rng.randint(1, 64),
                                                        rng.randint(1, 3000)])
        else:
            copy.dst_stride = rng.choice([0, rng.randint(0, 400), align_up(footprint, UB_LINE)])
            copy.src_stride = rng.randint(0, 5000)
        copy.cache = rng.randint(0, CACHE_MAX)
        if not copy.grouped:
            copy.sid = rng.randint(0, SID_MAX)
        software = copy.grouped and rng.random() < 0.15
        self.loops(copy, "src", copy.n * copy.dst_stride or copy.row_bytes(),
                   copy.n * copy.src_stride or copy.length, software)
        return copy

    def draw_ub_gm(self):
        rng = self.rng
        copy = Copy("ub_gm", self.dtype(), grouped=rng.random() < 0.5)
        copy.length = self.length(copy.es)
        copy.n = self.row_count()
        if copy.n > 1:
            copy.src_stride = align_up(copy.length, UB_LINE) + UB_LINE * rng.choice([0, 0, 1, 3])
            if self.packs_rows():
                copy.src_stride = copy.length
            copy.dst_stride = copy.length + rng.choice([0, 0, rng.randint(1, 64),
                                                        rng.randint(1, 3000)])
        else:
            copy.src_stride = rng.randint(0, 400)
            copy.dst_stride = rng.randint(0, 5000)
        copy.cache = rng.randint(0, CACHE_MAX)
        copy.cache_operand = rng.random() < 0.5
        if not copy.grouped:
            copy.sid = rng.randint(0, SID_MAX)
        software = copy.grouped and rng.random() < 0.15
        self.loops(copy, "dst", copy.n * copy.src_stride or copy.length,
                   copy.n * copy.dst_stride or copy.length, software)
        return copy

    def draw_ub_ub(self):
        rng = self.rng
        copy = Copy("ub_ub", self.dtype(), grouped=rng.random() < 0.5)
        copy.length = rng.choice([1, 1, 2, 3, 8, rng.randint(1, 40)])
        copy.n = rng.choice([1, 2, 3, 4, 6])
        copy.src_stride, copy.dst_stride = rng.randint(0, 3), rng.randint(0, 3)
        if not copy.grouped:
            copy.sid = rng.randint(0, SID_MAX)
        return copy

    def empty(self, copy):
        """Sometimes a count of 0 or len_burst 0: a copy that moves nothing."""
        if self.rng.random() < 0.04:
            if copy.kind != "ub_ub" and self.rng.random() < 0.5 and copy.loops:
                _, s, d = copy.loops[0]
                copy.loops[0] = (0, s, d)
            else:
                copy.n = 0

    def place(self, copy):
        """Give a copy legal addresses; False when its geometry fits nowhere."""
        src_span, dst_span = copy.spans()
        src_space, dst_space = copy.spaces()
        if copy.kind == "ub_ub":
            for _ in range(20):
                src, dst = self.pick_ub(src_span), self.pick_ub(dst_span)
                if src is not None and dst is not None and (
                        src + src_span <= dst or dst + dst_span <= src):
                    copy.src, copy.dst = src, dst
                    return True
            return False
        gm_span, ub_span = (src_span, dst_span) if src_space == "gm" else (dst_span, src_span)
        gm = self.pick_gm(gm_span, copy.length)
        ub = self.pick_ub(ub_span)
        if gm is None or ub is None:
            return False
        copy.src, copy.dst = (gm, ub) if src_space == "gm" else (ub, gm)
        return True

    def legal_copy(self, kind=None):
        draw = {"gm_ub": self.draw_gm_ub, "ub_gm": self.draw_ub_gm, "ub_ub": self.draw_ub_ub}
        while True:
            copy = draw[kind or self.rng.choice(["gm_ub", "gm_ub", "ub_gm", "ub_gm", "ub_ub"])]()
            if self.place(copy):
                self.empty(copy)
                return copy

    def error_copy(self, kind=None):
        """A legal copy to break: without software loops, so that it is one command."""
        copy = self.legal_copy(kind)
        copy.loops = copy.loops[:2]
        return copy

    def add_legal(self):
        copy = self.legal_copy()
        self.emit(copy)
        self.record(copy)

    # the case

    def finish(self, name, seed, error, rerun):
        ub = np.full(self.profile.ub_size, GUARD, dtype=np.uint8)
        images = {base: np.full(end - base, GUARD, dtype=np.uint8) for base, end in self.windows}
        noise = np.random.default_rng(self.rng.getrandbits(64))
        for space, start, length in self.reads:
            if space == "ub":
                end = min(start + length, len(ub))
                ub[start:end] = noise.integers(0, 256, max(0, end - start), dtype=np.uint8)
                continue
            for base, image in images.items():
                lo, hi = max(start, base), min(start + length, base + len(image))
                if lo < hi:
                    image[lo - base:hi - base] = noise.integers(0, 256, hi - lo, dtype=np.uint8)
        gm = tuple((base, image.tobytes()) for base, image in sorted(images.items()))
        text = "\n".join(self.lines) + "\n"
        if self.rng.random() < 0.3:
            text = self.wrap(text)
        return Case(name, text, dict(self.bindings), gm, ub.tobytes(), self.profile.name,
                    tuple(self.fault_pages), error, seed, rerun)

    def wrap(self, text):
        args = ", ".join(f"%{name}: {t}" for name, t in self.arg_types.items())
        body = "".join(f"    {line}\n" for line in text.splitlines())
        return f"module {{\n  func.func @kernel({args}) {{\n{body}    return\n  }}\n}}\n"


# --- error commands: each makes the program's last command break one rule ---------------

def _field_range(p):
    rng = p.rng
    choice = rng.randrange(4)
    if choice == 0:
        direction = rng.choice(["outtoub", "ubtoout"])
        big = rng.choice([1 << 21, (1 << 22) + 5])
        p.statement(f"set_loop_size_{direction}", [p.integer(1), p.integer(big)], ["i64", "i64"])
    elif choice == 1:
        p.statement("set_mov_pad_val", [p.integer(rng.choice([256, 300, -129]))], ["i8"])
    else:
        copy = p.error_copy(rng.choice(["gm_ub", "ub_gm"]))
        copy.grouped = False
        if choice == 2:
            copy.n = 1 << 16
        else:
            copy.src_stride = -UB_LINE if copy.kind == "ub_gm" else -1
        p.emit(copy, ordered=False)


def _type_unsupported(p):
    rng = p.rng
    copy = p.error_copy()
    choice = rng.randrange(3 if p.profile.f8 else 4)
    if choice == 0:
        copy.dtype = rng.choice(SUB_BYTE)
    elif choice == 1:
        sizes = {t.name: t.size for t in DTYPES}
        copy.dtype2 = rng.choice([n for n, s in sizes.items() if s and s != copy.es])
    elif choice == 2:
        copy.pad = (p.integer(0), rng.choice(SUB_BYTE))
        p.statement("set_mov_pad_val", [copy.pad[0]], [copy.pad[1]])
        return
    else:
        copy.dtype = rng.choice(["f8e4m3", "f8e5m2", "hifloat8"])
    p.emit(copy, ordered=False)


def _len_not_element_multiple(p):
    rng = p.rng
    while True:
        copy = p.error_copy(rng.choice(["gm_ub", "ub_gm"]))
        if copy.es > 1:
            break
    copy.length += rng.randint(1, copy.es - 1)
    copy.n = 1
    p.emit(copy, ordered=False)


def _pad_without_select(p):
    copy = p.error_copy("gm_ub")
    copy.grouped, copy.select, copy.pad = False, False, None
    copy.left = p.rng.randint(1, 255)
    p.emit(copy, ordered=False)


def _pad_too_large(p):
    copy = p.error_copy("gm_ub")
    copy.select = True
    if copy.pad is None:
        p.grouped_pad(copy)
    copy.pad_operands = 3
    big = p.rng.randint(32 // copy.es + 1, 255)
    if p.rng.random() < 0.5:
        copy.left = big
    else:
        copy.right = big
    p.emit(copy, ordered=False)


def _ub_misaligned(p):
    rng = p.rng
    copy = p.error_copy()
    ub_side = "src" if copy.kind == "ub_gm" else "dst"
    if copy.kind == "ub_ub":
        ub_side = rng.choice(["src", "dst"])
    choice = rng.randrange(4) if copy.kind != "ub_ub" else 0
    if choice == 3:
        _unpackable_rows(p, copy)
    elif choice == 0:
        setattr(copy, ub_side, getattr(copy, ub_side) + rng.randint(1, UB_LINE - 1))
    elif choice == 1:
        copy.n = max(copy.n, 2)
        stride = "dst_stride" if ub_side == "dst" else "src_stride"
        setattr(copy, stride, align_up(max(getattr(copy, stride), copy.row_bytes()), UB_LINE)
                + rng.randint(1, UB_LINE - 1))
    else:
        copy.loops = copy.hardware_loops()
        count, src, dst = copy.loops[0]
        bump = rng.randint(1, UB_LINE - 1)
        copy.loops[0] = (2, src + bump, dst) if ub_side == "src" else (2, src, dst + bump)
    p.emit(copy, ordered=False)


def _unpackable_rows(p, copy):
    """A UB row stride off a line that SPEC.md's packed rows do not excuse: a stride of
    len_burst on a profile without packed rows or for padded MTE2 rows, or on a5 a stride
    that is not len_burst."""
    rng = p.rng
    copy.n = max(copy.n, 2)
    if copy.length % UB_LINE == 0:
        copy.length += copy.es
    stride = copy.length
    if p.profile.packed_rows:
        if copy.kind == "gm_ub" and rng.random() < 0.5:
            copy.select = True
            if copy.pad is None:
                p.grouped_pad(copy)
        else:
            stride += rng.choice([n for n in range(1, UB_LINE) if (stride + n) % UB_LINE])
    setattr(copy, "dst_stride" if copy.kind == "gm_ub" else "src_stride", stride)


def _stride_overlap(p):
    rng = p.rng
    copy = p.error_copy(rng.choice(["gm_ub", "ub_gm"]))
    copy.n = max(copy.n, 2)
    gm_stride = "src_stride" if copy.kind == "gm_ub" else "dst_stride"
    ub_stride = "dst_stride" if copy.kind == "gm_ub" else "src_stride"
    footprint = (copy.left + copy.right) * copy.es + copy.length
    if rng.random() < 0.5 or footprint <= UB_LINE:
        setattr(copy, ub_stride, align_up(footprint, UB_LINE))
        setattr(copy, gm_stride, rng.randint(0, copy.length - 1))
    else:
        setattr(copy, gm_stride, copy.length + rng.randint(0, 100))
        setattr(copy, ub_stride, (footprint - 1) // UB_LINE * UB_LINE)
    p.emit(copy, ordered=False)


def _ub_range(p):
    rng = p.rng
    copy = p.error_copy()
    copy.n, copy.loops = max(copy.n, 1), [(max(c, 1), s, d) for c, s, d in copy.loops]
    size = p.profile.ub_size
    src_span, dst_span = copy.spans()
    sides = {"gm_ub": ["dst"], "ub_gm": ["src"], "ub_ub": ["src", "dst"]}[copy.kind]
    side = rng.choice(sides)
    span = src_span if side == "src" else dst_span
    if rng.random() < 0.5:
        addr = size - span + UB_LINE * rng.randint(1, max(1, span // UB_LINE))
        addr = max(0, addr // UB_LINE * UB_LINE)
        if addr + span <= size:
            addr = size
    else:
        addr = size + UB_LINE * rng.randint(0, 64)
    setattr(copy, side, addr)
    if copy.kind == "ub_ub":
        other = "dst" if side == "src" else "src"
        setattr(copy, other, 0)
    p.emit(copy, ordered=False)


def _gm_side_copy(p):
    """(copy, side, span): a GM<->UB copy with at least one row at every loop level, the
    side of it ("src" or "dst") that is in GM, and that side's span."""
    copy = p.error_copy(p.rng.choice(["gm_ub", "ub_gm"]))
    copy.n = max(copy.n, 1)
    copy.loops = [(max(c, 1), s, d) for c, s, d in copy.loops]
    side = "src" if copy.kind == "gm_ub" else "dst"
    return copy, side, copy.spans()[0 if side == "src" else 1]


def _gm_range(p):
    while True:
        copy, side, span = _gm_side_copy(p)
        if span > 1:        # a span of 1 byte cannot cross 2^40 from a 40-bit address
            break
    setattr(copy, side, GM_SIZE - span + p.rng.randint(1, span - 1))
    p.emit(copy, ordered=False)


def _ub_overlap(p):
    rng, size = p.rng, p.profile.ub_size
    while True:
        copy = p.error_copy("ub_ub")
        copy.n = max(copy.n, 1)
        src_span, dst_span = copy.spans()
        if rng.random() < 0.5:
            copy.dst = copy.src + UB_LINE * rng.randint(0, src_span // UB_LINE - 1)
        else:
            copy.dst = max(0, copy.src - dst_span + UB_LINE)
        if copy.dst + dst_span <= size and copy.src < copy.dst + dst_span:
            break
    p.emit(copy, ordered=False)


def _bus_error(p):
    """A copy whose GM rows run off the end of a window into unmapped (or SLVERR) pages."""
    rng = p.rng
    while True:
        copy, side, span = _gm_side_copy(p)
        windows = [(b, e) for b, e in p.windows if e + PAGE < GM_SIZE and e - b >= 1]
        base, end = rng.choice(windows)
        over = rng.randint(1, min(span, PAGE))
        start = end - span + over
        if start >= base:
            break
    setattr(copy, side, start)
    if rng.random() < 0.5:
        p.fault_pages.append(end)
    p.emit(copy)
    p.record(copy)


ERROR_BUILDERS = {
    ErrorCode.FIELD_RANGE: _field_range,
    ErrorCode.TYPE_UNSUPPORTED: _type_unsupported,
    ErrorCode.LEN_NOT_ELEMENT_MULTIPLE: _len_not_element_multiple,
    ErrorCode.PAD_WITHOUT_SELECT: _pad_without_select,
    ErrorCode.PAD_TOO_LARGE: _pad_too_large,
    ErrorCode.UB_MISALIGNED: _ub_misaligned,
    ErrorCode.STRIDE_OVERLAP: _stride_overlap,
    ErrorCode.UB_RANGE: _ub_range,
    ErrorCode.GM_RANGE: _gm_range,
    ErrorCode.UB_OVERLAP: _ub_overlap,
    ErrorCode.BUS_ERROR: _bus_error,
}


def generate(seed, error=AUTO, profile="a5", copies=None):
    """The case a seed names. `error`: AUTO, None (a legal program) or an ErrorCode."""
    if error == AUTO:
        # drawn apart from the program, so the spec printed for the case (SEED or
        # SEED/ERROR_CODE) names the same program when it is run again
        choice = random.Random(f"mte-error:{seed}")
        error = choice.choice(ERROR_CLASSES) if choice.random() < ERROR_SHARE else None
    rng = random.Random(seed)
    # drawn apart too, so the programs ordered by flags are those the seeds always named
    by_tokens = random.Random(f"mte-tokens:{seed}").random() < TOKEN_SHARE
    p = _Program(rng, profile, random.Random(f"mte-barrier:{seed}"),
                 random.Random(f"mte-spelling:{seed}"), by_tokens)
    for _ in range(copies if copies is not None else rng.randint(2, 10)):
        p.add_legal()
    p.release_tokens()
    if error is not None:
        ERROR_BUILDERS[ErrorCode(error)](p)
    label = spec(seed) if error is None else spec(seed, error)
    return p.finish(f"random {label}", seed, error, f"python -m tb.run --case {label}")


# --- the seed examples as cases ----------------------------------------------------------

def _pages(base, data):
    """A window rounded out to whole pages, GUARD around the data."""
    lo = base // PAGE * PAGE
    hi = align_up(base + len(data), PAGE)
    image = bytearray([GUARD]) * (hi - lo)
    image[base - lo:base - lo + len(data)] = bytes(data)
    return lo, bytes(image)


def example_cases(profile="a5", fill=0):
    """model/seeds.py's examples: the seed programs with their bindings and memory, in a
    UB of `profile`'s size holding `fill` outside the example's own data. They are written
    for a5's UB; on a smaller one an example that reaches past its end ends in UB_RANGE."""
    from model.seeds import EXAMPLES
    out = []
    for index, example in enumerate(EXAMPLES):
        ub = np.full(PROFILES[profile].ub_size, fill, dtype=np.uint8)
        for addr, data in example.ub:
            ub[addr:addr + len(data)] = np.frombuffer(bytes(data), dtype=np.uint8)
        gm = []
        for base, data in example.gm:
            gm.append(_pages(base, bytes(data)))     # bytes(n) for a window of n zeros
        out.append(Case(f"example {example.name}", example.program, dict(example.bindings),
                        tuple(gm), ub.tobytes(), profile,
                        rerun=f"python -m tb.run --example {index}"))
    return out


# --- writing a case out for `mte run` ----------------------------------------------------

def run_arguments(case, directory):
    """Write the program and its memory to a directory; returns `mte run`'s arguments."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "program.pto").write_text(case.text)
    (directory / "ub.bin").write_bytes(case.ub)
    args = [str(directory / "program.pto"), "--profile", case.profile,
            "--ub", f"0={directory / 'ub.bin'}"] + ["--skip-compute"] * case.skip_compute
    for base, data in case.gm:
        path = directory / f"gm_{base:010x}.bin"
        path.write_bytes(data)
        args += ["--gm", f"{base:#x}={path}"]
    for name, value in case.bindings.items():
        args += ["--bind", f"{name}={value:#x}"]
    return args


def write_case(case, directory):
    """Write the program and its memory to a directory; returns the `mte run` line."""
    return " ".join(["mte", "run", *run_arguments(case, directory)])


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m tb.programs",
        description="Print a generated case's program, or write it out for `mte run`.")
    parser.add_argument("case", help="SEED or SEED/ERROR_CODE (as printed by tb.run)")
    parser.add_argument("--profile", default="a5", choices=list(PROFILES))
    parser.add_argument("--write", metavar="DIR", help="write program and memories to DIR")
    args = parser.parse_args(argv)
    seed, error = parse_spec(args.case)
    case = generate(seed, error, args.profile)
    if args.write:
        print(write_case(case, args.write))
    else:
        sys.stdout.write(case.text)
        print(f"// bindings: {case.bindings}", file=sys.stderr)
        print(f"// windows: {[(hex(b), len(d)) for b, d in case.gm]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
