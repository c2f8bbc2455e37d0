"""`yosys-native SCRIPT`: runs a Yosys script (commands separated by `;`) in the pyosys
wheel's Yosys, a native program, its log on stdout. YoWASP's Yosys is WebAssembly, whose
memory ends at 4 GB: the largest harness a split proof prepares (formal/runner.py's
_prepare), the rows-overlapping aligner's at W = 128, needs more.

Exit status 0 when every command ran; on a command's error Yosys prints it and exits 1;
a usage error exits 2."""

import sys

from pyosys import libyosys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: yosys-native 'COMMAND; COMMAND; ...'", file=sys.stderr)
        return 2
    for command in argv[0].split(";"):
        if command.strip():
            libyosys.run_pass(command.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
