"""The row fork's room: each branch's queue holds at most its depth less one rows, and a
row taken always has room in every queue (none is lost). The drain after a bus error
counts on the first: rows handed out before an abort wait in the GM side's queue."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data

from hdl.datapath.mte2 import ROW_QUEUE
from hdl.datapath.mte3 import ALIGN_QUEUE
from hdl.datapath.rowfork import RowFork

from .gm_side import queue_entries
from .inputs import free, free_stream
from .props import add_block, child, prop, registers

# A GM side's queue and a data-side one, at the depths the datapaths give them; what a
# branch carries is the queue's business alone, so one bit stands for the row.
BRANCHES = {"gm": ROW_QUEUE, "data": ALIGN_QUEUE}
_ENTRY = data.StructLayout({"last": 1})


def rowfork_harness():
    def build(mutation):
        m = Module()
        fork = RowFork({name: (_ENTRY, depth, lambda row: {"last": row.last})
                        for name, depth in BRANCHES.items()})
        dut = add_block(m, "dut", fork, mutation)
        free_stream(m, "rows", dut.rows)
        fragment = m.submodules["dut"]
        take = dut.rows.valid & dut.rows.ready
        fits = []
        for name, depth in BRANCHES.items():
            out = getattr(dut, name)
            free(m, out.ready)
            level = Signal(range(depth + 1), name=f"{name}_level")
            m.d.sync += level.eq(level + take - (out.valid & out.ready))
            queue = child(fragment, f"{name}_queue")
            prop(m, f"{name}_holds_at_most_depth_less_one", level <= depth - 1)
            prop(m, f"{name}_row_taken_has_room", ~take | registers(queue)["has_room"])
            _branch_invariant(m, name, registers(fragment)[f"{name}_filled"], queue,
                              level)
            fits.append(level <= depth - 2)
        # `ready` is registered from the levels and the take before this edge's reads.
        ready = registers(fragment)["ready"]
        prop(m, "ready_only_with_room_everywhere", ~ready | Cat(*fits).all())
        return m
    return build


def _branch_invariant(m, name, filled, queue, level):
    """The branch's thermometer and its queue's own count are the harness's level."""
    thermometer = Cat(*(filled[i] == (level > i) for i in range(len(filled))))
    prop(m, f"{name}_filled_is_level", thermometer.all())
    _, held = queue_entries(m, f"{name}_queue", queue)
    prop(m, f"{name}_queue_holds_level", held == level)
