"""The cocotb harness around `mte_dma` (the port contract of docs/architecture.md).

- `clk` at 100 MHz, synchronous active-high `rst`.
- GM: an AXI4 slave built from cocotbext-axi's `AxiSlaveRead` / `AxiSlaveWrite` over an
  `AddressSpace` holding one `MemoryRegion` per program window. Addresses outside every
  window answer DECERR; pages registered as faulty answer SLVERR. Each read burst waits a
  random latency, and every AXI channel can be given a pause generator (backpressure).
  `fixed_latency(L)` makes GM a pipelined memory instead (the benchmark): the first R
  beat of every burst L cycles after its AR handshake, the B response of every burst L
  cycles after its last W beat, however many bursts are outstanding.
- UB: preloaded and read back whole, only while idle: in place through the simulator's
  backdoor (tb/backdoor.py, Verilator; no simulated cycle), or through the `ub_test`
  port, a word a cycle (`ub_access="port"`, and always under Icarus). On the port the
  harness keeps a shadow of what UB holds, so a preload writes only the words that change.
- Commands: pushed whole, one per cycle, on the `cmd` valid/ready stream (each command's
  isa words side by side, the first lowest), with random gaps.
- `wait_idle` fails the run when nothing moves (no command, AXI beat or completed
  command) for `watchdog` cycles.
"""

import logging
import os
import random
from collections import deque
from dataclasses import dataclass

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.simtime import get_sim_time
from cocotb.triggers import ClockCycles, First, ReadOnly, RisingEdge
from cocotbext.axi import AxiBus
from cocotbext.axi.address_space import AddressSpace, MemoryRegion, Region
from cocotbext.axi.axi_slave import AxiSlaveRead, AxiSlaveWrite
from cocotbext.axi.constants import AxiBurstType, AxiResp

from hdl.intake.commands import command_bits
from hdl.ub.ub import TEST_READ_LATENCY
from model.isa import GM_ADDR_BITS, PROFILES, Pipe
from tb.backdoor import UB_ACCESS, UbBackdoor

CLOCK_NS = 10
PAGE = 4096
PIPES = {Pipe.MTE2: "mte2", Pipe.MTE3: "mte3", Pipe.V: "v"}
STATUS_FIELDS = ("busy", "completed", "error", "error_index", "error_addr")


def whole_commands(words, command_words):
    """Each command's words as one value, its first word lowest (the `cmd` port's
    payload; hdl.commands.command_bits)."""
    out, at = [], 0
    for count in command_words:
        out.append(command_bits(words[at:at + count]))
        at += count
    assert at == len(words), f"{len(words)} words for {sum(command_words)}"
    return out


class WatchdogError(AssertionError):
    """The engine made no progress for the watchdog's number of cycles."""


class FaultyPage(Region):
    """A page that exists on the bus but answers every access with SLVERR."""

    async def _read(self, address, length, **kwargs):
        raise AssertionError("a faulty page is never read")

    async def _write(self, address, data, **kwargs):
        raise AssertionError("a faulty page is never written")


class GlobalMemory:
    """The program's GM windows on a 40-bit address space."""

    def __init__(self, windows, fault_pages=()):
        self.space = AddressSpace(1 << GM_ADDR_BITS)
        self.windows = {}
        for base, data in windows:
            region = MemoryRegion(len(data), mem=bytearray(data))
            self.space.register_region(region, base)
            self.windows[base] = region
        for page in fault_pages:
            self.space.register_region(FaultyPage(PAGE), page)

    def response(self, address):
        """The AXI response for a beat at `address` (beats never cross a page)."""
        regions = self.space.find_regions(address, 1)
        if not regions:
            return AxiResp.DECERR
        return AxiResp.SLVERR if isinstance(regions[0][3], FaultyPage) else AxiResp.OKAY

    def images(self):
        return {base: bytes(region.mem) for base, region in self.windows.items()}


