"""The Unified Buffer: one memory of W-byte words with arbitrated requester ports."""

from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from model.isa import DEFAULT_PROFILE, PROFILES

from ..lib.block_ram import READ_LATENCY, BlockRam
from ..lib.kept_lut import KeptLut, truth_table
from ..lib.register_copy import RegisterCopy
from ..layouts import UbReadSignature, UbWriteSignature, ub_word_bits


class UbTestSignature(wiring.Signature):
    """Direct access to UB for testbenches and the CSR front end (Out from the user).

    Write: on a cycle with `we`, the bytes of `wdata` whose `wstrb` bit is set are stored at
    word `addr` (at the end of the next cycle). Read: on a cycle with `re`, word `addr` is
    read; `rdata` shows it TEST_READ_LATENCY cycles later (only: the memory reads on every
    cycle)."""
    def __init__(self, width_bytes):
        super().__init__({
            "addr": Out(ub_word_bits(width_bytes)),
            "wdata": Out(8 * width_bytes),
            "wstrb": Out(width_bytes),
            "we": Out(1),
            "re": Out(1),
            "rdata": In(8 * width_bytes),
        })


# The word is stored as parts of PART_BYTES bytes side by side, each a BlockRam (16
# DP16KD for profile a5) given its own copy of the addresses.
PART_BYTES = 4
# Cycles from a test port read to its word on `rdata`: the head register, then the
# memory.
TEST_READ_LATENCY = 1 + READ_LATENCY


def part_count(width_bytes):
    return width_bytes // PART_BYTES


# The arbitration's rules, in bitwise operators: logic on 1-bit Values, and through
# kept_lut.truth_table the tables of the KeptLuts that decide the head.
def _full_next(ready, valid):
    """A slot is full on the next cycle: it is not ready (so full and not served) or its
    requester offers a request."""
    return ~ready | valid


def _second_next(full0, full1, favour):
    """Slot 1 is served next unless slot 0 is full and goes first."""
    return ~full0 | (full1 & favour)


