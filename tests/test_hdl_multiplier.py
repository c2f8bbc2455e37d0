"""RegisteredMultiplier: its generic form on the simulator, and its ECP5 form through
Yosys's ECP5 synthesis (one MULT18X18D with its input registers on, enabled by `load`,
its output register off, and the product registered in fabric flip-flops)."""

import gc
import random

import pytest

from hdl.lib.multiplier import OPERAND_BITS, RegisteredMultiplier
from hdl_helpers import run_sim, synth_ecp5_module


@pytest.mark.parametrize("a_bits,b_bits", [(18, 18), (5, 18), (18, 3)])
def test_product_of_the_operands_loaded_two_edges_before(a_bits, b_bits):
    dut = RegisteredMultiplier(a_bits, b_bits)
    rng = random.Random(a_bits * 100 + b_bits)

    async def bench(ctx):
        loaded = []             # operands in the registers after each edge
        for _ in range(300):
            a, b = rng.getrandbits(a_bits), rng.getrandbits(b_bits)
            load = rng.random() < 0.5
            ctx.set(dut.a, a)
            ctx.set(dut.b, b)
            ctx.set(dut.load, load)
            *_, p = await ctx.tick().sample(dut.p)
            # `p` as sampled on this edge was registered on the edge before, from the
            # operands the registers held after the edge before that.
            if len(loaded) >= 2 and loaded[-2] is not None:
                assert p == loaded[-2][0] * loaded[-2][1]
            previous = loaded[-1] if loaded else None
            loaded.append((a, b) if load else previous)

    run_sim(dut, bench)


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_operands_wider_than_a_block_are_refused():
    with pytest.raises(ValueError):
        RegisteredMultiplier(OPERAND_BITS + 1, 4)
    gc.collect()        # the refused object's never-used warning, while it is filtered


def test_ecp5_form_is_one_dsp_block_and_a_fabric_product_register(tmp_path):
    module = synth_ecp5_module(RegisteredMultiplier(17, 18), "mult", tmp_path)
    cells, nets = module["cells"], module["netnames"]
    dsps = [cell for cell in cells.values() if cell["type"] == "MULT18X18D"]
    assert len(dsps) == 1
    dsp = dsps[0]
    params, ports = dsp["parameters"], dsp["connections"]
    for reg in ("INPUTA", "INPUTB"):
        assert params[f"REG_{reg}_CLK"] == "CLK0"
        assert params[f"REG_{reg}_CE"] == "CE0"
    assert params["REG_OUTPUT_CLK"] == "NONE"
    assert params["GSR"] == "DISABLED"
    assert ports["RST0"] == ["0"] and ports["CE0"] != ["1"]
    assert ports["A17"] == ["0"] and ports["B17"] != ["0"]
    # Every product bit is a flip-flop loaded from the block's output on every edge,
    # with no logic between and no reset.
    flops = {cell["connections"]["Q"][0]: cell for cell in cells.values()
             if cell["type"] == "TRELLIS_FF"}
    assert len(flops) == 17 + 18
    for k, bit in enumerate(nets["p"]["bits"]):
        flop = flops[bit]
        assert flop["connections"]["DI"] == ports[f"P{k}"]
        assert flop["connections"]["LSR"] == ["0"] and "CE" not in flop["connections"]
    assert not [cell for cell in cells.values()
                if cell["type"] not in ("MULT18X18D", "TRELLIS_FF")]
