"""PTO program text -> the engine's instructions (`Instr`).

The text is MLIR-like; newlines carry no meaning and `//` starts a comment:

    program   := item*
    item      := module | func | 'return' [operands [':' types]] | statement
    module    := 'module' [@name] ['attributes' {...}] '{' item* '}'
    func      := 'func.func' [visibility] @name '(' [%arg ':' type {...}?, ...] ')'
                 ['->' types] ['attributes' {...}] ['{' item* '}']
    statement := [%result '='] op ['[' flag, flag, flag ']' | pipe] [%a (',' %b)*] clause*
                 [{attrs}] [':' signature] [{attrs}]
    flag, pipe:= "NAME" | <NAME> | #attr<NAME> | NAME          PIPE_MTE2, EVENT_ID0, ...
    clause    := name '(' [%a (',' %b)*] ')'       nburst / loop / loop1 / loop2 / pad /
                                                    l2_cache_ctl
    signature := types ['->' types]  |  '(' types ')' '->' types
    types     := [kw] type [xN] (',' [kw] type [xN])*         `i64 x5` = five i64; kw, a
                                                    clause keyword heading its types
    type      := !pto.ptr<T, gm|ub> | <T, gm|ub> | i64 | i1 | index | f32 | ...

Tokens are read as the parser needs them (the first error in reading order is reported
as its token is read); MAX_NESTING bounds bracket depth and MAX_DIGITS a run of digits,
so no stage recurses or converts numbers without bound (docs/semantics.md).

The `pto.` prefix of an op is optional. `arith.constant`, `pto.castptr` and `pto.addptr`
define values; every other op becomes one or more `Instr`s. The tile ops (`tassign`,
`alloc_tile`, `make_tensor_view`, `partition_view`, `tload`, `tprefetch`, `tstore`) are
read and lowered by model/tiles.py; the scalar code (`arith` integer ops, `scf.for`,
`scf.if`, the core queries) is evaluated by model/scalar.py. Compute ops (vector scopes,
`pto.v*`, mask and scalar UB ops) are an error, or skipped and counted when `parse` is
given a Counter (`skipped`). A `%x =` always starts a
statement, so an op without operands (a flag, a barrier) may be followed by a definition.
`arith.constant true` / `false` (optionally `: i1`) are the i1 values 1 and 0.

Names. A `%name` is, in this order: a value the program defined; a constant by name
(`%c128`, `%c128_i64`, `%c-1_i64`, MLIR's uniquified `%c0_i64_0`, `%true`, `%false`,
`%true_0`);
a binding passed to `parse` (written without `%`). Anything else is a ProgramError.
Pointer operands take their element type and memory space from the op's type list, so a
free name bound to an integer is a byte address.

Pad values. `set_mov_pad_val %v : T` (and the `pad(%v ...)` clause, typed by its entry
in the type list) stores the bit pattern of %v in T, zero-extended to 64 bits. Integers
and floats convert numerically (an integer into a float type becomes that number); to
give raw bits, define the value in T with a hex literal (`arith.constant 0x7E00 : f16`).
Floats round to nearest-even; `f8e4m3` is the OCP E4M3FN format (no infinities, max
448) and `f8e5m2` the IEEE-like E5M2. `hifloat8` pads must be zero or a hifloat8 hex
constant. A value that does not fit T is carried as a deferred FIELD_RANGE.

Grouped v0.6 forms expand to the register writes they imply, then the legacy copy:
set_loop_size, set_loop1_stride, set_loop2_stride, [set_mov_pad_val], copy. Loop clause
1 is the hardware loop1 (inner), clause 2 loop2 (outer). Clauses 3, 4, ... are software
loops around the command, each further clause one level further out (clause 3 is the
innermost software loop, the last clause the outermost); every iteration is one more copy
whose source and destination addresses are advanced by that iteration's strides. The
register writes are emitted once, before the first copy. A software count that does not
fit the hardware loop-count field yields a single copy carrying a deferred FIELD_RANGE.

Barriers. `pto.barrier <PIPE_X>` (pipe_barrier) becomes flag pairs, no command of its own:
set_flag[X, X, E] and wait_flag[X, X, E] for one of the engine's pipes, and for PIPE_ALL
set_flag[A, B, E] for every two different pipes A, B, then the six matching wait_flags.
E is the lowest event id on which every earlier set_flag of those pipe pairs has had its
wait_flag. A barrier on a pipe the engine does not have emits nothing.

Flags. A wait_flag between two of the engine's pipes must consume a set_flag earlier in
program order (one no earlier wait_flag consumed): a program's result is its program
order, and the engine would hold the waiting pipe for a later set_flag, or forever. At
no point may more than FLAG_DEPTH (7) set_flags of one flag wait in program order for
their wait_flags: the engine counts that many per flag.

Tokens. `get_buf "PIPE_X", %id, %mode [: i64, i64]` / `rls_buf ...` (operands may be
integer literals). Taken in program order, the get_bufs and rls_bufs of one token id on the
engine's pipes alternate: a get_buf finds the token free (never taken, or released by the
rls_buf of its last get_buf), and an rls_buf releases a token its own pipe holds; and the
program releases every token it takes. The engine hands a token on in program order, so
any other order would hold a pipe at a get_buf until a later rls_buf, or forever, and it
keeps a token held after a program, for the next program's get_buf to wait on. Tokens
of a pipe the engine does not have are dropped and take no part in the rule.
"""

import itertools
import math
import re
from collections import Counter
from dataclasses import dataclass, field

from .errors import BindingError, ProgramError
from .floats import FLOAT_FORMATS, decode_float, encode_float
from .isa import (DTYPE_BY_NAME, EVENT_ID_BITS, EXTERNAL_PIPE_NAMES, FLAG_DEPTH,
                  OP_BY_MNEMONIC, PIPE_NAMES, PROFILES, DEFAULT_PROFILE, DType, ErrorCode,
                  Pipe)
from .program import Instr
from .scalar import SCALAR_OPS, ScalarCode
from .tiles import TILE_OPS, TileScope

