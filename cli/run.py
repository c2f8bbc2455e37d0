"""`mte run` and `mte check`: a program run on an engine (the golden model, the RTL or
both) with its memories dumped afterwards, or checked for rule violations and races
without running it.

Engines are runners in `ENGINES`: each takes the parsed program and the initial state
(profile, a `GlobalMemory` holding the GM windows, UB preloads) and returns a
`RunResult` (model/run.py).
"""

import argparse
import sys
from collections import Counter

from model.isa import DTYPES, PROFILES
from model.races import analyse
from model.run import run_on_model

from .files import load_program, read_gm_windows, read_ub_preloads, write_file
from .options import (EXIT_OK, EXIT_RULE_VIOLATION, UsageError, dump, gm_window,
                      program_arguments, shakes, ub_preload)

RUN_DESCRIPTION = """\
Run a PTO program (the text of seed 000's examples, v0.6 grouped forms, or a PTOAS
`module { func.func ... }` kernel) and optionally dump GM and UB afterwards."""

RUN_EPILOG = """\
ADDR, LEN and VALUE are decimal or 0x hex (ASCII digits). Every file read must be a
regular file: the program at most 16 MiB, a --ub file at most the UB from ADDR, a --gm
file at most the 40-bit GM from ADDR.

  --gm ADDR=FILE       map FILE's bytes at GM address ADDR (GM is sparse: only mapped
                       windows exist; touching anything else is a BUS_ERROR)
  --gm ADDR:LEN        map LEN zero bytes at ADDR
  --ub ADDR=FILE       preload UB at ADDR with FILE's bytes (UB otherwise starts zeroed)
  --bind NAME=VALUE    give a free program name its value: --bind arg0=0x1000 binds %arg0;
                       a pointer's value is its byte address. Each NAME once, and one the
                       program reads: not unused, not defined by the program, not a
                       constant by name such as c128. The core queries take theirs from
                       --bind too: pto.get_block_idx from block_idx, get_block_num from
                       block_num, get_subblock_idx from subblock_idx, get_subblock_num
                       from subblock_num (--bind block_idx=3)
  --skip-compute       run a kernel's DMA, flag and token ops and skip its compute ops
                       (pto.vecscope regions, pto.v* vector ops, mask ops, pto.load and
                       pto.store), which run on pipes this engine does not have; prints how
                       many of each it skipped. Without it the first compute op is a
                       program-text error
  --dump-gm ADDR:LEN=FILE, --dump-ub ADDR:LEN=FILE
                       write LEN bytes of GM / UB starting at ADDR to FILE when the run ends

long runs:
  A legal copy may move up to 2^42 rows (loop2 x loop1 x nburst). Model work that takes
  over a second shows its progress on stderr when stderr is a terminal (the copy's line,
  op, and rows done of its rows). To bound a run's time, run it under timeout(1):
  `timeout 60 mte run ...` stops it after 60 s with exit status 124 (Ctrl-C: "mte:
  interrupted", exit status 130). With --engine rtl,
  GM windows are whole 4 KiB pages (an AXI slave decodes pages).

exit status:
  0  the program ran; a summary (ops run, bytes moved per pipe) is printed on stdout
  1  a rule violation or bus error: one line on stderr starting with the SPEC error code,
     e.g. "UB_RANGE: line 12: copy_gm_to_ubuf: ...". The dumps are still written and hold
     the state at the failing op: a rejected op moves no byte; a BUS_ERROR stops its copy
     at the faulting row. Also, with --engine rtl, an RTL that stops moving before the
     end ("the RTL hung: ...", the dumps as it stopped), and with --engine both, any
     difference between the model and the RTL.
  2  usage error: bad flag, unreadable file, malformed program text (reported as
     PROGRAM:LINE:COLUMN), overlapping GM windows, or a dump of unmapped GM or beyond UB.

races (as `mte check` finds them): with --races warn (the default) each race is a
"RACE: ..." line on stderr and the run goes on; --races error exits 1 on a race before
anything moves (no dump is written); --races off does not look for races.

--shake N (with --engine rtl) runs the program N times on the RTL, run k under seed k's
random GM latency and backpressure, and prints how many distinct final memories the runs
left and where each differs from the model's; exit 1 if any does. The dumps hold the
model's memories. A race-free program always leaves the model's bytes."""

