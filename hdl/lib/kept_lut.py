"""A small logic function that synthesis keeps as a cell of its own."""

from amaranth.hdl import Const, Instance, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .ecp5 import Ecp5Target

MAX_INPUTS = 5          # one ECP5 slice: two LUT4 and a PFUMX

# Bits of a wide register that take their load enable from one KeptLut (load_in_groups).
GROUP_BITS = 64


def truth_table(function, width):
    """The table of `function` over `width` bits: bit i is bit 0 of function(bit 0 of i,
    bit 1 of i, ...) for i in 0 .. 2^width - 1. So a function written with bitwise
    operators serves both as logic on 1-bit Values and as its own table."""
    return sum((function(*((i >> k) & 1 for k in range(width))) & 1) << i
               for i in range(1 << width))


def lut4_inits(table, width):
    """The ECP5 cells of a table of `width` (1 to 5) inputs: the INIT of one LUT4 whose
    inputs A, B, C, D are a[0..3] (unused ones tied to 0), or for five inputs the INITs
    of the LUT4 for a[4] = 1 (a PFUMX's ALUT) and for a[4] = 0 (its BLUT)."""
    def init(part, bits):
        return sum(((part >> (i & ((1 << bits) - 1))) & 1) << i for i in range(16))
    if width <= 4:
        return [init(table, width)]
    return [init(table >> 16, 4), init(table & 0xFFFF, 4)]


class KeptLut(wiring.Component):
    """`z` is bit `a` of `table`: a function of the 1 to 5 bits of `a`.

    A decision that many wide muxes share is best one net that each of them takes as an
    input; but ABC, to save a level, maps a decision of few inputs into each of its
    loads, which multiplies their logic (the UB's head logic three times over).
    Elaborated for `Ecp5Target`, the function is a LUT4 instance, or for five inputs two
    and a PFUMX, all marked `keep`, which ABC leaves as they are; otherwise it is plain
    logic.
    """

    def __init__(self, width, table):
        if not 1 <= width <= MAX_INPUTS:
            raise ValueError(f"a KeptLut has 1 to {MAX_INPUTS} inputs, not {width}")
        if not 0 <= table < 1 << (1 << width):
            raise ValueError(f"table {table:#x} is wider than {1 << width} bits")
        self._width = width
        self._table = table
        super().__init__({"a": In(width), "z": Out(1)})

    def elaborate(self, platform):
        m = Module()
        if not isinstance(platform, Ecp5Target):
            m.d.comb += self.z.eq(Const(self._table, 1 << self._width).bit_select(self.a, 1))
            return m
        pins = {f"i_{pin}": self.a[k] if k < min(self._width, 4) else 0
                for k, pin in enumerate("ABCD")}
        inits = lut4_inits(self._table, self._width)
        if len(inits) == 1:
            m.submodules.lut = Instance("LUT4", a_keep=1, p_INIT=inits[0], **pins,
                                        o_Z=self.z)
            return m
        halves = []
        for name, init in zip(("alut", "blut"), inits):
            half = Signal(name=name)
            m.submodules[name] = Instance("LUT4", a_keep=1, p_INIT=init, **pins, o_Z=half)
            halves.append(half)
        m.submodules.mux = Instance("PFUMX", a_keep=1, i_ALUT=halves[0], i_BLUT=halves[1],
                                    i_C0=self.a[4], o_Z=self.z)
        return m


def load_in_groups(m, name, loads, inputs, pairs, group=GROUP_BITS, split_at=()):
    """Each register of `pairs` (register, value), all of one width, loads its value on
    cycles the function `loads` of the bits `inputs` is high.

    The registers are wide and their bits lie wherever their loads are: each `group` bits
    of them (split further at the bit offsets `split_at`) take the decision from a cell
    of their own (a KeptLut, `{name}_load{i}`), which the placer can put among them. So
    the gates that make the decision stay beside the registers they are made of, and do
    not go out to the wide registers' bits and back."""
    pairs = [(Value.cast(register), Value.cast(value)) for register, value in pairs]
    width = len(pairs[0][0])
    assert all(len(register) == width for register, _ in pairs)
    bounds = sorted({0, width, *range(0, width, group), *split_at})
    table = truth_table(loads, len(inputs))
    for i, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        load = m.submodules[f"{name}_load{i}"] = KeptLut(len(inputs), table)
        m.d.comb += load.a.eq(inputs)
        with m.If(load.z):
            m.d.sync += [register[lo:hi].eq(value[lo:hi]) for register, value in pairs]
