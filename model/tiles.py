"""Tile-level memory ops, lowered to the engine's commands.

    pto.tassign %t, %addr : !pto.tile<...>, index                       AS-1
    pto.tassign ins(%t, %addr : !pto.tile_buf<...>, index)              AS-2
    %t = pto.alloc_tile addr = %addr [valid_row = %r valid_col = %c] : !pto.tile_buf<...>
    %v = pto.make_tensor_view %ptr, shape = [..], strides = [..] {layout = #pto.layout<nd|dn>}
         : !pto.tensor_view<...xT>
    %p = pto.partition_view %v, offsets = [..], sizes = [..] : !pto.tensor_view<..> -> ...
    pto.tload ins(%p : !pto.partition_tensor_view<..>) outs(%t : !pto.tile_buf<..>)   AS-2
    %t = pto.tload %p : !pto.partition_tensor_view<..> -> !pto.tile<..>                AS-1
    pto.tstore ins(%t : !pto.tile_buf<..>) outs(%p : !pto.partition_tensor_view<..>)  AS-2
    pto.tstore %t, %p : (!pto.tile<..>, !pto.partition_tensor_view<..>) -> ()         AS-1
    pto.tprefetch: written as tload, and a load.

Tile types are written as PTOAS writes `!pto.tile_buf` (both `!pto.tile<...>` and
`!pto.tile_buf<...>` take any body): keyed `loc=vec, dtype=f16, rows=16, cols=16,
v_row=16, v_col=8, blayout=row_major, slayout=none_box, fractal=512, pad=1`, compact
`vec, 16x16xf16, valid=16x8, pad=1`, or pto-isa's positional `vec, f16, 16, 16,
row_major, none_box, 512, 1` (the whole tile valid). pad is PTOAS's PadValue: 0 none, 1 zero, 2 max, 3 min.

A view's shape and strides (elements, at most 5 dimensions, aligned to the right as
pto-isa's GlobalTensor) are values: constants or names bound from outside. A load or
store of a Vec tile becomes, as pto-isa's A5 TLoad does, the MTE2 (MTE3) loop-register
writes, the pad value if the tile declares one, and one copy per index of dimension 0:
dimensions 1, 2, 3 (ND; 1, 2, 4 for DN) are loop2, loop1 and n_burst, the valid columns
(rows for DN) len_burst, and the tile's row (column) pitch the UB row stride, so a
padded row is filled with the pad value up to the tile's width. docs/semantics.md lists
the choices this makes.
"""

import math
import re
from dataclasses import dataclass, field, replace

from .errors import ProgramError
from .floats import FLOAT_FORMATS, encode_float
from .isa import DTYPE_BY_NAME, UB_LINE, ErrorCode

TILE_OPS = ("tassign", "alloc_tile", "make_tensor_view", "partition_view", "tload", "tprefetch", "tstore")
RANK = 5
# A tile op whose dimension 0 unrolls into more copies than this is refused.
MAX_TILE_COPIES = 1 << 16

# PTOAS loc -> the seed 002's TileType and its buffer. Only Vec (UB) is this engine's.
SPACES = {"vec": ("Vec", "UB"), "mat": ("Mat", "L1"), "left": ("Left", "L0A"),
          "right": ("Right", "L0B"), "acc": ("Acc", "L0C"), "bias": ("Bias", "Bias"),
          "scaling": ("Scaling", "FBuffer")}
PAD_NAMES = ("none", "zero", "max", "min")       # PTOAS PadValue 0..3
POSITIONAL = ("loc", "dtype", "rows", "cols", "blayout", "slayout", "fractal", "pad")
LAYOUTS = {("row_major", "none_box"): "nd", ("col_major", "none_box"): "dn"}

SA_MESSAGES = {
    "SA-0351": "Memory space is not available on this architecture.",
    "SA-0352": "Tile storage size exceeds memory space capacity.",
    "SA-0353": "addr + tile_size exceeds memory space capacity (out of bounds).",
    "SA-0354": "addr is not properly aligned for the target memory space.",
}

