"""An AXI4 slave memory for Amaranth-simulator tests, checking the master as it goes.

`AxiMemory` holds a window of GM as a bytearray. Its `read_process` / `write_process`
serve a master port's AR+R / AW+W+B channels as simulator processes (their outputs
change on clock edges, like registers), with random ready pauses, a random latency per
burst, bursts answered in order, and error windows that answer SLVERR or DECERR. Every
handshake is checked against the AXI4 rules the DMA engine relies on.
"""

from collections import deque
from dataclasses import dataclass, field

from hdl.lib.axi import BurstType, Resp
from hdl.datapath.legalizer import first_split

PAGE = 4096


def beats_of(addr, length, width):
    """Bus words that bytes [addr, addr + length) touch."""
    return ((addr % width) + length + width - 1) // width


def gm_row(row, width):
    """A GmRow payload: `row` ({addr, length, sid, cache, last, new_sid}) and where its
    first burst ends, as the datapaths queue it (`hdl.datapath.legalizer.first_split`)."""
    return {**row, "split": first_split(row["addr"], row["length"], width)}


def mark_new_sids(rows):
    """Sets each row's `new_sid`, as the address generator does: its sid differs from the
    row before it (0 before the first). Returns `rows`."""
    previous = 0
    for row in rows:
        row["new_sid"] = int(row["sid"] != previous)
        previous = row["sid"]
    return rows


def split_row(addr, length, width):
    """The legal bursts of a row, (first byte, length, beats): cut at every 4 KiB boundary
    and, on buses under 16 bytes, at every multiple of 256 words."""
    grid = min(PAGE, 256 * width)
    bursts = []
    while length:
        n = min(length, grid - addr % grid)
        bursts.append((addr, n, beats_of(addr, n, width)))
        addr, length = addr + n, length - n
    return bursts


@dataclass
class Timing:
    latency: tuple = (1, 1)      # cycles from address accepted to first response, range
    a_ready: float = 1.0         # chance AxREADY is high on a cycle
    w_ready: float = 1.0         # chance WREADY is high
    r_valid: float = 1.0         # chance a due R beat / B response is offered on a cycle


@dataclass
class BusLog:
    """What the master did: address bursts in order, and the most bursts in flight."""
    bursts: list = field(default_factory=list)   # (aligned addr, beats, id, cache)
    in_flight: deque = field(default_factory=deque)   # ids of the bursts in flight
    max_in_flight: int = 0
    data_beats: int = 0

    def issue(self, addr, beats, id, cache):
        # The engine never mixes IDs in flight, so responses cannot be reordered.
        assert all(i == id for i in self.in_flight), \
            f"ID {id} issued while {set(self.in_flight)} in flight"
        self.bursts.append((addr, beats, id, cache))
        self.in_flight.append(id)
        self.max_in_flight = max(self.max_in_flight, len(self.in_flight))

    def finish(self):
        self.in_flight.popleft()


