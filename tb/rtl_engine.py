"""`mte run --engine rtl|both`: a program on the generated RTL, in a cocotb simulation.

`run_on_rtl` has the signature of model/run.py's `run_on_model`. It assembles the program
(as far as the assembler can: an RTL run executes every command before the first one that
cannot be encoded, then reports that command's error), builds the simulator if needed
(tb/run.py), and runs tb/test_mte.py's `cli_program` test on a job file. GM is decoded in
whole 4 KiB pages, as an AXI slave does, so each window is rounded out to whole pages
(filled with zeros). The summary lists every command's cycles, from its being accepted
to its pipe reporting it complete.

`run_on_both` runs the model and the RTL and reports the first difference: the error
(code, command, address) or the first differing byte of UB or of a GM window. The bytes
of a copy that failed with BUS_ERROR are left out, as docs/semantics.md allows.

`shake_on_rtl` (`mte run --shake N`) runs the program N times in one simulation, each
after a reset and under its own seed's random GM latency and backpressure, and compares
each final memory with the model's: a race-free program always leaves the model's bytes.
"""

import pickle
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from model import isa, rules
from model.assembler import assemble_until_error
from model.engine import Engine
from model.errors import MteError
from model.isa import COPY_OPCODES, PROFILES, ErrorCode, Pipe
from model.memory import GlobalMemory
from model.run import RunResult, run_on_model
from tb.scoreboard import copies_with_registers, copy_rows, destination_space

PAGE = 4096
WIDTH = 32


@dataclass
class RtlJob:
    """What the simulation is given (tb/test_mte.py `cli_program`)."""
    words: list
    command_words: list
    windows: list            # (page-aligned base, bytes)
    ub: bytes
    shakes: tuple = ()       # seeds: run once per seed under its random bus behaviour


@dataclass
class RtlOutcome:
    """What the simulation hands back."""
    ub: bytes = b""
    windows: dict = field(default_factory=dict)     # base -> bytes
    status: dict = field(default_factory=dict)      # pipe name -> dict of status fields
    accepted: list = field(default_factory=list)    # cycle each command went in
    completions: list = field(default_factory=list)  # (cycle, pipe name), in time order
    cycles: int = 0
    hang: str = ""


class EngineDifference(Exception):
    """The model and the RTL disagree (`mte run --engine both` exits 1 with this)."""


class RtlHang(Exception):
    """The RTL stopped moving before it finished the program (`mte run` exits 1 with
    this, the memories as they were when it stopped)."""


def page_windows(gm):
    """The GM regions rounded out to whole pages: [(base, bytes)], zeros around the data."""
    spans = []
    for region in gm.regions:
        lo, hi = region.base // PAGE * PAGE, -(-region.end // PAGE) * PAGE
        if spans and lo <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], hi)
        else:
            spans.append([lo, hi])
    out = []
    for lo, hi in spans:
        image = np.zeros(hi - lo, dtype=np.uint8)
        for region in gm.regions:
            if lo <= region.base < hi:
                image[region.base - lo:region.end - lo] = region.data
        out.append((lo, image.tobytes()))
    return out


def _simulate(job, profile):
    """The job run in a directory of this process's own, so that several `mte run`s can
    share a checkout. Build progress goes to stdout: stderr's first line is the error."""
    from tb import run as tb_run
    runner, build_dir = tb_run.build("verilator", profile, WIDTH, waves=False,
                                     progress=sys.stdout)
    with tempfile.TemporaryDirectory(dir=build_dir, prefix="cli-") as work:
        work = Path(work)
        job_file, out_file, log = work / "job.pickle", work / "outcome.pickle", work / "sim.log"
        job_file.write_bytes(pickle.dumps(job))
        env = {"MTE_PROFILE": profile, "MTE_CLI_JOB": str(job_file),
               "MTE_CLI_OUTCOME": str(out_file), "MTE_UB_ACCESS": "backdoor",
               "COCOTB_LOG_LEVEL": "WARNING", "PYTHONWARNINGS": "ignore::DeprecationWarning"}
        tb_run.run(runner, build_dir, ["cli_program"], env, waves=False, log_file=log,
                   run_dir=work)
        if not out_file.exists():
            tail = log.read_text(errors="replace").splitlines()[-20:] if log.exists() else []
            raise RuntimeError("the simulation wrote no outcome; its log ends:\n"
                               + "\n".join(tail))
        return pickle.loads(out_file.read_bytes())


def _pipes_of(instrs):
    return [Pipe(isa.op_pipe(i.op, i.values)) for i in instrs]


