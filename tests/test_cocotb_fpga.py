"""The FPGA top driven through AXI4-Lite as a CPU would (tb/test_fpga_top.py), launched
from pytest: one Verilator build of `mte_dma_fpga` and one simulator run.

The profile is kirin9030 (128 KiB UB): each program's whole UB is read back through the
32-bit UB_DATA window, and at a5's 256 KiB that alone would double the run time.
"""

from tb import fpga_run

PROFILE = "kirin9030"


def test_cpu_drives_the_fpga_top():
    runner, build_dir = fpga_run.build(PROFILE)
    outcome = fpga_run.run(runner, build_dir, PROFILE)
    assert outcome == {"cpu_programs": True}, f"cocotb results: {outcome} (logs in {build_dir})"
