"""The FPGA top's generated Verilog goes through Yosys's generic synthesis front half
cleanly: no multiple drivers, no combinational loops, no undriven wires, no latches.

A quick check that the design is synthesizable; `make fpga` (hdl/fpga_build.py) runs the
full ECP5 flow and measures it.
"""

from hdl.fpga_build import write_verilog, yosys
from hdl.fpga_top import MteDmaFpga

PROFILE = "kirin9030"   # the smallest UB
# Yosys reads the UB's zero init, printed word by word, in time quadratic in the word
# count: 64-byte words keep the smallest UB at 2048 words.
WIDTH = 64
TOP = "mte_dma_fpga"
LATCHES = "t:$dlatch t:$adlatch t:$dlatchsr t:$sr t:$_DLATCH_* t:$_SR_*"


def test_fpga_top_synthesizes_cleanly(tmp_path):
    write_verilog(MteDmaFpga(PROFILE, WIDTH), TOP, tmp_path / f"{TOP}.v")
    yosys(f"read_verilog -sv {TOP}.v; synth -top {TOP} -flatten -run begin:fine; "
          f"check -assert; select -assert-none {LATCHES}", tmp_path)
    assert "Found and reported 0 problems." in (tmp_path / "yosys.log").read_text()
