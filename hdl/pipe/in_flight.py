"""A pipe's copies in flight and what completes: the in-flight queue of command indices,
the count of copies started and not completed, the completed count and the first error."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import ErrorCode, GM_ADDR_BITS

from ..lib.queue import BypassQueue
from ..lib.register_copy import RegisterCopy
from ..layouts import CMD_INDEX_BITS, Completion

COMPLETED_BITS = 32


class InFlight(wiring.Component):
    """The PipeController's record of its copies between their start and their
    Completion, and of the commands that complete, for up to `limit` copies in flight.

    Ports:
      start        In  1: a copy goes to the address generator, its command at
                       `start_index`
      done         In  stream of Completion: one per started copy, in order, any cycle
                       after its start; always accepted
      finished     In  1: a command other than a copy ends in the pipe
      copy_end     In  1: a copy ends in the pipe (it broke a rule, or is empty)
      rule_error   In  1: that copy broke rule `rule_code`, its command at `rule_index`
      clear        In  1: clears error, error_index and error_addr
      drained      Out 1: no copy started and not completed (a register; a Completion
                       shows in it a cycle after it counts)
      drained_next Out the value `drained` takes on the next edge
      room         Out 1: fewer than `limit` copies in flight (a register, as `drained`)
      room_next    Out the value `room` takes on the next edge
      completed    Out commands completed since reset (wraps)
      error        Out the first ErrorCode since the last clear (NONE if none)
      error_index  Out that command's index
      error_addr   Out the faulting GM address of a BUS_ERROR (0 for rule errors)
      pending      Out 1: an end or a bus error waits to be recorded

    Timing: a Completion counts, and leaves the count of copies in flight, on the cycle
    it is offered; its index leaves the queue and its bus error is recorded a cycle later
    (`landed`), and `drained` and `room` show it a cycle later too (registered from the
    count). A command's end is registered before it counts or records its error.
    """

    def __init__(self, limit):
        self.limit = limit
        super().__init__({
            "start": In(1),
            "start_index": In(CMD_INDEX_BITS),
            "done": In(stream.Signature(Completion)),
            "finished": In(1),
            "copy_end": In(1),
            "rule_error": In(1),
            "rule_code": In(ErrorCode),
            "rule_index": In(CMD_INDEX_BITS),
            "clear": In(1),
            "drained": Out(1, init=1),
            "drained_next": Out(1),
            "room": Out(1, init=1),
            "room_next": Out(1),
            "completed": Out(COMPLETED_BITS),
            "error": Out(ErrorCode),
            "error_index": Out(CMD_INDEX_BITS),
            "error_addr": Out(GM_ADDR_BITS),
            "pending": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.done.ready.eq(1)
        landed = self._land_completions(m)
        queue = self._track_in_flight(m, landed.valid)
        self._count_completed(m)
        bus_error = self._record_error(m, queue, landed)
        ended = Signal()
        m.d.sync += ended.eq(self.finished | self.copy_end)
        m.d.comb += self.pending.eq(ended | bus_error)
        return m

    def _land_completions(self, m):
        """The datapath's Completions, registered: a copy's index leaves the in-flight
        queue, and a bus error is recorded, a cycle after its Completion is offered. A
        Completion may come straight from a bus response, from a block placed far from
        the pipe, so only the completed count (through a choice between two sums worked
        out from registers) and the in-flight count wait on it in its cycle. Returns a
        stream view of the landed Completion (valid for one cycle)."""
        landed = stream.Signature(Completion).create(path=("landed",))
        m.d.sync += [landed.valid.eq(self.done.valid), landed.payload.eq(self.done.payload)]
        return landed

    def _track_in_flight(self, m, landed):
        """The copies in flight: the in-flight queue of their indices, and as registers
        `drained` (none in flight) and `room` (another may start).

        A started copy's index is written to the queue a cycle after its start, from
        registers, so `start`, which waits on the address generator taking the copy,
        reaches none of the queue's logic. Its Completion comes many cycles after the
        start (its rows cross the datapath first), when the index is at the queue's head,
        and the index leaves the queue a cycle after it (`landed`), so the Completion,
        which may come straight from a bus response, reaches none of the queue's logic
        either. `drained` and `room` come from a count of the copies started and not
        completed, stepped by `start` and the Completions; each is registered from the
        count's compares and `start` alone, so their next values, from which the pipe's
        take register is worked out, wait on no Completion (which may come from across
        the chip): a Completion frees room, or drains the pipe, a cycle after it counts.
        The count is at most `limit`, and it bounds the queue's entries: a copy started
        after a Completion, which `room` allows two cycles later, writes its index after
        the landed index has left. The queue holds one more (a BypassQueue refuses a
        write once depth - 1 are held), so it always has room. Returns the queue."""
        queue = m.submodules.queue = BypassQueue(width=CMD_INDEX_BITS, depth=self.limit + 1)
        start, arrived = self.start, self.done.valid
        started = Signal()
        started_index = Signal(CMD_INDEX_BITS)
        m.d.sync += [started.eq(start), started_index.eq(self.start_index)]
        m.d.comb += [queue.w_en.eq(started), queue.w_data.eq(started_index),
                     queue.r_en.eq(landed)]
        limit = self.limit
        count = Signal(range(limit + 1))
        with m.If(start & ~arrived):
            m.d.sync += count.eq(count + 1)
        with m.Elif(arrived & ~start):
            m.d.sync += count.eq(count - 1)
        # This cycle's Completion shows in the next values a cycle later.
        m.d.comb += [self.drained_next.eq(~start & (count == 0)),
                     self.room_next.eq(Mux(start, count < limit - 1, count != limit))]
        m.d.sync += [self.drained.eq(self.drained_next), self.room.eq(self.room_next)]
        return queue

    def _count_completed(self, m):
        """The completed count: a Completion counts on the cycle it is offered, and a
        command's end a cycle after it ends (registered first)."""
        # The count goes up by the ends registered here, and by one more with a
        # Completion: two sums of the count and a 2-bit register, each one carry chain,
        # which the Completion only picks between. The 2-bit registers are the chains'
        # alone, kept apart from `ended` (which the pipe's busy reads far from the count,
        # and which Yosys would merge with a bit of them), so they sit beside the chains.
        steps = m.submodules.completed_steps = RegisterCopy(4)
        ends_next = self.finished + self.copy_end
        m.d.comb += steps.d.eq(Cat(ends_next, (ends_next + 1)[:2]))
        ends, ends_and_one = steps.q[:2], steps.q[2:]
        m.d.sync += self.completed.eq(Mux(self.done.valid, self.completed + ends_and_one,
                                          self.completed + ends))

    def _record_error(self, m, queue, landed):
        """The first error since the last clear: a landed bus error, with the index at the
        in-flight queue's head (its copy's), or a rule error, registered with its end.
        Returns whether a bus error lands."""
        failed = Signal()
        code = Signal(ErrorCode)
        index = Signal(CMD_INDEX_BITS)
        m.d.sync += [failed.eq(self.rule_error), code.eq(self.rule_code),
                     index.eq(self.rule_index)]
        done = landed.payload
        bus_error = landed.valid & (done.error != ErrorCode.NONE)
        with m.If(self.clear):
            m.d.sync += [self.error.eq(ErrorCode.NONE), self.error_index.eq(0),
                         self.error_addr.eq(0)]
        unrecorded = self.clear | (self.error == ErrorCode.NONE)
        # A rule error is decided with no copy in flight, so after every bus error of a
        # copy before it has landed.
        with m.If(bus_error & unrecorded):
            m.d.sync += [self.error.eq(done.error), self.error_index.eq(queue.r_data),
                         self.error_addr.eq(done.address)]
        with m.Elif(failed & unrecorded):
            m.d.sync += [self.error.eq(code), self.error_index.eq(index),
                         self.error_addr.eq(0)]
        return bus_error