def _burst(channel_obj, prefix, byte_lanes):
    """(id, address, beats, bytes per beat) of an AR or AW beat, after protocol checks."""
    ident = int(getattr(channel_obj, f"{prefix}id", 0))
    addr = int(getattr(channel_obj, f"{prefix}addr"))
    beats = int(getattr(channel_obj, f"{prefix}len", 0)) + 1
    size = 1 << int(getattr(channel_obj, f"{prefix}size"))
    burst = AxiBurstType(int(getattr(channel_obj, f"{prefix}burst", AxiBurstType.INCR)))
    assert burst == AxiBurstType.INCR, f"{prefix}burst {burst.name}: the engine issues INCR only"
    assert size <= byte_lanes, f"{prefix}size {size} bytes on a {byte_lanes}-byte bus"
    first = addr // size * size
    assert first // PAGE == (first + beats * size - 1) // PAGE, \
        f"burst at {addr:#x} of {beats} x {size} bytes crosses a 4 KiB page"
    return ident, addr, beats, size


def _cycle():
    return int(get_sim_time(unit="ns")) // CLOCK_NS


# A beat or response handed to a cocotbext-axi source is driven after the next clock edge
# and taken by the RTL on the edge after that.
HANDOVER = 2


class DueQueue:
    """Hands items to `action` in order, each no earlier than its due cycle, from one
    background task: the fixed-latency memory's return path."""

    def __init__(self, clock, action):
        self.clock, self.action = clock, action
        self.items = deque()
        self.task = None

    def put(self, item, due):
        self.items.append((item, due))
        if self.task is None or self.task.done():
            self.task = cocotb.start_soon(self._serve())

    async def _serve(self):
        while self.items:
            item, due = self.items[0]
            if due > _cycle():
                await ClockCycles(self.clock, due - _cycle())
            self.items.popleft()
            await self.action(item)

    def clear(self):
        if self.task is not None:
            self.task.cancel()
            self.task = None
        self.items.clear()


class GmReader(AxiSlaveRead):
    """AXI read side of GM: a latency before each burst, DECERR / SLVERR faults.
    `owner.gm` is the GlobalMemory of the program running now.

    The latency is random, 0 to `max_latency` cycles from when the reader takes the burst,
    one burst at a time; with `fixed_latency` set it is that many cycles from the AR
    handshake to the first R beat's, bursts overlapping and returning in order."""

    def __init__(self, bus, clock, reset, owner, rng, stats):
        self.owner, self.rng, self.stats = owner, rng, stats
        self.max_latency = 0
        self.fixed_latency = None
        self.due = DueQueue(clock, self._send_burst)
        super().__init__(bus, clock, reset)

    def _handle_reset(self, state):
        if state:
            self.due.clear()
        super()._handle_reset(state)

    async def _process_read(self):
        while True:
            ar = await self.ar_channel.recv()
            if self.fixed_latency is not None:
                self.due.put(ar, _cycle() + self.fixed_latency - HANDOVER)
                continue
            latency = self.rng.randint(0, self.max_latency)
            if latency:
                await ClockCycles(self.clock, latency)
            await self._send_burst(ar)

    async def _send_burst(self, ar):
        ident, addr, beats, size = _burst(ar, "ar", self.byte_lanes)
        for n in range(beats):
            beat = addr // size * size + n * size
            word = beat // self.byte_lanes * self.byte_lanes
            r = self.r_channel._transaction_obj()
            r.rid, r.rlast = ident, n == beats - 1
            gm = self.owner.gm
            r.rresp = gm.response(word)
            data = (await gm.space.read(word, self.byte_lanes)
                    if r.rresp == AxiResp.OKAY else bytes(self.byte_lanes))
            r.rdata = int.from_bytes(data, "little")
            await self.r_channel.send(r)
            self.stats.beats += 1


