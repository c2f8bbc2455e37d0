"""cocotb test of the FPGA top (`mte_dma_fpga`) driven only as a CPU drives it.

Everything the test does to the engine goes through the AXI4-Lite registers of
hdl/soc/regmap.py (cocotbext-axi's `AxiLiteMaster` on `s_axil`): UB contents are written
through the UB_ADDR / UB_DATA window, and read back through it where the program touched
UB (a guard word each side; all of UB for cpu_programs' first program), command words
are pushed into CMD no faster than CMD_FREE allows, the end of a program is the `irq`
line, and the outcome is read from the per-pipe status registers. GM is an AXI4 slave on
`m_axi` (tb/harness.py's GmReader / GmWriter). Each program's whole UB, as the simulator
holds it (tb/backdoor.py), and every GM window are compared with the golden model
(tb/scoreboard.py), 0xAA guard bytes around everything a program touches.

tb/fpga_run.py (and tests/test_cocotb_fpga.py) build the Verilog and run this module;
MTE_PROFILE names the profile it was generated for.
"""

import ctypes
import functools
import logging
import os
import random
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

import cocotb
from cocotb.clock import Clock
from cocotb.simtime import get_sim_time
from cocotb.task import bridge, resume
from cocotb.triggers import ClockCycles, First, RisingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster
from cocotbext.axi.constants import AxiResp

from hdl.soc import regmap
from hdl.soc.c_header import c_header
from model.engine import COPY_OPCODES
from model.isa import PROFILES, ErrorCode
from tb.backdoor import UbBackdoor
from tb.harness import CLOCK_NS, BusStats, GlobalMemory, GmReader, GmWriter, PipeStatus
from tb.programs import GUARD, case_seed, example_cases, generate
from tb.scoreboard import (ENGINE_PIPES, compare, drain_points, expect, instr_pipe,
                           untouched_ub)
from tb.test_mte import RESET_REGISTERS, configured_cases, rerun_line

REG = {r.name: r.offset for r in regmap.REGISTERS}
IRQ_DONE = 1 << regmap.BY_NAME["IRQ_STATUS"].field("done").lsb
IRQ_ERROR = 1 << regmap.BY_NAME["IRQ_STATUS"].field("error").lsb
IRQ_LINE = 1 << regmap.BY_NAME["IRQ_STATUS"].field("irq").lsb
# an IRQ_ENABLE value masks IRQ_STATUS's causes: each enable bit sits where its cause does
assert all(regmap.BY_NAME["IRQ_ENABLE"].field(name).lsb
           == regmap.BY_NAME["IRQ_STATUS"].field(name).lsb for name in ("done", "error"))
WATCHDOG = 100_000          # cycles a program may take before its interrupt
CHUNK = 1024                # AXI4-Lite accesses queued at once
EXAMPLE = "000/3 padded load f16"
SOAK_LATENCIES = (0, 8, 64, 400)     # most cycles a GM read burst waits, drawn per program
FIRMWARE = Path(__file__).with_name("firmware.c")
FIRMWARE_SHARE = 0.25       # of the soak's programs, those C pushes and waits for


def cycle():
    return int(get_sim_time(unit="ns")) // CLOCK_NS


def field(register, name, value):
    f = regmap.BY_NAME[register].field(name)
    return value >> f.lsb & (1 << f.width) - 1


