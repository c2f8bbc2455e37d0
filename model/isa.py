"""The one table of the MTE DMA instruction set.

Every field width, unit, opcode, element type, profile and error code lives here.
The golden model, the program assembler and the Amaranth HDL all import it; nothing
else restates a width.

Command words
-------------
A command is a little-endian sequence of 32-bit words. Its bits, LSB first, are the
opcode (`OPCODE_BITS`) followed by the op's fields in table order, each `width` bits,
zero-filled up to a whole number of words. `Op.words` is that number.
"""

from dataclasses import dataclass
from enum import unique

from amaranth.lib import enum

WORD_BITS = 32
OPCODE_BITS = 5
UB_LINE = 32          # UB row starts, UB strides and UB-to-UB units are 32 bytes
GM_ADDR_BITS = 40
UB_ADDR_BITS = 21
PAD_MAX_BYTES = 32    # L*es and R*es may not exceed this


@unique
class Opcode(enum.IntEnum, shape=OPCODE_BITS):
    SET_LOOP_SIZE_OUTTOUB = 1
    SET_LOOP1_STRIDE_OUTTOUB = 2
    SET_LOOP2_STRIDE_OUTTOUB = 3
    SET_LOOP_SIZE_UBTOOUT = 4
    SET_LOOP1_STRIDE_UBTOOUT = 5
    SET_LOOP2_STRIDE_UBTOOUT = 6
    SET_MOV_PAD_VAL = 7
    COPY_GM_TO_UBUF = 8
    COPY_UBUF_TO_GM = 9
    COPY_UBUF_TO_UBUF = 10
    SET_FLAG = 11
    WAIT_FLAG = 12
    GET_BUF = 13
    RLS_BUF = 14


@unique
class Pipe(enum.IntEnum, shape=2):
    """The engine's pipes. EXTERNAL stands for every pipe this engine does not have
    (PIPE_S, PIPE_MTE1, PIPE_FIX, PIPE_M, ...): flags naming it do nothing on that side."""
    MTE2 = 0      # GM -> UB
    MTE3 = 1      # UB -> GM
    V = 2         # UB -> UB (copy_ubuf_to_ubuf runs on the vector pipe)
    EXTERNAL = 3


PIPE_NAMES = {"PIPE_MTE2": Pipe.MTE2, "PIPE_MTE3": Pipe.MTE3, "PIPE_V": Pipe.V}
EXTERNAL_PIPE_NAMES = ("PIPE_S", "PIPE_MTE1", "PIPE_FIX", "PIPE_M", "PIPE_ALL", "PIPE_MTE4",
                       "PIPE_MTE5", "PIPE_V2")
EVENT_ID_BITS = 4
BUF_ID_BITS = 5       # buffer-id tokens 0..31 (get_buf / rls_buf)
# Outstanding set_flags the engine counts per (source pipe, destination pipe, event id).
FLAG_DEPTH = 7


@unique
class ErrorCode(enum.IntEnum, shape=4):
    """SPEC error codes. For rule violations, a lower value wins when several apply."""
    NONE = 0
    FIELD_RANGE = 1
    TYPE_UNSUPPORTED = 2
    LEN_NOT_ELEMENT_MULTIPLE = 3
    PAD_WITHOUT_SELECT = 4
    PAD_TOO_LARGE = 5
    UB_MISALIGNED = 6
    STRIDE_OVERLAP = 7
    UB_RANGE = 8
    GM_RANGE = 9
    UB_OVERLAP = 10
    BUS_ERROR = 11


@dataclass(frozen=True)
class Field:
    name: str
    width: int
    unit: str        # bytes | elements | lines32 | count | flag | code | bits
    space: str = ""  # "gm" or "ub" for addresses and strides

    @property
    def max(self):
        return (1 << self.width) - 1


