"""Build `mte_dma_fpga` (the FPGA top) under Verilator and run tb/test_fpga_top.py on it.

    python -m tb.fpga_run [--profile a5] [--width 32]   build if needed, run every test

The Verilog comes from `python -m hdl.gen --top fpga` into sim_build/fpga_tb/, built by
tb/run.py's `build` (again only when that text changes).
"""

import argparse
import sys
import xml.etree.ElementTree as ET

from tb import run as tb_run

TEST_MODULE = "tb.test_fpga_top"
BUILD = tb_run.BUILD / "fpga_tb"


def build(profile="a5", width=32):
    """(runner, build directory), building only when the Verilog changed."""
    return tb_run.build("verilator", profile, width, waves=False, root=BUILD,
                        toplevel=tb_run.FPGA_TOPLEVEL)


def run(runner, build_dir, profile="a5", tests=None):
    """One simulator run; returns {cocotb test name: passed} from its xUnit results."""
    results = build_dir / "results.xml"
    results.unlink(missing_ok=True)
    try:
        runner.test(hdl_toplevel=tb_run.FPGA_TOPLEVEL, hdl_toplevel_lang="verilog",
                    test_module=TEST_MODULE, build_dir=build_dir, test_dir=build_dir,
                    testcase=tests,
                    extra_env={"MTE_PROFILE": profile,
                               "PYTHONWARNINGS": "ignore::DeprecationWarning"},
                    results_xml=str(results))
    except SystemExit:
        pass        # the runner exits on a failed test; results.xml says which
    if not results.exists():
        return {}
    return {case.get("name"): case.find("failure") is None and case.find("error") is None
            for case in ET.parse(results).getroot().iter("testcase")}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tb.fpga_run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="a5")
    parser.add_argument("--width", type=int, default=32)
    args = parser.parse_args(argv)
    runner, build_dir = build(args.profile, args.width)
    outcome = run(runner, build_dir, args.profile)
    failed = [name for name, passed in outcome.items() if not passed]
    print("no results" if not outcome else
          f"FAILED: {', '.join(failed)}" if failed else "all tests passed")
    return 0 if outcome and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