class Cpu:
    """A CPU's view of the FPGA top: 32-bit register reads and writes over AXI4-Lite."""

    def __init__(self, dut):
        logging.getLogger(f"cocotb.{dut._name}.s_axil_").setLevel(logging.WARNING)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil_"), dut.clk, dut.rst)
        self.ub_size = None         # from CONFIG
        self.width = None           # UB word bytes, from CONFIG
        self.ub = None              # what the CPU knows UB holds (None: nothing)
        self.commands = 0           # commands pushed since reset: how the engine numbers them
        self.waits = 0              # CMD_FREE reads that found too little room
        self.push_sizes = None      # a random.Random: push a random part of the room; None: all

    async def read(self, name):
        response = await self.axil.read(REG[name], 4)
        assert response.resp == AxiResp.OKAY, f"read {name}: {response.resp}"
        return int.from_bytes(response.data, "little")

    async def write(self, name, value):
        response = await self.axil.write(REG[name], value.to_bytes(4, "little"))
        assert response.resp == AxiResp.OKAY, f"write {name}: {response.resp}"

    async def writes(self, name, values):
        """Back-to-back writes of one register (CMD, UB_DATA), queued a chunk at a time."""
        for start in range(0, len(values), CHUNK):
            events = [self.axil.init_write(REG[name], int(v).to_bytes(4, "little"))
                      for v in values[start:start + CHUNK]]
            await events[-1].wait()
            assert all(e.data.resp == AxiResp.OKAY for e in events), f"write {name} failed"

    async def write_ub(self, image):
        """Make UB hold `image`: every word the first time, then the runs of words that
        differ from what the CPU last saw."""
        words = np.frombuffer(image, dtype="<u4")
        if self.ub is None:
            changed = np.ones(len(words), dtype=bool)
        else:
            changed = words != np.frombuffer(self.ub, dtype="<u4")
        edges = np.flatnonzero(np.diff(np.concatenate(([0], changed.astype(np.int8), [0]))))
        for first, end in zip(edges[::2], edges[1::2]):
            await self.write("UB_ADDR", int(first) * 4)
            await self.writes("UB_DATA", words[first:end])
        self.ub = bytes(image)

    async def reads(self, name, count):
        """Back-to-back reads of one register (UB_DATA), queued a chunk at a time: their
        bytes, in order."""
        out = bytearray()
        for start in range(0, count, CHUNK):
            events = [self.axil.init_read(REG[name], 4)
                      for _ in range(min(CHUNK, count - start))]
            await events[-1].wait()
            assert all(e.data.resp == AxiResp.OKAY for e in events), f"read {name} failed"
            out += b"".join(e.data.data for e in events)
        return bytes(out)

    async def read_ub(self, spans=None):
        """The whole UB. With `spans` ([start, end) byte ranges of whole words), the UB as
        the simulator holds it, and those words also through the window, which must read
        the same; without, all of it through the window (UB_ADDR steps by 4 on every
        UB_DATA read)."""
        if spans is None:
            await self.write("UB_ADDR", 0)
            self.ub = await self.reads("UB_DATA", self.ub_size // 4)
            return self.ub
        image = UbBackdoor(self.ub_size // self.width, self.width).read()
        for start, end in spans:
            await self.write("UB_ADDR", start)
            window = await self.reads("UB_DATA", (end - start) // 4)
            assert window == image[start:end], \
                f"UB {start:#x}..{end:#x} through UB_DATA differs from the UB itself"
        self.ub = image
        return image

    async def push(self, words, command_words):
        """Push command words, never more than CMD_FREE says the FIFO has room for."""
        sent = 0
        while sent < len(words):
            free = await self.read("CMD_FREE")
            assert free <= regmap.CMD_FIFO_DEPTH, f"CMD_FREE reads {free}"
            if free < min(regmap.CMD_FIFO_DEPTH, len(words) - sent):
                self.waits += 1
            size = min(free, len(words) - sent)
            if size and self.push_sizes:
                size = self.push_sizes.randint(1, size)
            await self.writes("CMD", words[sent:sent + size])
            sent += size
        self.commands += len(command_words)

    async def status(self, pipe):
        p = pipe.name
        lo, hi = await self.read(f"{p}_ERROR_ADDR_LO"), await self.read(f"{p}_ERROR_ADDR_HI")
        return PipeStatus(await self.read(f"{p}_STATUS"), await self.read(f"{p}_COMPLETED"),
                          await self.read(f"{p}_ERROR"), await self.read(f"{p}_ERROR_INDEX"),
                          lo | hi << 32)


class Gm:
    """GM on `m_axi`: the windows of the program running now (GmReader/GmWriter's owner)."""

    def __init__(self, dut):
        logging.getLogger(f"cocotb.{dut._name}.m_axi_").setLevel(logging.WARNING)
        bus, stats = AxiBus.from_prefix(dut, "m_axi_"), BusStats()
        self.gm = GlobalMemory(())
        self.reader = GmReader(bus.read, dut.clk, dut.rst, self, random.Random(1), stats)
        self.writer = GmWriter(bus.write, dut.clk, dut.rst, self, stats)


@dataclass
class Fpga:
    dut: object
    cpu: Cpu
    gm: Gm
    profile: str


async def start(dut):
    profile = os.environ.get("MTE_PROFILE", "a5")
    Clock(dut.clk, CLOCK_NS, unit="ns").start()
    dut.rst.value = 1
    fpga = Fpga(dut, Cpu(dut), Gm(dut), profile)
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    await RisingEdge(dut.clk)
    return fpga


async def wait_irq(fpga):
    """Cycles until `irq` is high; fails after WATCHDOG cycles."""
    dut, begin = fpga.dut, cycle()
    if not dut.irq.value:
        await First(RisingEdge(dut.irq), ClockCycles(dut.clk, WATCHDOG))
    assert dut.irq.value, f"no interrupt in {WATCHDOG} cycles"
    return cycle() - begin


@dataclass
class Run:
    irq_status: int          # IRQ_STATUS at the first interrupt
    busy: set                # pipes whose STATUS.busy read 1 once the last word was in
    cycles: int              # from the first word pushed to done
    commands: int            # commands pushed


async def push_and_wait(fpga, words, command_words):
    """Push a program with only the error interrupt enabled (the engine may go idle
    between words), then enable `done` too and wait for the interrupt, and then for `done`
    should an error have come first."""
    cpu = fpga.cpu
    await cpu.write("IRQ_ENABLE", IRQ_ERROR)
    begin = cycle()
    await cpu.push(words, command_words)
    busy = {pipe for pipe in ENGINE_PIPES if await cpu.read(f"{pipe.name}_STATUS")}
    await cpu.write("IRQ_ENABLE", IRQ_DONE | IRQ_ERROR)
    await wait_irq(fpga)
    first = await cpu.read("IRQ_STATUS")
    if not first & IRQ_DONE:
        await cpu.write("IRQ_ENABLE", IRQ_DONE)
        await wait_irq(fpga)
    return Run(first, busy, cycle() - begin, len(command_words))


@functools.cache
def firmware_library():
    """tb/firmware.c built against `mte header`'s mte_dma.h and loaded, once per
    simulator run: a process loads a library path only once anyway."""
    directory = Path.cwd() / "firmware"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "mte_dma.h").write_text(c_header())
    library = directory / "firmware.so"
    subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", "-pedantic", "-Werror",
                    "-shared", "-fPIC", "-I", str(directory), str(FIRMWARE),
                    "-o", str(library)], check=True, capture_output=True)
    lib = ctypes.CDLL(str(library))
    lib.fw_run.argtypes = (ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint32)
    lib.fw_run.restype = ctypes.c_uint32
    return lib


