"""`bitwuzla --lang smt2`, as yosys-smtbmc runs it: SMT-LIB2 commands on stdin, answers
on stdout, one command at a time. The bitwuzla wheel has the solver and its SMT-LIB2
parser but no command-line program; this is that program, so sby's `smtbmc bitwuzla`
runs pip-only."""

import ctypes
import re
import sys

import bitwuzla

# smtbmc ends with (exit) and waits for the solver to end, its stdin still open.
EXIT = re.compile(r"\s*\(\s*exit\s*\)\s*")
USAGE = "usage: bitwuzla --lang smt2 < commands  (SMT-LIB2 on stdin, answers on stdout)\n"


def commands(lines):
    """Each whole command in `lines` of SMT-LIB2, once its parentheses close (outside
    |quoted symbols|, "strings" and ; comments), with any others ending on its line."""
    depth, quoted, string, pending = 0, False, False, []
    for line in lines:
        pending.append(line)
        for char in line:
            if quoted:
                quoted = char != "|"
            elif string:
                string = char != '"'
            elif char == ";":
                break
            elif char == "|":
                quoted = True
            elif char == '"':
                string = True
            elif char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
        if depth == 0 and not (quoted or string):
            command = "".join(pending)
            pending = []
            if command.strip():
                yield command


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if args in (["-h"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
    if args != ["--lang", "smt2"]:
        sys.stderr.write(USAGE)
        return 2
    parser = bitwuzla.Parser(bitwuzla.TermManager(), bitwuzla.Options(), "smt2", 2)
    # The parser answers through C++'s std::cout, which C's stdout buffers when it is a
    # pipe: flushed after each command, or smtbmc would wait for an answer held back.
    libc = ctypes.CDLL(None)
    for command in commands(sys.stdin):
        try:
            parser.parse(command, False, False)
        except bitwuzla.BitwuzlaException as error:
            message = str(error).replace('"', "'")
            libc.fflush(None)
            sys.stdout.write(f'(error "{message}")\n')
            sys.stdout.flush()
            return 1
        libc.fflush(None)
        if EXIT.fullmatch(command):
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
