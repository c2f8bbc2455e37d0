"""The Unified Buffer: one memory of W-byte words with arbitrated requester ports."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from model.isa import DEFAULT_PROFILE, PROFILES

from .layouts import UbReadSignature, UbWriteSignature, ub_word_bits


class UbTestSignature(wiring.Signature):
    """Direct access to UB for testbenches and the CSR front end (Out from the user).

    Write: on a cycle with `we`, the bytes of `wdata` whose `wstrb` bit is set are stored at
    word `addr`. Read: on a cycle with `re`, word `addr` is read; `rdata` shows it
    TEST_READ_LATENCY cycles later (only: the memory reads on every cycle)."""
    def __init__(self, width_bytes):
        super().__init__({
            "addr": Out(ub_word_bits(width_bytes)),
            "wdata": Out(8 * width_bytes),
            "wstrb": Out(width_bytes),
            "we": Out(1),
            "re": Out(1),
            "rdata": In(8 * width_bytes),
        })


HALVES = 2
# Cycles from a test port read to its word on `rdata`: the block RAM's read, then the
# output register.
TEST_READ_LATENCY = 2


def _address_copies(like, name):
    """One register per memory half for a staged word address. Their initial values
    differ (all zeros, all ones: the request stage's valid bit makes them don't-cares), so
    synthesis keeps the copies apart instead of merging them into one register."""
    return [Signal.like(like, name=f"{name}{k}", reset_less=True,
                        init=0 if k % 2 == 0 else (1 << len(like)) - 1)
            for k in range(HALVES)]


def _round_robin(m, name, requests, blocked):
    """Grant at most one of two requests per cycle, alternating under contention.

    A lone request is granted every cycle; when both ask, the one not granted most
    recently wins. Nothing is granted while `blocked` (the stage is full: its request
    waits while the test port has the memory)."""
    favour_second = Signal(name=f"{name}_favour_second")
    first, second = requests
    grant_first = first & ~blocked & (~second | ~favour_second)
    grant_second = second & ~blocked & (~first | favour_second)
    with m.If(grant_first):
        m.d.sync += favour_second.eq(1)
    with m.If(grant_second):
        m.d.sync += favour_second.eq(0)
    return grant_first, grant_second


class UnifiedBuffer(wiring.Component):
    """UB storage: `size` bytes as words of `width_bytes` bytes, one write and one read port.

    Write port: shared by `mte2_wr` and `v_wr` (the MTE2 and UB->UB datapaths), each a
    `UbWriteSignature` with the UB as responder. Read port: shared by `mte3_rd` and `v_rd`,
    each a `UbReadSignature`; `rdata` is common to both requesters, `rvalid` goes to the
    one that asked.

    Request stage: an accepted request is registered and reaches the memory one cycle later,
    so the memory's address, data and enables, which fan out to every block RAM of a large
    UB, come from registers rather than from the arbitration; the memory's output is
    registered too. A write accepted on cycle t is stored at the end of t+1; a read accepted
    on t reads the memory on t+1 and has `rdata`/`rvalid` on t+3. Both are later by a cycle
    for each cycle the test port takes that memory port (the request waits in the stage
    meanwhile, and no new request is accepted), so requests are served in the order they
    were accepted.

    Arbitration, separately for the write port and the read port, every cycle: the `test`
    port bypasses the stage and wins whenever it uses that port (`we` / `re`); otherwise
    the two requesters are served round-robin (`_round_robin`): a lone requester gets every
    cycle, so each pipe sees full rate, one word per cycle, when it is alone; two
    requesters asking every cycle get alternate cycles. `ready` is combinational from the
    requests, the stage and the test port.

    A read of the memory in the same cycle as a write of the same word returns the old word
    (the read port is not transparent): correctly synchronised pipes never touch the same
    word at once. Word addresses at or beyond `size` wrap (the rule checker rejects copies
    that reach them). Reset does not clear the contents; the memory starts zeroed.
    """

    def __init__(self, width_bytes=32, size=PROFILES[DEFAULT_PROFILE].ub_size):
        exact_log2(width_bytes)
        assert size % width_bytes == 0
        self.width_bytes = width_bytes
        self.size = size
        super().__init__({
            "mte2_wr": In(UbWriteSignature(width_bytes)),
            "v_wr": In(UbWriteSignature(width_bytes)),
            "mte3_rd": In(UbReadSignature(width_bytes)),
            "v_rd": In(UbReadSignature(width_bytes)),
            "test": In(UbTestSignature(width_bytes)),
        })

    def elaborate(self, platform):
        m = Module()
        # The word is stored as HALVES memories side by side, each with its own copy of
        # the staged addresses, so no address net drives every block RAM of a large UB.
        lane_bits = 8 * self.width_bytes // HALVES
        mems = [Memory(shape=lane_bits, depth=self.size // self.width_bytes, init=[])
                for _ in range(HALVES)]
        for k, mem in enumerate(mems):
            m.submodules[f"memory{k}"] = mem
        self._write_side(m, [mem.write_port(granularity=8) for mem in mems])
        self._read_side(m, [mem.read_port() for mem in mems])
        return m

    def _write_side(self, m, ports):
        test, first, second = self.test, self.mte2_wr, self.v_wr
        staged = Signal(name="write_staged")
        addrs = _address_copies(first.addr, "write_addr")
        data = Signal.like(first.data, name="write_data")
        strb = Signal.like(first.strb, name="write_strb")
        waits = staged & test.we
        grant_first, grant_second = _round_robin(m, "write", (first.valid, second.valid),
                                                 blocked=waits)
        m.d.comb += [first.ready.eq(grant_first), second.ready.eq(grant_second)]
        with m.If(~waits):
            m.d.sync += [
                staged.eq(grant_first | grant_second),
                data.eq(Mux(grant_second, second.data, first.data)),
                strb.eq(Mux(grant_second, second.strb, first.strb)),
            ]
            m.d.sync += [addr.eq(Mux(grant_second, second.addr, first.addr)) for addr in addrs]
        for k, (port, addr) in enumerate(zip(ports, addrs)):
            lane_bytes = len(port.en)
            bytes_ = slice(k * lane_bytes, (k + 1) * lane_bytes)
            m.d.comb += [
                port.addr.eq(Mux(test.we, test.addr, addr)),
                port.data.eq(Mux(test.we, test.wdata, data).word_select(k, len(port.data))),
            ]
            with m.If(test.we):
                m.d.comb += port.en.eq(test.wstrb[bytes_])
            with m.Elif(staged):
                m.d.comb += port.en.eq(strb[bytes_])

    def _read_side(self, m, ports):
        test, first, second = self.test, self.mte3_rd, self.v_rd
        staged = Signal(name="read_staged")
        for_second = Signal(name="read_for_second")
        addrs = _address_copies(first.addr, "read_addr")
        waits = staged & test.re
        grant_first, grant_second = _round_robin(m, "read", (first.valid, second.valid),
                                                 blocked=waits)
        m.d.comb += [first.ready.eq(grant_first), second.ready.eq(grant_second)]
        with m.If(~waits):
            m.d.sync += [
                staged.eq(grant_first | grant_second),
                for_second.eq(grant_second),
            ]
            m.d.sync += [addr.eq(Mux(grant_second, second.addr, first.addr)) for addr in addrs]
        served = staged & ~test.re
        # The blocks' output is registered once, each bit by its block, and every reader
        # takes the word from that register: a block's clock-to-out is most of a cycle and
        # the blocks are spread over the device, so the routing to the readers needs a
        # cycle of its own.
        word = Signal(8 * self.width_bytes, name="read_word")
        m.d.sync += word.eq(Cat(port.data for port in ports))
        # The ports read on every cycle (their enable is 1): an enable would put the
        # request logic in front of every block RAM.
        m.d.comb += [port.addr.eq(Mux(test.re, test.addr, addr))
                     for port, addr in zip(ports, addrs)]
        m.d.comb += [
            first.rdata.eq(word),
            second.rdata.eq(word),
            test.rdata.eq(word),
        ]
        landing = [Signal(name=f"read_landing{k}") for k in range(2)]
        m.d.sync += [landing[0].eq(served & ~for_second),
                     landing[1].eq(served & for_second),
                     first.rvalid.eq(landing[0]),
                     second.rvalid.eq(landing[1])]
