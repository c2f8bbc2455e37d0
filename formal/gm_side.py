"""The induction invariants of a GM side (AxiReader, AxiWriter): its queues' counts,
flags and pointers agree, the burst issuer's count of unfinished bursts is the AXI
checker's count of bursts on the bus plus those queued for the address channel, every
queued address-channel entry is a legal burst, and every burst from the splitter's row
to the bus has the sid of the last row taken. Without them the induction step starts
from states no run reaches: a full queue that says it has room, a count one off the
checker's, an entry that crosses a page or has another ID."""

from amaranth.hdl import Array, Mux
from amaranth.lib import data

from hdl.datapath.legalizer import GmRow, address_entry

from .axi4 import within_page, word_aligned
from .props import child, distance, memory_rows, prop, registers, wrap_add
from .splitter import splitter_contract


def address_side_invariant(m, fragment, checker, on_bus, width_bytes, max_outstanding,
                           row_sid):
    """The splitter's and the burst issuer's invariants of the GM side `fragment` (the
    elaborated AxiReader or AxiWriter), with `checker`'s count `on_bus` of the bursts
    awaiting their last R beat or B response and `row_sid`, the sid of the last row
    taken. Returns issuer_invariant's address FIFO entries, its level and the count of
    unfinished bursts."""
    splitter = child(fragment, "splitter")
    splitter_contract(m, splitter, width_bytes)
    addresses, queued, unfinished = issuer_invariant(
        m, child(fragment, "issuer"), on_bus, width_bytes, max_outstanding,
        len(checker.last_id))
    one_id_invariant(m, splitter, addresses, on_bus, checker.last_id, row_sid)
    return addresses, queued, unfinished


def queue_entries(m, name, fragment):
    """Asserts that a BypassQueue's registers agree (`fragment` is the elaborated queue)
    and returns the entries it holds as (held, entry), oldest first, and its level."""
    queue = registers(fragment)
    rows = memory_rows(child(fragment, "storage"))
    slots = len(rows)
    held, r_ptr, w_ptr = queue["held"], queue["r_ptr"], queue["w_ptr"]
    # `held` counts the inner queue's entries, and the flags are registered compares of
    # it; the output register refills on every edge it is free, so it is full while the
    # inner queue holds any entry.
    prop(m, f"{name}_count_within_slots", held <= slots)
    prop(m, f"{name}_flags_follow_count",
         (queue["has_head"] == (held != 0)) & (queue["has_room"] == (held != slots)))
    prop(m, f"{name}_output_full_while_queued", ~queue["has_head"] | queue["r_rdy"])
    # Entries are written at w_ptr and read at r_ptr, each stepping round the ring (of
    # any number of slots, so a pointer's register may hold values past it).
    prop(m, f"{name}_pointers_within_slots", (w_ptr < slots) & (r_ptr < slots))
    prop(m, f"{name}_pointers_apart_by_count", w_ptr == wrap_add(r_ptr, held, slots))
    # Each entry is the row its age gives for each read pointer value: no remainder.
    entries = [(queue["r_rdy"], queue["r_data"])]
    for age in range(slots):
        rotated = Array(rows[(read + age) % slots] for read in range(slots))
        entries.append((held > age, rotated[r_ptr]))
    return entries, held + queue["r_rdy"]


def queue_slots(fragment):
    """The entries a BypassQueue (`fragment`, the elaborated queue) holds in its storage,
    slot by slot, as (held, entry, age): age 0 is its output register's entry (the
    oldest), so a slot's age is 1 + its distance past the read pointer. A property of each
    slot and its age is easier on the solver than one of each age and the slot the read
    pointer picks: at 8 outstanding bursts the writer's induction took 13 s, not 72."""
    queue = registers(fragment)
    rows = memory_rows(child(fragment, "storage"))
    slots = []
    for slot, row in enumerate(rows):
        past_read = distance(slot, queue["r_ptr"], len(rows))
        slots.append((past_read < queue["held"], row, past_read + 1))
    return slots


