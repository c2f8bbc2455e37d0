"""Hands each row of a copy to every stage of a datapath that needs it."""

from amaranth.hdl import Cat, Module, Mux, Shape, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..lib.queue import BypassQueue
from ..layouts import RowJob


def _filled(m, name, depth, take, read):
    """A queue's level as a thermometer register: bit i is set while it holds more than i
    rows. It follows the queue's writes (`take`) and reads, so `ready` needs neither the
    queue's level sum nor a compare."""
    filled = Signal(depth, name=f"{name}_filled")
    with m.If(take & ~read):
        m.d.sync += filled.eq(Cat(1, filled[:-1]))
    with m.Elif(read & ~take):
        m.d.sync += filled.eq(filled[1:])
    return filled


def _holds_at_most(filled, rows):
    """The queue holds at most `rows` rows: one bit of its thermometer `filled`."""
    return 1 if rows >= len(filled) else 0 if rows < 0 else ~filled[rows]


class RowFork(wiring.Component):
    """Copies each RowJob, reshaped per branch, into one queue per branch.

    The stages of a datapath use a row at different times (the AXI reader when it issues
    the burst, the aligner and the pad stage when the data arrives), so each branch has its
    own queue. A row is taken only when every queue has room, so all queues hold the rows
    in the same order. The queues are BypassQueues: a row taken into an empty queue is on
    its branch one clock edge later.

    `rows.ready` is a register, so the address generator's step, which enables all of its
    registers, does not wait on the queues' level logic. It is set for the next cycle when
    every queue holds at most depth - 2 rows after this cycle's write, not counting this
    cycle's read: the queue then has room whether or not its output register is full. A
    queue so holds at most depth - 1 rows. The branches' reads, which come from stages
    placed apart, so reach only their own queue and its level register, not `rows.ready`,
    which sees a read a cycle later. Rows still pass at one per cycle: a queue that is
    read on every cycle is never above depth - 3 rows for long.

    `branches` maps a port name to `(payload shape, queue depth, select)`, where
    `select(row)` returns the payload's fields, as a dict, from a RowJob view.
    """

    def __init__(self, branches):
        self._branches = branches
        members = {"rows": In(stream.Signature(RowJob))}
        for name, (shape, _, _) in branches.items():
            members[name] = Out(stream.Signature(shape))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        take = Signal()
        ready = Signal()
        room_if_taken, room_if_not = [], []
        for name, (shape, depth, select) in self._branches.items():
            queue = m.submodules[f"{name}_queue"] = BypassQueue(
                width=Shape.cast(shape).width, depth=depth)
            entry = Signal(shape, name=f"{name}_entry")
            out = getattr(self, name)
            for field, value in select(self.rows.payload).items():
                m.d.comb += getattr(entry, field).eq(value)
            m.d.comb += [
                queue.w_data.eq(entry),
                queue.w_en.eq(take),
                out.payload.eq(queue.r_data),
                out.valid.eq(queue.r_rdy),
                queue.r_en.eq(out.ready),
            ]
            read = out.valid & out.ready
            filled = _filled(m, name, depth, take, read)
            room_if_taken.append(_holds_at_most(filled, depth - 3))
            room_if_not.append(_holds_at_most(filled, depth - 2))

        # level + take <= depth - 2 for every queue, picked by `take`.
        m.d.sync += ready.eq(Mux(take, Cat(*room_if_taken).all(), Cat(*room_if_not).all()))
        m.d.comb += [
            take.eq(self.rows.valid & ready),
            self.rows.ready.eq(ready),
        ]
        return m