_SHAPE = re.compile(r"(\d+|\?)x(\d+|\?)x([A-Za-z0-9_]+)")
_LAYOUT_ATTR = re.compile(r"#pto\.layout<\s*(\w+)\s*>")
_ATOMIC_ATTR = re.compile(r"atomic\w*\s*=\s*([^,}]*)", re.IGNORECASE)


def _error(token, message):
    return ProgramError(message, token.line, token.column)


def _spelling(word):
    """row_major, RowMajor and rowmajor are one name."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", word).lower().replace("__", "_")


@dataclass(frozen=True)
class Tile:
    loc: str
    dtype: object
    rows: int
    cols: int
    valid_rows: int
    valid_cols: int
    blayout: str = "row_major"
    slayout: str = "none_box"
    fractal: int = 512
    pad: int = 0

    @property
    def size(self):
        return self.rows * self.cols * self.dtype.size

    @property
    def layout(self):
        return LAYOUTS.get((self.blayout, self.slayout))

    @property
    def pitch(self):
        """Bytes from one UB row (ND) or column (DN) of the tile to the next."""
        return (self.cols if self.layout == "nd" else self.rows) * self.dtype.size


@dataclass(frozen=True)
class View:
    address: int           # byte address of element (0, ..., 0)
    dtype: object
    shape: tuple
    strides: tuple         # elements
    layout: str

    def padded(self):
        """(shape, strides) as 5 dimensions: missing outer ones have size 1."""
        missing = RANK - len(self.shape)
        return (1,) * missing + self.shape, (0,) * missing + self.strides


# --- types --------------------------------------------------------------------------

def _type_body(typ, names):
    text = typ.text
    head, _, rest = text.partition("<")
    if head not in names or not rest.endswith(">"):
        raise _error(typ.token, f"expected {' or '.join(n + '<...>' for n in names)}, "
                                f"found {text}")
    return [item.strip() for item in rest[:-1].split(",")]


def _field_number(text, token, what, dynamic=False):
    if text == "?" and dynamic:
        return None
    if text == "?":
        raise _error(token, f"{what} is dynamic ('?'): this engine needs it as a number")
    if not re.fullmatch(r"\d{1,12}", text):
        raise _error(token, f"{what} {text!r} is not a number")
    return int(text)


def _dtype(name, token):
    dtype = DTYPE_BY_NAME.get(name)
    if dtype is None:
        raise _error(token, f"unknown element type {name!r}")
    return dtype


def _tile_fields(items, token):
    """The fields of a tile type's body, by name: keyed or compact items, or the eight
    positional ones of pto-isa's `!pto.tile<loc, dtype, rows, cols, blayout, slayout,
    fractal, pad>`."""
    if len(items) == len(POSITIONAL) and not any("=" in item for item in items) \
            and items[1] in DTYPE_BY_NAME:
        return dict(zip(POSITIONAL, items))
    fields = {}
    for item in items:
        key, equals, value = (part.strip() for part in item.partition("="))
        shape = _SHAPE.fullmatch(item)
        if shape:
            fields["rows"], fields["cols"], fields["dtype"] = shape.groups()
        elif not equals and key in SPACES:
            fields["loc"] = key
        elif key in ("v_row", "v_col") + POSITIONAL:
            fields[key] = value
        elif key == "valid" and re.fullmatch(r"(\d+|\?)x(\d+|\?)", value):
            fields["v_row"], fields["v_col"] = value.split("x")
        else:
            raise _error(token, f"unknown tile type field {item!r}")
    return fields


def tile_type(typ):
    """The Tile a `!pto.tile<...>` / `!pto.tile_buf<...>` type describes; a dynamic
    valid dimension (`?`) is None."""
    token = typ.token
    fields = _tile_fields(_type_body(typ, ("!pto.tile", "!pto.tile_buf")), token)
    missing = [k for k in ("loc", "dtype", "rows", "cols") if k not in fields]
    if missing:
        raise _error(token, f"{typ.text} gives no {', '.join(missing)}")
    if fields["loc"] not in SPACES:
        raise _error(token, f"unknown loc {fields['loc']!r} ({', '.join(SPACES)})")
    rows = _field_number(fields["rows"], token, "rows")
    cols = _field_number(fields["cols"], token, "cols")
    tile = Tile(fields["loc"], _dtype(fields["dtype"], token), rows, cols,
                _field_number(fields.get("v_row", str(rows)), token, "v_row", dynamic=True),
                _field_number(fields.get("v_col", str(cols)), token, "v_col", dynamic=True),
                _spelling(fields.get("blayout", "row_major")),
                _spelling(fields.get("slayout", "none_box")),
                _field_number(fields.get("fractal", "512"), token, "fractal"),
                _field_number(fields.get("pad", "0"), token, "pad"))
    if tile.pad not in range(len(PAD_NAMES)):
        raise _error(token, f"unknown pad {tile.pad} (0 none, 1 zero, 2 max, 3 min)")
    return tile


def view_dtype(typ):
    """Element type of a `!pto.tensor_view<...xT>` / `!pto.partition_tensor_view<...>`."""
    body = _type_body(typ, ("!pto.tensor_view", "!pto.partition_tensor_view"))
    if len(body) != 1:
        raise _error(typ.token, f"expected a view type such as !pto.tensor_view<16x16xf16>, "
                                f"found {typ.text}")
    return _dtype(body[0].rsplit("x", 1)[-1], typ.token)


def pad_bits(tile, token):
    """pad_val of the tile's PadValue: zero, or the element type's largest / lowest
    value (infinities where the format has them), as pto-isa's GetPadValue."""
    dtype, name = tile.dtype, PAD_NAMES[tile.pad]
    if name == "zero":
        return 0
    sign = 1 if name == "max" else -1
    if dtype.name in FLOAT_FORMATS:
        fmt = FLOAT_FORMATS[dtype.name]
        exp_bits, man_bits, finite_only = fmt
        if not finite_only:
            return encode_float(sign * math.inf, fmt)
        largest = (1 << (exp_bits + man_bits)) - 2       # all ones but the NaN pattern
        return largest | (sign < 0) << (exp_bits + man_bits)
    if dtype.name == "hifloat8":
        raise _error(token, f"pad={tile.pad} ({name}) of hifloat8 is not supported: "
                            "give such a tile pad=1 (zero) or pad=0")
    width = dtype.size * 8
    signed = dtype.name.startswith(("i", "si"))
    if name == "max":
        return (1 << (width - signed)) - 1
    return (1 << (width - 1)) if signed else 0


# --- the checks of pto.tassign ------------------------------------------------------

def check_assign(tile, address, profile, token):
    """seed 002's SA-0351 ... SA-0354 (the order of its table), then the engine's own
    limits: a Vec tile, ND or DN, whose rows start 32-byte aligned, with its valid
    region inside it."""
    kind, buffer = SPACES[tile.loc]
    capacity = profile.ub_size if tile.loc == "vec" else 0

    def fail(code, detail):
        return _error(token, f"{code}: {SA_MESSAGES[code]} ({detail})")
    if capacity <= 0:
        raise fail("SA-0351", f"loc={tile.loc} is a {kind} tile in {buffer}: this engine "
                              f"moves GM and UB only; Mat, Acc and the L0/L1 spaces are "
                              f"out of scope")
    if tile.size > capacity:
        raise fail("SA-0352", f"{tile.rows}x{tile.cols}x{tile.dtype.name} is {tile.size} "
                              f"bytes, UB of {profile.name} {capacity}")
    if address < 0 or address + tile.size > capacity:
        raise fail("SA-0353", f"{address:#x} + {tile.size} > {capacity}, UB of {profile.name}")
    if address % UB_LINE:
        raise fail("SA-0354", f"{address:#x} is not a multiple of {UB_LINE}")
    if tile.layout is None:
        raise _error(token, f"blayout={tile.blayout}, slayout={tile.slayout}: a Vec tile "
                            f"here is ND (row_major, none_box) or DN (col_major, none_box); "
                            f"fractal layouts (NZ, ZN) are not supported yet")
    if tile.dtype.size == 0:
        raise _error(token, f"a tile of sub-byte {tile.dtype.name} is not supported")
    if tile.pitch % UB_LINE:
        what = "row (cols" if tile.layout == "nd" else "column (rows"
        raise _error(token, f"the tile's {what} x {tile.dtype.size}) is {tile.pitch} bytes, "
                            f"not a multiple of {UB_LINE}: a Vec tile's rows start "
                            f"{UB_LINE}-byte aligned in UB")
    if not (tile.valid_rows <= tile.rows and tile.valid_cols <= tile.cols):
        raise _error(token, f"valid region {tile.valid_rows}x{tile.valid_cols} exceeds "
                            f"the tile's {tile.rows}x{tile.cols}")


# --- the statements -----------------------------------------------------------------

@dataclass
class TileStatement:
    """A tile op as written: values, `key = [values]` lists, `ins(...)`/`outs(...)`
    groups with their types, the type signature and the layout attribute."""
    op: object
    name: str
    result: object
    operands: list = field(default_factory=list)
    lists: dict = field(default_factory=dict)
    scalars: dict = field(default_factory=dict)    # `key = %value`
    groups: dict = field(default_factory=dict)     # name -> (token, values, types)
    types: list = field(default_factory=list)
    result_types: list = field(default_factory=list)
    layout: str | None = None


def _values(p):
    values = []
    while p.peek().kind == "value" and not p.at_result():
        values.append(p.advance())
        if not p.accept(","):
            break
    return values


def _attributes(p, stmt):
    start = p.peek()
    p.skip_balanced("{", "}")
    text = p.source(start)
    layout = _LAYOUT_ATTR.search(text)
    if layout:
        stmt.layout = layout.group(1)
    atomic = _ATOMIC_ATTR.search(text)
    if atomic and not re.search("none", atomic.group(1), re.IGNORECASE):
        raise _error(start, f"an atomic store ({atomic.group(0)}) is out of scope: this "
                            f"engine writes GM, it does not add to it")


def read_statement(p, op, name, result):
    """Read a tile op's text from the parser's token stream."""
    stmt = TileStatement(op, name, result, _values(p))
    while p.peek().kind == "ident" and p.peek(1).text in ("=", "("):
        key = p.advance()
        if p.accept("("):                                   # key(values : types)
            values = _values(p)
            types = p.parse_type_list() if p.accept(":") else []
            p.expect(")")
            stmt.groups[key.text] = (key, values, types)
        elif p.expect("=") and p.peek().kind == "value":      # key = %value
            stmt.scalars[key.text] = p.advance()
        else:                                               # key = [values]
            p.expect("[")
            stmt.lists[key.text] = _values(p)
            p.expect("]")
        p.accept(",")
    if p.at("{"):
        _attributes(p, stmt)
    if p.at(":"):
        _, stmt.types, stmt.result_types = p.parse_signature()
    if p.at("{"):
        _attributes(p, stmt)
    return stmt


class TileScope:
    """The tiles and views a program has defined, and the lowering of its tile ops."""

    def __init__(self, profile):
        self.profile = profile
        self.tiles = {}     # name -> (Tile, UB address)
        self.views = {}     # name -> View

    def statement(self, p, op, name, result):
        """Read one tile op; returns the commands it lowers to, [(mnemonic, values,
        deferred)]."""
        stmt = read_statement(p, op, name, result)
        if name in ("tload", "tprefetch"):
            return self.load(stmt)
        if name == "tstore":
            return self.store(stmt)
        if result is not None and name == "tassign":
            raise _error(result, "tassign has no result")
        if result is None and name != "tassign":
            raise _error(op, f"{name} needs a result name")
        if result is not None and (result.text in self.tiles or result.text in self.views
                                   or result.text[1:] in p.values):
            raise _error(result, f"{result.text} is already defined")
        getattr(self, name)(p, stmt)
        return []

    # operands

    def operands(self, stmt, group, count):
        """(values, types) of an `ins(...)`/`outs(...)` group, or of the statement."""
        token, values, types = stmt.groups.get(group, (stmt.op, stmt.operands, stmt.types))
        if len(values) != count or len(types) != count:
            where = f"{group}(...)" if group in stmt.groups else "it"
            raise _error(token, f"{stmt.name}: {where} takes {count} operands and "
                                f"{count} types, found {len(values)} and {len(types)}")
        return values, types

    def number(self, p, token, what, low=0):
        value = p.integer(token, p.resolve(token))
        if value < low:
            raise _error(token, f"{what} {token.text} = {value} is below {low}")
        return value

    def placed_tile(self, token, typ):
        name = token.text
        if name not in self.tiles:
            raise _error(token, f"tile {name} has no UB address: pto.tassign it first")
        tile, address = self.tiles[name]
        declared = tile_type(typ)
        dynamic = {dim: getattr(tile, dim) for dim in ("valid_rows", "valid_cols")
                   if getattr(declared, dim) is None}
        if replace(declared, **dynamic) != tile:
            raise _error(typ.token, f"{name} was assigned as a different tile type than "
                                    f"{typ.text}")
        return tile, address

    def place(self, name, tile, address, token):
        check_assign(tile, address, self.profile, token)
        self.tiles[name] = (tile, address)

    def view(self, token, typ):
        if token.text not in self.views:
            raise _error(token, f"{token.text} is not a tensor view (make_tensor_view or "
                                f"partition_view)")
        view = self.views[token.text]
        if view_dtype(typ) != view.dtype:
            raise _error(typ.token, f"{token.text} has element type {view.dtype.name}, "
                                    f"not that of {typ.text}")
        return view

    # definitions

    def tassign(self, p, stmt):
        (tile_token, addr_token), (typ, _) = self.operands(stmt, "ins", 2)
        tile = tile_type(typ)
        if None in (tile.valid_rows, tile.valid_cols):
            raise _error(typ.token, "a dynamic valid region ('?') is given by alloc_tile's "
                                    "valid_row = %r valid_col = %c, not by tassign")
        address = p.integer(addr_token, p.resolve(addr_token))
        self.place(tile_token.text, tile, address, typ.token)

    def alloc_tile(self, p, stmt):
        """PTOAS's placement: `addr = %a`, and the valid region's `?` dimensions from
        `valid_row = %r valid_col = %c`."""
        if stmt.operands or len(stmt.types) != 1:
            raise _error(stmt.op, "alloc_tile takes addr = %a [valid_row = %r valid_col = "
                                  "%c] and one tile type")
        if "addr" not in stmt.scalars:
            raise _error(stmt.op, "alloc_tile needs addr = %a: this engine places a tile "
                                  "where the program says (no compiler placement)")
        tile = tile_type(stmt.types[0])
        valid = {}
        for key, dim, what in (("valid_row", "valid_rows", "row"),
                               ("valid_col", "valid_cols", "column")):
            declared = getattr(tile, dim)
            given = stmt.scalars.get(key)
            if (declared is None) != (given is not None):
                raise _error(given or stmt.types[0].token,
                             f"{key} = %x goes with a dynamic ('?') valid {what} count, "
                             f"and only with one")
            valid[dim] = declared if given is None else self.number(p, given, key)
        address = p.integer(stmt.scalars["addr"], p.resolve(stmt.scalars["addr"]))
        self.place(stmt.result.text, replace(tile, **valid), address, stmt.types[0].token)

    def view_lists(self, p, stmt, names):
        lists = []
        for key in names:
            if key not in stmt.lists:
                raise _error(stmt.op, f"{stmt.name} needs {key} = [...]")
            lists.append([self.number(p, t, key[:-1]) for t in stmt.lists[key]])
        if not 1 <= len(lists[0]) <= RANK or len({len(x) for x in lists}) != 1:
            raise _error(stmt.op, f"{stmt.name}: {' and '.join(names)} need the same "
                                  f"number of dimensions, 1 to {RANK}")
        return lists

    def make_tensor_view(self, p, stmt):
        (pointer,), (typ,) = self.operands(stmt, None, 1)
        shape, strides = self.view_lists(p, stmt, ("shape", "strides"))
        layout = stmt.layout or "nd"
        if layout not in ("nd", "dn"):
            raise _error(stmt.op, f"GM layout {layout}: a Vec tile moves ND to ND or DN "
                                  f"to DN; other layouts are not supported yet")
        address = p.integer(pointer, p.resolve(pointer))
        self.views[stmt.result.text] = View(
            address, view_dtype(typ), tuple(shape), tuple(strides), layout)

    def partition_view(self, p, stmt):
        if len(stmt.operands) != 1 or not stmt.types:
            raise _error(stmt.op, "partition_view takes a view and its type")
        source = self.view(stmt.operands[0], stmt.types[0])
        offsets, sizes = self.view_lists(p, stmt, ("offsets", "sizes"))
        if len(offsets) != len(source.shape):
            raise _error(stmt.op, f"partition_view of a {len(source.shape)}-dimensional "
                                  f"view takes {len(source.shape)} offsets and sizes")
        for dim, (offset, size, extent) in enumerate(zip(offsets, sizes, source.shape)):
            if offset + size > extent:
                raise _error(stmt.op, f"dimension {dim}: offset {offset} + size {size} "
                                      f"exceeds the view's {extent}")
        moved = sum(o * s for o, s in zip(offsets, source.strides)) * source.dtype.size
        self.views[stmt.result.text] = View(source.address + moved, source.dtype,
                                            tuple(sizes), source.strides, source.layout)

    # moves

    def load(self, stmt):
        if "ins" in stmt.groups:
            (view_token,), (view_typ,) = self.operands(stmt, "ins", 1)
            (tile_token,), (tile_typ,) = self.operands(stmt, "outs", 1)
        else:
            (view_token,), (view_typ,) = self.operands(stmt, None, 1)
            if stmt.result is None or len(stmt.result_types) != 1:
                raise _error(stmt.op, f"{stmt.name} %view : view type -> tile type names "
                                      f"its tile as its result")
            tile_token, tile_typ = stmt.result, stmt.result_types[0]
        view = self.view(view_token, view_typ)
        tile, address = self.placed_tile(tile_token, tile_typ)
        return lower(tile, address, view, "load", stmt.op, tile_typ.token)

    def store(self, stmt):
        if "ins" in stmt.groups:
            (tile_token,), (tile_typ,) = self.operands(stmt, "ins", 1)
            (view_token,), (view_typ,) = self.operands(stmt, "outs", 1)
        else:
            (tile_token, view_token), (tile_typ, view_typ) = self.operands(stmt, None, 2)
        if stmt.result is not None:
            raise _error(stmt.result, "tstore has no result")
        view = self.view(view_token, view_typ)
        tile, address = self.placed_tile(tile_token, tile_typ)
        return lower(tile, address, view, "store", stmt.op, tile_typ.token)


# --- lowering -----------------------------------------------------------------------

def _check_move(tile, view, token):
    """The view's shape is the tile's valid region; its rows (columns) are contiguous."""
    shape, strides = view.padded()
    if view.layout != tile.layout:
        raise _error(token, f"{tile.layout.upper()} tile, {view.layout.upper()} view: "
                            f"a Vec tile moves ND to ND or DN to DN only")
    burst, contiguous = (3, 4) if tile.layout == "nd" else (4, 3)
    across, along = ((tile.valid_rows, tile.valid_cols) if tile.layout == "nd"
                     else (tile.valid_cols, tile.valid_rows))
    if shape[contiguous] != along or math.prod(shape[:3]) * shape[burst] != across:
        raise _error(token, f"the view's shape {'x'.join(map(str, shape))} is not the "
                            f"tile's valid region {tile.valid_rows}x{tile.valid_cols} "
                            f"({tile.layout.upper()}: dimension {contiguous} is "
                            f"{'columns' if tile.layout == 'nd' else 'rows'}, the product "
                            f"of the others {'rows' if tile.layout == 'nd' else 'columns'})")
    if strides[contiguous] != 1 and along > 1:
        raise _error(token, f"the view's dimension {contiguous} has stride "
                            f"{strides[contiguous]}: its elements must be contiguous (1)")
    if shape[0] > MAX_TILE_COPIES:
        raise _error(token, f"dimension 0 of the view unrolls into more than "
                            f"{MAX_TILE_COPIES} copies")
    return shape, strides, burst


def lower(tile, address, view, direction, op_token, type_token):
    """The engine commands of a Vec tile load (MTE2) or store (MTE3)."""
    shape, strides, burst = _check_move(tile, view, type_token)
    es = tile.dtype.size
    deferred = None
    if view.dtype.size != es:
        deferred = (ErrorCode.TYPE_UNSUPPORTED,
                    f"tile element type {tile.dtype.name} ({es} bytes) and view element "
                    f"type {view.dtype.name} ({view.dtype.size} bytes) differ in size: "
                    f"sizeof(tile.dtype) == sizeof(gtensor.dtype) (seed 004)")
    block = shape[burst] * tile.pitch                   # UB bytes of one loop1 step
    gm = [s * es for s in strides]
    ub = [shape[1] * shape[2] * block, shape[2] * block, block]   # dims 0, 1, 2
    gm_ub = [(gm[d], ub[d]) for d in range(3)]
    if direction == "store":
        gm_ub = [(u, g) for g, u in gm_ub]               # MTE3 strides are (ub, gm)
    suffix = "outtoub" if direction == "load" else "ubtoout"
    commands = [
        (f"set_loop_size_{suffix}", {"loop1_count": shape[2], "loop2_count": shape[1]}),
        (f"set_loop1_stride_{suffix}", dict(zip(("src_stride", "dst_stride"), gm_ub[2]))),
        (f"set_loop2_stride_{suffix}", dict(zip(("src_stride", "dst_stride"), gm_ub[1]))),
    ]
    length = (tile.valid_cols if tile.layout == "nd" else tile.valid_rows) * es
    copy = {"sid": 0, "n_burst": shape[burst], "len_burst": length, "l2_cache_ctl": 0,
            "dtype": tile.dtype.code}
    if direction == "load":
        padded = tile.pad != 0
        if padded:
            commands.append(("set_mov_pad_val", {"pad_val": pad_bits(tile, type_token)}))
        copy.update(left_padding=0, right_padding=0, data_select_bit=int(padded),
                    src_stride=gm[burst], dst_stride=tile.pitch)
    else:
        copy.update(dst_stride=gm[burst], src_stride=tile.pitch)
    commands = [(m, v, None) for m, v in commands]
    gm_field, ub_field = ("gm_src", "ub_dst") if direction == "load" else ("gm_dst", "ub_src")
    mnemonic = "copy_gm_to_ubuf" if direction == "load" else "copy_ubuf_to_gm"
    for i in range(shape[0]):
        values = dict(copy, **{gm_field: view.address + i * gm[0], ub_field: address + i * ub[0]})
        commands.append((mnemonic, values, deferred))
    return commands