def output_queue_entries(m, name, regs, queue):
    """Asserts that a two-entry output queue's registers (stream.buffered_output, named
    `queue` among `regs`, a block's registers) agree: `valid` is the read pointer's entry
    full, `room` the write pointer's empty, and the pointers apart exactly when one entry
    is held. Returns the entries it holds as (held, entry), oldest first."""
    full, wr, rd = (regs[f"{queue}_{part}"] for part in ("full", "wr", "rd"))
    first, second = regs[f"{queue}0"], regs[f"{queue}1"]
    head_held, other_held = full.bit_select(rd, 1), full.bit_select(~rd, 1)
    prop(m, f"{name}_flags_follow_entries",
         (regs[f"{queue}_valid"] == head_held)
         & (regs[f"{queue}_room"] == ~full.bit_select(wr, 1))
         & ((wr != rd) | (full[0] == full[1]))
         & ((wr == rd) | (head_held & ~other_held)))
    return [(head_held, Mux(rd, second, first)), (other_held, Mux(rd, first, second))]


def issuer_invariant(m, fragment, on_bus, width_bytes, max_outstanding, id_width):
    """The burst issuer's registers (`fragment`, the elaborated issuer) tied to `on_bus`,
    the checker's count of bursts whose address went and whose last R beat or B
    response has not. Returns the address FIFO's entries (held, address_entry View),
    oldest first, its level, and the count of unfinished bursts."""
    issuer = registers(fragment)
    entries, queued = queue_entries(m, "address_fifo", child(fragment, "a_fifo"))
    unfinished = issuer["unfinished"]
    any_unfinished, below_limit = issuer["any_unfinished"], issuer["below_limit"]
    # A burst is unfinished from the edge that takes it, through its wait in the address
    # FIFO, until its last R beat or its B response: the same response the checker's
    # count takes it off at.
    prop(m, "issuer_unfinished_within_max", unfinished <= max_outstanding)
    prop(m, "issuer_unfinished_are_queued_or_on_bus", unfinished == on_bus + queued)
    # The flags are the count's compares, worked out with it on the same edge.
    limit = fragment.origins[0]._depth          # the issuer's own, mutated or not
    prop(m, "issuer_flags_follow_count",
         (any_unfinished == (unfinished != 0))
         & (below_limit == (unfinished != limit))
         & (issuer["only_one"] == (unfinished == 1)))
    # `open_` is registered from the FIFO's room and the limit's next values.
    a_fifo = registers(child(fragment, "a_fifo"))
    prop(m, "issuer_open_follows_room_and_limit",
         (issuer["open_"] == (a_fifo["has_room"] & below_limit))
         & (issuer["open_fenced"] == (issuer["open_"] & ~any_unfinished)))
    # Only the splitter's legal bursts are written into the FIFO, addresses aligned.
    bursts = [(held, data.View(address_entry(id_width), entry)) for held, entry in entries]
    for age, (held, burst) in enumerate(bursts):
        prop(m, f"address_fifo_entry_{age}_legal",
             ~held | (word_aligned(burst.addr, width_bytes)
                      & within_page(burst.addr, burst.len, width_bytes)))
    return bursts, queued, unfinished


def one_id_invariant(m, splitter, addresses, on_bus, last_id, row_sid):
    """Every burst from the splitter's row on is of the sid of the last row taken
    (`row_sid`): a row of another sid is taken with its first burst, which the issuer
    fences until no burst is unfinished. So the address FIFO's entries and, while any
    burst is on the bus, the ID of the last one issued (`last_id`) are that sid."""
    state = registers(splitter)
    row = data.View(GmRow, state["row"])
    prop(m, "splitter_row_is_the_last_taken", ~state["active"] | (row.sid == row_sid))
    for age, (held, burst) in enumerate(addresses):
        prop(m, f"address_fifo_entry_{age}_of_the_last_rows_sid",
             ~held | (burst.id == row_sid))
    prop(m, "bursts_on_bus_of_the_last_rows_sid", (on_bus == 0) | (last_id == row_sid))