class _RequestSlots:
    """A one-request slot per requester in front of a memory port, served round-robin,
    and the head: the registers the memory takes its request from.

    Each requester's request (its `fields`, `addr` among them) is registered into its own
    slot. Every cycle decides what the head holds on the next: the test port's request
    (`test`: its fields) when `test_uses`, else the full slot to serve, round-robin (a
    lone full slot, or under contention the one not served most recently), else nothing
    (the `enable` field 0: no byte enabled; the other fields then do not matter). A slot
    is `served` on a cycle the head holds its request; a requester's `ready` is that its
    slot is empty or served. Both are registers, so no combinational path runs from one
    pipe through the arbitration into the other, or from the test port into a pipe, and
    the memory's inputs are registers (`head`, and `head_addrs`: the address, a
    `RegisterCopy` per memory part, which synthesis keeps apart)."""

    def __init__(self, m, name, requesters, fields, test, test_uses, parts, enable=None):
        # Each slot's `ready` (empty or served) is a register, and so is `favour`: that
        # slot 1 goes first if both are full on the next cycle, worked out a cycle ahead.
        # A slot that is not ready is full, so a slot is full next exactly when it is not
        # ready or its requester offers a request: each decision below is one slice.
        readies = [Signal(name=f"{name}_slot{k}_ready", init=1) for k in range(2)]
        self.served = [Signal(name=f"{name}_slot{k}_served") for k in range(2)]
        slots = [{field: Signal.like(getattr(requesters[0], field), reset_less=True,
                                     name=f"{name}_slot{k}_{field}") for field in fields}
                 for k in range(2)]
        favour = Signal(name=f"{name}_favour_second")
        full_next = [_full_next(ready, requester.valid)
                     for ready, requester in zip(readies, requesters)]
        for ready, requester, slot in zip(readies, requesters, slots):
            m.d.comb += requester.ready.eq(ready)
            with m.If(ready):
                m.d.sync += [slot[field].eq(getattr(requester, field)) for field in fields]

        # Which slot is served next, and whether any is (unless both are empty). Each bit
        # of the head takes these decisions as inputs: they are `KeptLut`s, as ABC would
        # otherwise fold them into every bit's logic, and each memory part's share of the
        # data and enables has a copy of its own, which the placer can put beside it, so
        # the requesters' `valid`s, not one decision's net to every part, cross the
        # device. Only the choice between the two candidates (each
        # slot's, a new request or the held one, is picked by its `ready` register) and,
        # for the enables, whether any is served wait on this cycle's handshakes. With
        # none served nothing is stored, whatever the address and data, and a read's word
        # goes to no one (`rvalid` follows `served`).
        valids = [requester.valid for requester in requesters]
        decisions = {
            "second": (lambda v0, v1, r0, r1, favour:
                       _second_next(_full_next(r0, v0), _full_next(r1, v1), favour),
                       Cat(*valids, *readies, favour)),
            "any": (lambda v0, v1, r0, r1: _full_next(r0, v0) | _full_next(r1, v1),
                    Cat(*valids, *readies)),
        }

        def decide(copy, keys):
            kept = {}
            for key in keys:
                function, inputs = decisions[key]
                lut = m.submodules[f"{name}_{copy}_{key}"] = KeptLut(
                    len(inputs), truth_table(function, len(inputs)))
                m.d.comb += lut.a.eq(inputs)
                kept[key] = lut.z
            return kept

        control = decide("control", ["second"])
        served_next = [~test_uses & full_next[0] & ~control["second"],
                       ~test_uses & full_next[1] & control["second"]]
        m.d.sync += [served.eq(value) for served, value in zip(self.served, served_next)]
        m.d.sync += [ready.eq(~is_full | served)
                     for ready, is_full, served in zip(readies, full_next, served_next)]
        m.d.sync += favour.eq(Mux(served_next[0], 1, Mux(served_next[1], 0, favour)))

        def upcoming(field, kept, part=None):
            """`field` of what the head holds next (its `part`-th share, if given)."""
            def share(value):
                value = Value.cast(value)
                return value if part is None else value.word_select(part, len(value) // parts)
            candidates = [Mux(ready, share(getattr(requester, field)), share(slot[field]))
                          for ready, requester, slot in zip(readies, requesters, slots)]
            from_slot = Mux(kept["second"], candidates[1], candidates[0])
            if field == enable:
                from_slot = Mux(kept["any"], from_slot, 0)
            return Mux(test_uses, share(test[field]), from_slot)

        # The address, picked once beside the slots (by the control's decisions), reaches
        # every block RAM: a copy per memory part, free to sit by the part's blocks.
        next_addr = upcoming("addr", control)
        self.head_addrs = []
        for k in range(parts):
            copy = m.submodules[f"{name}_head_addr{k}"] = RegisterCopy(len(next_addr))
            m.d.comb += copy.d.eq(next_addr)
            self.head_addrs.append(copy.q)
        # Each part's share of the other fields, from the part's own decisions.
        shares = {field: [] for field in fields if field != "addr"}
        for k in range(parts if shares else 0):
            kept = decide(f"part{k}", ["second", "any"] if enable else ["second"])
            for field, part_shares in shares.items():
                reg = Signal(len(getattr(requesters[0], field)) // parts, reset_less=True,
                             name=f"{name}_head{k}_{field}")
                m.d.sync += reg.eq(upcoming(field, kept, k))
                part_shares.append(reg)
        self.head = {field: Cat(*part_shares) for field, part_shares in shares.items()}


class UnifiedBuffer(wiring.Component):
    """UB storage: `size` bytes as words of `width_bytes` bytes, one write and one read port.

    Write port: shared by `mte2_wr` and `v_wr` (the MTE2 and UB->UB datapaths), each a
    `UbWriteSignature` with the UB as responder. Read port: shared by `mte3_rd` and `v_rd`,
    each a `UbReadSignature`; `rdata` is common to both requesters, `rvalid` goes to the
    one that asked.

    Request slots and head (`_RequestSlots`), separately for the write port and the read
    port: each requester has a one-request slot, an accepted request is registered in it,
    and the memory takes its request from head registers, loaded a cycle ahead with the
    request it will serve, so the memory's address, data and enables, which fan out to
    every block RAM of a large UB, come straight from registers; its output is registered
    too (`BlockRam`). A slot is served the cycle after its request was accepted, or later
    by a cycle for each cycle the other slot goes first or the test port has the head: a
    write is stored at the end of the cycle its slot is served, a read reads the memory
    then and has `rdata`/`rvalid` two cycles later. So a lone requester's write accepted
    on t is stored at the end of t+1, its read has its word on t+3, and each requester's
    requests are served in the order they were accepted.

    Arbitration, every cycle, for the head of the next: the `test` port wins whenever it
    uses that port (`we` / `re`: its write is stored at the end of the next cycle, its
    read has its word TEST_READ_LATENCY cycles later); otherwise the full slots are
    served round-robin: a lone requester gets every cycle, so each pipe sees full rate,
    one word per cycle, when it is alone; two requesters asking every cycle get alternate
    cycles (both are accepted on the cycle the second starts, one into each slot).
    `ready` is a register: a requester is ready while its slot is empty or being served.

    A read of the memory in the same cycle as a write of the same word returns the old word
    (the read port is not transparent): correctly synchronised pipes never touch the same
    word at once. Word addresses at or beyond `size` wrap (the rule checker rejects copies
    that reach them). Reset does not clear the contents; the memory starts zeroed.
    """

    def __init__(self, width_bytes=32, size=PROFILES[DEFAULT_PROFILE].ub_size):
        exact_log2(width_bytes)
        if width_bytes % PART_BYTES:
            raise ValueError(f"UB word width must be a multiple of {PART_BYTES} bytes (its "
                             f"memory parts), not {width_bytes}")
        assert size % width_bytes == 0
        self.width_bytes = width_bytes
        self.size = size
        # Part k holds bytes PART_BYTES * k to PART_BYTES * (k + 1) - 1 of every word.
        self.parts = [BlockRam(PART_BYTES, size // width_bytes)
                      for _ in range(part_count(width_bytes))]
        super().__init__({
            "mte2_wr": In(UbWriteSignature(width_bytes)),
            "v_wr": In(UbWriteSignature(width_bytes)),
            "mte3_rd": In(UbReadSignature(width_bytes)),
            "v_rd": In(UbReadSignature(width_bytes)),
            "test": In(UbTestSignature(width_bytes)),
        })

    def elaborate(self, platform):
        m = Module()
        for k, part in enumerate(self.parts):
            m.submodules[f"memory{k}"] = part
        self._write_side(m, self.parts)
        self._read_side(m, self.parts)
        return m

    def _write_side(self, m, mems):
        test = self.test
        slots = _RequestSlots(m, "write", (self.mte2_wr, self.v_wr), ("addr", "data", "strb"),
                              {"addr": test.addr, "data": test.wdata, "strb": test.wstrb},
                              test_uses=test.we, parts=len(mems), enable="strb")
        for k, (mem, addr) in enumerate(zip(mems, slots.head_addrs)):
            m.d.comb += [
                mem.w_addr.eq(addr),
                mem.w_data.eq(slots.head["data"].word_select(k, len(mem.w_data))),
                mem.w_en.eq(slots.head["strb"].word_select(k, len(mem.w_en))),
            ]

    def _read_side(self, m, mems):
        test = self.test
        first, second = self.mte3_rd, self.v_rd
        slots = _RequestSlots(m, "read", (first, second), ("addr",), {"addr": test.addr},
                              test_uses=test.re, parts=len(mems))
        # The memories read on every cycle (no enable in front of their blocks) and
        # register their output, so every reader takes the word from a register: a
        # block's clock-to-out is most of a cycle and the blocks are spread over the
        # device, so the routing to the readers needs a cycle of its own.
        m.d.comb += [mem.r_addr.eq(addr) for mem, addr in zip(mems, slots.head_addrs)]
        word = Cat(mem.r_data for mem in mems)
        m.d.comb += [
            first.rdata.eq(word),
            second.rdata.eq(word),
            test.rdata.eq(word),
        ]
        landing = [Signal(name=f"read_landing{k}") for k in range(2)]
        m.d.sync += [landing[0].eq(slots.served[0]),
                     landing[1].eq(slots.served[1]),
                     first.rvalid.eq(landing[0]),
                     second.rvalid.eq(landing[1])]
