"""A FIFO whose first entry reaches the output one clock edge after it is written."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .kept_lut import load_in_groups


def _free(r_rdy, r_en):
    """The output register may load: it holds nothing, or its entry is taken."""
    return ~r_rdy | r_en


def wrap_incr(ptr, depth):
    """A ring pointer of `depth` entries stepped by one."""
    return Mux(ptr == depth - 1, 0, ptr + 1)


def pass_or_queue(m, queue, valid, data, out, select=None, valid_next=None):
    """Drives stream `out` from an item that cannot be held back (`valid`, `data`: an R
    beat, a B response's Completion, a landed UB word): it goes straight on to `out` when
    nothing is queued and `out` takes it, and into `queue` (a BypassQueue) otherwise,
    whose head goes first. `out` is then one mux from `data` or a register. `select` is a
    copy of `queue.r_rdy` (a `RegisterCopy` near the payload's loads) that picks the
    payload, or `queue.r_rdy` itself. `valid_next`, if given, is the value `valid` takes
    on the next edge (`valid` being a register): `out.valid` is then a register too, so
    the consumer's decisions start at a flip-flop."""
    waiting = queue.r_rdy
    m.d.comb += [
        queue.w_data.eq(data),
        queue.w_en.eq(valid & (waiting | ~out.ready)),
        out.payload.eq(Mux(waiting if select is None else select, queue.r_data, data)),
        queue.r_en.eq(out.ready),
    ]
    if valid_next is None:
        m.d.comb += out.valid.eq(waiting | valid)
    else:
        offered = Signal(name="offered")
        m.d.sync += offered.eq(queue.r_rdy_next | valid_next)
        m.d.comb += out.valid.eq(offered)


class BypassQueue(wiring.Component):
    """SyncFIFOBuffered's ports and level, with one edge less latency.

    A SyncFIFOBuffered shows a new entry two edges after it is written; on the datapath's
    start and tail paths that is one edge too many. Here an output register takes an entry
    written while nothing is queued ahead of it (and the output is free or being read)
    directly, so it is on `r_data` one edge after the write; entries that wait go through
    an inner first-word-fall-through queue, whose head refills the output register on any
    edge it is free, so after a stall the queue drains one entry per cycle without a gap.
    Outputs (`r_data`, `r_rdy`, `w_rdy`, `level`) come from registers. The queue holds
    `depth` entries, and a write is refused only while the inner queue is full, that is
    while at least depth - 1 entries are held.

    The inner queue's storage writes `w_data` to its next free slot on every cycle it
    has room, whether or not an entry is written or goes past it: that slot holds
    nothing until the pointer steps past it, and only the pointer waits on `w_en` and
    `r_en`. So the storage's write enable is a register, and the storage, whose bits lie
    wherever the entries' go, does not wait on the handshakes. Likewise the output
    register loads on every cycle it is free, the inner queue's head or else `w_data`,
    and only `r_rdy` waits on `w_en`: the wide enables do not.

    `r_rdy_next` and `w_rdy_next` are the values `r_rdy` and `w_rdy` take on the next
    edge, for a user that keeps copies of them, or decisions made of them, in registers
    of its own.

    The reader's `r_en` often comes from afar, and the output register is wide, its bits
    wherever their loads are: it loads in groups of bits (split further at the bit
    offsets `split_at`), each taking "the output register is free" from a cell of its
    own (kept_lut.load_in_groups), which the placer can put among them, and the queue's
    pointers and counts work it out again beside them. Whether the inner
    queue holds an entry, which picks the output register's input, is a register.
    """

    def __init__(self, *, width, depth, split_at=()):
        assert depth >= 2
        self.width = width
        self.depth = depth
        self._split_at = tuple(split_at)
        super().__init__({
            "w_data": In(width), "w_en": In(1), "w_rdy": Out(1),
            "w_rdy_next": Out(1),
            "r_data": Out(width), "r_en": In(1), "r_rdy": Out(1), "r_rdy_next": Out(1),
            "level": Out(range(depth + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        slots = self.depth - 1
        storage = m.submodules.storage = Memory(shape=self.width, depth=slots, init=[])
        write = storage.write_port()
        head = storage.read_port(domain="comb")
        w_ptr = Signal(range(slots))
        r_ptr = Signal(range(slots))
        held = Signal(range(slots + 1))         # entries in the inner queue

        out_free = _free(self.r_rdy, self.r_en)
        has_room = Signal(init=1)               # held != slots, as a register
        has_head = Signal()                     # held != 0, as a register
        written = self.w_en & has_room
        queued = written & (has_head | ~out_free)      # not bypassed
        # The output register is full whenever the inner queue holds an entry (it
        # refills on every edge it is free), so with a head, `out_free` is `r_en`.
        refill = has_head & self.r_en
        m.d.comb += [
            self.w_rdy.eq(has_room),
            write.addr.eq(w_ptr),
            write.data.eq(self.w_data),
            write.en.eq(has_room),
            head.addr.eq(r_ptr),
            self.level.eq(held + self.r_rdy),
        ]
        with m.If(queued):
            m.d.sync += w_ptr.eq(wrap_incr(w_ptr, slots))
        with m.If(refill):
            m.d.sync += r_ptr.eq(wrap_incr(r_ptr, slots))
        # held +- 1 from the register alone, picked by the handshakes: no carry chain
        # after them.
        m.d.sync += [
            held.eq(Mux(queued, Mux(refill, held, held + 1), Mux(refill, held - 1, held))),
            has_head.eq(Mux(queued & ~refill, 1, Mux(refill & ~queued, held != 1, has_head))),
        ]
        # Room after this edge, from the handshakes and a compare of `held` alone, so no
        # add sits in front of it.
        m.d.comb += self.w_rdy_next.eq(Mux(queued & ~refill, held != slots - 1,
                                           Mux(refill & ~queued, 1, has_room)))
        m.d.sync += has_room.eq(self.w_rdy_next)
        m.d.comb += self.r_rdy_next.eq(Mux(out_free, has_head | self.w_en, self.r_rdy))
        m.d.sync += self.r_rdy.eq(self.r_rdy_next)
        load_in_groups(m, "out", _free, Cat(self.r_rdy, self.r_en),
                       [(self.r_data, Mux(has_head, head.data, self.w_data))],
                       split_at=self._split_at)
        return m