class GmWriter(AxiSlaveWrite):
    """AXI write side of GM: strobed bytes of mapped pages only; DECERR / SLVERR faults.
    With `fixed_latency` set, each B response comes that many cycles after the burst's
    last W beat, while later bursts go on."""

    def __init__(self, bus, clock, reset, owner, stats):
        self.owner, self.stats = owner, stats
        self.fixed_latency = None
        self.due = DueQueue(clock, self._respond)
        super().__init__(bus, clock, reset)

    def _handle_reset(self, state):
        if state:
            self.due.clear()
        super()._handle_reset(state)

    async def _respond(self, b):
        await self.b_channel.send(b)

    async def _process_write(self):
        while True:
            aw = await self.aw_channel.recv()
            ident, addr, beats, size = _burst(aw, "aw", self.byte_lanes)
            resp = AxiResp.OKAY
            for n in range(beats):
                w = await self.w_channel.recv()
                assert int(w.wlast) == (n == beats - 1), f"wlast wrong on beat {n} of {beats}"
                beat = addr // size * size + n * size
                word = beat // self.byte_lanes * self.byte_lanes
                gm = self.owner.gm
                beat_resp = gm.response(word)
                resp = max(resp, beat_resp)
                if beat_resp == AxiResp.OKAY:
                    await self._store(gm, word, int(w.wdata), int(w.wstrb))
                self.stats.beats += 1
            b = self.b_channel._transaction_obj()
            b.bid, b.bresp = ident, resp
            if self.fixed_latency is None:
                await self._respond(b)
            else:
                self.due.put(b, _cycle() + self.fixed_latency - HANDOVER)

    async def _store(self, gm, word, data, strobe):
        data = data.to_bytes(self.byte_lanes, "little")
        lane = 0
        while lane < self.byte_lanes:
            if strobe >> lane & 1:
                end = lane
                while end < self.byte_lanes and strobe >> end & 1:
                    end += 1
                await gm.space.write(word + lane, data[lane:end])
                lane = end
            else:
                lane += 1


@dataclass
class BusStats:
    beats: int = 0


def pause_pattern(rng, duty):
    """An endless pause pattern: runs of 1 to 8 cycles, paused a `duty` share of them."""
    while True:
        paused = rng.random() < duty
        for _ in range(rng.randint(1, 8)):
            yield paused


def _unpause(channel):
    """Stop a channel's pause generator; the channel keeps the pause it had, so clear it."""
    channel.clear_pause_generator()
    channel.pause = False


@dataclass
class PipeStatus:
    busy: int
    completed: int
    error: int
    error_index: int
    error_addr: int


def default_ub_access():
    """MTE_UB_ACCESS (tb/run.py sets it), else the backdoor where the simulator has one."""
    chosen = os.environ.get("MTE_UB_ACCESS")
    if chosen:
        assert chosen in UB_ACCESS, f"MTE_UB_ACCESS={chosen}: it is one of {UB_ACCESS}"
        return chosen
    return "backdoor" if cocotb.SIM_NAME.lower().startswith("verilator") else "port"