class Firmware:
    """firmware_library(): C code whose register reads and writes are the Cpu's AXI4-Lite
    transfers. cocotb's `bridge` runs it in a thread of its own, and each access
    `resume`s the simulation until the transfer is done. The library has one pair of
    callbacks, so the newest Firmware is the one connected."""

    READ = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32)
    WRITE = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint32)

    def __init__(self, cpu):
        self.lib = firmware_library()
        self.cpu = cpu
        self.names = {r.offset: r.name for r in regmap.REGISTERS}
        self.full = 0               # CMD_FREE reads that found no room
        self.deadline = 0
        self.failure = None         # the first access that failed, raised once C returns
        read, write = resume(self._read), resume(self._write)
        # kept: C holds pointers to them
        self.callbacks = (self.READ(lambda offset: self._carry(read, offset)),
                          self.WRITE(lambda offset, value: self._carry(write, offset, value)))
        self.lib.fw_connect(*self.callbacks)

    def _carry(self, access, *args):
        """One access, in the C thread. An exception cannot cross C, so the first one is
        kept and every access after it reads all ones, which ends C's loops (room for
        every word, done)."""
        if self.failure is None:
            try:
                return access(*args)
            except Exception as failure:
                self.failure = failure
        return 0xFFFF_FFFF

    async def _read(self, offset):
        assert cycle() < self.deadline, f"the program not done in {WATCHDOG} cycles"
        name = self.names[offset]
        value = await self.cpu.read(name)
        self.full += name == "CMD_FREE" and value == 0
        return value

    async def _write(self, offset, value):
        await self.cpu.write(self.names[offset], value)

    async def push_and_wait(self, fpga, words, command_words):
        """push_and_wait's work done by C: fw_run pushes the words (mte_dma_push) and
        polls for done (mte_dma_wait_done)."""
        begin = cycle()
        self.deadline = begin + WATCHDOG
        array = (ctypes.c_uint32 * len(words))(*words)
        irq_status = await bridge(lambda: self.lib.fw_run(0, array, len(words)))()
        if self.failure is not None:
            raise self.failure
        self.cpu.commands += len(command_words)
        return Run(irq_status, set(), cycle() - begin, len(command_words))


class CpuThread:
    """Another CPU thread beside the one running a program: `_run` loops while
    `running`; `stop` lets its round end and waits for it."""

    def __init__(self):
        self.running = True
        self.task = cocotb.start_soon(self._run())

    async def stop(self):
        self.running = False
        await self.task
        return self


