"""cocotb tests: `mte_dma` against the golden model, many programs in one simulation.

tb/run.py (and tests/test_cocotb.py) start the simulator and choose what runs with
environment variables:

  MTE_PROFILE       profile the Verilog was generated for (default a5)
  MTE_EXAMPLES      1: run the seed examples (model/seeds.py)
  MTE_EXAMPLE       comma-separated example indices to run
  MTE_SEED, MTE_COUNT   COUNT random programs derived from SEED
  MTE_CASES         comma-separated case specs (SEED or SEED/ERROR_CODE) to run
  MTE_ERRORS        1: one program ending in each error class
  MTE_CORPUS        `all`, or comma-separated names: programs of tests/programs/ (tb/corpus.py)
  MTE_SHARD         I/N: only the random programs whose index is I modulo N, and the
                    examples, cases and error programs only if I is 0 (default 0/1)
  MTE_UB_ACCESS     backdoor or port: how the harness loads and reads UB (tb/harness.py)
  MTE_REPORT        file to append one JSON line per program to (tb/run.py's table)
  MTE_CLI_JOB, MTE_CLI_OUTCOME   the `cli_program` test's input and output files

Each program: GM windows mapped, UB preloaded, random bus behaviour, whole commands
pushed, wait for idle (watchdog), then the whole UB and every GM window compared with the
model, and every pipe's status checked (completed count, error code, command index, bus
error address), errors cleared. Some programs also drain and compare at their wait_flag
and get_buf points. A test fails if any program differs; every difference is listed.
"""

import json
import os
import pickle
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

import cocotb
from cocotb.triggers import ClockCycles, Event, RisingEdge

from model.isa import OP_BY_MNEMONIC, PROFILES, ErrorCode, Pipe, encode, reset_registers
from tb.harness import PIPES, Harness, WatchdogError
from tb.programs import (AUTO, ERROR_CLASSES, Case, case_seed, example_cases, generate,
                         parse_spec)
from tb.rtl_engine import RtlOutcome
from tb.scoreboard import ENGINE_PIPES, compare, expect

DRAIN_SHARE = 6            # one random program in DRAIN_SHARE also compares at wait points


def register_words(writes):
    """(words, words per command) of register-write commands given as (mnemonic, fields)."""
    commands = [encode(OP_BY_MNEMONIC[name], values) for name, values in writes]
    return [w for c in commands for w in c], [len(c) for c in commands]


def _reset_writes():
    """Register writes that put every MTE2 and MTE3 register at its reset value."""
    writes = []
    for direction, pipe in (("outtoub", Pipe.MTE2), ("ubtoout", Pipe.MTE3)):
        regs = reset_registers(pipe)
        writes.append((f"set_loop_size_{direction}", {"loop1_count": regs["loop1_count"],
                                                       "loop2_count": regs["loop2_count"]}))
        for level in ("loop1", "loop2"):
            writes.append((f"set_{level}_stride_{direction}",
                           {"src_stride": regs[f"{level}_src_stride"],
                            "dst_stride": regs[f"{level}_dst_stride"]}))
    writes.append(("set_mov_pad_val", {"pad_val": reset_registers(Pipe.MTE2)["pad_val"]}))
    return writes


RESET_REGISTERS = register_words(_reset_writes())


@dataclass
class CaseResult:
    test: str
    case: str
    category: str
    commands: int = 0
    bytes: int = 0
    cycles: int = 0
    compares: int = 0          # whole-memory comparisons: 1, or more with drain points
    failures: list = field(default_factory=list)
    rerun: str = ""


def _env(name, default=""):
    return os.environ.get(name, default)


def _profile():
    return _env("MTE_PROFILE", "a5")


def rerun_line(case, dut, module="tb.run"):
    """The command that runs `case` again on a build like this one: the case's own line,
    run by `module`, with the profile and width this simulation was built for."""
    width = len(dut.m_axi__wdata) // 8
    return f"{case.rerun.replace('tb.run', module)} --profile {_profile()} --width {width}"


