"""hdl.ub.UnifiedBuffer: byte-enable writes, round-robin arbitration, the request stage,
test-port priority."""

import random

from amaranth.back import verilog

from hdl.ub import UnifiedBuffer
from hdl_helpers import run_sim

WIDTH = 32
SIZE = 4096
WORDS = SIZE // WIDTH
FULL = (1 << WIDTH) - 1


def merge(old, data, strb):
    mask = sum(0xFF << (8 * i) for i in range(WIDTH) if strb >> i & 1)
    return (old & ~mask) | (data & mask)


class StagedBuffer:
    """The documented behaviour, cycle by cycle: round-robin grants into a one-request
    stage per memory port; the test port bypasses the stage and holds a staged request
    back; a read sees the memory before that cycle's write, and its word shows a cycle
    after the read (the output register)."""

    def __init__(self):
        self.memory = [0] * WORDS
        self.favour = {"write": 0, "read": 0}   # 1: the second requester wins a conflict
        self.staged = {"write": None, "read": None}
        self.rvalid = {}                        # requester -> word shown on rdata now
        self.test_read = None                   # the word the test port shows now
        self.landing = ({}, None)               # the same, shown on the next cycle

    def grants(self, side, valid, test_uses):
        """Which requester (0, 1 or None) the `side` port accepts this cycle."""
        if self.staged[side] is not None and test_uses:
            return None
        v0, v1 = valid
        favour = self.favour[side]
        grant = 0 if v0 and (not v1 or not favour) else 1 if v1 and (not v0 or favour) else None
        if grant is not None:
            self.favour[side] = 1 - grant
        return grant

    def cycle(self, write_grant, read_grant, test):
        """One clock edge. `*_grant`: the accepted request (requester, fields) or None;
        `test`: (we, re, addr, wdata, wstrb)."""
        we, re, addr, wdata, wstrb = test
        self.rvalid, self.test_read = self.landing
        rvalid, test_read = {}, None
        if re:
            test_read = self.memory[addr]
        elif self.staged["read"] is not None:
            k, read_addr = self.staged["read"]
            rvalid[k] = self.memory[read_addr]
        self.landing = (rvalid, test_read)
        if we:
            self.memory[addr] = merge(self.memory[addr], wdata, wstrb)
        elif self.staged["write"] is not None:
            _, write_addr, data, strb = self.staged["write"]
            self.memory[write_addr] = merge(self.memory[write_addr], data, strb)
        if not (self.staged["read"] is not None and re):
            self.staged["read"] = read_grant
        if not (self.staged["write"] is not None and we):
            self.staged["write"] = write_grant


def test_random_traffic_matches_a_byte_model():
    """All five ports at random every cycle; grants, read data and contents follow a model
    of the documented arbitration and request stage."""
    rng = random.Random(1)
    dut = UnifiedBuffer(WIDTH, SIZE)
    model = StagedBuffer()
    stats = {"contended": 0, "reads": 0, "held": 0}

    async def bench(ctx):
        writers = (dut.mte2_wr, dut.v_wr)
        readers = (dut.mte3_rd, dut.v_rd)
        test = dut.test
        for _ in range(3000):
            req = {}
            for name, group in (("write", writers), ("read", readers)):
                for k, p in enumerate(group):
                    valid = rng.random() < 0.6
                    addr = rng.randrange(8)            # few words, so reads see writes
                    ctx.set(p.valid, valid)
                    ctx.set(p.addr, addr)
                    req[(name, k)] = (valid, k, addr)
                    if name == "write":
                        data, strb = rng.getrandbits(8 * WIDTH), rng.getrandbits(WIDTH)
                        ctx.set(p.data, data)
                        ctx.set(p.strb, strb)
                        req[(name, k)] += (data, strb)
            we, re = rng.random() < 0.15, rng.random() < 0.15
            t_addr = rng.randrange(8)
            t_data, t_strb = rng.getrandbits(8 * WIDTH), rng.getrandbits(WIDTH)
            for signal, value in ((test.we, we), (test.re, re), (test.addr, t_addr),
                                  (test.wdata, t_data), (test.wstrb, t_strb)):
                ctx.set(signal, value)

            for k, p in enumerate(readers):
                assert ctx.get(p.rvalid) == (k in model.rvalid)
                if k in model.rvalid:
                    assert ctx.get(p.rdata) == model.rvalid[k]
            if model.test_read is not None:
                assert ctx.get(test.rdata) == model.test_read

            accepted = {}
            for name, group, uses in (("write", writers, we), ("read", readers, re)):
                valid = (req[(name, 0)][0], req[(name, 1)][0])
                stats["held"] += model.staged[name] is not None and uses
                stats["contended"] += all(valid)
                grant = model.grants(name, valid, uses)
                for k, p in enumerate(group):
                    assert ctx.get(p.ready) == (grant == k)
                accepted[name] = None if grant is None else req[(name, grant)][1:]
            stats["reads"] += accepted["read"] is not None
            model.cycle(accepted["write"], accepted["read"], (we, re, t_addr, t_data, t_strb))
            await ctx.tick()

    run_sim(dut, bench)
    assert stats["contended"] > 300 and stats["reads"] > 1000 and stats["held"] > 100


