"""The `mte` command: run a PTO program on an engine and dump its memories (`run`),
check it and report its races without running it (`check`), assemble it into the command words a CPU pushes to the FPGA top's CMD register (`asm`),
and write the C header of the engine's programming interface (`header`).

Engines are runners in `ENGINES`: each takes the parsed program and the initial state
(profile, a `GlobalMemory` holding the GM windows, UB preloads) and returns a `RunResult`.
"""

import argparse
import fcntl
import os
import re
import stat
import sys
from collections import Counter
from pathlib import Path

from model.assembler import encode_instr
from model.errors import BindingError, MteError, ProgramError
from model.isa import DEFAULT_PROFILE, DTYPES, PROFILES
from model.memory import GM_SIZE, GlobalMemory
from model.parser import MAX_DIGITS, parse
from model.races import analyse
from model.run import run_on_model

# A program file larger than this is refused unread: real kernels are kilobytes.
MAX_PROGRAM_BYTES = 16 << 20

EXIT_OK, EXIT_RULE_VIOLATION, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 130, 141       # as a shell reports SIGINT, SIGPIPE

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


ASM_DESCRIPTION = """\
Assemble a PTO program into the engine's 32-bit command words: what a CPU writes, in
order, to the FPGA top's CMD register. Only the encoding is checked here (a value too
wide for its field is FIELD_RANGE); the engine checks every other rule as it runs."""

ASM_EPILOG = """\
formats:
  hex  one word per line as 8 hex digits, each command headed by a // comment naming its
       source line and op (Verilog $readmemh reads it)
  bin  the words as little-endian bytes
  c    a C array, static const uint32_t NAME[], each command commented

exit status:
  0  the words are written
  1  a command cannot be encoded: one line on stderr starting with its SPEC error code
     (FIELD_RANGE), and nothing is written
  2  usage error: bad flag, unreadable file or malformed program text"""

ASM_FORMATS = ("hex", "bin", "c")


class UsageError(Exception):
    pass


def run_on_rtl(instrs, profile, gm, ub_preloads):
    """The generated RTL in a cocotb simulation, built on first use (tb/rtl_engine.py)."""
    from tb.rtl_engine import run_on_rtl as run
    return run(instrs, profile, gm, ub_preloads)


def run_on_both(instrs, profile, gm, ub_preloads):
    """The model and the RTL; the first difference is the error (tb/rtl_engine.py)."""
    from tb.rtl_engine import run_on_both as run
    return run(instrs, profile, gm, ub_preloads)


ENGINES = {"model": run_on_model, "rtl": run_on_rtl, "both": run_on_both}
MAX_SHAKES = 1000


def shake_on_rtl(instrs, profile, gm, ub_preloads, runs):
    """The RTL `runs` times under seeded random bus behaviour (tb/rtl_engine.py)."""
    from tb.rtl_engine import shake_on_rtl as shake
    return shake(instrs, profile, gm, ub_preloads, runs)


# --- argument values --------------------------------------------------------------

# ASCII digits only (int() would take other scripts' digits, `_` and spaces), bounded as
# in program text.
_NUMBER = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]{1,%d}|[0-9]{1,%d})" % (MAX_DIGITS, MAX_DIGITS))
# What a `%name` of program text may hold.
_PROGRAM_NAME = re.compile(r"[A-Za-z0-9_$.\-]+")
# Names an array cannot take: C23's keywords, the reserved forms, <stdint.h>'s types.
_C_KEYWORDS = frozenset("""
    auto break case char const continue default do double else enum extern float for goto
    if inline int long register restrict return short signed sizeof static struct switch
    typedef union unsigned void volatile while alignas alignof bool constexpr false nullptr
    static_assert thread_local true typeof typeof_unqual asm _Alignas _Alignof _Atomic
    _BitInt _Bool _Complex _Decimal128 _Decimal32 _Decimal64 _Generic _Imaginary _Noreturn
    _Static_assert _Thread_local""".split())
_C_RESERVED = re.compile(r"_[A-Z_].*|u?int(?:_least|_fast)?(?:8|16|32|64)_t|u?int(?:ptr|max)_t")


def number(text):
    """Decimal or 0x hex integer (a sign is allowed)."""
    if not _NUMBER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a decimal or 0x hex number")
    body = text.lstrip("+-")
    return int(text, 16) if body[:2].lower() == "0x" else int(text, 10)


def natural(text):
    value = number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return value


def shakes(text):
    value = number(text)
    if not 1 <= value <= MAX_SHAKES:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count of runs from 1 to "
                                         f"{MAX_SHAKES}")
    return value


def _split(text, separator, form):
    head, found, tail = text.partition(separator)
    if not found or not head or not tail:
        raise argparse.ArgumentTypeError(f"{text!r} is not of the form {form}")
    return head, tail