@dataclass(frozen=True)
class Op:
    mnemonic: str
    opcode: Opcode
    pipe: Pipe | None        # None: the pipe comes from the command (flags and tokens)
    fields: tuple

    @property
    def bits(self):
        return OPCODE_BITS + sum(f.width for f in self.fields)

    @property
    def words(self):
        return -(-self.bits // WORD_BITS)

    def field(self, name):
        return next(f for f in self.fields if f.name == name)

    def offset(self, name):
        """Bit offset of a field inside the command (opcode at offset 0)."""
        pos = OPCODE_BITS
        for f in self.fields:
            if f.name == name:
                return pos
            pos += f.width
        raise KeyError(name)


def _loop_size():
    return (Field("loop1_count", 21, "count"), Field("loop2_count", 21, "count"))


def _loop_stride(src_space, dst_space):
    width = {"gm": GM_ADDR_BITS, "ub": UB_ADDR_BITS}
    return (Field("src_stride", width[src_space], "bytes", src_space),
            Field("dst_stride", width[dst_space], "bytes", dst_space))


def _token_fields():
    # mode is the ISA's bool operand (get_buf(pipe, buf_id, bool mode)); it orders nothing.
    return (Field("pipe", 2, "code"), Field("buf_id", BUF_ID_BITS, "code"),
            Field("mode", 1, "flag"))


_DTYPE = Field("dtype", 5, "code")
_SID = Field("sid", 4, "code")
_CACHE = Field("l2_cache_ctl", 4, "code")

OPS = (
    Op("set_loop_size_outtoub", Opcode.SET_LOOP_SIZE_OUTTOUB, Pipe.MTE2, _loop_size()),
    Op("set_loop1_stride_outtoub", Opcode.SET_LOOP1_STRIDE_OUTTOUB, Pipe.MTE2, _loop_stride("gm", "ub")),
    Op("set_loop2_stride_outtoub", Opcode.SET_LOOP2_STRIDE_OUTTOUB, Pipe.MTE2, _loop_stride("gm", "ub")),
    Op("set_loop_size_ubtoout", Opcode.SET_LOOP_SIZE_UBTOOUT, Pipe.MTE3, _loop_size()),
    Op("set_loop1_stride_ubtoout", Opcode.SET_LOOP1_STRIDE_UBTOOUT, Pipe.MTE3, _loop_stride("ub", "gm")),
    Op("set_loop2_stride_ubtoout", Opcode.SET_LOOP2_STRIDE_UBTOOUT, Pipe.MTE3, _loop_stride("ub", "gm")),
    Op("set_mov_pad_val", Opcode.SET_MOV_PAD_VAL, Pipe.MTE2, (Field("pad_val", 64, "bits"),)),
    Op("copy_gm_to_ubuf", Opcode.COPY_GM_TO_UBUF, Pipe.MTE2, (
        Field("gm_src", GM_ADDR_BITS, "bytes", "gm"),
        Field("ub_dst", UB_ADDR_BITS, "bytes", "ub"),
        _SID,
        Field("n_burst", 16, "count"),
        Field("len_burst", 21, "bytes"),
        Field("left_padding", 8, "elements"),
        Field("right_padding", 8, "elements"),
        Field("data_select_bit", 1, "flag"),
        _CACHE,
        Field("src_stride", GM_ADDR_BITS, "bytes", "gm"),
        Field("dst_stride", UB_ADDR_BITS, "bytes", "ub"),
        _DTYPE,
    )),
    Op("copy_ubuf_to_gm", Opcode.COPY_UBUF_TO_GM, Pipe.MTE3, (
        Field("ub_src", UB_ADDR_BITS, "bytes", "ub"),
        Field("gm_dst", GM_ADDR_BITS, "bytes", "gm"),
        _SID,
        Field("n_burst", 16, "count"),
        Field("len_burst", 21, "bytes"),
        _CACHE,
        Field("dst_stride", GM_ADDR_BITS, "bytes", "gm"),
        Field("src_stride", UB_ADDR_BITS, "bytes", "ub"),
        _DTYPE,
    )),
    Op("copy_ubuf_to_ubuf", Opcode.COPY_UBUF_TO_UBUF, Pipe.V, (
        Field("ub_src", UB_ADDR_BITS, "bytes", "ub"),
        Field("ub_dst", UB_ADDR_BITS, "bytes", "ub"),
        _SID,
        Field("n_burst", 16, "count"),
        Field("len_burst", 16, "lines32"),
        Field("src_gap", 16, "lines32"),
        Field("dst_gap", 16, "lines32"),
        _DTYPE,
    )),
    Op("set_flag", Opcode.SET_FLAG, None, (
        Field("src_pipe", 2, "code"), Field("dst_pipe", 2, "code"),
        Field("event_id", EVENT_ID_BITS, "code"))),
    Op("wait_flag", Opcode.WAIT_FLAG, None, (
        Field("src_pipe", 2, "code"), Field("dst_pipe", 2, "code"),
        Field("event_id", EVENT_ID_BITS, "code"))),
    Op("get_buf", Opcode.GET_BUF, None, _token_fields()),
    Op("rls_buf", Opcode.RLS_BUF, None, _token_fields()),
)

OP_BY_OPCODE = {op.opcode: op for op in OPS}
OP_BY_MNEMONIC = {op.mnemonic: op for op in OPS}
MAX_COMMAND_WORDS = max(op.words for op in OPS)
COPY_OPCODES = (Opcode.COPY_GM_TO_UBUF, Opcode.COPY_UBUF_TO_GM, Opcode.COPY_UBUF_TO_UBUF)


def op_pipe(op, values):
    """The pipe that executes a command: fixed per op, the flag's own side, or the
    token's pipe."""
    if op.opcode in (Opcode.GET_BUF, Opcode.RLS_BUF):
        return Pipe(values["pipe"])
    if op.opcode == Opcode.SET_FLAG:
        return Pipe(values["src_pipe"])
    if op.opcode == Opcode.WAIT_FLAG:
        return Pipe(values["dst_pipe"])
    return op.pipe


# --- element types -----------------------------------------------------------------

@dataclass(frozen=True)
class DType:
    name: str
    code: int
    size: int        # bytes; 0 for sub-byte types, which every profile rejects
    f8: bool = False


_DTYPE_ROWS = (
    ("i8", 1), ("u8", 1), ("ui8", 1),
    ("f8e4m3", 1, True), ("f8e5m2", 1, True), ("hifloat8", 1, True),
    ("i16", 2), ("u16", 2), ("ui16", 2), ("f16", 2), ("bf16", 2),
    ("i32", 4), ("u32", 4), ("ui32", 4), ("f32", 4),
    ("i64", 8), ("u64", 8), ("ui64", 8),
    ("i4", 0), ("u4", 0), ("f4e2m1", 0), ("f4e1m2", 0),
)
DTYPES = tuple(DType(row[0], code, row[1], *row[2:]) for code, row in enumerate(_DTYPE_ROWS))
# MLIR's signed spellings name the same element types (a type's size and code are all
# the engine takes from it; the sign matters only to a pad value's range, which is i*'s).
SIGNED_SPELLINGS = {"si8": "i8", "si16": "i16", "si32": "i32", "si64": "i64"}
DTYPE_BY_NAME = {t.name: t for t in DTYPES}
DTYPE_BY_NAME.update({alias: DTYPE_BY_NAME[name] for alias, name in SIGNED_SPELLINGS.items()})
assert len(DTYPES) <= 1 << _DTYPE.width


# --- target profiles ---------------------------------------------------------------

@dataclass(frozen=True)
class Profile:
    name: str
    ub_size: int
    f8: bool
    packed_rows: bool       # a UB row stride equal to len_burst need not be line-aligned
                            # when no pad is written (SPEC.md, "Packed UB rows")


PROFILES = {p.name: p for p in (
    Profile("a2a3", 196608, False, False),
    Profile("a5", 262144, True, True),
    Profile("kirin9030", 131072, False, False),
    Profile("kirinx90", 131072, False, False),
)}
DEFAULT_PROFILE = "a5"


def dtype_supported(dtype, profile):
    return dtype.size > 0 and (profile.f8 or not dtype.f8)


# --- per-pipe configuration registers ----------------------------------------------

@dataclass(frozen=True)
class Register:
    name: str
    width: int
    reset: int


def _pipe_registers(src_space, dst_space):
    loop_size = _loop_size()
    strides = _loop_stride(src_space, dst_space)
    regs = [Register(f.name, f.width, 1) for f in loop_size]
    for level in ("loop1", "loop2"):
        regs += [Register(f"{level}_{f.name}", f.width, 0) for f in strides]
    return tuple(regs)


PIPE_REGISTERS = {
    Pipe.MTE2: _pipe_registers("gm", "ub") + (Register("pad_val", 64, 0),),
    Pipe.MTE3: _pipe_registers("ub", "gm"),
}

# Which register-write op sets which registers: op mnemonic -> (pipe, register prefix).
REGISTER_WRITES = {
    Opcode.SET_LOOP_SIZE_OUTTOUB: (Pipe.MTE2, ""),
    Opcode.SET_LOOP1_STRIDE_OUTTOUB: (Pipe.MTE2, "loop1_"),
    Opcode.SET_LOOP2_STRIDE_OUTTOUB: (Pipe.MTE2, "loop2_"),
    Opcode.SET_LOOP_SIZE_UBTOOUT: (Pipe.MTE3, ""),
    Opcode.SET_LOOP1_STRIDE_UBTOOUT: (Pipe.MTE3, "loop1_"),
    Opcode.SET_LOOP2_STRIDE_UBTOOUT: (Pipe.MTE3, "loop2_"),
    Opcode.SET_MOV_PAD_VAL: (Pipe.MTE2, ""),
}


def reset_registers(pipe):
    return {r.name: r.reset for r in PIPE_REGISTERS[pipe]}


def apply_register_write(regs, op, values):
    """Update a pipe's register dict in place for a register-write command."""
    _, prefix = REGISTER_WRITES[op.opcode]
    for f in op.fields:
        regs[prefix + f.name] = values[f.name]


# --- command-word encoding ---------------------------------------------------------

class EncodingError(ValueError):
    def __init__(self, op, field, value):
        super().__init__(f"{op.mnemonic}: {field.name}={value} does not fit {field.width} bits")
        self.op, self.field, self.value = op, field, value


def encode(op, values):
    """Pack a command into 32-bit words. Raises EncodingError on a field that does not fit."""
    bits = int(op.opcode)
    pos = OPCODE_BITS
    for f in op.fields:
        v = values[f.name]
        if not 0 <= v <= f.max:
            raise EncodingError(op, f, v)
        bits |= v << pos
        pos += f.width
    mask = (1 << WORD_BITS) - 1
    return [(bits >> (WORD_BITS * i)) & mask for i in range(op.words)]


def command_words(first_word):
    """How many words the command starting with this word has (0: unknown opcode)."""
    op = OP_BY_OPCODE.get(first_word & ((1 << OPCODE_BITS) - 1))
    return op.words if op else 0


def decode(words):
    """Unpack one command from the start of `words`; returns (op, values)."""
    opcode = words[0] & ((1 << OPCODE_BITS) - 1)
    if opcode not in OP_BY_OPCODE.keys():
        raise ValueError(f"unknown opcode {opcode}")
    op = OP_BY_OPCODE[opcode]
    bits = sum(w << (WORD_BITS * i) for i, w in enumerate(words[:op.words]))
    values = {}
    pos = OPCODE_BITS
    for f in op.fields:
        values[f.name] = (bits >> pos) & f.max
        pos += f.width
    return op, values


def decode_stream(words):
    """Split a flat word list into commands."""
    out, i = [], 0
    while i < len(words):
        op, values = decode(words[i:])
        out.append((op, values))
        i += op.words
    return out
