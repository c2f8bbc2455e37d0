"""The row fork: each branch's queue holds at most its depth less one rows, a row taken
always has room in every queue (none is lost), and each branch gives the rows taken, in
order, each once, as the fork maps them. The drain after a bus error counts on the first:
rows handed out before an abort wait in the GM side's queue. The copies' numbering counts
on the last: each row's `last` reaches every branch in its place."""

from amaranth.asserts import AnyConst
from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data

from hdl.datapath.mte2 import ROW_QUEUE
from hdl.datapath.mte3 import ALIGN_QUEUE
from hdl.datapath import rowfork
from hdl.datapath.rowfork import RowFork
from hdl.layouts import RowJob

from .gm_side import queue_entries, queue_slots
from .inputs import free, free_stream
from .props import add_block, child, counter, prop, registers
from .runner import Mutation

# A GM side's queue and a data-side one, at the depths the datapaths give them.
BRANCHES = {"gm": ROW_QUEUE, "data": ALIGN_QUEUE}
# What a branch carries is its select's business; here each takes the row's `last` and
# a few bits of a field of its own, so a row in another's place shows.
TAG_BITS = 4
_ENTRY = data.StructLayout({"last": 1, "tag": TAG_BITS})
SELECTS = {"gm": lambda row: {"last": row.last, "tag": row.gm_addr[:TAG_BITS]},
           "data": lambda row: {"last": row.last, "tag": row.ub_addr[:TAG_BITS]}}
# Rows are numbered modulo 2^ROW_NUMBER_BITS, more than a queue holds: the n-th row a
# branch gives is the one last taken with number n.
ROW_NUMBER_BITS = 4


def rowfork_harness():
    def build(mutation):
        m = Module()
        fork = RowFork({name: (_ENTRY, depth, SELECTS[name])
                        for name, depth in BRANCHES.items()})
        dut = add_block(m, "dut", fork, mutation)
        free_stream(m, "rows", dut.rows)
        fragment = m.submodules["dut"]
        free(m, *(getattr(dut, name).ready for name in BRANCHES))
        taken = counter(m, "rows_taken", dut.rows.valid & dut.rows.ready, ROW_NUMBER_BITS)
        followed = _followed_row(m, dut.rows, taken)
        counts = queue_levels(m, dut, fragment, BRANCHES, taken)
        for name, given_and_level in counts.items():
            _branch_order(m, name, getattr(dut, name), child(fragment, f"{name}_queue"),
                          given_and_level, followed)
        return m
    return build


def queue_levels(m, fork, fragment, branches, taken):
    """Each branch's queue (of `branches`, name: depth) holds at most its depth less one
    rows and a row taken always has room: none is lost; the invariant of its thermometer
    and queue. `taken` counts the rows taken, modulo a power of two above the depths.
    Returns each branch's (rows given, level), counted as `taken` is."""
    take = fork.rows.valid & fork.rows.ready
    counts, fits = {}, []
    for name, depth in branches.items():
        out = getattr(fork, name)
        given = counter(m, f"{name}_rows_given", out.valid & out.ready, len(taken))
        level = (taken - given)[:len(taken)]
        queue = child(fragment, f"{name}_queue")
        prop(m, f"{name}_holds_at_most_depth_less_one", level <= depth - 1)
        prop(m, f"{name}_row_taken_has_room", ~take | registers(queue)["has_room"])
        _branch_invariant(m, name, registers(fragment)[f"{name}_filled"], queue, level)
        fits.append(level <= depth - 2)
        counts[name] = given, level
    # `ready` is registered from the levels and the take before this edge's reads.
    prop(m, "ready_only_with_room_everywhere",
         ~registers(fragment)["ready"] | Cat(*fits).all())
    return counts


class _Followed:
    """A free-but-fixed row number and value, and whether the row last taken with that
    number had that value."""
    def __init__(self, number, value, tracked):
        self.number = number
        self.value = value
        self.tracked = tracked


def _followed_row(m, rows, taken):
    number = Signal(ROW_NUMBER_BITS, name="followed_row")
    value = Signal(RowJob, name="followed_value")
    m.d.comb += [number.eq(AnyConst(ROW_NUMBER_BITS)),
                 value.as_value().eq(AnyConst(len(value.as_value())))]
    tracked = Signal(name="followed_row_has_the_value")
    with m.If(rows.valid & rows.ready & (taken == number)):
        m.d.sync += tracked.eq(rows.payload.as_value() == value.as_value())
    return _Followed(number, value, tracked)


def _branch_order(m, name, out, queue, counts, followed):
    """Following the row: the branch gives only rows taken, and its n-th is the n-th
    taken as the fork maps it; each entry its queue holds is the row of its age."""
    given, level = counts
    expected = Signal(_ENTRY, name=f"{name}_entry_of_the_followed_row")
    m.d.comb += [expected[field].eq(value)
                 for field, value in SELECTS[name](followed.value).items()]

    def is_followed(held, number, entry):
        return ~(held & (number == followed.number) & followed.tracked) | (
            entry == expected.as_value())

    prop(m, f"{name}_gives_only_rows_taken", ~out.valid | (level != 0))
    prop(m, f"{name}_nth_row_given_is_the_nth_taken",
         is_followed(out.valid, given, out.payload.as_value()))
    regs = registers(queue)
    prop(m, f"{name}_output_holds_its_row", is_followed(regs["r_rdy"], given, regs["r_data"]))
    for slot, (held, entry, age) in enumerate(queue_slots(queue)):
        prop(m, f"{name}_queue_slot_{slot}_holds_its_row",
             is_followed(held, (given + age)[:ROW_NUMBER_BITS], entry))


def _branch_invariant(m, name, filled, queue, level):
    """The branch's thermometer and its queue's own count are the harness's level."""
    thermometer = Cat(*(filled[i] == (level > i) for i in range(len(filled))))
    prop(m, f"{name}_filled_is_level", thermometer.all())
    _, held = queue_entries(m, f"{name}_queue", queue)
    prop(m, f"{name}_queue_holds_level", held == level)


def _room_rows_late(holds_at_most, rows_late):
    """The row fork's room test with `rows_late` rows more than the queue can take."""
    return lambda filled, rows: holds_at_most(filled, rows + rows_late)


ROOM_ONE_ROW_LATE = Mutation("room_one_row_late", "the row fork takes a row into a "
                             "queue that holds its depth less one",
                             ((rowfork, "_holds_at_most",
                               _room_rows_late(rowfork._holds_at_most, 1)),))
# A queue that holds its depth refuses a write: the row is lost on that branch.
ROOM_TWO_ROWS_LATE = Mutation("room_two_rows_late", "the row fork takes a row into a "
                              "full queue, which drops it",
                              ((rowfork, "_holds_at_most",
                                _room_rows_late(rowfork._holds_at_most, 2)),))


def _entry_of_the_row_before(elaborate):
    """The row fork's data branch given each row's entry in place of the row after it."""
    def patched(self, platform):
        m = elaborate(self, platform)
        queue = m.submodules["data_queue"]
        before = Signal.like(queue.w_data, name="entry_before")
        with m.If(self.rows.valid & self.rows.ready):
            m.d.sync += before.eq(queue.w_data)
        m.d.comb += queue.w_data.eq(before)
        return m
    return patched


ENTRY_OF_THE_ROW_BEFORE = Mutation(
    "entry_of_the_row_before", "the row fork's data branch queues each row's entry with "
    "the row after it", ((rowfork.RowFork, "elaborate",
                          _entry_of_the_row_before(rowfork.RowFork.elaborate)),))