def _rule_wording(encoded, index, code, profile):
    """The model's words for the rule the RTL reports at command `index` (the operand or
    stride that breaks it, and its value, under the registers the commands before it
    leave), when the model finds that rule there; else None."""
    if encoded[index].op.opcode not in COPY_OPCODES:
        return None
    *_, (copy, regs) = copies_with_registers(encoded[:index + 1])
    violation = rules.first_violation(copy.op, copy.values, regs, PROFILES[profile])
    return violation.message if violation.code == code else None


def _rtl_error(outcome, encoded, assembly_error, profile):
    """The first error of the run, in command order, as an MteError."""
    found = []
    for name, status in outcome.status.items():
        if status["error"]:
            found.append((status["error_index"], status["error"], status["error_addr"]))
    if found:
        index, code, address = min(found)
        instr = encoded[index]
        code = ErrorCode(code)
        if code == ErrorCode.BUS_ERROR:
            return MteError(code, f"reported by the RTL at GM address {address:#x}",
                            line=instr.line, op=instr.mnemonic, address=address)
        wording = _rule_wording(encoded, index, code, profile)
        message = f"{wording} (reported by the RTL)" if wording else "reported by the RTL"
        return MteError(code, message, line=instr.line, op=instr.mnemonic)
    return assembly_error


def _summary(outcome, encoded):
    """One line per command: its pipe, the cycle it was complete, and its own cycles (from
    the later of its issue and its pipe's previous completion)."""
    pipes = _pipes_of(encoded)
    done = {pipe: [c for c, p in outcome.completions if p == pipe.name] for pipe in pipes}
    taken = {pipe: 0 for pipe in done}
    previous = {pipe: 0 for pipe in done}
    lines = [f"rtl: {len(encoded)} commands in {outcome.cycles} cycles"]
    for instr, pipe, accepted in zip(encoded, pipes, outcome.accepted):
        head = f"  line {instr.line:>4}  {instr.mnemonic:<26}"
        if pipe == Pipe.EXTERNAL:
            lines.append(f"{head} dropped (its own side is not an engine pipe)")
            continue
        if taken[pipe] == len(done[pipe]):
            lines.append(f"{head} {pipe.name:<5} not completed")
            continue
        finish = done[pipe][taken[pipe]]
        taken[pipe] += 1
        own = finish - max(accepted, previous[pipe])
        previous[pipe] = finish
        lines.append(f"{head} {pipe.name:<5} done at cycle {finish:>6} ({own:>5} cycles)")
    return lines


def _job(instrs, profile, gm, ub_preloads):
    """(the job, the commands it encodes, the error of the first it cannot encode)."""
    words, lines, assembly_error = assemble_until_error(instrs)
    encoded = instrs[:len(lines)]
    ub = np.zeros(PROFILES[profile].ub_size, dtype=np.uint8)
    for addr, data in ub_preloads:
        ub[addr:addr + len(data)] = np.frombuffer(data, dtype=np.uint8)
    job = RtlJob(words, [len(isa.encode(i.op, i.values)) for i in encoded], page_windows(gm),
                 ub.tobytes())
    return job, encoded, assembly_error


def _result(outcome, encoded, assembly_error, profile):
    error = RtlHang(f"the RTL hung: {outcome.hang}") if outcome.hang else \
        _rtl_error(outcome, encoded, assembly_error, profile)
    images = {base: np.frombuffer(data, dtype=np.uint8) for base, data in outcome.windows.items()}

    def read_gm(addr, n):
        base = max(b for b in images if b <= addr)
        return images[base][addr - base:addr - base + n].tobytes()

    return RunResult(error, _summary(outcome, encoded),
                     read_gm=read_gm,
                     read_ub=lambda addr, n: outcome.ub[addr:addr + n])


def run_on_rtl(instrs, profile, gm, ub_preloads):
    job, encoded, assembly_error = _job(instrs, profile, gm, ub_preloads)
    return _result(_simulate(job, profile), encoded, assembly_error, profile)


def _unspecified(error, instrs):
    """Destination ranges of the copies of the line that failed with BUS_ERROR."""
    if error is None or error.code != ErrorCode.BUS_ERROR:
        return {}
    out = {}
    for instr, regs in copies_with_registers(instrs):
        if instr.line == error.line:
            rows = copy_rows(instr.op, instr.values, regs)
            out.setdefault(destination_space(instr.op), []).extend(
                (d, d + n) for _, d, _, n in rows)
    return out


def _first_difference(name, base, want, got, skip):
    differ = want != got
    for lo, hi in skip:
        differ[max(lo - base, 0):max(hi - base, 0)] = False
    hits = np.flatnonzero(differ)
    if len(hits):
        at = int(hits[0])
        return (f"{name} {base + at:#x}: model {int(want[at]):#04x}, rtl {int(got[at]):#04x} "
                f"({len(hits)} bytes differ)")
    return None


