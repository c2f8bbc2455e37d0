"""Build `mte_dma_fpga` (the FPGA top) under Verilator and run tb/test_fpga_top.py on it.

    python -m tb.fpga_run [--profile a5] [--width 32]   build if needed, run cpu_programs
                                                        and c_firmware
    python -m tb.fpga_run --seed 7 --count 50 --errors  and a soak through the CSR (cpu_soak)
    python -m tb.fpga_run --case 0x1a2b3c4d/GM_RANGE    one soak program again, alone
                                                        (repeatable)
    python -m tb.fpga_run --case ... --waves            and its waveform

The Verilog comes from `python -m hdl.gen --top fpga` into sim_build/fpga_tb/, built by
tb/run.py's `build` (again only when that text changes). The soak runs the programs
tb/run.py would, chosen by the same MTE_* variables (tb/test_mte.py).
"""

import argparse
import sys
import tempfile
from pathlib import Path

from hdl.layouts import BUS_WIDTHS
from model.isa import PROFILES
from tb import run as tb_run

TEST_MODULE = "tb.test_fpga_top"
FIXED_TESTS = ["cpu_programs", "c_firmware"]
BUILD = tb_run.BUILD / "fpga_tb"


def build(profile="a5", width=32, waves=False):
    """(runner, build directory), building only when the Verilog changed; with `waves`, a
    traced build in a directory of its own. Never a quick build: the programs' UB words go
    through a 32-bit window, and the model's speed pays for its -Os compile (the CPU
    test: 45 s to build and 39 s to run, against 22 s and 108 s at -O0)."""
    return tb_run.build("verilator", profile, width, waves=waves, root=BUILD,
                        toplevel=tb_run.FPGA_TOPLEVEL, quick=False)


def soak_environment(seed=1, count=0, errors=False, cases=()):
    """The MTE_* variables that give cpu_soak its programs; {} when it has none."""
    if not (count or errors or cases):
        return {}
    return tb_run.program_environment(seed, count, errors, cases)


def waves_file(build_dir):
    return tb_run.waves_file(build_dir, toplevel=tb_run.FPGA_TOPLEVEL)


def run(runner, build_dir, profile="a5", soak=None, waves=False, fixed=True):
    """One simulator run of cpu_programs and c_firmware (unless not `fixed`), and of
    cpu_soak when `soak` (soak_environment) gives it programs; with `waves` (a traced
    build) it writes waves_file(build_dir). Returns {cocotb test name: passed} from its
    xUnit results. It runs in a directory of its own (its firmware build among its
    files), so that runs can share a build."""
    tests = (FIXED_TESTS if fixed else []) + (["cpu_soak"] if soak else [])
    with tempfile.TemporaryDirectory(dir=build_dir, prefix="run-") as run_dir:
        results = Path(run_dir) / "results.xml"
        try:
            runner.test(hdl_toplevel=tb_run.FPGA_TOPLEVEL, hdl_toplevel_lang="verilog",
                        waves=waves, test_args=tb_run.trace_args(runner, build_dir, waves,
                                                                 tb_run.FPGA_TOPLEVEL),
                        test_module=TEST_MODULE, build_dir=build_dir, test_dir=run_dir,
                        testcase=tests,
                        extra_env={"MTE_PROFILE": profile,
                                   "PYTHONWARNINGS": "ignore::DeprecationWarning",
                                   **(soak or {})},
                        results_xml=str(results))
        except SystemExit:
            pass        # the runner exits on a failed test; results.xml says which
        return tb_run.cocotb_outcomes(results) if results.exists() else {}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tb.fpga_run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="a5")
    parser.add_argument("--width", type=int, choices=BUS_WIDTHS, default=32)
    parser.add_argument("--seed", type=lambda text: int(text, 0), default=1)
    parser.add_argument("--count", type=int, default=0, help="random programs from SEED")
    parser.add_argument("--errors", action="store_true",
                        help="and one program ending in each error class")
    parser.add_argument("--case", action="append", default=[], metavar="SEED[/ERROR]",
                        help="run this generated program (repeatable)")
    parser.add_argument("--waves", action="store_true",
                        help="trace the --case programs (a build of its own)")
    args = parser.parse_args(argv)
    if args.waves and not args.case:
        # a traced program is a GB or more of VCD: the whole UB crosses the CSR twice
        parser.error("--waves traces --case programs only: name the programs to trace")
    soak = soak_environment(args.seed, args.count, args.errors, args.case)
    runner, build_dir = build(args.profile, args.width, args.waves)
    # a re-run line names its programs: they run alone, so a trace holds only them
    outcome = run(runner, build_dir, args.profile, soak, args.waves, fixed=not args.case)
    failed = [name for name, passed in outcome.items() if not passed]
    print("no results" if not outcome else
          f"FAILED: {', '.join(failed)}" if failed else "all tests passed")
    if args.waves:
        print(f"waves: {waves_file(build_dir)}")
    return 0 if outcome and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
