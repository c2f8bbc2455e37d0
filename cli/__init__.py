"""The `mte` command: run a PTO program on an engine and dump its memories (`run`),
check it and report its races without running it (`check`), assemble it into the
command words a CPU pushes to the FPGA top's CMD register (`asm`), and write the C
header of the engine's programming interface (`header`).

The top floor: it imports the golden model (model/), the testbench's RTL runners (tb/)
and the register map (hdl/); nothing imports it. `options` holds the option values,
`files` what the command reads and writes, `run` and `asm` the commands.
"""

import argparse
import os
import sys

from .asm import add_asm_parser, add_header_parser
from .options import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, EXIT_USAGE, UsageError
from .run import add_check_parser, add_run_parser


def argument_parser():
    parser = argparse.ArgumentParser(prog="mte", description="MTE DMA engine tools.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_run_parser(commands)
    add_check_parser(commands)
    add_asm_parser(commands)
    add_header_parser(commands)
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