# A grouped op unrolled into more copies than this is refused rather than materialised.
MAX_SOFTWARE_COPIES = 1 << 16
# Brackets ({, (, [, <) nest at most this deep: parsing nested items recurses.
MAX_NESTING = 100
# A digit run (a literal, %c123_i64, EVENT_ID3, x5) has at most this many digits: every
# field is 64 bits or narrower, and converting longer runs costs time quadratic in length.
MAX_DIGITS = 100
# An evaluated scalar (model/scalar.py) has at most this many bits: its exact arithmetic
# would otherwise grow without bound (a value squared in a loop).
MAX_VALUE_BITS = 512

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<comment>//[^\n]*)
  | (?P<value>%[A-Za-z0-9_$.\-]+)
  | (?P<symbol>@[A-Za-z0-9_$.]+)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<arrow>->)
  | (?P<number>-?(?:0x[0-9A-Fa-f]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?))
  | (?P<dialect_type>![A-Za-z_][A-Za-z0-9_.]*)
  | (?P<attribute>\#[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.$]*)
  | (?P<punct>[(){}\[\]<>,:=*?])
""", re.VERBOSE | re.ASCII)      # ASCII: a digit is 0-9, never another script's digit

_CONSTANT_NAME = re.compile(r"c(-?\d+)(?:_(?:i|si|ui|u)\d+|_index)?(?:_\d+)?", re.ASCII)
_BOOLEAN_NAME = re.compile(r"(true|false)(?:_\d+)?")
_INTEGER_TYPE = re.compile(r"(?:i|si|ui|u)\d+|index", re.ASCII)
_FLOAT_TYPE = re.compile(r"bf16|f16|f32|f64")
_REPEAT = re.compile(r"x(\d+)", re.ASCII)
_EVENT = re.compile(r"EVENT_ID(\d+)", re.ASCII)
_LONG_DIGITS = re.compile(r"[0-9]{%d}" % (MAX_DIGITS + 1))
_OPENING, _CLOSING = "{([<", "})]>"
_WORDS = ("value", "symbol", "number", "dialect_type", "attribute", "ident")

_GROUPED = ("mte_gm_ub", "mte_ub_gm", "mte_ub_ub")
_LOOP_CLAUSES = ("loop", "loop1", "loop2")
# A clause keyword heading its types in a grouped op's type list, as PTOAS writes them.
_CLAUSE_TYPE_KEYWORD = re.compile(r"loop\d*|pad|l2_cache_ctl", re.ASCII)
# Compute ops: the vector scopes and the vector, mask and scalar UB ops of a kernel, which
# run on pipes this engine does not have (`mte run --skip-compute` skips them).
_COMPUTE_REGIONS = ("pto.vecscope", "pto.strict_vecscope")
_COMPUTE_OP = re.compile(r"pto\.(?:v\w+|p(?:set|ge|lt)_b\d+|load|store)", re.ASCII)
_FLAGS = ("set_flag", "wait_flag")
_TOKENS = ("get_buf", "rls_buf")
_INTEGER_LITERAL = re.compile(r"-?(?:0x[0-9A-Fa-f]+|\d+)")
_ENGINE_PIPES = tuple(PIPE_NAMES.values())


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    line: int
    column: int
    start: int
    end: int

    def describe(self):
        return "end of input" if self.kind == "eof" else repr(self.text)


@dataclass(frozen=True)
class PtrType:
    elem: DType
    space: str
    token: Token = field(compare=False)
    text: str = field(compare=False)


@dataclass(frozen=True)
class ScalarType:
    name: str
    token: Token = field(compare=False)
    text: str = field(compare=False)


@dataclass(frozen=True)
class OpaqueType:
    """A dialect type this engine never takes as an operand (tiles, views, ...)."""
    token: Token = field(compare=False)
    text: str = field(compare=False)


@dataclass(frozen=True)
class Value:
    number: int | float
    type: PtrType | ScalarType | None = None
    bits: int | None = None      # a float constant's exact bit pattern in its own type


@dataclass(frozen=True)
class Arg:
    """One operand of a statement, resolved, with its entry in the type list."""
    token: Token
    value: Value
    type: PtrType | ScalarType | OpaqueType


@dataclass
class Clause:
    name: Token
    operands: list


@dataclass
class Statement:
    op: Token
    name: str                     # mnemonic without the optional `pto.` prefix
    result: Token | None
    flags: list = field(default_factory=list)       # [(name, token)]: flag [...], barrier pipe
    bracket: Token | None = None
    operands: list = field(default_factory=list)    # value tokens
    clauses: list = field(default_factory=list)
    types: list = field(default_factory=list)
    result_types: list = field(default_factory=list)
    colon: Token | None = None
    type_heads: list = field(default_factory=list)  # [(clause keyword, first type index)]
    text: str = ""


def _error(token, message):
    return ProgramError(message, token.line, token.column)


def read_tokens(text):
    """The tokens of `text`, read one at a time, so that an error in the first lines is
    reported before the rest of a long text is read. Nesting of brackets deeper than
    MAX_NESTING and digit runs longer than MAX_DIGITS are refused here, at the token that
    exceeds them: no later stage then recurses without bound or converts a number of
    unbounded size."""
    pos, line, line_start, depth = 0, 1, 0, 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        column = pos - line_start + 1
        if not match:
            if text[pos] == '"':
                raise ProgramError("unterminated string", line, column)
            raise ProgramError(f"unexpected character {text[pos]!r}", line, column)
        kind = match.lastgroup
        if kind not in ("space", "comment"):
            token = Token(kind, match.group(), line, column, pos, match.end())
            depth = _nesting(token, depth)
            if kind != "string" and _LONG_DIGITS.search(token.text):
                raise _error(token, f"a number of more than {MAX_DIGITS} digits")
            glued = text[token.end:token.end + 1]
            if kind in _WORDS and glued.isalnum() and not glued.isascii():
                # `x٣`, `%c٣`: a word that goes on in another script is that script's
                # character, not a shorter ASCII word and an error after it
                raise ProgramError(f"unexpected character {glued!r}", line,
                                   token.end - line_start + 1)
            yield token
        newlines = match.group().count("\n")
        if newlines:
            line += newlines
            line_start = pos + match.group().rindex("\n") + 1
        pos = match.end()
    yield Token("eof", "", line, pos - line_start + 1, pos, pos)


def _nesting(token, depth):
    """Bracket depth after `token`; the parser checks that brackets match."""
    if token.kind != "punct":
        return depth
    if token.text in _OPENING:
        if depth == MAX_NESTING:
            raise _error(token, f"nesting deeper than {MAX_NESTING} levels of brackets")
        return depth + 1
    return max(depth - 1, 0) if token.text in _CLOSING else depth


def tokenize(text):
    return list(read_tokens(text))


def parse(text, bindings=None, profile=DEFAULT_PROFILE, *, strict_bindings=False,
          skipped=None):
    """Parse a PTO program into engine instructions. Raises ProgramError; with
    strict_bindings, also BindingError for a binding the program never reads. The
    profile's UB size bounds the tiles `pto.tassign` places (model/tiles.py).
    `skipped`: None, and a compute op is a ProgramError; or a Counter, and compute ops
    are skipped and counted in it by name (a vector scope and each op inside it)."""
    parser = _Parser(text, bindings, PROFILES[profile], strict_bindings)
    parser.skipped = skipped
    return parser.parse_program()


def _integer_range(dtype):
    width = dtype.size * 8
    low = -(1 << (width - 1)) if dtype.name.startswith("i") else 0
    return low, (1 << width) - 1


def pad_pattern(value, dtype, token):
    """(pad_val bits, deferred error) for `value` stored in element type `dtype`."""
    if dtype.size == 0:
        return 0, (ErrorCode.TYPE_UNSUPPORTED, f"pad type {dtype.name} is sub-byte")
    own_type = value.type.name if isinstance(value.type, ScalarType) else None
    if value.bits is not None and own_type == dtype.name:
        return value.bits, None
    if own_type == "hifloat8":
        raise _error(token, f"a hifloat8 constant cannot be converted to {dtype.name}")
    misfit = (ErrorCode.FIELD_RANGE, f"pad value {value.number} does not fit {dtype.name}")
    if dtype.name in FLOAT_FORMATS:
        try:
            bits = encode_float(float(value.number), FLOAT_FORMATS[dtype.name])
        except OverflowError:               # an integer beyond every float's range
            bits = None
        return (0, misfit) if bits is None else (bits, None)
    if dtype.name == "hifloat8":
        if value.number == 0:
            return 0, None
        raise _error(token, "a hifloat8 pad value must be 0 or a hifloat8 hex constant")
    number = value.number
    if isinstance(number, float) and not number.is_integer():
        return 0, misfit
    low, high = _integer_range(dtype)
    if not low <= int(number) <= high:
        return 0, misfit
    return int(number) & ((1 << (dtype.size * 8)) - 1), None


# --- the parser ---------------------------------------------------------------------

def _pointer_fields(op):
    """Fields that take a pointer operand: gm_src, ub_dst, ... (not the strides)."""
    return {f.name for f in op.fields if f.space and f.name.startswith(f.space + "_")}


def _operand_fields(op):
    return [f for f in op.fields if f.name != "dtype"]


def _copy_dtype(pointer_types):
    """dtype code of the copy and the deferred error of a size mismatch. The copy's type
    is the first pointer's; of two types of one size, an f8 type wins, so a profile
    without f8 rejects the copy whichever pointer names it (the size, all the engine
    uses of a type otherwise, is the same)."""
    first = pointer_types[0].elem
    other = next((t.elem for t in pointer_types if t.elem.size != first.size), None)
    if other is None:
        return next((t.elem for t in pointer_types if t.elem.f8), first).code, None
    return first.code, (ErrorCode.TYPE_UNSUPPORTED,
                        f"pointer element types {first.name} ({first.size} bytes) and "
                        f"{other.name} ({other.size} bytes) differ in size")


def _ungranted_wait(src, dst, event):
    return (f"wait_flag[PIPE_{Pipe(src).name}, PIPE_{Pipe(dst).name}, EVENT_ID{event}] has no "
            f"earlier set_flag to consume: a program's result is its program order (SPEC.md), "
            f"so each wait_flag follows its set_flag (the engine would hold "
            f"PIPE_{Pipe(dst).name} until a later set_flag, or forever)")


def _uncounted_set(src, dst, event):
    return (f"set_flag[PIPE_{Pipe(src).name}, PIPE_{Pipe(dst).name}, EVENT_ID{event}] would be "
            f"the {FLAG_DEPTH + 1}th that no wait_flag has consumed: the engine counts at most "
            f"{FLAG_DEPTH} per flag and holds PIPE_{Pipe(src).name} at a set beyond them "
            f"until a wait_flag consumes one, which can hang the engine")


def _pipe_name(pipe):
    return f"PIPE_{Pipe(pipe).name}"


def _token_misuse(mnemonic, pipe, buf_id, holder):
    """Why a get_buf / rls_buf breaks the token rule, or None. `holder`: (pipe, op
    token) of the get_buf that holds the token, or None when it is free."""
    if mnemonic == "get_buf" and holder is not None:
        return (f"get_buf {_pipe_name(pipe)} takes token {buf_id}, which "
                f"{_pipe_name(holder[0])} took at line {holder[1].line} and has not released "
                f"before it in program order: the engine hands a token on in program order, "
                f"so {_pipe_name(pipe)} would wait for a later rls_buf, or forever")
    if mnemonic == "rls_buf" and holder is None:
        return (f"rls_buf {_pipe_name(pipe)} releases token {buf_id}, which no get_buf holds "
                f"at this point in program order")
    if mnemonic == "rls_buf" and holder[0] != pipe:
        return (f"rls_buf {_pipe_name(pipe)} releases token {buf_id}, which "
                f"{_pipe_name(holder[0])} holds (get_buf at line {holder[1].line}): only the "
                f"holder releases a token")
    return None


def _pipe(name, token):
    if name in PIPE_NAMES:
        return PIPE_NAMES[name]
    if name in EXTERNAL_PIPE_NAMES:
        return Pipe.EXTERNAL
    raise _error(token, f"unknown pipe {name!r}: the ISA's pipes are "
                        f"{', '.join((*PIPE_NAMES, *EXTERNAL_PIPE_NAMES))}")


def _statement_text(source):
    return " ".join(re.sub(r"//[^\n]*", "", source).split())


class _Parser:
    def __init__(self, text, bindings, profile, strict_bindings=False):
        self.text = text
        self.tokens = []           # read so far, from the lazy `read_tokens(text)`
        self.unread = read_tokens(text)
        self.pos = 0
        self.bindings = {name.lstrip("%"): v for name, v in (bindings or {}).items()}
        self.values = {}      # names the program defined
        self.arg_types = {}   # declared types of function arguments
        self.instrs = []
        self.flag_balance = Counter()   # (src, dst, event): set_flags so far less wait_flags
        self.tile_scope = TileScope(profile)
        self.token_holders = {}         # buf_id: (pipe, op token) of the get_buf holding it
        self.scalar_code = ScalarCode()
        self.skipped = None             # a Counter of skipped compute ops, or None
        self.strict_bindings = strict_bindings
        self.bindings_read = set()
        if strict_bindings:
            for name in self.bindings:
                if _CONSTANT_NAME.fullmatch(name) or _BOOLEAN_NAME.fullmatch(name):
                    raise BindingError(name, f"%{name} is a constant by name, which a "
                                             "binding cannot change")

    # token stream

    def peek(self, ahead=0):
        at = self.pos + ahead
        if at < len(self.tokens):
            return self.tokens[at]
        while len(self.tokens) <= at and (not self.tokens or self.tokens[-1].kind != "eof"):
            self.tokens.append(next(self.unread))
        return self.tokens[min(at, len(self.tokens) - 1)]

    def advance(self):
        token = self.peek()
        if token.kind != "eof":
            self.pos += 1
        return token

    def at(self, text):
        token = self.peek()
        return token.kind not in ("string", "eof") and token.text == text

    def accept(self, text):
        return self.advance() if self.at(text) else None

    def expect(self, text):
        if not self.at(text):
            raise _error(self.peek(), f"expected {text!r}, found {self.peek().describe()}")
        return self.advance()

    def expect_kind(self, kind, what):
        if self.peek().kind != kind:
            raise _error(self.peek(), f"expected {what}, found {self.peek().describe()}")
        return self.advance()

    def skip_balanced(self, opening, closing):
        start = self.expect(opening)
        depth = 1
        while depth:
            token = self.advance()
            if token.kind == "eof":
                raise _error(start, f"unclosed {opening!r}")
            if token.kind == "punct":
                depth += (token.text == opening) - (token.text == closing)

    # structure

    def parse_program(self):
        self.parse_items(closed_by_brace=False)
        self.check_tokens_released()
        unread = [name for name in self.bindings if name not in self.bindings_read]
        if self.strict_bindings and unread:
            raise BindingError(unread[0], f"the program never uses %{unread[0]}")
        return self.instrs

    def parse_items(self, closed_by_brace):
        while True:
            token = self.peek()
            if token.kind == "eof":
                if closed_by_brace:
                    raise _error(token, "expected '}', found end of input")
                return
            if self.at("}"):
                if not closed_by_brace:
                    raise _error(token, "unmatched '}'")
                self.advance()
                return
            if self.at("module"):
                self.parse_module()
            elif self.at("func.func"):
                self.parse_func()
            elif self.at("return"):
                self.parse_return()
            else:
                self.parse_statement()

    def parse_module(self):
        self.advance()
        if self.peek().kind == "symbol":
            self.advance()
        if self.accept("attributes"):
            self.skip_balanced("{", "}")
        self.expect("{")
        self.parse_items(closed_by_brace=True)

    def parse_func(self):
        self.advance()
        if self.peek().kind == "ident":       # visibility: private, public, nested
            self.advance()
        self.expect_kind("symbol", "a function name such as @kernel")
        outer_values, outer_args = dict(self.values), dict(self.arg_types)
        self.expect("(")
        while not self.at(")"):
            name = self.expect_kind("value", "an argument such as %arg0")
            self.expect(":")
            self.arg_types[name.text[1:]] = self.parse_type()
            if self.at("{"):
                self.skip_balanced("{", "}")
            if not self.accept(","):
                break
        self.expect(")")
        if self.accept("->"):
            self.parse_type_group()
        if self.accept("attributes"):
            self.skip_balanced("{", "}")
        if self.accept("{"):
            self.parse_items(closed_by_brace=True)
        self.values, self.arg_types = outer_values, outer_args

    def parse_return(self):
        self.advance()
        self.parse_operand_list()
        if self.at(":"):
            self.parse_signature()

    # types

    def parse_type(self):
        token = self.peek()
        if token.kind == "dialect_type" and token.text == "!pto.ptr":
            self.advance()
            return self.parse_pointer_body(token)
        if token.kind == "punct" and token.text == "<":
            return self.parse_pointer_body(token)
        if token.kind == "dialect_type":
            self.advance()
            if self.at("<"):
                self.skip_balanced("<", ">")
            return OpaqueType(token, self.source(token))
        if token.kind == "ident":
            self.advance()
            if not (_INTEGER_TYPE.fullmatch(token.text) or _FLOAT_TYPE.fullmatch(token.text)
                    or token.text in DTYPE_BY_NAME):
                raise _error(token, f"unknown type {token.text!r}")
            return ScalarType(token.text, token, token.text)
        raise _error(token, f"expected a type, found {token.describe()}")

    def parse_pointer_body(self, start):
        self.expect("<")
        elem = self.expect_kind("ident", "an element type")
        if elem.text not in DTYPE_BY_NAME:
            raise _error(elem, f"unknown element type {elem.text!r}")
        self.expect(",")
        space = self.expect_kind("ident", "a memory space (gm or ub)")
        if space.text not in ("gm", "ub"):
            raise _error(space, f"unknown memory space {space.text!r} (gm or ub)")
        self.expect(">")
        return PtrType(DTYPE_BY_NAME[elem.text], space.text, start, self.source(start))

    def parse_type_list(self, heads=None):
        """Types separated by commas. With a `heads` list, a clause keyword may head the
        types that follow it (`loop i64, i64, i64`): each is recorded there as (keyword
        token, index of its first type)."""
        types = []
        while True:
            keyword = self.peek()
            if heads is not None and keyword.kind == "ident" and \
                    _CLAUSE_TYPE_KEYWORD.fullmatch(keyword.text):
                heads.append((self.advance(), len(types)))
            item = self.parse_type()
            types += [item] * self.repeat_count()
            if not self.accept(","):
                return types

    def repeat_count(self):
        """The N of a type's `xN`, else 1. Each type stands for an operand of at least two
        characters (`%a`), so N beyond half the text's length cannot be right and is
        refused before a list that long is built."""
        token = self.peek()
        repeat = _REPEAT.fullmatch(token.text) if token.kind == "ident" else None
        if not repeat:
            return 1
        self.advance()
        count = int(repeat.group(1))
        if count > len(self.text) // 2:
            raise _error(token, f"{token.text} repeats a type more times than the program "
                                "has operands")
        return count

    def parse_type_group(self, heads=None):
        """A type list, possibly parenthesised (and then possibly empty)."""
        if not self.accept("("):
            return self.parse_type_list(heads)
        types = [] if self.at(")") else self.parse_type_list(heads)
        self.expect(")")
        return types

    def parse_signature(self, heads=None):
        colon = self.expect(":")
        operand_types = self.parse_type_group(heads)
        result_types = self.parse_type_group() if self.accept("->") else []
        return colon, operand_types, result_types

    def source(self, start):
        """Source text from `start` to the last token consumed."""
        return self.text[start.start:self.tokens[self.pos - 1].end]

    # statements

    def at_result(self):
        """At `%x =`: the start of the next statement, not an operand of this one."""
        return self.peek().kind == "value" and self.peek(1).text == "="

    def parse_operand_list(self):
        operands = []
        if self.peek().kind != "value" or self.at_result():
            return operands
        operands.append(self.advance())
        while self.accept(","):
            operands.append(self.expect_kind("value", "an operand such as %x"))
        return operands

    def parse_flag_item(self):
        """A pipe or event name: `"NAME"`, `<NAME>`, `#pto.pipe<NAME>` or `NAME`."""
        token = self.peek()
        if token.kind == "string":
            self.advance()
            return token.text[1:-1], token
        if token.kind == "attribute":
            self.advance()
        angled = self.accept("<")
        name = self.expect_kind("ident", "a pipe or event name")
        if angled:
            self.expect(">")
        return name.text, name

    def parse_flag_items(self):
        items = [self.parse_flag_item()]
        while self.accept(","):
            items.append(self.parse_flag_item())
        return items

    def parse_statement(self):
        result = None
        if self.at_result():
            result = self.advance()
            self.advance()
        op = self.peek()
        if op.kind != "ident":
            raise _error(op, f"expected an operation, found {op.describe()}")
        self.advance()
        if op.text == "arith.constant":
            return self.define_constant(op, result)
        if op.text in SCALAR_OPS:
            return self.scalar_code.statement(self, op, result)
        if op.text in _COMPUTE_REGIONS or _COMPUTE_OP.fullmatch(op.text):
            return self.skip_compute(op)
        name = op.text.removeprefix("pto.")
        if name in TILE_OPS:
            return self.tile_op(op, name, result)
        if name not in OP_BY_MNEMONIC and name not in _GROUPED + ("castptr", "addptr", "barrier"):
            raise _error(op, f"unknown op {op.text!r}")
        stmt = self.parse_statement_body(op, name, result)
        if name in ("castptr", "addptr"):
            return self.define_pointer(stmt)
        if result:
            raise _error(result, f"{name} has no result")
        if name in _GROUPED:
            return getattr(self, "expand_" + name)(stmt)
        if name in _FLAGS:
            return self.flag(stmt)
        if name == "barrier":
            return self.barrier(stmt)
        if name in _TOKENS:
            return self.token(stmt)
        if name == "set_mov_pad_val":
            return self.set_mov_pad_val(stmt)
        return self.legacy(stmt)

    def skip_compute(self, op):
        if self.skipped is None:
            raise _error(op, f"{op.text} is a compute op, which this engine does not run; "
                             "mte run --skip-compute runs a kernel's DMA, flag and token "
                             "ops and skips its compute ops")
        self.skipped[op.text] += 1
        if op.text in _COMPUTE_REGIONS:
            self.skip_region()
        else:
            self.skip_statement()

    def skip_region(self):
        """A vector scope's `{ ... }`, each op inside it counted. An op name is an
        identifier with a dialect prefix not followed by `=`, `,` or `}` (an attribute's
        name is)."""
        start = self.expect("{")
        depth = 1
        while depth:
            token = self.advance()
            if token.kind == "eof":
                raise _error(start, "unclosed '{'")
            if token.kind == "punct":
                depth += (token.text == "{") - (token.text == "}")
            elif token.kind == "ident" and "." in token.text and \
                    self.peek().text not in ("=", ",", "}"):
                self.skipped[token.text] += 1
        if self.at("{"):
            self.skip_balanced("{", "}")

    def skip_statement(self):
        """Up to where the next statement starts: `%x =`, an op name (with its dialect
        prefix, or an engine op's without) or the enclosing region's `}`, outside any
        bracket."""
        depth = 0
        while True:
            token = self.peek()
            if token.kind == "eof" or depth == 0 and (
                    self.at_result() or self.at("}") or self.at("return")
                    or token.kind == "ident" and ("." in token.text or token.text in
                                                  OP_BY_MNEMONIC or token.text in _GROUPED)):
                return
            if token.kind == "punct":
                depth += (token.text in _OPENING) - (token.text in _CLOSING)
            self.advance()

    def scalar_value(self, number, type_name, token):
        if abs(number).bit_length() > MAX_VALUE_BITS:
            raise _error(token, f"{token.text}: the result has {abs(number).bit_length()} "
                                f"bits, more than {MAX_VALUE_BITS}; no field holds over 64")
        return Value(number, ScalarType(type_name, token, type_name))

    def tile_op(self, op, name, result):
        """A tile op (model/tiles.py) is the engine commands it lowers to, each marked
        with the op it came from (`mte run --show-lowering`)."""
        commands = self.tile_scope.statement(self, op, name, result)
        stmt = Statement(op, name, result, text=_statement_text(self.source(result or op)))
        for mnemonic, values, deferred in commands:
            self.emit(stmt, mnemonic, values, deferred)
            self.instrs[-1].extra["tile_op"] = stmt.text

    def parse_statement_body(self, op, name, result):
        stmt = Statement(op, name, result)
        if self.at("[") and name in _FLAGS:
            stmt.bracket = self.advance()
            stmt.flags = self.parse_flag_items()
            self.expect("]")
        elif name == "barrier" and (self.peek().kind in ("string", "attribute", "ident")
                                    or self.at("<")):
            stmt.flags = [self.parse_flag_item()]
        if name in _TOKENS:
            stmt.flags = [self.parse_flag_item()]
            stmt.operands = self.parse_token_operands()
        else:
            stmt.operands = self.parse_operand_list()
        while self.peek().kind == "ident" and self.peek(1).text == "(":
            clause_name = self.advance()
            self.advance()
            stmt.clauses.append(Clause(clause_name, self.parse_operand_list()))
            self.expect(")")
        if self.at("{"):
            self.skip_balanced("{", "}")
        if self.at(":"):
            heads = [] if name in _GROUPED else None
            stmt.colon, stmt.types, stmt.result_types = self.parse_signature(heads)
            stmt.type_heads = heads or []
        if self.at("{"):
            self.skip_balanced("{", "}")
        stray = self.peek()
        if stray.kind == "value" and not self.at_result():
            raise _error(stray, f"expected ',' or ':' before {stray.text}")
        stmt.text = _statement_text(self.source(result or op))
        return stmt

    # names and values

    def resolve(self, token):
        if token.kind == "number":        # an integer literal operand (get_buf / rls_buf)
            text = token.text
            return Value(int(text, 16) if "x" in text else int(text, 10))
        name = token.text[1:]
        if name in self.values:
            return self.values[name]
        constant = _CONSTANT_NAME.fullmatch(name)
        if constant:
            return Value(int(constant.group(1)))
        boolean = _BOOLEAN_NAME.fullmatch(name)
        if boolean:
            return Value(int(boolean.group(1) == "true"), ScalarType("i1", token, "i1"))
        if name in self.bindings:
            self.bindings_read.add(name)
            return Value(self.bindings[name], self.arg_types.get(name))
        raise _error(token, f"unbound name {token.text}")

    def define(self, result, value):
        name = result.text[1:]
        if name in self.values:
            raise _error(result, f"{result.text} is already defined")
        if self.strict_bindings and name in self.bindings:
            raise BindingError(name, f"the program defines {result.text} here, which "
                                     "hides the binding", result.line, result.column)
        self.values[name] = value

    def define_constant(self, op, result):
        if result is None:
            raise _error(op, "arith.constant needs a result name")
        literal = self.advance()
        if literal.kind == "ident" and literal.text in ("true", "false"):
            value = self.boolean_literal(literal)
        elif literal.kind == "number":
            value = self.typed_literal(literal)
        else:
            raise _error(literal, f"expected a number, true or false, found {literal.describe()}")
        if self.at("{"):
            self.skip_balanced("{", "}")
        self.define(result, value)

    def boolean_literal(self, literal):
        """`true` / `false`, as MLIR prints them (no type) or with their type `: i1`."""
        declared = ScalarType("i1", literal, "i1")
        if self.accept(":"):
            declared = self.parse_type()
            if not isinstance(declared, ScalarType) or declared.name != "i1":
                raise _error(declared.token, f"{literal.text} has type i1, not {declared.text}")
        return Value(int(literal.text == "true"), declared)

    def typed_literal(self, literal):
        if not self.at(":"):
            raise _error(self.peek(), f"expected ':' and a type after {literal.text}")
        self.advance()
        declared = self.parse_type()
        if not isinstance(declared, ScalarType):
            raise _error(declared.token, f"a constant cannot have type {declared.text}")
        text = literal.text
        is_hex = text.lstrip("-").startswith("0x")
        if declared.name in FLOAT_FORMATS:
            fmt = FLOAT_FORMATS[declared.name]
            bits = int(text, 16) if is_hex else encode_float(self.finite(literal), fmt)
            if bits is None or not 0 <= bits < 1 << (1 + fmt[0] + fmt[1]):
                raise _error(literal, f"{text} does not fit {declared.name}")
            return Value(decode_float(bits, fmt), declared, bits)
        if declared.name == "hifloat8":
            if not is_hex or not 0 <= int(text, 16) <= 0xFF:
                raise _error(literal, "a hifloat8 constant must be an 8-bit hex pattern")
            return Value(math.nan, declared, int(text, 16))   # no numeric conversion
        if not is_hex and not re.fullmatch(r"-?\d+", text):
            raise _error(literal, f"{text} is not an integer, but the type is {declared.name}")
        return Value(int(text, 16) if is_hex else int(text, 10), declared)

    @staticmethod
    def finite(literal):
        """A decimal float literal's value. One beyond f64's range would read as infinity;
        it is refused instead (infinity has its own bit pattern, written in hex)."""
        number = float(literal.text)
        if math.isinf(number):
            raise _error(literal, f"{literal.text} is beyond the range of every float type; "
                                  "write infinity as its hex bit pattern")
        return number

    def define_pointer(self, stmt):
        if stmt.result is None:
            raise _error(stmt.op, f"{stmt.name} needs a result name")
        want = 1 if stmt.name == "castptr" else 2
        self.check_operand_count(stmt, want)
        base = self.resolve(stmt.operands[0])
        address = self.integer(stmt.operands[0], base)
        if stmt.name == "castptr":
            pointer = next((t for t in stmt.result_types if isinstance(t, PtrType)), None)
            if pointer is None:
                raise _error(stmt.colon or stmt.op,
                             "castptr needs a result type !pto.ptr<T, gm|ub>")
        else:
            pointer = self.addptr_type(stmt, base)
            if pointer.elem.size == 0:
                raise _error(stmt.op, f"addptr on sub-byte element type {pointer.elem.name}")
            offset = stmt.operands[1]
            address += self.integer(offset, self.resolve(offset)) * pointer.elem.size
        self.define(stmt.result, Value(address, pointer))

    def addptr_type(self, stmt, base):
        candidates = [base.type, *stmt.types[:1], *stmt.result_types]
        pointer = next((t for t in candidates if isinstance(t, PtrType)), None)
        if pointer is None:
            base_name = stmt.operands[0]
            raise _error(base_name, f"the element type of {base_name.text} is unknown; "
                                    "give addptr a type list")
        return pointer

    def integer(self, token, value):
        if isinstance(value.number, float):
            raise _error(token, f"{token.text} is a float where an integer is needed")
        return int(value.number)

    # shape checks

    def check_operand_count(self, stmt, want):
        have = len(stmt.operands)
        if have > want:
            raise _error(stmt.operands[want], f"{stmt.name} takes {want} operands, found {have}")
        if have < want:
            raise _error(stmt.op, f"{stmt.name} takes {want} operands, found {have}")

    def check_type_count(self, stmt, operand_count):
        if len(stmt.types) != operand_count:
            raise _error(stmt.colon or stmt.op,
                         f"{stmt.name} has {operand_count} operands but "
                         f"{len(stmt.types)} types")

    def check_no_clauses(self, stmt):
        if stmt.clauses:
            raise _error(stmt.clauses[0].name, f"{stmt.name} takes no clauses")

    def args(self, tokens, types):
        return [Arg(tok, self.resolve(tok), typ) for tok, typ in zip(tokens, types)]

    def pointer(self, arg, space):
        if not isinstance(arg.type, PtrType) or arg.type.space != space:
            raise _error(arg.type.token, f"{arg.token.text} needs type !pto.ptr<T, {space}>, "
                                         f"found {arg.type.text}")
        return self.integer(arg.token, arg.value)

    def scalar(self, arg):
        if not (isinstance(arg.type, ScalarType) and _INTEGER_TYPE.fullmatch(arg.type.name)):
            raise _error(arg.type.token, f"{arg.token.text} needs an integer type, "
                                         f"found {arg.type.text}")
        return self.integer(arg.token, arg.value)

    def pad_type(self, arg):
        if not isinstance(arg.type, ScalarType) or arg.type.name not in DTYPE_BY_NAME:
            raise _error(arg.type.token,
                         f"pad type must be an element type, found {arg.type.text}")
        return DTYPE_BY_NAME[arg.type.name]

    # instructions

    def emit(self, stmt, mnemonic, values, deferred=None):
        if mnemonic in _FLAGS and Pipe.EXTERNAL not in (values["src_pipe"], values["dst_pipe"]):
            key = (values["src_pipe"], values["dst_pipe"], values["event_id"])
            if mnemonic == "wait_flag" and self.flag_balance[key] == 0:
                raise _error(stmt.op, _ungranted_wait(*key))
            if mnemonic == "set_flag" and self.flag_balance[key] == FLAG_DEPTH:
                raise _error(stmt.op, _uncounted_set(*key))
            self.flag_balance[key] += 1 if mnemonic == "set_flag" else -1
        if mnemonic in _TOKENS and values["pipe"] != Pipe.EXTERNAL:
            self.take_or_release(stmt, mnemonic, values)
        self.instrs.append(Instr(OP_BY_MNEMONIC[mnemonic], values, stmt.op.line,
                                 stmt.op.column, stmt.text, deferred))

    def legacy(self, stmt):
        op = OP_BY_MNEMONIC[stmt.name]
        fields = _operand_fields(op)
        self.check_no_clauses(stmt)
        self.check_operand_count(stmt, len(fields))
        self.check_type_count(stmt, len(fields))
        pointers = _pointer_fields(op)
        values, pointer_types = {}, []
        for f, arg in zip(fields, self.args(stmt.operands, stmt.types)):
            if f.name in pointers:
                values[f.name] = self.pointer(arg, f.space)
                pointer_types.append(arg.type)
            else:
                values[f.name] = self.scalar(arg)
        deferred = None
        if pointer_types:
            values["dtype"], deferred = _copy_dtype(pointer_types)
        self.emit(stmt, stmt.name, values, deferred)

    def set_mov_pad_val(self, stmt):
        self.check_no_clauses(stmt)
        self.check_operand_count(stmt, 1)
        self.check_type_count(stmt, 1)
        (arg,) = self.args(stmt.operands, stmt.types)
        bits, deferred = pad_pattern(arg.value, self.pad_type(arg), arg.token)
        self.emit(stmt, "set_mov_pad_val", {"pad_val": bits}, deferred)

    def flag(self, stmt):
        if stmt.bracket is None:
            raise _error(stmt.op, f"{stmt.name} needs [src_pipe, dst_pipe, event]")
        if len(stmt.flags) != 3:
            raise _error(stmt.bracket, f"{stmt.name} takes [src_pipe, dst_pipe, event], "
                                       f"found {len(stmt.flags)} items")
        self.check_no_clauses(stmt)
        self.check_operand_count(stmt, 0)
        self.check_type_count(stmt, 0)
        (src, src_tok), (dst, dst_tok), (event, event_tok) = stmt.flags
        event_id = _EVENT.fullmatch(event)
        if not event_id:
            raise _error(event_tok, f"unknown event {event!r} (EVENT_ID0, EVENT_ID1, ...)")
        self.emit(stmt, stmt.name, {"src_pipe": int(_pipe(src, src_tok)),
                                    "dst_pipe": int(_pipe(dst, dst_tok)),
                                    "event_id": int(event_id.group(1))})

    def take_or_release(self, stmt, mnemonic, values):
        buf_id = values["buf_id"]
        misuse = _token_misuse(mnemonic, values["pipe"], buf_id, self.token_holders.get(buf_id))
        if misuse:
            raise _error(stmt.op, misuse)
        if mnemonic == "get_buf":
            self.token_holders[buf_id] = (values["pipe"], stmt.op)
        else:
            del self.token_holders[buf_id]

    def check_tokens_released(self):
        """The engine keeps its tokens from one program to the next, so a token a program
        ends holding would hold the next program's get_buf of it for ever."""
        if self.token_holders:
            buf_id, (pipe, op) = min(self.token_holders.items(),
                                     key=lambda item: (item[1][1].line, item[1][1].column))
            raise _error(op, f"get_buf {_pipe_name(pipe)} takes token {buf_id}, which no "
                             f"rls_buf releases: the engine keeps a token held after the "
                             f"program, and the next program's get_buf of it would wait "
                             f"forever")

    def token(self, stmt):
        """get_buf / rls_buf "PIPE_X", buf_id, mode: integer literals or typed values."""
        self.check_no_clauses(stmt)
        self.check_operand_count(stmt, 2)
        if stmt.types:
            self.check_type_count(stmt, 2)
        ((name, pipe_token),) = stmt.flags
        buf_id, mode = (self.scalar(arg) if stmt.types else self.integer(arg.token, arg.value)
                        for arg in self.args(stmt.operands, stmt.types or [None, None]))
        self.emit(stmt, stmt.name, {"pipe": int(_pipe(name, pipe_token)), "buf_id": buf_id,
                                    "mode": mode})

    def parse_token_operands(self):
        """`, %a, %b` where each operand may also be an integer literal (`, 0, 0`)."""
        operands = []
        while self.accept(","):
            token = self.peek()
            if token.kind == "number" and not _INTEGER_LITERAL.fullmatch(token.text):
                raise _error(token, f"{token.text} is not an integer")
            if token.kind not in ("value", "number"):
                raise _error(token, f"expected an operand such as %x or 0, "
                                    f"found {token.describe()}")
            operands.append(self.advance())
        return operands

    def barrier(self, stmt):
        """pipe_barrier: the pipe's later commands wait until its earlier ones finished; with
        PIPE_ALL, every pipe's later commands wait for every pipe's earlier ones. Written as
        the flag pairs that do that (a set_flag waits for its pipe to drain): for one pipe a
        pair from the pipe to itself, for PIPE_ALL a pair between each two pipes, all sets
        before all waits. A pipe this engine does not have needs nothing."""
        if len(stmt.flags) != 1:
            raise _error(stmt.op, "barrier needs a pipe, such as #pto.pipe<PIPE_ALL>")
        self.check_no_clauses(stmt)
        self.check_operand_count(stmt, 0)
        self.check_type_count(stmt, 0)
        ((name, token),) = stmt.flags
        if name == "PIPE_ALL":
            pairs = list(itertools.permutations(_ENGINE_PIPES, 2))
        else:
            pipe = _pipe(name, token)
            pairs = [] if pipe == Pipe.EXTERNAL else [(pipe, pipe)]
        if not pairs:
            return
        event = self.free_event(stmt, pairs)
        for mnemonic in _FLAGS:
            for src, dst in pairs:
                self.emit(stmt, mnemonic, {"src_pipe": int(src), "dst_pipe": int(dst),
                                           "event_id": event})

    def free_event(self, stmt, pairs):
        """The lowest event id on which every set_flag of these pipe pairs so far has had
        its wait_flag: the barrier's wait then needs the barrier's own set."""
        for event in range(1 << EVENT_ID_BITS):
            if not any(self.flag_balance[src, dst, event] for src, dst in pairs):
                return event
        raise _error(stmt.op, "barrier: no event id is free, each has a set_flag "
                              "still waiting for its wait_flag")

    # grouped v0.6 forms

    def grouped_args(self, stmt, operand_counts, clause_names):
        """Check a grouped op's shape; returns (top-level args, nburst args, loops, pad,
        l2_cache_ctl clause arg). `loops` lists the hardware loops in register order (None
        for one left at count 1), then the software loops."""
        have = len(stmt.operands)
        if have not in operand_counts:
            want = " or ".join(map(str, operand_counts))
            where = stmt.operands[max(operand_counts)] if have > max(operand_counts) else stmt.op
            raise _error(where, f"{stmt.name} takes {want} operands before its clauses, "
                                f"found {have}")
        self.check_clause_order(stmt, clause_names)
        tokens = stmt.operands + [tok for c in stmt.clauses for tok in c.operands]
        self.check_type_count(stmt, len(tokens))
        self.check_type_heads(stmt, have)
        args = self.args(tokens, stmt.types)
        top, rest = args[:have], args[have:]
        clauses = []
        for clause in stmt.clauses:
            clauses.append((clause.name, rest[:len(clause.operands)]))
            rest = rest[len(clause.operands):]
        pad = next((a for name, a in clauses if name.text == "pad"), None)
        cache = next((a[0] for name, a in clauses if name.text == "l2_cache_ctl"), None)
        loops = self.loop_clauses(stmt, [(n, a) for n, a in clauses if n.text in _LOOP_CLAUSES])
        return top, clauses[0][1], loops, pad, cache

    def loop_clauses(self, stmt, loops):
        """`loop(...)` clauses in order: loop1, loop2, then software loops. `loop1(...)` and
        `loop2(...)` (PTOAS's names) set that hardware loop, whatever their order."""
        named = [name for name, _ in loops if name.text != "loop"]
        if not named:
            return [args for _, args in loops]
        if len(named) != len(loops):
            plain = next(name for name, _ in loops if name.text == "loop")
            raise _error(plain, f"{stmt.name} mixes loop(...) with loop1(...)/loop2(...): "
                                "name every loop clause or none")
        by_name = {}
        for name, args in loops:
            if name.text in by_name:
                raise _error(name, f"{stmt.name} has two {name.text}(...) clauses")
            by_name[name.text] = args
        return [by_name.get("loop1"), by_name.get("loop2")]

    def check_type_heads(self, stmt, have):
        """A type list whose clauses' types are headed by their keywords, as PTOAS writes
        it: every loop and pad clause's types start with its keyword, exactly where its
        operands start; an l2_cache_ctl clause's type may be headed by its own keyword or
        follow the types before it. A flat list (no keyword) needs no check."""
        if not stmt.type_heads:
            return
        heads = {index: token for token, index in stmt.type_heads}
        expected, start = [], have
        for clause in stmt.clauses:
            kind = clause.name.text.rstrip("12") if clause.name.text != "l2_cache_ctl" \
                else "l2_cache_ctl"
            if clause.name.text != "nburst" and (kind != "l2_cache_ctl" or start in heads):
                expected.append((start, kind, clause))
            start += len(clause.operands)
        for start, kind, clause in expected:
            head = heads.pop(start, None)
            if head is None or head.text.rstrip("0123456789") != kind.rstrip("0123456789"):
                where = head or stmt.types[start].token
                raise _error(where, f"the types of {clause.name.text}(...) at column "
                                    f"{clause.name.column} must start with '{kind}' at "
                                    f"type {start + 1} of the list")
        if heads:
            index, head = min(heads.items())
            raise _error(head, f"'{head.text}' heads type {index + 1} of {stmt.name}'s "
                               f"list, where no {head.text}(...) clause's operands start")

    def check_clause_order(self, stmt, allowed):
        """nburst first and once, then loop clauses and at most one l2_cache_ctl, then at
        most one pad, last."""
        if not stmt.clauses or stmt.clauses[0].name.text != "nburst":
            where = stmt.clauses[0].name if stmt.clauses else stmt.op
            raise _error(where, f"{stmt.name} needs an nburst(...) clause first")
        arity = {"nburst": (3,), "loop": (3,), "loop1": (3,), "loop2": (3,), "pad": (1, 3),
                 "l2_cache_ctl": (1,)}
        for i, clause in enumerate(stmt.clauses):
            name = clause.name.text
            if name not in allowed:
                raise _error(clause.name, f"{stmt.name} takes no {name}(...) clause")
            if (name == "nburst" and i) or (name == "pad" and i != len(stmt.clauses) - 1):
                raise _error(clause.name, f"{name}(...) is out of place: "
                                          "nburst(...) loop(...)* [pad(...)]")
            if name in ("pad", "l2_cache_ctl") and \
                    [c.name.text for c in stmt.clauses].count(name) > 1:
                raise _error(clause.name, f"{stmt.name} takes one {name}(...) clause")
            if len(clause.operands) not in arity[name]:
                want = " or ".join(map(str, arity[name]))
                raise _error(clause.name, f"{name}(...) takes {want} operands, "
                                          f"found {len(clause.operands)}")

    def loop_registers(self, stmt, loops, direction):
        """The three loop-register writes; unused hardware loops are count 1, strides 0."""
        hardware = [[self.scalar(a) for a in loop] if loop else [1, 0, 0] for loop in loops[:2]]
        hardware += [[1, 0, 0]] * (2 - len(hardware))
        (count1, src1, dst1), (count2, src2, dst2) = hardware
        self.emit(stmt, f"set_loop_size_{direction}",
                  {"loop1_count": count1, "loop2_count": count2})
        self.emit(stmt, f"set_loop1_stride_{direction}", {"src_stride": src1, "dst_stride": dst1})
        self.emit(stmt, f"set_loop2_stride_{direction}", {"src_stride": src2, "dst_stride": dst2})

    def software_offsets(self, stmt, loops):
        """(offsets, error): the (src, dst) byte offsets of each software-loop iteration,
        clause 3 innermost, or a FIELD_RANGE deferred error when a count does not fit."""
        levels = [[self.scalar(a) for a in loop] for loop in loops[2:]]
        count_field = OP_BY_MNEMONIC["set_loop_size_outtoub"].field("loop1_count")
        for number, (count, _, _) in enumerate(levels, start=3):
            if not 0 <= count <= count_field.max:
                return [], (ErrorCode.FIELD_RANGE, f"software loop {number} count {count} "
                                                   f"does not fit {count_field.width} bits")
        if math.prod(count for count, _, _ in levels) > MAX_SOFTWARE_COPIES:
            raise _error(stmt.clauses[3].name, f"software loops expand to more than "
                                               f"{MAX_SOFTWARE_COPIES} copies")
        outermost_first = levels[::-1]
        return [(sum(i * src for i, (_, src, _) in zip(index, outermost_first)),
                 sum(i * dst for i, (_, _, dst) in zip(index, outermost_first)))
                for index in itertools.product(*(range(c) for c, _, _ in outermost_first))], None

    def emit_copies(self, stmt, mnemonic, values, src_field, dst_field, loops, deferred):
        offsets, count_error = self.software_offsets(stmt, loops)
        if count_error:
            self.emit(stmt, mnemonic, values, count_error)
            return
        for src_offset, dst_offset in offsets:
            moved = dict(values)
            moved[src_field] += src_offset
            moved[dst_field] += dst_offset
            self.emit(stmt, mnemonic, moved, deferred)

    def cache_control(self, stmt, positional, clause):
        """l2_cache_ctl: the positional operand or the l2_cache_ctl(...) clause, not both."""
        if positional and clause:
            raise _error(stmt.clauses[[c.name.text for c in stmt.clauses].index(
                "l2_cache_ctl")].name, f"{stmt.name} has l2_cache_ctl twice: as its "
                                       "operand and as a clause")
        if positional:
            return self.scalar(positional[0])
        return self.scalar(clause) if clause else 0

    def expand_mte_gm_ub(self, stmt):
        with_clause = any(c.name.text == "l2_cache_ctl" for c in stmt.clauses)
        top, (n, src_stride, dst_stride), loops, pad, cache_clause = self.grouped_args(
            stmt, (3, 4) if with_clause else (4,),
            ("nburst", *_LOOP_CLAUSES, "l2_cache_ctl", "pad"))
        gm, ub, *cache, length = top
        values = {"gm_src": self.pointer(gm, "gm"), "ub_dst": self.pointer(ub, "ub"), "sid": 0,
                  "n_burst": self.scalar(n), "len_burst": self.scalar(length),
                  "left_padding": 0, "right_padding": 0, "data_select_bit": 0,
                  "l2_cache_ctl": self.cache_control(stmt, cache, cache_clause),
                  "src_stride": self.scalar(src_stride), "dst_stride": self.scalar(dst_stride)}
        values["dtype"], deferred = _copy_dtype([gm.type, ub.type])
        self.loop_registers(stmt, loops, "outtoub")
        if pad:
            bits, pad_error = pad_pattern(pad[0].value, self.pad_type(pad[0]), pad[0].token)
            self.emit(stmt, "set_mov_pad_val", {"pad_val": bits}, pad_error)
            values["data_select_bit"] = 1
            if len(pad) == 3:
                values["left_padding"], values["right_padding"] = map(self.scalar, pad[1:])
        self.emit_copies(stmt, "copy_gm_to_ubuf", values, "gm_src", "ub_dst", loops, deferred)

    def expand_mte_ub_gm(self, stmt):
        top, (n, src_stride, dst_stride), loops, _, cache_clause = self.grouped_args(
            stmt, (3, 4), ("nburst", *_LOOP_CLAUSES, "l2_cache_ctl"))
        ub, gm, *cache, length = top
        values = {"ub_src": self.pointer(ub, "ub"), "gm_dst": self.pointer(gm, "gm"), "sid": 0,
                  "n_burst": self.scalar(n), "len_burst": self.scalar(length),
                  "l2_cache_ctl": self.cache_control(stmt, cache, cache_clause),
                  "dst_stride": self.scalar(dst_stride), "src_stride": self.scalar(src_stride)}
        values["dtype"], deferred = _copy_dtype([ub.type, gm.type])
        self.loop_registers(stmt, loops, "ubtoout")
        self.emit_copies(stmt, "copy_ubuf_to_gm", values, "ub_src", "gm_dst", loops, deferred)

    def expand_mte_ub_ub(self, stmt):
        top, (n, src_gap, dst_gap), _, _, _ = self.grouped_args(stmt, (3,), ("nburst",))
        src, dst, length = top
        values = {"ub_src": self.pointer(src, "ub"), "ub_dst": self.pointer(dst, "ub"),
                  "sid": 0, "n_burst": self.scalar(n), "len_burst": self.scalar(length),
                  "src_gap": self.scalar(src_gap), "dst_gap": self.scalar(dst_gap)}
        values["dtype"], deferred = _copy_dtype([src.type, dst.type])
        self.emit(stmt, "copy_ubuf_to_ubuf", values, deferred)