CHECK_DESCRIPTION = """\
Check a PTO program without running it: every SPEC rule that needs no memory contents,
in program order, and every race: two commands of different pipes that touch a common
byte (one of them writing it) with no set_flag/wait_flag, barrier or buffer token
ordering them (SPEC.md, "Correct synchronisation and races")."""

CHECK_EPILOG = """\
Each race is one line on stdout:
  RACE: KIND on MEMORY [FIRST, END): line N OP (PIPE) reads|writes, line M OP (PIPE) ...
KIND is read after write, write after read or write after write (the earlier command's
access first); [FIRST, END) starts at the lowest byte the two commands share and ends
where the first of the two rows around it ends.

exit status:
  0  no race and no rule violation ("no race" and the count of commands on stdout)
  1  a race, or a rule violation (one line on stderr starting with its SPEC error code;
     races are looked for among the commands before it)
  2  usage error: bad flag, unreadable file or malformed program text"""

RACE_MODES = ("warn", "error", "off")


def run_on_rtl(instrs, profile, gm, ub_preloads):
    """The generated RTL in a cocotb simulation, built on first use (tb/rtl_engine.py)."""
    from tb.rtl_engine import run_on_rtl as run
    return run(instrs, profile, gm, ub_preloads)


def run_on_both(instrs, profile, gm, ub_preloads):
    """The model and the RTL; the first difference is the error (tb/rtl_engine.py)."""
    from tb.rtl_engine import run_on_both as run
    return run(instrs, profile, gm, ub_preloads)


ENGINES = {"model": run_on_model, "rtl": run_on_rtl, "both": run_on_both}


def shake_on_rtl(instrs, profile, gm, ub_preloads, runs):
    """The RTL `runs` times under seeded random bus behaviour (tb/rtl_engine.py)."""
    from tb.rtl_engine import shake_on_rtl as shake
    return shake(instrs, profile, gm, ub_preloads, runs)


def _check_dumps(gm, gm_dumps, ub_dumps, ub_size):
    for addr, length, _ in gm_dumps:
        hole = gm.first_unmapped(addr, length)
        if hole is not None:
            raise UsageError(f"--dump-gm {addr:#x}:{length}: GM address {hole:#x} is not mapped")
    for addr, length, _ in ub_dumps:
        if addr + length > ub_size:
            raise UsageError(f"--dump-ub {addr:#x}:{length}: beyond the {ub_size}-byte UB")


def _write_dumps(dumps, read):
    for addr, length, path in dumps:
        write_file(path, read(addr, length), "dump ")


def run_command(args):
    if args.shake and args.engine != "rtl":
        raise UsageError("--shake runs the program on the RTL: give --engine rtl")
    ub_size = PROFILES[args.profile].ub_size
    skipped = Counter() if args.skip_compute else None
    instrs = load_program(args.program, args.bind, args.profile, skipped)
    if args.show_lowering:
        print(lowering_text(instrs), end="")
    gm = read_gm_windows(args.gm)
    ub_preloads = read_ub_preloads(args.ub, ub_size)
    _check_dumps(gm, args.dump_gm, args.dump_ub, ub_size)
    if args.races != "off":
        analysis = analyse(instrs, args.profile)
        for line in analysis.lines():
            print(line, file=sys.stderr)
        if analysis.races and args.races == "error":
            return EXIT_RULE_VIOLATION
    if args.shake:
        result = shake_on_rtl(instrs, args.profile, gm, ub_preloads, args.shake)
    else:
        result = ENGINES[args.engine](instrs, args.profile, gm, ub_preloads)
    _write_dumps(args.dump_gm, result.read_gm)
    _write_dumps(args.dump_ub, result.read_ub)
    if result.error is not None:
        if args.shake:              # which runs differed, and where
            print("\n".join(result.summary))
        print(str(result.error).replace("\n", " "), file=sys.stderr)
        return EXIT_RULE_VIOLATION
    print("\n".join(result.summary))
    if skipped is not None:
        print("compute ops skipped: " + (", ".join(f"{name} {count}" for name, count
                                                   in sorted(skipped.items())) or "none"))
    return EXIT_OK