def test_lone_requesters_get_every_cycle_and_pairs_alternate():
    dut = UnifiedBuffer(WIDTH, SIZE)
    seen = {"lone": [], "pair": []}

    async def bench(ctx):
        ctx.set(dut.mte2_wr.valid, 1)
        ctx.set(dut.mte2_wr.strb, FULL)
        for cycle in range(8):
            ctx.set(dut.mte2_wr.addr, cycle)
            ctx.set(dut.mte2_wr.data, cycle + 100)
            _, _, ready = await ctx.tick().sample(dut.mte2_wr.ready)
            seen["lone"].append(ready)
        ctx.set(dut.v_wr.valid, 1)
        ctx.set(dut.v_wr.addr, 20)
        ctx.set(dut.v_wr.strb, FULL)
        for _ in range(8):
            _, _, a, b = await ctx.tick().sample(dut.mte2_wr.ready, dut.v_wr.ready)
            seen["pair"].append((a, b))
        ctx.set(dut.mte2_wr.valid, 0)
        ctx.set(dut.v_wr.valid, 0)
        # Read back the lone writes through a lone reader, one word per cycle.
        ctx.set(dut.mte3_rd.valid, 1)
        words = []
        for cycle in range(11):
            ctx.set(dut.mte3_rd.addr, min(cycle, 7))
            _, _, ready, rvalid, rdata = await ctx.tick().sample(
                dut.mte3_rd.ready, dut.mte3_rd.rvalid, dut.mte3_rd.rdata)
            assert ready
            if rvalid:
                words.append(rdata)
        assert words[:8] == [cycle + 100 for cycle in range(8)]

    run_sim(dut, bench)
    assert all(seen["lone"])
    assert all(a != b for a, b in seen["pair"])
    assert seen["pair"][::2] == [seen["pair"][0]] * 4


def test_test_port_goes_ahead_of_a_staged_request():
    """The test port takes the memory ahead of a request waiting in the stage, which holds
    new requests off until it is served on the next cycle the test port leaves free."""
    dut = UnifiedBuffer(WIDTH, SIZE)
    ones = (1 << (8 * WIDTH)) - 1
    want = ones & ~0xFFFF | (0xAB << 8)

    async def bench(ctx):
        test, writer, reader = dut.test, dut.mte2_wr, dut.v_rd
        for signal, value in ((test.addr, 5), (test.wdata, ones), (test.wstrb, FULL),
                              (test.we, 1), (writer.valid, 1), (writer.addr, 5),
                              (writer.strb, 0b1)):
            ctx.set(signal, value)
        _, _, ready = await ctx.tick().sample(writer.ready)
        assert ready                                    # into the empty stage
        ctx.set(test.wdata, 0xAB << 8)
        ctx.set(test.wstrb, 0b10)
        _, _, ready = await ctx.tick().sample(writer.ready)
        assert not ready                                # the staged write waits
        ctx.set(test.we, 0)
        ctx.set(writer.valid, 0)
        await ctx.tick()                                # the staged write: byte 0 = 0

        ctx.set(test.re, 1)
        ctx.set(reader.valid, 1)
        ctx.set(reader.addr, 5)
        _, _, ready = await ctx.tick().sample(reader.ready)
        assert ready
        _, _, ready = await ctx.tick().sample(reader.ready)
        assert not ready                                # the staged read waits
        assert ctx.get(test.rdata) == want              # two cycles after `re`
        ctx.set(test.re, 0)
        ctx.set(reader.valid, 0)
        assert not ctx.get(reader.rvalid)
        await ctx.tick()                                # the staged read
        assert not ctx.get(reader.rvalid)
        await ctx.tick()
        assert ctx.get(reader.rvalid) and ctx.get(reader.rdata) == want
        await ctx.tick()
        assert not ctx.get(reader.rvalid)

    run_sim(dut, bench)


def test_ub_converts():
    assert "module" in verilog.convert(UnifiedBuffer(WIDTH, SIZE))
