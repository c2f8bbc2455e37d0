"""`mte asm` and `mte header`: a program assembled into the command words a CPU writes to
the FPGA top's CMD register, and the C header of the engine's programming interface."""

import argparse
import sys
from collections import Counter
from pathlib import Path

from model.assembler import encode_instr
from model.errors import MteError

from .files import load_program, write_output
from .options import EXIT_OK, EXIT_RULE_VIOLATION, c_name, program_arguments

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


def asm_command(args):
    instrs = load_program(args.program, args.bind, args.profile,
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
    write_output(args.output, data)
    return EXIT_OK


def header_command(args):
    from hdl.soc.c_header import c_header
    write_output(args.output, c_header().encode())
    return EXIT_OK


def add_asm_parser(commands):
    asm = commands.add_parser("asm", help="assemble a PTO program into command words",
                              description=ASM_DESCRIPTION, epilog=ASM_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    program_arguments(asm)
    asm.add_argument("--format", choices=ASM_FORMATS, default="hex",
                     help="output format; default hex")
    asm.add_argument("--name", type=c_name, default="mte_program",
                     help="the C array's name (--format c): a C identifier, not a keyword; "
                          "default mte_program")
    asm.add_argument("-o", "--output", default="-", metavar="FILE",
                     help="where to write the words; default stdout")
    asm.set_defaults(handler=asm_command)


def add_header_parser(commands):
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