def _field_text(name, value):
    if name == "dtype":
        return f"dtype={DTYPES[value].name}"
    hex_field = name.startswith(("gm_", "ub_")) or name == "pad_val"
    return f"{name}={value:#x}" if hex_field else f"{name}={value}"


def lowering_text(instrs):
    """The commands each tile op became, each line headed by the tile op's line."""
    lines, shown = [], None
    for instr in instrs:
        source = instr.extra.get("tile_op")
        if source is None:
            continue
        if (instr.line, source) != shown:
            shown = (instr.line, source)
            lines.append(f"line {instr.line}: {source}")
        fields = " ".join(_field_text(f.name, instr.values[f.name]) for f in instr.op.fields)
        lines.append(f"line {instr.line}:   {instr.mnemonic} {fields}")
    return "".join(line + "\n" for line in lines)


def check_command(args):
    instrs = load_program(args.program, args.bind, args.profile,
                          Counter() if args.skip_compute else None)
    analysis = analyse(instrs, args.profile)
    for line in analysis.lines():
        print(line)
    if analysis.error is not None:
        print(str(analysis.error).replace("\n", " "), file=sys.stderr)
    if analysis.races or analysis.error is not None:
        return EXIT_RULE_VIOLATION
    plural = "" if analysis.commands == 1 else "s"
    print(f"no race: {analysis.commands} command{plural} checked")
    return EXIT_OK


def add_run_parser(commands):
    run = commands.add_parser("run", help="run a PTO program", description=RUN_DESCRIPTION,
                              epilog=RUN_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    program_arguments(run)
    run.add_argument("--engine", choices=list(ENGINES), default="model",
                     help="what executes the program; default model (the golden model)")
    run.add_argument("--show-lowering", action="store_true",
                     help="first print the engine commands each tile op (pto.tload, "
                          "pto.tstore, ...) became, each with the tile op's line")
    run.add_argument("--races", choices=RACE_MODES, default="warn",
                     help="on a race: warn on stderr and run (default), error (exit 1 "
                          "before anything moves) or off (do not look)")
    run.add_argument("--shake", type=shakes, metavar="N",
                     help="with --engine rtl: run N times under seeded random GM latency "
                          "and backpressure, and compare each final memory with the model")
    run.add_argument("--gm", type=gm_window, action="append", default=[],
                     metavar="ADDR=FILE|ADDR:LEN", help="map a GM window (repeatable)")
    run.add_argument("--ub", type=ub_preload, action="append", default=[],
                     metavar="ADDR=FILE", help="preload UB (repeatable)")
    run.add_argument("--dump-gm", type=dump, action="append", default=[],
                     metavar="ADDR:LEN=FILE", help="write GM bytes to FILE (repeatable)")
    run.add_argument("--dump-ub", type=dump, action="append", default=[],
                     metavar="ADDR:LEN=FILE", help="write UB bytes to FILE (repeatable)")
    run.set_defaults(handler=run_command)


def add_check_parser(commands):
    check = commands.add_parser("check", help="check a PTO program and report its races",
                                description=CHECK_DESCRIPTION, epilog=CHECK_EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    program_arguments(check)
    check.set_defaults(handler=check_command)