def configured_cases():
    """(category, case) of the regression's programs, generated one at a time.
    Categories: example, random (which may end in an error), error (one per class),
    corpus (tests/programs/)."""
    profile = _profile()
    shard, shards = map(int, _env("MTE_SHARD", "0/1").split("/"))
    examples = example_cases(profile)
    if shard == 0 and _env("MTE_EXAMPLES") == "1":
        yield from (("example", c) for c in examples)
    for index in filter(None, _env("MTE_EXAMPLE").split(",") if shard == 0 else ()):
        yield "example", examples[int(index)]
    for text in filter(None, _env("MTE_CASES").split(",") if shard == 0 else ()):
        seed, error = parse_spec(text)
        yield "random", generate(seed, error, profile)
    run_seed = int(_env("MTE_SEED", "1"), 0)
    for index in range(shard, int(_env("MTE_COUNT", "0")), shards):
        yield "random", generate(case_seed(run_seed, index), AUTO, profile)
    if shard == 0 and _env("MTE_ERRORS") == "1":
        for index, code in enumerate(ERROR_CLASSES):
            yield "error", generate(case_seed(run_seed, f"error-{index}"), code, profile)
    corpus = _env("MTE_CORPUS")
    if shard == 0 and corpus:
        from tb.corpus import programs
        names = None if corpus == "all" else corpus.split(",")
        yield from (("corpus", p.case()) for p in programs(names) if p.profile == profile)


def report(results):
    path = _env("MTE_REPORT")
    if path:
        with open(path, "a") as f:
            for result in results:
                f.write(json.dumps(asdict(result)) + "\n")


def _check_status(h, expectation, base_index, completed_before, name):
    """Every pipe's status against the model; returns failure descriptions."""
    failures = []
    for pipe in ENGINE_PIPES:
        got, want = h.status(pipe), expectation.pipes[pipe]
        label = f"{name}: {PIPES[pipe]} status"
        done = got.completed - completed_before[pipe]
        if done != want.completed:
            failures.append(f"{label}: {done} commands completed, the model ran {want.completed}")
        if got.error != want.error:
            failures.append(f"{label}: error {_code(got.error)} (command {got.error_index}, "
                            f"address {got.error_addr:#x}), expected {want.error.name}")
        elif want.error != ErrorCode.NONE:
            if got.error_index != base_index + want.error_index:
                failures.append(f"{label}: error_index {got.error_index}, expected "
                                f"{base_index + want.error_index}")
            if want.error == ErrorCode.BUS_ERROR and got.error_addr != want.error_addr:
                failures.append(f"{label}: error_addr {got.error_addr:#x}, expected "
                                f"{want.error_addr:#x}")
    if h.dut.bad_opcodes.value.to_unsigned():
        failures.append(f"{name}: bad_opcodes = {h.dut.bad_opcodes.value.to_unsigned()}")
    if not h.dut.irq.value:
        failures.append(f"{name}: irq low while idle")
    return failures


def _code(value):
    try:
        return ErrorCode(value).name
    except ValueError:
        return f"#{value}"


async def run_case(h, case, test_name, category, drains=False):
    """Run one case on the RTL and compare it with the model."""
    expectation = expect(case, drains)
    result = CaseResult(test_name, case.name, category, expectation.commands,
                        expectation.bytes_moved, rerun=rerun_line(case, h.dut))
    h.map_gm(case.gm, case.fault_pages)
    await h.write_ub(case.ub)
    h.rng.seed(f"timing:{case.name}")    # the same bus timing when the case runs alone
    await h.push(*RESET_REGISTERS)       # the model starts each program from reset values
    await h.wait_idle()
    base_index = h.commands_sent
    completed_before = {pipe: h.status(pipe).completed for pipe in PIPES}
    sent = 0
    for checkpoint in expectation.checkpoints:
        h.backpressure(random.Random(f"bus:{case.name}:{checkpoint.commands}"))
        first_word = sum(expectation.command_words[:sent])
        last_word = sum(expectation.command_words[:checkpoint.commands])
        start = h.cycle
        try:
            await h.push(expectation.words[first_word:last_word],
                         expectation.command_words[sent:checkpoint.commands])
            finished = await h.wait_idle()
        except WatchdogError as hang:
            result.failures.append(f"{case.name}: {hang}")
            h.quiet()
            await h.reset()          # so that the programs after this one still run
            return result
        result.cycles += finished - start
        sent = checkpoint.commands
        h.quiet()
        ub = await h.read_ub()
        result.failures += [str(m) for m in compare(expectation, checkpoint, ub, h.gm.images(),
                                                     finished, case.name)]
        result.compares += 1
    result.failures += _check_status(h, expectation, base_index, completed_before, case.name)
    if any(h.status(pipe).error for pipe in PIPES):
        await h.clear_errors()
        left = [PIPES[p] for p in PIPES if h.status(p).error]
        if left:
            result.failures.append(f"{case.name}: clear_errors left errors in {left}")
    return result