def _page_note(model_error, gm):
    """Why the RTL may miss a bus error the model reports: the byte is unmapped, but in
    a page the RTL maps around a window."""
    address = getattr(model_error, "address", None)
    if address is None or not any(base <= address < base + len(data)
                                   for base, data in page_windows(gm)):
        return ""
    return (f" (the RTL maps GM in whole {PAGE}-byte pages, so {address:#x}, outside "
            "every --gm window, is inside a page the RTL maps; give windows whole pages "
            "to compare bus errors)")


def _model_prefix(instrs, profile, gm):
    """How many commands the model runs: all, or up to and including its first error."""
    engine = Engine(profile, copy_memory(gm))
    for index, instr in enumerate(instrs):
        try:
            engine.execute(instr)
        except MteError:
            return index + 1
    return len(instrs)


def copy_memory(gm):
    out = GlobalMemory()
    for region in gm.regions:
        out.map(region.base, region.data)
    return out


def _differences(model, rtl, ran, profile, gm):
    """How an RTL run's error and memories differ from the model's (UB, then each GM
    region), leaving out the destination of a copy that failed with BUS_ERROR."""
    differences = []
    m, r = model.error, rtl.error
    if not (m is None and r is None or isinstance(m, MteError) and isinstance(r, MteError)
            and (m.code, m.line, m.address) == (r.code, r.line, r.address)):
        differences.append(f"error: model {m}, rtl {r}{_page_note(m, gm)}")
    skip = _unspecified(m, ran)
    memories = [("UB", 0, PROFILES[profile].ub_size, skip.get("ub", ()))]
    memories += [("GM", g.base, len(g.data), skip.get("gm", ())) for g in gm.regions]
    for name, base, n, ranges in memories:
        read_model, read_rtl = (model.read_ub, rtl.read_ub) if name == "UB" else \
            (model.read_gm, rtl.read_gm)
        want = np.frombuffer(read_model(base, n), dtype=np.uint8)
        got = np.frombuffer(read_rtl(base, n), dtype=np.uint8)
        difference = _first_difference(name, base, want, got, ranges)
        if difference:
            differences.append(difference)
    return differences


def run_on_both(instrs, profile, gm, ub_preloads):
    """The model, then the RTL on the same commands (the RTL goes on after an error, the
    model stops, so the RTL gets the commands up to the model's first error only)."""
    ran = instrs[:_model_prefix(instrs, profile, gm)]
    rtl = run_on_rtl(ran, profile, copy_memory(gm), ub_preloads)
    model = run_on_model(instrs, profile, gm, ub_preloads)
    differences = _differences(model, rtl, ran, profile, gm)
    summary = model.summary + rtl.summary
    if differences:
        return RunResult(EngineDifference("; ".join(differences)), summary, model.read_gm,
                         model.read_ub)
    summary.append("model and rtl agree")
    return RunResult(model.error, summary, model.read_gm, model.read_ub)


def shake_on_rtl(instrs, profile, gm, ub_preloads, runs):
    """`mte run --engine rtl --shake RUNS`: the program RUNS times on the RTL, run k under
    seed k's random GM latency and backpressure (tb/harness.py), each final memory
    compared with the model's. The summary counts the distinct final memories and says,
    for each, which runs left it and where it differs from the model."""
    ran = instrs[:_model_prefix(instrs, profile, gm)]
    job, encoded, assembly_error = _job(ran, profile, copy_memory(gm), ub_preloads)
    job.shakes = tuple(range(1, runs + 1))
    outcomes = _simulate(job, profile)
    model = run_on_model(instrs, profile, gm, ub_preloads)
    finals = {}                # final memory -> (seeds, differences from the model)
    for seed, outcome in zip(job.shakes, outcomes, strict=True):
        memory = (outcome.ub, tuple(sorted(outcome.windows.items())))
        if memory not in finals:
            rtl = _result(outcome, encoded, assembly_error, profile)
            finals[memory] = ([], _differences(model, rtl, ran, profile, gm))
        finals[memory][0].append(seed)
    summary = model.summary + [f"shake: {runs} runs under seeded random GM latency and "
                               f"backpressure, {len(finals)} distinct final memories"]
    differing = 0
    for seeds, differences in finals.values():
        runs_text = f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"
        summary.append(f"  {runs_text}: " + ("; ".join(differences) if differences
                                            else "the model's bytes"))
        differing += len(seeds) if differences else 0
    if differing:
        error = EngineDifference(f"{differing} of {runs} shaken runs differ from the model "
                                 "(a race, or an RTL fault)")
        return RunResult(error, summary, model.read_gm, model.read_ub)
    return RunResult(model.error, summary, model.read_gm, model.read_ub)