class StatusPoller(CpuThread):
    """A CPU thread that reads every pipe's COMPLETED and CMD_FREE over and over while
    the first pushes a program, so reads and CMD writes meet in the front end: a count
    never goes back, CMD_FREE never exceeds the FIFO."""

    def __init__(self, cpu, completed):
        self.cpu, self.completed = cpu, dict(completed)
        super().__init__()

    async def _run(self):
        while self.running:
            for pipe in ENGINE_PIPES:
                now = await self.cpu.read(f"{pipe.name}_COMPLETED")
                assert now >= self.completed[pipe], \
                    f"{pipe.name}_COMPLETED went from {self.completed[pipe]} to {now}"
                self.completed[pipe] = now
            free = await self.cpu.read("CMD_FREE")
            assert free <= regmap.CMD_FIFO_DEPTH, f"CMD_FREE reads {free}"


class UbBystander(CpuThread):
    """A CPU thread using UB beside a running program as a CPU filling its next buffer
    does: it writes a fresh pattern of `length` bytes at `start`, bytes the program never
    touches, and reads it back through UB_ADDR / UB_DATA, over and over until stopped.
    The UB's test port goes ahead of the pipes, so this delays them."""

    def __init__(self, cpu, start, length, seed):
        self.cpu, self.start, self.words = cpu, start, length // 4
        self.rng = random.Random(seed)
        self.pattern = None             # the last pattern written, which UB keeps
        super().__init__()

    async def _run(self):
        while self.running:
            pattern = [self.rng.getrandbits(32) for _ in range(self.words)]
            await self.cpu.write("UB_ADDR", self.start)
            await self.cpu.writes("UB_DATA", pattern)
            self.pattern = b"".join(w.to_bytes(4, "little") for w in pattern)
            await self.cpu.write("UB_ADDR", self.start)
            back = await self.cpu.reads("UB_DATA", self.words)
            assert back == self.pattern, \
                f"UB {self.start:#x}+{4 * self.words} read back otherwise while a program ran"


def window_spans(expectation, ub_size):
    """[start, end) of the UB words the program reads or writes, a guard word each side."""
    spans, at = [], 0
    for start, end in untouched_ub(expectation.instrs, expectation.wrote, ub_size) \
            + [(ub_size, ub_size)]:
        if start > at:
            spans.append((max(at - 4, 0), min(start + 4, ub_size)))
        at = end
    return spans