def _fail_on(results, shown=20):
    """Fail with the first `shown` differences (tb/run.py prints all of them)."""
    failures = [f for r in results for f in r.failures]
    reruns = sorted({r.rerun for r in results if r.failures})
    more = [f"... and {len(failures) - shown} more"] if len(failures) > shown else []
    assert not failures, "\n".join(failures[:shown] + more + ["re-run with:"] + reruns[:shown])


async def _harness(dut):
    h = Harness(dut, _profile(), seed=int(_env("MTE_SEED", "1"), 0))
    await h.start()
    return h


@cocotb.test()
async def regression(dut):
    """The configured programs, one after another, with no reset in between."""
    h = await _harness(dut)
    results = []
    for category, case in configured_cases():
        drains = case.seed is not None and case.seed % DRAIN_SHARE == 0
        result = await run_case(h, case, "regression", category, drains)
        dut._log.info("%s: %d commands, %d cycles%s", case.name, result.commands,
                      result.cycles, f", {len(result.failures)} FAILURES" if result.failures
                      else "")
        results.append(result)
    report(results)
    assert results, "no programs configured"
    _fail_on(results)


def _bus_fault_cases(profile):
    """Four BUS_ERROR programs: MTE2 reads and MTE3 writes, DECERR and SLVERR each."""
    found = {}
    for index in range(400):
        case = generate(case_seed("bus", index), ErrorCode.BUS_ERROR, profile)
        error = expect(case).error
        key = (error.op, bool(case.fault_pages))
        found.setdefault(key, case)
        if len(found) == 4:
            return [found[k] for k in sorted(found)]
    raise AssertionError(f"only found bus fault kinds {sorted(found)}")


@cocotb.test()
async def bus_faults(dut):
    """DECERR and SLVERR on reads and writes: reported with the faulting address, the
    engine stays usable (a legal program runs right after each)."""
    h = await _harness(dut)
    profile, results = _profile(), []
    for index, case in enumerate(_bus_fault_cases(profile)):
        results.append(await run_case(h, case, "bus_faults", "bus fault"))
        after = generate(case_seed("after-bus", index), None, profile)
        results.append(await run_case(h, after, "bus_faults", "bus fault"))
    report(results)
    _fail_on(results)


RESET_PROBE = """\
// Relies on every register's reset value: loop counts 1, loop strides 0, pad_val 0.
pto.copy_gm_to_ubuf %gm_in, %ub_a, %c0_i64, %c3_i64, %c40_i64, %c2_i64, %c1_i64, %true,
    %c0_i64, %c100_i64, %c96_i64
    : !pto.ptr<i16, gm>, !pto.ptr<i16, ub>, i64, i64, i64, i64, i64, i1, i64, i64, i64
pto.copy_ubuf_to_gm %ub_b, %gm_out, %c0_i64, %c2_i64, %c24_i64, %c0_i64, %c50_i64, %c32_i64
    : !pto.ptr<i16, ub>, !pto.ptr<i16, gm>, i64, i64, i64, i64, i64, i64
"""


def _reset_probe(profile, seed):
    """RESET_PROBE with random sources; the model runs it from reset registers."""
    rng = random.Random(seed)
    ub = bytearray([0xAA]) * PROFILES[profile].ub_size
    ub[0x4000:0x4000 + 256] = rng.randbytes(256)
    source = bytearray([0xAA]) * 4096
    source[0x123:0x123 + 300] = rng.randbytes(300)
    return Case("reset probe", RESET_PROBE,
                {"gm_in": 0x7000_0123, "ub_a": 0x2000, "ub_b": 0x4000, "gm_out": 0x7000_2010},
                ((0x7000_0000, bytes(source)), (0x7000_2000, bytes(4096))), bytes(ub),
                profile, rerun="python -m tb.run --tests reset_mid_transfer")


DIRTY_REGISTERS = register_words([
    ("set_loop_size_outtoub", {"loop1_count": 2, "loop2_count": 3}),
    ("set_loop1_stride_outtoub", {"src_stride": 4096, "dst_stride": 8192}),
    ("set_loop2_stride_outtoub", {"src_stride": 64, "dst_stride": 1024}),
    ("set_mov_pad_val", {"pad_val": 0x1234_5678_9ABC_DEF0}),
    ("set_loop_size_ubtoout", {"loop1_count": 3, "loop2_count": 2}),
    ("set_loop1_stride_ubtoout", {"src_stride": 2048, "dst_stride": 100}),
    ("set_loop2_stride_ubtoout", {"src_stride": 512, "dst_stride": 7})])


@cocotb.test()
async def reset_mid_transfer(dut):
    """Reset while copies are on the bus: the engine comes back idle with clear status,
    its registers at their reset values, and runs the next program correctly."""
    h = await _harness(dut)
    profile, failures = _profile(), []
    for index in range(3):
        case = generate(case_seed("reset", index), None, profile, copies=8)
        expectation = expect(case)
        h.map_gm(case.gm, case.fault_pages)
        await h.write_ub(case.ub)
        h.backpressure(random.Random(index))
        await h.push(*DIRTY_REGISTERS)
        pushing = cocotb.start_soon(h.push(expectation.words, expectation.command_words))
        beats = h.stats.beats
        for _ in range(2000):
            await RisingEdge(dut.clk)
            if h.stats.beats > beats + 4:
                break
        busy = [PIPES[p] for p in PIPES if h.status(p).busy]
        if not busy:
            failures.append(f"{case.name}: no pipe busy when reset was asserted")
        pushing.cancel()
        h.quiet()
        await h.reset()
        await ClockCycles(dut.clk, 2)
        if not dut.idle.value:
            failures.append(f"{case.name}: not idle after reset")
        for pipe in PIPES:
            s = h.status(pipe)
            if (s.busy, s.completed, s.error, s.error_index, s.error_addr) != (0,) * 5:
                failures.append(f"{case.name}: {PIPES[pipe]} status {s} after reset")
        result = await run_case(h, _reset_probe(profile, index), "reset_mid_transfer", "reset")
        failures += result.failures
        report([result])
    assert not failures, "\n".join(failures)


@cocotb.test()
async def cli_program(dut):
    """`mte run --engine rtl`: one program from a job file (tb/rtl_engine.py), its final
    memories, status and per-command cycles written back to an outcome file. With
    `job.shakes` (`mte run --shake`), the program once per seed, each after a reset and
    under that seed's random GM latency and backpressure: a list of outcomes."""
    job = pickle.loads(Path(_env("MTE_CLI_JOB")).read_bytes())
    h = await _harness(dut)
    if not job.shakes:
        outcome = await _cli_run(h, job)
        hangs = [outcome.hang] if outcome.hang else []
    else:
        outcome = []
        for seed in job.shakes:
            await h.reset()
            h.backpressure(random.Random(seed))
            outcome.append(await _cli_run(h, job))
        hangs = [run.hang for run in outcome if run.hang]
    Path(_env("MTE_CLI_OUTCOME")).write_bytes(pickle.dumps(outcome))
    assert not hangs, hangs


async def _cli_run(h, job):
    outcome = RtlOutcome()
    h.map_gm(job.windows)
    await h.write_ub(job.ub)
    stop = Event()
    tracer = cocotb.start_soon(h.completion_trace(outcome.completions, stop))
    start = h.cycle
    try:
        await h.push(job.words, job.command_words, outcome.accepted)
        finished = await h.wait_idle()
    except WatchdogError as hang:
        outcome.hang = str(hang)
        finished = h.cycle
    stop.set()
    await tracer
    outcome.cycles = finished - start
    outcome.accepted = [c - start for c in outcome.accepted]
    outcome.completions = [(c - start, PIPES[p].upper()) for c, p in outcome.completions]
    outcome.status = {PIPES[p].upper(): asdict(h.status(p)) for p in PIPES}
    outcome.ub = await h.read_ub()
    outcome.windows = h.gm.images()
    return outcome
