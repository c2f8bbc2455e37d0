"""The `mte` command's option values and the options every program command shares:
each value type turns one argument into its value or raises argparse's error, which
argparse reports as a usage error (exit 2)."""

import argparse
import re

from model.isa import DEFAULT_PROFILE, PROFILES
from model.parser import MAX_DIGITS

EXIT_OK, EXIT_RULE_VIOLATION, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 130, 141       # as a shell reports SIGINT, SIGPIPE

MAX_SHAKES = 1000


class UsageError(Exception):
    """A bad argument found after parsing (a file, a binding, a window): exit 2."""


# ASCII digits only (int() would take other scripts' digits, `_` and spaces), bounded as
# in program text.
_NUMBER = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]{1,%d}|[0-9]{1,%d})" % (MAX_DIGITS, MAX_DIGITS))
# What a `%name` of program text may hold.
_PROGRAM_NAME = re.compile(r"[A-Za-z0-9_$.\-]+")
# Names an array cannot take: C23's keywords, the reserved forms, <stdint.h>'s types.
C_KEYWORDS = frozenset("""
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
    if text in C_KEYWORDS or _C_RESERVED.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a C keyword or reserved name")
    return text


def dump(text):
    """ADDR:LEN=FILE -> (addr, length, path)."""
    span, path = _split(text, "=", "ADDR:LEN=FILE")
    addr, length = _split(span, ":", "ADDR:LEN=FILE")
    return natural(addr), natural(length), path


def bindings(pairs):
    """The --bind pairs as a dict; a name given twice is a usage error."""
    out = {}
    for name, value in pairs:
        if name in out:
            raise UsageError(f"--bind {name} is given twice")
        out[name] = value
    return out


def program_arguments(parser):
    """The options of every command that reads a program (run, check, asm)."""
    parser.add_argument("program", metavar="PROGRAM", help="PTO program text file")
    parser.add_argument("--bind", type=binding, action="append", default=[],
                        metavar="NAME=VALUE", help="bind a free name such as arg0 (repeatable)")
    parser.add_argument("--profile", choices=list(PROFILES), default=DEFAULT_PROFILE,
                        help=f"target profile (UB size, f8 types, the room pto.tassign "
                             f"checks); default {DEFAULT_PROFILE}")
    parser.add_argument("--skip-compute", action="store_true",
                        help="skip a kernel's compute ops (vector scopes, vector, mask and "
                             "scalar UB ops) and run its DMA, flag and token ops")