def gm_window(text):
    """ADDR=FILE or ADDR:LEN -> (addr, path or length)."""
    if "=" in text:
        addr, path = _split(text, "=", "ADDR=FILE")
        if ":" in addr:
            raise argparse.ArgumentTypeError(
                f"{text!r} gives both a length and a file: a window is ADDR=FILE (the "
                "file's bytes) or ADDR:LEN (zeros)")
        return natural(addr), path
    addr, length = _split(text, ":", "ADDR=FILE or ADDR:LEN")
    return natural(addr), natural(length)


def ub_preload(text):
    addr, path = _split(text, "=", "ADDR=FILE")
    return natural(addr), path


def binding(text):
    name, value = _split(text, "=", "NAME=VALUE")
    name = name.removeprefix("%")
    if not _PROGRAM_NAME.fullmatch(name):
        raise argparse.ArgumentTypeError(
            f"{name!r} is not a name program text can write as %NAME (ASCII letters, "
            "digits, _ $ . -)")
    return name, number(value)


def c_name(text):
    if not (text.isascii() and text.isidentifier()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a C identifier")
    if text in _C_KEYWORDS or _C_RESERVED.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a C keyword or reserved name")
    return text


def dump(text):
    """ADDR:LEN=FILE -> (addr, length, path)."""
    span, path = _split(text, "=", "ADDR:LEN=FILE")
    addr, length = _split(span, ":", "ADDR:LEN=FILE")
    return natural(addr), natural(length), path


# --- the run command ----------------------------------------------------------------

def _read_file(path, what, limit, room):
    """The bytes of a regular file of at most `limit` bytes (`room` says where they go).
    A device (/dev/zero), a FIFO, a directory or a larger file is refused unread; the
    open does not wait for a FIFO's writer."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise UsageError(f"{what} {path} is not a regular file")
        with open(fd, "rb") as f:
            data = _read_at_most(f, limit + 1) if info.st_size <= limit else None
    except OSError as e:
        raise UsageError(f"cannot read {what} {path}: {e.strerror}") from None
    if data is None or len(data) > limit:     # a /proc file's size says 0: read to see
        size = info.st_size if data is None else f"more than {limit}"
        raise UsageError(f"{what} {path} holds {size} bytes; {room}")
    return data


def _read_at_most(f, limit):
    """Up to `limit` bytes, in chunks: one read of `limit` would allocate all of it."""
    chunks, total = [], 0
    while total < limit:
        chunk = f.read(min(1 << 20, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _write_file(path, data, what):
    """Write `data` to `path`; a FIFO without a reader is refused, not waited for."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK, 0o666)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        with open(fd, "wb") as f:
            f.write(data)
    except OSError as e:
        raise UsageError(f"cannot write {what}{path}: {e.strerror}") from None


def _bindings(pairs):
    bindings = {}
    for name, value in pairs:
        if name in bindings:
            raise UsageError(f"--bind {name} is given twice")
        bindings[name] = value
    return bindings


def _load_program(path, bindings, profile=DEFAULT_PROFILE, skipped=None):
    data = _read_file(path, "program", MAX_PROGRAM_BYTES,
                      f"a program may hold at most {MAX_PROGRAM_BYTES}")
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise UsageError(f"{path} is not UTF-8 text: {e.reason}") from None
    try:
        return parse(text, _bindings(bindings), profile, strict_bindings=True,
                     skipped=skipped)
    except ProgramError as e:
        raise UsageError(f"{path}:{e.line}:{e.column}: {e.message}") from None
    except BindingError as e:
        where = f"{path}:{e.line}:{e.column}: " if e.line is not None else ""
        raise UsageError(f"{where}--bind {e.name}: {e.message}") from None


def _global_memory(windows):
    gm = GlobalMemory()
    for addr, source in windows:
        data = source if isinstance(source, int) else _read_file(
            source, "GM file", GM_SIZE - addr, f"40-bit GM holds {GM_SIZE - addr} from {addr:#x}")
        try:
            gm.map(addr, data)
        except ValueError as e:
            raise UsageError(f"--gm {addr:#x}: {e}") from None
        except MemoryError:
            raise UsageError(f"--gm {addr:#x}:{source}: this machine cannot hold "
                             f"{source} bytes; map only the windows the program uses") from None
    return gm


def _ub_preloads(preloads, ub_size):
    loaded = []
    for addr, path in preloads:
        room = max(ub_size - addr, 0)
        data = _read_file(path, "UB file", room, f"they do not fit the {ub_size}-byte UB, "
                                                 f"which holds {room} from {addr:#x}")
        loaded.append((addr, data))
    return loaded


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
        _write_file(path, read(addr, length), "dump ")


def run_command(args):
    if args.shake and args.engine != "rtl":
        raise UsageError("--shake runs the program on the RTL: give --engine rtl")
    ub_size = PROFILES[args.profile].ub_size
    skipped = Counter() if args.skip_compute else None
    instrs = _load_program(args.program, args.bind, args.profile, skipped)
    if args.show_lowering:
        print(lowering_text(instrs), end="")
    gm = _global_memory(args.gm)
    ub_preloads = _ub_preloads(args.ub, ub_size)
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
    instrs = _load_program(args.program, args.bind, args.profile,
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


# --- the asm and header commands -----------------------------------------------------

def _commands(instrs):
    """[(instr, words)] of a whole program; raises the first command's MteError."""
    return [(instr, encode_instr(instr)) for instr in instrs]


def _hex_text(commands):
    lines = []
    for instr, words in commands:
        lines.append(f"// line {instr.line}: {instr.mnemonic}")
        lines += [f"{word:08x}" for word in words]
    return "\n".join(lines) + "\n"


def _c_text(commands, name, program):
    count = sum(len(words) for _, words in commands)
    source = Path(program).name.replace("*/", "* /")
    lines = [f"/* {source}: {count} command words for the CMD register, in order "
             "(mte asm). */",
             "#include <stdint.h>", "",
             f"static const uint32_t {name}[{max(count, 1)}] = {{"]
    for instr, words in commands:
        lines.append(f"    /* line {instr.line}: {instr.mnemonic} */")
        lines.append("    " + " ".join(f"{word:#010x}u," for word in words))
    if not commands:
        lines.append("    0u,  /* no commands: C has no empty array */")
    lines.append("};")
    lines.append(f"#define {name.upper()}_WORDS {count}u")
    return "\n".join(lines) + "\n"


def _write_output(path, data):
    if path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    _write_file(path, data, "")


def asm_command(args):
    instrs = _load_program(args.program, args.bind, args.profile,
                           Counter() if args.skip_compute else None)
    try:
        commands = _commands(instrs)
    except MteError as error:
        print(str(error).replace("\n", " "), file=sys.stderr)
        return EXIT_RULE_VIOLATION
    if args.format == "bin":
        data = b"".join(word.to_bytes(4, "little") for _, words in commands for word in words)
    elif args.format == "hex":
        data = _hex_text(commands).encode()
    else:
        data = _c_text(commands, args.name, args.program).encode()
    _write_output(args.output, data)
    return EXIT_OK


def header_command(args):
    from hdl.c_header import c_header
    _write_output(args.output, c_header().encode())
    return EXIT_OK


def _program_arguments(parser):
    parser.add_argument("program", metavar="PROGRAM", help="PTO program text file")
    parser.add_argument("--bind", type=binding, action="append", default=[],
                        metavar="NAME=VALUE", help="bind a free name such as arg0 (repeatable)")
    parser.add_argument("--profile", choices=list(PROFILES), default=DEFAULT_PROFILE,
                        help=f"target profile (UB size, f8 types, the room pto.tassign "
                             f"checks); default {DEFAULT_PROFILE}")
    parser.add_argument("--skip-compute", action="store_true",
                        help="skip a kernel's compute ops (vector scopes, vector, mask and "
                             "scalar UB ops) and run its DMA, flag and token ops")


def argument_parser():
    parser = argparse.ArgumentParser(prog="mte", description="MTE DMA engine tools.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = commands.add_parser("run", help="run a PTO program", description=RUN_DESCRIPTION,
                              epilog=RUN_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    _program_arguments(run)
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

    check = commands.add_parser("check", help="check a PTO program and report its races",
                                description=CHECK_DESCRIPTION, epilog=CHECK_EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    _program_arguments(check)
    check.set_defaults(handler=check_command)

    asm = commands.add_parser("asm", help="assemble a PTO program into command words",
                              description=ASM_DESCRIPTION, epilog=ASM_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    _program_arguments(asm)
    asm.add_argument("--format", choices=ASM_FORMATS, default="hex",
                     help="output format; default hex")
    asm.add_argument("--name", type=c_name, default="mte_program",
                     help="the C array's name (--format c): a C identifier, not a keyword; "
                          "default mte_program")
    asm.add_argument("-o", "--output", default="-", metavar="FILE",
                     help="where to write the words; default stdout")
    asm.set_defaults(handler=asm_command)

    header = commands.add_parser(
        "header", help="write the C header of the CSR map, the command encoders and "
                       "the push and wait functions",
        description="Write mte_dma.h: the FPGA top's CSR map, the error codes, pipes, "
                    "element types and opcodes, an encoder function per command, and "
                    "mte_dma_push and mte_dma_wait_done, which push a program and wait "
                    "for it.")
    header.add_argument("-o", "--output", default="-", metavar="FILE",
                        help="where to write it; default stdout")
    header.set_defaults(handler=header_command)
    return parser


def main(argv=None):
    args = argument_parser().parse_args(argv)
    try:
        return args.handler(args)
    except UsageError as e:
        print(f"mte: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\nmte: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # stdout's reader has gone (`mte asm p.pto | head`): stop quietly, as cat does,
        # and let nothing flush into the closed pipe at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE

