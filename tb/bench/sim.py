"""The cocotb side of the benchmark: times each bench program's copy on `mte_dma`.

tb/bench/__main__.py starts the simulator with:
  MTE_PROFILE          profile the Verilog was generated for
  MTE_BENCH_LATENCIES  comma-separated GM latencies in cycles, each run over every program
  MTE_BENCH_SWEEP      1: the row-size sweep too
  MTE_BENCH_STREAMS    1: the streams too
  MTE_REPORT           file to append one JSON line per (program, latency) to

Per program: GM windows mapped, UB preloaded, a pipelined GM of fixed latency with no
backpressure, the register set-up pushed and drained, then the timed copies' command
words pushed back to back. Their cycles run from the edge that takes the first copy's
last word to the edge after which the last of them has counted in its pipe's completed
count. Then the whole UB and every GM window are compared with the model, and no pipe
may report an error.
"""

import json
import os
from dataclasses import asdict, dataclass, field

import cocotb
from cocotb.triggers import Event, RisingEdge

from model.isa import Pipe
from tb.harness import PIPES, Harness, WatchdogError
from tb.scoreboard import compare, expect
from tb.test_mte import RESET_REGISTERS

from . import suite


@dataclass
class BusTimes:
    """Cycles of a copy's first address handshake and its first and last data beat on GM
    (AR/R for reads, AW/W for writes), and its bursts; None for a UB->UB copy."""
    first_address: int | None = None
    first_data: int | None = None
    last_data: int | None = None
    bursts: int = 0

    def since(self, cycle):
        """The same times counted from `cycle`."""
        def shift(t):
            return None if t is None else t - cycle
        return BusTimes(shift(self.first_address), shift(self.first_data),
                        shift(self.last_data), self.bursts)


@dataclass
class Record:
    name: str
    direction: str
    latency: int
    size: int
    copies: int = 1
    cycles: int = 0
    steady: int = 0          # each pipe's first completion to its last, the longest
    bus: BusTimes = field(default_factory=BusTimes)
    failures: list = field(default_factory=list)


def _handshake(bus, channel):
    return bool(getattr(bus, f"{channel}valid").value and getattr(bus, f"{channel}ready").value)


async def watch_bus(h, pipe, times, stop):
    """Fill `times` (absolute cycles) from the GM channels `pipe` uses until `stop`."""
    if pipe == Pipe.V:
        return
    bus, address, beat = (h.bus.read, "ar", "r") if pipe == Pipe.MTE2 else \
        (h.bus.write, "aw", "w")
    address_bus, data_bus = getattr(bus, address), getattr(bus, beat)
    while not stop.is_set():
        await RisingEdge(h.dut.clk)
        if _handshake(address_bus, address):
            times.bursts += 1
            if times.first_address is None:
                times.first_address = h.cycle
        if _handshake(data_bus, beat):
            if times.first_data is None:
                times.first_data = h.cycle
            times.last_data = h.cycle


async def time_copies(h, words, command_words, pipes):
    """Push copy commands back to back (`pipes`: each one's pipe) and wait for them: (the
    cycles from the first one's acceptance to the last completion, the longest span from
    a pipe's first completion to its last, the BusTimes of the first one's pipe from that
    acceptance)."""
    completions, accepted, times, stop = [], [], BusTimes(), Event()
    tracer = cocotb.start_soon(h.completion_trace(completions, stop))
    watcher = cocotb.start_soon(watch_bus(h, pipes[0], times, stop))
    await h.push(words, command_words, accepted)
    await h.wait_idle()
    stop.set()
    await tracer
    await watcher
    assert len(completions) == len(pipes), \
        f"{len(completions)} completions of {len(pipes)} copies"
    assert sorted(p for _, p in completions) == sorted(pipes), "completions on other pipes"
    steady = max(max(c for c, p in completions if p == pipe)
                 - min(c for c, p in completions if p == pipe) for pipe in set(pipes))
    return completions[-1][0] - accepted[0], steady, times.since(accepted[0])


async def measure(h, bench, latency):
    """One program at one latency."""
    case = bench.case
    expectation = expect(case)
    assert expectation.error is None, f"{case.name}: {expectation.error}"
    record = Record(case.name, bench.direction, latency, bench.size, bench.timed)
    h.map_gm(case.gm)
    await h.write_ub(case.ub)
    h.fixed_latency(latency)
    setup = expectation.command_words[:-bench.timed]
    split = sum(setup)
    await h.push(*RESET_REGISTERS)
    await h.push(expectation.words[:split], setup)
    await h.wait_idle()
    pipes = [Pipe(instr.op.pipe) for instr in expectation.instrs[-bench.timed:]]
    try:
        record.cycles, record.steady, record.bus = await time_copies(
            h, expectation.words[split:], expectation.command_words[-bench.timed:], pipes)
    except WatchdogError as hang:
        record.failures.append(f"{case.name}: {hang}")
        await h.reset()
        return record
    ub = await h.read_ub()
    record.failures += [str(m) for m in compare(expectation, expectation.checkpoints[-1], ub,
                                                 h.gm.images(), h.cycle, case.name)]
    record.failures += [f"{case.name}: {PIPES[p]} error {h.status(p).error}"
                        for p in PIPES if h.status(p).error]
    return record


def programs(profile):
    cases = suite.shapes(profile)
    if os.environ.get("MTE_BENCH_SWEEP", "1") == "1":
        cases += suite.sweep(profile)
    if os.environ.get("MTE_BENCH_STREAMS", "1") == "1":
        cases += suite.streams(profile)
    return cases


@cocotb.test()
async def bench(dut):
    """Every bench program at every latency; fails if any differs from the model."""
    profile = os.environ.get("MTE_PROFILE", "a5")
    latencies = [int(t) for t in os.environ.get("MTE_BENCH_LATENCIES", "32").split(",")]
    h = Harness(dut, profile)
    await h.start()
    records = []
    for latency in latencies:
        for bench_case in programs(profile):
            records.append(await measure(h, bench_case, latency))
    with open(os.environ["MTE_REPORT"], "a") as f:
        for record in records:
            f.write(json.dumps(asdict(record)) + "\n")
    failures = [f for r in records for f in r.failures]
    assert not failures, "\n".join(failures[:20])