class AxiMemory:
    def __init__(self, base, size, width, rng, timing=Timing(), errors=()):
        """`errors`: (first byte, end byte, Resp) windows; an access touching one fails."""
        self.base, self.width, self.rng, self.timing = base, width, rng, timing
        self.mem = bytearray(rng.randbytes(size))
        self.errors = list(errors)
        self.reads, self.writes = BusLog(), BusLog()

    def error_of(self, lo, hi):
        for first, end, resp in self.errors:
            if lo < end and first < hi:
                return resp
        return Resp.OKAY

    def _check_address(self, addr, length, size, burst):
        w = self.width
        assert size == w.bit_length() - 1, f"AxSIZE {size} for a {w}-byte bus"
        assert burst == BurstType.INCR.value, f"AxBURST {burst}"
        assert addr % w == 0, f"AxADDR {addr:#x} not aligned to the bus"
        beats = length + 1
        assert addr // PAGE == (addr + beats * w - 1) // PAGE, \
            f"burst {addr:#x} x {beats} crosses 4 KiB"
        assert self.base <= addr and addr + beats * w <= self.base + len(self.mem), \
            f"burst {addr:#x} x {beats} outside the memory"
        return beats

    def _latency(self):
        return self.rng.randint(*self.timing.latency)

    def read_process(self, axi):
        t, w, rng, log = self.timing, self.width, self.rng, self.reads

        async def process(ctx):
            pending = deque()       # [due cycle, addr, beats, id]
            beat = 0
            arready = rvalid = 0
            cycle = 0
            async for _, _, arvalid, araddr, arlen, arsize, arburst, arid, arcache, \
                    rready in ctx.tick().sample(
                        axi.arvalid, axi.araddr, axi.arlen, axi.arsize, axi.arburst,
                        axi.arid, axi.arcache, axi.rready):
                cycle += 1
                if arvalid and arready:
                    beats = self._check_address(araddr, arlen, arsize, arburst)
                    log.issue(araddr, beats, arid, arcache)
                    due = max(cycle + self._latency(), pending[-1][0] if pending else 0)
                    pending.append([due, araddr, beats, arid])
                if rvalid and rready:
                    log.data_beats += 1
                    beat += 1
                    if beat == pending[0][2]:
                        pending.popleft()
                        log.finish()
                        beat = 0
                    rvalid = 0
                if not rvalid and pending and pending[0][0] <= cycle \
                        and rng.random() < t.r_valid:
                    _, addr, beats, rid = pending[0]
                    a = addr + beat * w
                    resp = self.error_of(a, a + w)
                    word = self.mem[a - self.base:a - self.base + w]
                    if resp != Resp.OKAY:
                        word = rng.randbytes(w)
                    rvalid = 1
                    ctx.set(axi.rdata, int.from_bytes(word, "little"))
                    ctx.set(axi.rresp, resp.value)
                    ctx.set(axi.rlast, int(beat == beats - 1))
                    ctx.set(axi.rid, rid)
                ctx.set(axi.rvalid, rvalid)
                arready = int(rng.random() < t.a_ready)
                ctx.set(axi.arready, arready)
        return process

    def write_process(self, axi):
        t, w, rng, log = self.timing, self.width, self.rng, self.writes

        async def process(ctx):
            addresses = deque()     # [addr, beats, id] accepted, data not complete
            data = deque()          # (wdata, wstrb, wlast) accepted, not yet applied
            responses = deque()     # [due cycle, id, Resp]
            awready = wready = bvalid = 0
            cycle = 0
            async for _, _, awvalid, awaddr, awlen, awsize, awburst, awid, awcache, \
                    wvalid, wdata, wstrb, wlast, bready in ctx.tick().sample(
                        axi.awvalid, axi.awaddr, axi.awlen, axi.awsize, axi.awburst,
                        axi.awid, axi.awcache, axi.wvalid, axi.wdata, axi.wstrb,
                        axi.wlast, axi.bready):
                cycle += 1
                if awvalid and awready:
                    beats = self._check_address(awaddr, awlen, awsize, awburst)
                    log.issue(awaddr, beats, awid, awcache)
                    addresses.append([awaddr, beats, awid])
                if wvalid and wready:
                    log.data_beats += 1
                    data.append((wdata, wstrb, wlast))
                # A burst is written once its address and all its data are in (data may
                # come first: AXI4 allows W before AW).
                if addresses and len(data) >= addresses[0][1]:
                    addr, beats, bid = addresses.popleft()
                    words = [data.popleft() for _ in range(beats)]
                    assert [last for *_, last in words] == [0] * (beats - 1) + [1], \
                        f"WLAST pattern of burst {addr:#x} x {beats}"
                    lanes = [(addr + i * w + b, (d >> 8 * b) & 0xff)
                             for i, (d, s, _) in enumerate(words)
                             for b in range(w) if s >> b & 1]
                    resp = Resp.OKAY
                    if lanes:
                        resp = self.error_of(lanes[0][0], lanes[-1][0] + 1)
                    if resp == Resp.OKAY:
                        for a, byte in lanes:
                            self.mem[a - self.base] = byte
                    due = max(cycle + self._latency(), responses[-1][0] if responses else 0)
                    responses.append([due, bid, resp])
                if bvalid and bready:
                    responses.popleft()
                    log.finish()
                    bvalid = 0
                if not bvalid and responses and responses[0][0] <= cycle \
                        and rng.random() < t.r_valid:
                    _, bid, resp = responses[0]
                    bvalid = 1
                    ctx.set(axi.bid, bid)
                    ctx.set(axi.bresp, resp.value)
                ctx.set(axi.bvalid, bvalid)
                awready = int(rng.random() < t.a_ready)
                wready = int(rng.random() < t.w_ready)
                ctx.set(axi.awready, awready)
                ctx.set(axi.wready, wready)
        return process
