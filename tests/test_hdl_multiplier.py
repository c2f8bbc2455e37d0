"""RegisteredMultiplier: its generic form on the simulator, and its ECP5 form through
Yosys's ECP5 synthesis (one MULT18X18D with its input and output registers on, the
operand registers enabled by `load`)."""

import gc
import json
import random

import pytest

from hdl.fpga_build import write_verilog, yosys
from hdl.ecp5 import Ecp5Target
from hdl.multiplier import OPERAND_BITS, RegisteredMultiplier
from hdl_helpers import run_sim


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


def test_ecp5_form_is_one_registered_dsp_block(tmp_path):
    top = "mult"
    write_verilog(RegisteredMultiplier(17, 18), top, tmp_path / f"{top}.v", Ecp5Target())
    yosys(f"read_verilog -sv {top}.v; synth_ecp5 -top {top} -json {top}.json", tmp_path)
    cells = json.loads((tmp_path / f"{top}.json").read_text())["modules"][top]["cells"]
    dsps = [cell for cell in cells.values() if cell["type"] == "MULT18X18D"]
    assert len(dsps) == 1
    assert not [cell for cell in cells.values() if cell["type"] == "TRELLIS_FF"]
    dsp = dsps[0]
    params = dsp["parameters"]
    for reg in ("INPUTA", "INPUTB", "OUTPUT"):
        assert params[f"REG_{reg}_CLK"] == "CLK0"
    assert params["REG_INPUTA_CE"] == params["REG_INPUTB_CE"] == "CE0"
    assert params["REG_OUTPUT_CE"] == "CE1"
    assert params["GSR"] == "DISABLED"
    ports = dsp["connections"]
    assert ports["CE1"] == ["1"] and ports["RST0"] == ["0"]
    assert ports["CE0"] != ports["CE1"]
    assert ports["A17"] == ["0"] and ports["B17"] != ["0"]
