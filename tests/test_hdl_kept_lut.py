"""hdl.lib.kept_lut: KeptLut, a function's table and the ECP5 cells that keep it apart; and
load_in_groups, wide registers that load in groups, each on a KeptLut of its own."""

import gc
import random

import pytest
from amaranth.hdl import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from hdl.lib.kept_lut import KeptLut, load_in_groups, lut4_inits, truth_table
from hdl_helpers import synth_ecp5_module

LOADS = 32


def lut4(init, a, b, c, d):
    """The ECP5 LUT4: Z = INIT[{D, C, B, A}]."""
    return (init >> (8 * d + 4 * c + 2 * b + a)) & 1


def ecp5_value(inits, bits):
    """What lut4_inits' cells give for input bits a[0..]: one LUT4, or two into a PFUMX
    (Z = C0 ? ALUT : BLUT, C0 = a[4])."""
    pins = (list(bits) + [0, 0, 0, 0])[:4]
    if len(inits) == 1:
        return lut4(inits[0], *pins)
    return lut4(inits[0] if bits[4] else inits[1], *pins)


def test_truth_table_bit_order():
    # bit i of the table is function(bit 0 of i, bit 1 of i)
    assert truth_table(lambda a, b: a and not b, 2) == 0b0010


@pytest.mark.parametrize("width", range(1, 6))
def test_ecp5_cells_give_the_table(width):
    rng = random.Random(width)
    for _ in range(20):
        table = rng.getrandbits(1 << width)
        inits = lut4_inits(table, width)
        assert len(inits) == (1 if width <= 4 else 2)
        for i in range(1 << width):
            bits = [(i >> k) & 1 for k in range(width)]
            assert ecp5_value(inits, bits) == (table >> i) & 1, (table, i)


@pytest.mark.parametrize("width", [1, 3, 5])
def test_plain_form_looks_up_the_table(width):
    table = random.Random(10 + width).getrandbits(1 << width)
    dut = KeptLut(width, table)

    async def bench(ctx):
        for i in range(1 << width):
            ctx.set(dut.a, i)
            assert ctx.get(dut.z) == (table >> i) & 1

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
@pytest.mark.parametrize("width, table", [(0, 0), (6, 0), (2, 1 << 4)])
def test_refuses_what_a_slice_cannot_hold(width, table):
    with pytest.raises(ValueError):
        KeptLut(width, table)
    gc.collect()        # the refused object's never-used warning, while it is filtered


class SharedDecision(wiring.Component):
    """A five-input decision that selects between two words, bit by bit."""
    a: In(5)
    x: In(LOADS)
    y: In(LOADS)
    out: Out(LOADS)

    def __init__(self, table):
        self._table = table
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        decision = m.submodules.decision = KeptLut(5, self._table)
        m.d.comb += [decision.a.eq(self.a), self.out.eq(Mux(decision.z, self.x, self.y))]
        return m


def test_ecp5_form_is_kept_out_of_its_loads(tmp_path):
    table = truth_table(lambda v0, v1, r0, r1, f: (r0 and not v0) or ((not r1 or v1) and f), 5)
    module = synth_ecp5_module(SharedDecision(table), "shared", tmp_path)
    cells = module["cells"].values()
    inputs = set(module["ports"]["a"]["bits"])
    readers = [cell for cell in cells
               if any(bit in inputs for bits in cell["connections"].values() for bit in bits)]
    # the decision's inputs reach only its own cells: two LUT4 with the tables' halves
    # and the PFUMX that picks between them
    assert sorted(cell["type"] for cell in readers) == ["LUT4", "LUT4", "PFUMX"]
    inits = sorted(int(cell["parameters"]["INIT"], 2) for cell in readers
                   if cell["type"] == "LUT4")
    assert inits == sorted(lut4_inits(table, 5))


GROUPED_BITS = 20
GROUP = 8
SPLIT_AT = (3,)
GROUP_BOUNDS = (0, 3, 8, 16, 20)       # every GROUP bits, and at SPLIT_AT


def _either(x, y):
    return x | y


class GroupedLoads(wiring.Component):
    """Two registers that load their values, in groups, when either input is high."""
    a: In(2)
    x: In(GROUPED_BITS)
    y: In(GROUPED_BITS)
    p: Out(GROUPED_BITS)
    q: Out(GROUPED_BITS)

    def elaborate(self, platform):
        m = Module()
        load_in_groups(m, "pq", _either, self.a, [(self.p, self.x), (self.q, ~self.y)],
                       group=GROUP, split_at=SPLIT_AT)
        return m


def test_grouped_registers_load_when_the_function_is_high():
    dut = GroupedLoads()
    rng = random.Random(7)
    mask = (1 << GROUPED_BITS) - 1

    async def bench(ctx):
        p = q = 0
        for _ in range(64):
            a = rng.getrandbits(2)
            x, y = rng.getrandbits(GROUPED_BITS), rng.getrandbits(GROUPED_BITS)
            ctx.set(dut.a, a)
            ctx.set(dut.x, x)
            ctx.set(dut.y, y)
            await ctx.tick()
            if a:
                p, q = x, ~y & mask
            assert (ctx.get(dut.p), ctx.get(dut.q)) == (p, q)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def test_each_group_loads_on_a_cell_of_its_own(tmp_path):
    module = synth_ecp5_module(GroupedLoads(), "grouped", tmp_path)
    inputs = set(module["ports"]["a"]["bits"])
    readers = [cell for cell in module["cells"].values()
               if any(bit in inputs for bits in cell["connections"].values() for bit in bits)]
    # one LUT4 per group, which enables both registers' bits of that group and no other
    assert [cell["type"] for cell in readers] == ["LUT4"] * (len(GROUP_BOUNDS) - 1)
    flops = [cell for cell in module["cells"].values() if cell["type"] == "TRELLIS_FF"]
    enabled = sorted(sum(ff["connections"]["CE"] == lut["connections"]["Z"] for ff in flops)
                     for lut in readers)
    sizes = sorted(2 * (hi - lo) for lo, hi in zip(GROUP_BOUNDS, GROUP_BOUNDS[1:]))
    assert enabled == sizes
