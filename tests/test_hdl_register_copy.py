"""hdl.lib.register_copy.RegisterCopy: a register, and copies of it that synthesis keeps."""

import random

from amaranth.hdl import Module, ResetInserter
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hdl.lib.register_copy import RegisterCopy
from hdl_helpers import run_sim, synth_ecp5_module

WIDTH = 5


class TwoCopies(wiring.Component):
    """Two copies of one register, each with an output of its own."""
    d: In(WIDTH)
    q0: Out(WIDTH)
    q1: Out(WIDTH)

    def elaborate(self, platform):
        m = Module()
        for k in range(2):
            copy = m.submodules[f"copy{k}"] = RegisterCopy(WIDTH)
            m.d.comb += [copy.d.eq(self.d), getattr(self, f"q{k}").eq(copy.q)]
        return m


def test_q_is_d_one_edge_later():
    dut = RegisterCopy(WIDTH)
    rng = random.Random(1)

    async def bench(ctx):
        for _ in range(50):
            value = rng.getrandbits(WIDTH)
            ctx.set(dut.d, value)
            await ctx.tick()
            assert ctx.get(dut.q) == value

    run_sim(dut, bench)


class Cleared(wiring.Component):
    """A copy in a domain reset by `clear`."""
    d: In(WIDTH)
    clear: In(1)
    q: Out(WIDTH)

    def elaborate(self, platform):
        m = Module()
        copy = RegisterCopy(WIDTH)
        m.submodules.copy = ResetInserter(self.clear)(copy)
        m.d.comb += [copy.d.eq(self.d), self.q.eq(copy.q)]
        return m


def test_reset_clears_q():
    dut = Cleared()
    ones = (1 << WIDTH) - 1

    async def bench(ctx):
        ctx.set(dut.d, ones)
        await ctx.tick()
        assert ctx.get(dut.q) == ones
        ctx.set(dut.clear, 1)
        await ctx.tick()
        assert ctx.get(dut.q) == 0
        ctx.set(dut.clear, 0)
        await ctx.tick()
        assert ctx.get(dut.q) == ones

    run_sim(dut, bench)


def test_ecp5_copies_are_not_merged(tmp_path):
    module = synth_ecp5_module(TwoCopies(), "copies", tmp_path)
    ffs = [cell for cell in module["cells"].values() if cell["type"] == "TRELLIS_FF"]
    assert len(ffs) == 2 * WIDTH
    assert len({tuple(ff["connections"]["Q"]) for ff in ffs}) == 2 * WIDTH
    # every bit reset by the domain's reset, the design's one reset net
    resets = {tuple(ff["connections"]["LSR"]) for ff in ffs}
    assert len(resets) == 1 and resets != {("0",)}
    assert {tuple(ff["connections"]["CE"]) for ff in ffs} == {("1",)}
    assert {ff["parameters"]["SRMODE"] for ff in ffs} == {"LSR_OVER_CE"}
    assert {ff["parameters"]["GSR"] for ff in ffs} == {"DISABLED"}
