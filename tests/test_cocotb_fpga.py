"""The FPGA top driven through AXI4-Lite as a CPU would (tb/test_fpga_top.py), launched
from pytest: one Verilator build of `mte_dma_fpga` and one simulator run of
`cpu_programs` (rule and bus errors among its programs) and of `c_firmware` (the same
through C built against `mte header`'s mte_dma.h). `cpu_soak` with one program ending in
each error class, eleven more programs whose UB crosses the window twice, runs in
`make fpga-sim`, which CI runs beside `make test`.

The profile is kirin9030 (128 KiB UB): the first program's whole UB is read back
through the 32-bit UB_DATA window, 32,768 reads.
"""

import pytest

from tb import fpga_run

PROFILE = "kirin9030"


@pytest.mark.long
def test_cpu_drives_the_fpga_top():
    runner, build_dir = fpga_run.build(PROFILE)
    outcome = fpga_run.run(runner, build_dir, PROFILE)
    assert outcome == {"cpu_programs": True, "c_firmware": True}, \
        f"cocotb results: {outcome} (logs in {build_dir})"


def test_waves_trace_only_named_programs(capsys):
    """A trace of the fixed tests would be gigabytes: --waves wants --case."""
    with pytest.raises(SystemExit) as exit:
        fpga_run.main(["--waves", "--count", "3"])
    assert exit.value.code == 2 and "--case" in capsys.readouterr().err