def start_bystander(cpu, case, expectation):
    """A UbBystander on up to 256 bytes of a free stretch of UB, drawn from the case's
    name, most often at one of its ends, so it shares UB words with the program's own
    bytes; None when the program leaves no stretch of 16 bytes."""
    draw = random.Random(f"bystander:{case.name}")
    free = [(s, e) for s, e in untouched_ub(expectation.instrs, expectation.wrote,
                                            cpu.ub_size) if e - s >= 16]
    if not free:
        return None
    start, end = draw.choice(free)
    length = 4 * draw.randint(4, min(64, (end - start) // 4))
    start = draw.choice([start, end - length, draw.randint(start, end - length) & ~3])
    return UbBystander(cpu, start, length, draw.random())


async def run_program(fpga, case, latency=8, poll=False, bystander=False,
                      push=push_and_wait, whole_window=False):
    """Run one case through the CSR and check memories and status against the model.
    Each GM read burst waits up to `latency` cycles before its data; with `poll`, a
    StatusPoller reads status while the program is pushed and run, and with `bystander`
    a UbBystander uses UB beside it. `push` pushes words and waits for them to run. The
    whole UB is compared; the CPU reads the words the program touches through the
    window (all of UB with `whole_window`)."""
    cpu, expectation = fpga.cpu, expect(case)
    fpga.gm.gm = GlobalMemory(case.gm, case.fault_pages)
    fpga.gm.reader.max_latency = latency
    await cpu.write_ub(case.ub)
    # the model starts every program from the registers' reset values
    await push(fpga, *RESET_REGISTERS)
    before = {pipe: (await cpu.status(pipe)).completed for pipe in ENGINE_PIPES}
    base = cpu.commands
    poller = StatusPoller(cpu, before) if poll else None
    beside = start_bystander(cpu, case, expectation) if bystander else None
    run = await push(fpga, expectation.words, expectation.command_words)
    polled = (await poller.stop()).completed if poller else before
    final = expectation.checkpoints[-1]
    pattern = (await beside.stop()).pattern if beside else None
    if pattern:
        ub = final.ub.copy()
        ub[beside.start:beside.start + len(pattern)] = np.frombuffer(pattern, dtype=np.uint8)
        final = replace(final, ub=ub)
    # an error the assembler finds (a field that does not fit) never reaches the engine
    expect_error = any(p.error != ErrorCode.NONE for p in expectation.pipes.values())
    assert bool(run.irq_status & IRQ_ERROR) == expect_error, f"{case.name}: IRQ_STATUS " \
        f"{run.irq_status:#x} at the interrupt, model error {expectation.error}"
    causes = IRQ_DONE | (IRQ_ERROR if expect_error else 0)
    enabled = await cpu.read("IRQ_ENABLE")
    line = IRQ_LINE if causes & enabled else 0
    irq_status = await cpu.read("IRQ_STATUS")
    assert irq_status == causes | line, \
        f"{case.name}: IRQ_STATUS {irq_status:#x} once done, IRQ_ENABLE {enabled:#x}"
    assert fpga.dut.irq.value == bool(line), f"{case.name}: irq {fpga.dut.irq.value} once done"

    for pipe in ENGINE_PIPES:
        got, want = await cpu.status(pipe), expectation.pipes[pipe]
        label = f"{case.name}: {pipe.name}"
        assert got.busy == 0, f"{label} busy after done"
        assert got.completed - before[pipe] == want.completed, \
            f"{label} completed {got.completed - before[pipe]}, the model {want.completed}"
        assert polled[pipe] <= got.completed, \
            f"{label} completed {polled[pipe]} while it ran, {got.completed} once done"
        assert got.error == want.error, f"{label} error {got.error}, expected {want.error!r}"
        if want.error != ErrorCode.NONE:
            assert got.error_index == base + want.error_index, \
                f"{label} error index {got.error_index}, expected {base + want.error_index}"
        if want.error == ErrorCode.BUS_ERROR:
            assert got.error_addr == want.error_addr, \
                f"{label} error address {got.error_addr:#x}, expected {want.error_addr:#x}"

    ub = await cpu.read_ub(None if whole_window else window_spans(expectation, cpu.ub_size))
    mismatches = compare(expectation, final, ub, fpga.gm.gm.images(), cycle(), case.name)
    assert not mismatches, "\n".join(map(str, mismatches))
    fpga.dut._log.info("%s: %d commands, %d words, %d cycles", case.name,
                       expectation.commands, len(expectation.words), run.cycles)
    return run


async def clear_error(fpga):
    """The error interrupt is up until IRQ_STATUS.error is written with 1; then every
    pipe's error registers read zero and the line drops."""
    cpu, dut = fpga.cpu, fpga.dut
    await cpu.write("IRQ_ENABLE", IRQ_ERROR)
    assert dut.irq.value == 1, "error interrupt not raised"
    assert await cpu.read("IRQ_STATUS") == IRQ_DONE | IRQ_ERROR | IRQ_LINE
    await cpu.write("IRQ_STATUS", IRQ_ERROR)
    assert await cpu.read("IRQ_STATUS") == IRQ_DONE
    assert dut.irq.value == 0, "irq still high after the error was cleared"
    for pipe in ENGINE_PIPES:
        status = await cpu.status(pipe)
        assert (status.error, status.error_index, status.error_addr) == (0, 0, 0), \
            f"{pipe.name} error registers after the clear: {status}"


def guarded_example(name, profile):
    """A seed example with its UB outside the preloaded data at GUARD, not zero."""
    return next(case for case in example_cases(profile, fill=GUARD)
                if case.name == f"example {name}")


def mixed_program(profile, copies=24):
    """The first generated legal program of `copies` copies with copies on MTE2, MTE3 and
    V and a wait_flag between two of them (about a hundred commands: more than the pipes'
    queues and the CSR's FIFO hold together)."""
    for index in range(100):
        case = generate(case_seed("fpga", index), None, profile, copies=copies)
        e = expect(case)
        pipes = {instr_pipe(i) for i in e.instrs if i.op.opcode in COPY_OPCODES}
        if pipes == set(ENGINE_PIPES) and drain_points(e.instrs):
            return case
    raise AssertionError("no generated program has all three pipes and flags")


async def identify(fpga):
    """ID and CONFIG as the CPU finds them after reset; CONFIG gives the CPU the UB size."""
    cpu, dut = fpga.cpu, fpga.dut
    assert await cpu.read("ID") == regmap.ID_VALUE
    config = await cpu.read("CONFIG")
    cpu.width = field("CONFIG", "width_bytes", config)
    assert cpu.width == len(dut.m_axi__wdata) // 8, f"{config:#x}"
    cpu.ub_size = field("CONFIG", "ub_kib", config) * 1024
    assert cpu.ub_size == PROFILES[fpga.profile].ub_size, f"CONFIG {config:#x}"
    assert await cpu.read("CMD_FREE") == regmap.CMD_FIFO_DEPTH


@cocotb.test()
async def cpu_programs(dut):
    """Identity, a seed example, a random program on every pipe, a rule error (reported,
    interrupting, cleared by write-1-to-clear) and the program after it, and a bus error
    with its address."""
    fpga = await start(dut)
    cpu = fpga.cpu
    await identify(fpga)

    await run_program(fpga, guarded_example(EXAMPLE, fpga.profile), whole_window=True)
    # slow GM reads back the commands up into the CSR's FIFO
    run = await run_program(fpga, mixed_program(fpga.profile), latency=400, bystander=True)
    assert cpu.waits, "no push ever found the command FIFO short of room"
    assert run.busy, "no pipe read busy with its commands still queued"

    misaligned = generate(case_seed("fpga-error", 0), ErrorCode.UB_MISALIGNED, fpga.profile)
    await run_program(fpga, misaligned)
    await clear_error(fpga)
    await run_program(fpga, generate(case_seed("fpga-after-error", 0), None, fpga.profile))

    bus_error = generate(case_seed("fpga-error", 1), ErrorCode.BUS_ERROR, fpga.profile)
    await run_program(fpga, bus_error)
    await clear_error(fpga)
    dut._log.info("%d CMD_FREE reads found the FIFO short of room", cpu.waits)


@cocotb.test()
async def c_firmware(dut):
    """Programs pushed and waited for by C built against mte_dma.h (tb/firmware.c), each
    of its register accesses an AXI4-Lite transfer: a seed example, the long mixed
    program behind slow GM (its pushes find the command FIFO full) and a rule error,
    each checked as cpu_programs checks its own."""
    fpga = await start(dut)
    await identify(fpga)
    firmware = Firmware(fpga.cpu)
    push = firmware.push_and_wait
    await run_program(fpga, guarded_example(EXAMPLE, fpga.profile), push=push)
    await run_program(fpga, mixed_program(fpga.profile), latency=400, push=push)
    assert firmware.full, "no CMD_FREE read by C found the command FIFO full"
    misaligned = generate(case_seed("fpga-firmware", 0), ErrorCode.UB_MISALIGNED, fpga.profile)
    await run_program(fpga, misaligned, push=push)
    await clear_error(fpga)
    dut._log.info("%d CMD_FREE reads by C found the FIFO full", firmware.full)


@cocotb.test()
async def cpu_soak(dut):
    """The regression's programs (tb/test_mte.py's MTE_SEED and MTE_COUNT, MTE_CASES,
    MTE_ERRORS: random programs, some ending in an error, and one ending in each error
    class), one after another through the CSR alone, each with its GM read latency, the
    CPU's push sizes, whether a StatusPoller and a UbBystander run beside it and whether
    C (c_firmware's) pushes it and waits for it drawn from its name; an error is cleared
    before the next."""
    fpga = await start(dut)
    cpu = fpga.cpu
    await identify(fpga)
    pushes = (push_and_wait, Firmware(cpu).push_and_wait)
    programs = commands = by_c = 0
    for _, case in configured_cases():
        draw = random.Random(case.name)
        cpu.push_sizes = draw
        latency, poll, bystander = (draw.choice(SOAK_LATENCIES), draw.random() < 0.5,
                                    draw.random() < 0.5)
        push = pushes[draw.random() < FIRMWARE_SHARE]
        rerun = rerun_line(case, dut, "tb.fpga_run")
        try:
            run = await run_program(fpga, case, latency, poll, bystander, push)
            if run.irq_status & IRQ_ERROR:
                await clear_error(fpga)
        except AssertionError as failure:
            raise AssertionError(f"{failure}\nre-run: {rerun}") from failure
        programs, commands = programs + 1, commands + run.commands
        by_c += push != push_and_wait
    assert programs, "no programs: set MTE_COUNT, MTE_CASES or MTE_ERRORS"
    dut._log.info("soak: %d programs (%d pushed by C), %d commands, %d CMD_FREE reads short "
                  "of room", programs, by_c, commands, cpu.waits)
