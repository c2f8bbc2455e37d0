"""The corpus of real-style PTO programs in tests/programs/: each file's run line, read
into the `Case` the RTL regression runs (tb/test_mte.py) and the memories the model's
test (tests/test_corpus.py) starts from.

A program names what it runs on in `// run:` comment lines (any number, anywhere; the
parser ignores them as comments), with `mte run`'s flags:

    // run: --bind arg0=0x10000 --bind arg1=0x20000 --skip-compute --profile a5
    // run: --gm 0x10000:8192=random --gm 0x20000:4096 --ub 0x400:256=random

  --gm ADDR:LEN[=random]   a GM window, whole 4 KiB pages: random bytes, or GUARD bytes
  --ub ADDR:LEN=random     random bytes preloaded in UB; every other UB byte is GUARD
  --bind NAME=VALUE, --profile NAME, --skip-compute   as for `mte run`

Random bytes derive from the program's name and the window's address, so a program
always starts from the same memories. Every byte no copy writes keeps its starting value,
so comparing whole memories shows any stray or missing write.
"""

import random
from dataclasses import dataclass
from pathlib import Path

from model.isa import DEFAULT_PROFILE, PROFILES
from tb.programs import GUARD, PAGE, Case, run_arguments

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "programs"


@dataclass
class CorpusProgram:
    name: str
    path: Path
    text: str
    bindings: dict
    gm: list                 # [(base, bytes)]: whole pages
    ub: bytes                # the whole UB
    profile: str = DEFAULT_PROFILE
    skip_compute: bool = False

    def case(self):
        return Case(f"corpus {self.name}", self.text, dict(self.bindings),
                    tuple(self.gm), self.ub, self.profile, skip_compute=self.skip_compute,
                    rerun=f"python -m tb.run --corpus {self.name}")


def _number(text):
    return int(text, 0)


def _random_bytes(name, space, base, length):
    return random.Random(f"corpus:{name}:{space}:{base:#x}").randbytes(length)


def _span(text):
    addr, _, length = text.partition(":")
    return _number(addr), _number(length)


def _run_flags(text):
    """The words of every `// run:` line, in order."""
    words = []
    for line in text.splitlines():
        head, found, rest = line.strip().partition("// run:")
        if found and not head:
            words += rest.split()
    return words


def load(path):
    """Read one corpus program and build the memories its run lines describe."""
    path = Path(path)
    name, text = path.stem, path.read_text()
    words = iter(_run_flags(text))
    bindings, gm, preloads = {}, [], []
    profile, skip_compute = DEFAULT_PROFILE, False
    for word in words:
        if word == "--skip-compute":
            skip_compute = True
        elif word == "--profile":
            profile = next(words)
        elif word == "--bind":
            key, _, value = next(words).partition("=")
            bindings[key.lstrip("%")] = _number(value)
        elif word in ("--gm", "--ub"):
            span, _, fill = next(words).partition("=")
            preloads.append((word[2:], *_span(span), fill))
        else:
            raise ValueError(f"{path.name}: unknown run flag {word!r}")
    ub = bytearray([GUARD]) * PROFILES[profile].ub_size
    for space, base, length, fill in preloads:
        if fill not in ("", "random") or (space == "ub" and fill != "random"):
            raise ValueError(f"{path.name}: --{space} {base:#x}:{length}={fill}: "
                             "only =random fills are known")
        data = _random_bytes(name, space, base, length) if fill else bytes([GUARD]) * length
        if space == "ub":
            ub[base:base + length] = data
        elif base % PAGE or length % PAGE:
            raise ValueError(f"{path.name}: --gm {base:#x}:{length} is not whole pages")
        else:
            gm.append((base, data))
    return CorpusProgram(name, path, text, bindings, gm, bytes(ub), profile, skip_compute)


def programs(names=None):
    """Every program of the corpus (or those named), in name order."""
    paths = sorted(CORPUS.glob("*.pto"))
    if names:
        known = {p.stem: p for p in paths}
        missing = sorted(set(names) - set(known))
        if missing:
            raise ValueError(f"no corpus program {', '.join(missing)}")
        paths = [known[n] for n in names]
    return [load(p) for p in paths]


def cli_arguments(program, directory):
    """`mte run` arguments that run `program` from files written under `directory`."""
    return run_arguments(program.case(), directory)