class Harness:
    """Drives one `mte_dma` instance. Call `start()` first, from the test."""

    def __init__(self, dut, profile="a5", seed=0, watchdog=5000, ub_access=None):
        self.dut = dut
        self.rng = random.Random(seed)
        self.profile = PROFILES[profile]
        self.watchdog = watchdog
        self.width = len(dut.ub_test__wdata) // 8
        self.ub_words = self.profile.ub_size // self.width
        self.shadow = None              # what UB holds, when known (port access)
        self.backdoor = UbBackdoor(self.ub_words, self.width) \
            if (ub_access or default_ub_access()) == "backdoor" else None
        self.stats = BusStats()
        self.commands_sent = 0          # since reset: the RTL numbers commands the same way
        self.gm = GlobalMemory(())
        self.bus = AxiBus.from_prefix(dut, "m_axi_")
        self.reader = self.writer = None
        self.gap_duty = 0.0

    # clock, reset

    async def start(self):
        Clock(self.dut.clk, CLOCK_NS, unit="ns").start()
        for name in ("cmd__valid", "cmd__payload", "ub_test__we", "ub_test__re",
                     "ub_test__addr", "ub_test__wdata", "ub_test__wstrb", "clear_errors"):
            getattr(self.dut, name).value = 0
        # cocotbext-axi describes itself at INFO on creation and on every reset
        logging.getLogger(f"cocotb.{self.dut._name}.m_axi_").setLevel(logging.WARNING)
        self.reader = GmReader(self.bus.read, self.dut.clk, self.dut.rst, self, self.rng,
                               self.stats)
        self.writer = GmWriter(self.bus.write, self.dut.clk, self.dut.rst, self, self.stats)
        # The words cocotbext-axi's address and data sinks hold before they drop `ready`.
        self.sink_limits = [(sink, sink.queue_occupancy_limit) for sink in
                            (self.reader.ar_channel, self.writer.aw_channel,
                             self.writer.w_channel)]
        await self.reset()

    async def reset(self, cycles=4):
        """Synchronous reset. UB keeps its contents but the harness forgets them."""
        self.dut.cmd__valid.value = 0
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, cycles)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)
        self.commands_sent = 0
        self.shadow = None

    @property
    def cycle(self):
        return _cycle()

    # GM

    def map_gm(self, windows, fault_pages=()):
        self.gm = GlobalMemory(windows, fault_pages)

    def backpressure(self, rng=None):
        """Pick this program's bus behaviour: full speed, light or heavy backpressure."""
        rng = rng or self.rng
        level = rng.choice([0.0, 0.0, 0.2, 0.5])
        self.reader.max_latency = rng.choice([0, 2, 8, 30]) if level else 0
        self.gap_duty = level / 2
        for channel in self.channels():
            if level:
                channel.set_pause_generator(pause_pattern(random.Random(rng.random()), level))
            else:
                _unpause(channel)

    def quiet(self):
        """No backpressure: pause generators cost simulation time while UB is copied."""
        for channel in self.channels():
            _unpause(channel)
        self.reader.max_latency = 0
        self.gap_duty = 0.0

    def fixed_latency(self, cycles):
        """Quiet channels and a pipelined GM of `cycles` read and write-response latency
        (at least HANDOVER); None goes back to the random read latency."""
        assert cycles is None or cycles >= HANDOVER, f"latency {cycles} < {HANDOVER}"
        self.quiet()
        self.reader.fixed_latency = self.writer.fixed_latency = cycles
        # A pipelined GM takes every address and data beat as it comes: cocotbext-axi's
        # sinks otherwise hold two and drop `ready` while they do, a stall per few
        # one-beat bursts.
        for sink, limit in self.sink_limits:
            sink.queue_occupancy_limit = limit if cycles is None else -1

    def channels(self):
        return (self.reader.ar_channel, self.reader.r_channel, self.writer.aw_channel,
                self.writer.w_channel, self.writer.b_channel)

    # UB, through the backdoor or the test port (only while idle)

    async def write_ub(self, image):
        """Make UB hold `image`: in place, or on the port only the words that differ from
        the shadow."""
        if self.backdoor is not None:
            self.backdoor.write(image)
            return
        want = np.frombuffer(image, dtype=np.uint8).reshape(self.ub_words, self.width)
        if self.shadow is None:
            words = np.arange(self.ub_words)
        else:
            words = np.flatnonzero((want != self.shadow).any(axis=1))
        dut = self.dut
        dut.ub_test__wstrb.value = (1 << self.width) - 1
        for word in words:
            dut.ub_test__addr.value = int(word)
            dut.ub_test__wdata.value = int.from_bytes(want[word].tobytes(), "little")
            dut.ub_test__we.value = 1
            await RisingEdge(dut.clk)
        dut.ub_test__we.value = 0
        self.shadow = want.copy()

    async def read_ub(self):
        """The whole UB: in place, or on the port one word per cycle (each word arrives
        TEST_READ_LATENCY cycles after its request). The backdoor too waits those cycles,
        so that it sees every write the port would."""
        if self.backdoor is not None:
            await ClockCycles(self.dut.clk, TEST_READ_LATENCY)
            return self.backdoor.read()
        dut, out = self.dut, bytearray()
        dut.ub_test__re.value = 1
        for word in range(self.ub_words + TEST_READ_LATENCY):
            if word < self.ub_words:
                dut.ub_test__addr.value = word
            else:
                dut.ub_test__re.value = 0
            await RisingEdge(dut.clk)
            if word >= TEST_READ_LATENCY:
                out += dut.ub_test__rdata.value.to_unsigned().to_bytes(self.width, "little")
        self.shadow = np.frombuffer(bytes(out), dtype=np.uint8).reshape(
            self.ub_words, self.width).copy()
        return bytes(out)

    # commands

    async def push(self, words, command_words, accepted=None):
        """Send commands, given as their words and each one's word count; `accepted`, if
        given, gets each command's acceptance cycle."""
        dut, rng = self.dut, self.rng
        dut.cmd__valid.value = 1
        for i, command in enumerate(whole_commands(words, command_words)):
            dut.cmd__payload.value = command
            await RisingEdge(dut.clk)
            if not dut.cmd__ready.value:
                await self._until_ready(i)
            if accepted is not None:
                accepted.append(self.cycle)
            if self.gap_duty and rng.random() < self.gap_duty:
                dut.cmd__valid.value = 0
                await ClockCycles(dut.clk, rng.randint(1, 6))
                dut.cmd__valid.value = 1
        dut.cmd__valid.value = 0
        self.commands_sent += len(command_words)

    async def _until_ready(self, i):
        """Hold command `i` until the engine takes it. A full queue behind one long
        copy is no hang while the bus keeps moving; the watchdog looks at progress only
        here, not on every word."""
        dut, waited, last = self.dut, 0, self.progress()
        while not dut.cmd__ready.value:
            await RisingEdge(dut.clk)
            waited += 1
            if waited % self.watchdog == 0:
                now = self.progress()
                if now == last:
                    raise WatchdogError(
                        f"command {i} not taken for {waited} cycles, no progress for "
                        f"the last {self.watchdog}, at cycle {self.cycle}: {self.describe()}")
                last = now

    def progress(self):
        """Anything that moves when the engine works."""
        return self.stats.beats, self.commands_sent, tuple(map(self.completed, PIPES))

    async def wait_idle(self):
        """Wait until `idle`; fail when nothing moved for `watchdog` cycles."""
        dut = self.dut
        await RisingEdge(dut.clk)
        await ReadOnly()
        last, still = self.progress(), 0
        window = 64
        while not dut.idle.value:
            await First(RisingEdge(dut.idle), ClockCycles(dut.clk, window))
            await ReadOnly()
            now = self.progress()
            still = 0 if now != last else still + window
            last = now
            if still >= self.watchdog:
                state = self.describe()
                await RisingEdge(dut.clk)          # leave the read-only phase
                raise WatchdogError(f"no progress for {still} cycles at cycle {self.cycle}: "
                                    f"{state}")
        finished = self.cycle
        await RisingEdge(dut.clk)
        return finished

    async def completion_trace(self, out, stop):
        """Append (cycle, pipe) for every command completion until `stop` is set."""
        last = {pipe: self.completed(pipe) for pipe in PIPES}
        while not stop.is_set():
            await RisingEdge(self.dut.clk)
            for pipe in PIPES:
                now = self.completed(pipe)
                out += [(self.cycle, pipe)] * (now - last[pipe])
                last[pipe] = now

    # status

    def completed(self, pipe):
        return int(getattr(self.dut, f"status_{PIPES[pipe]}__completed").value)

    def status(self, pipe):
        prefix = f"status_{PIPES[pipe]}__"
        return PipeStatus(*(int(getattr(self.dut, prefix + f).value)
                            for f in STATUS_FIELDS))

    def describe(self):
        parts = [f"idle={int(self.dut.idle.value)}"]
        for pipe, name in PIPES.items():
            s = self.status(pipe)
            parts.append(f"{name}: busy={s.busy} completed={s.completed} error={s.error}")
        parts.append(f"bus beats={self.stats.beats} commands sent={self.commands_sent}")
        return ", ".join(parts)

    async def clear_errors(self):
        self.dut.clear_errors.value = 1
        await RisingEdge(self.dut.clk)
        self.dut.clear_errors.value = 0
        await RisingEdge(self.dut.clk)
