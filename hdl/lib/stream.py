"""Registered stream stages: a skid stage, which loads a value into a register with a
second (skid) register behind it so the upstream's `ready` is a register, and a two-entry
output queue that drives a stream from registers. They know nothing of the engine; the
aligner, the pad stage, the line writer and the address generator build on them.

Imports only from `hdl.lib`.
"""

from amaranth.hdl import Cat, Mux, Shape, Signal

from .kept_lut import load_in_groups
from .register_copy import RegisterCopy


def skid_stage(m, valid_in, value, take, name, skid_take=None, skid_view=None,
               valid_next=None):
    """One registered stage of a stream: it loads `value` and `valid_in` on every cycle it
    is empty or its word is taken (`take`). Returns (valid, register, ready). `ready` is
    a register: a word offered while the stage is full and not taken waits in a second
    (skid) register, and `ready` is low while that one is full. So the upstream's
    handshake does not wait on the downstream's decision, and words still pass at one per
    cycle. Per-row arithmetic computed into such stages, ahead of the row's use, stays off
    the paths that decide a row's start.

    `skid_take`, if given, is a copy of `take` (the same value every cycle, from other
    gates) that the skid register's side uses instead, so neither net enables both wide
    registers. The two registers load in groups of bits, each on a cell of its own
    (kept_lut.load_in_groups), so the gates that decide `valid` and `ready` stay beside
    those registers and do not go out to the wide registers' bits and back.

    `skid_view`, if given, is a pair of signals driven with the skid register's valid
    bit and word (the stage loads that word next if it is full, else `value`), so a
    consumer can work out what it needs of the next word from each of the two
    registers, with no mux in front; `valid_next`, if given, is driven with the value
    `valid` takes on the next edge."""
    if skid_take is None:
        skid_take = take
    valid = Signal(name=f"{name}_valid")
    reg = Signal(value.shape(), name=name)
    skid_valid = Signal(name=f"{name}_skid_valid")
    skid = Signal(value.shape(), name=f"{name}_skid")
    ready = ~skid_valid
    loads = ~valid | take
    valid_after_edge = Mux(loads, skid_valid | valid_in, valid)
    m.d.sync += valid.eq(valid_after_edge)
    if valid_next is not None:
        m.d.comb += valid_next.eq(valid_after_edge)
    with m.If(~valid | skid_take):
        m.d.sync += skid_valid.eq(0)
    with m.Elif(ready):
        m.d.sync += skid_valid.eq(valid_in)
    next_word = Mux(skid_valid, skid, value)
    if skid_view is not None:
        m.d.comb += [skid_view[0].eq(skid_valid), skid_view[1].eq(skid)]
    load_in_groups(m, name, _loads_stage, Cat(valid, take), [(reg, next_word)])
    load_in_groups(m, f"{name}_skid", _loads_skid, Cat(valid, skid_take, skid_valid),
                   [(skid, value)])
    return valid, reg, ready


def _loads_stage(valid, take):
    """A skid stage's register loads: it is empty or its word is taken."""
    return ~valid | take


def _loads_skid(valid, skid_take, skid_valid):
    """A skid stage's skid register loads: the stage is full and not taken, and the skid
    register is empty."""
    return valid & ~skid_take & ~skid_valid


def _loads_entry(full, wr_is):
    """An output queue entry loads: it is empty and the one to be written next."""
    return ~full & wr_is


def buffered_output(m, out, word, put, name="out", room_copy=None, room_next=None):
    """Drives stream `out` from a two-entry queue. `word` is taken on a cycle with `put`
    high, which may only be when the returned `room` is high. `room` and `out.valid` are
    registers, and `out.payload` is an entry picked by a register.

    Two entries let `put` go on every cycle while `out` is taken every cycle; a put word
    is on `out` after the edge that takes it when the queue was empty. The entry to be
    written next loads `word` on every cycle it is empty, so `put` only sets a valid bit
    and `word` reaches the entries with no mux in front: neither `put` nor `out.ready`
    fans out to the data. `room` (the entry to be written next is empty) is worked out a
    cycle ahead, so the producer's decision to put starts at a flip-flop, and so is
    `out.valid`, so the consumer's starts at one too. The entries are wide and their bits
    lie wherever the word's bits go: they load in groups of bits, each on a cell of its own
    (kept_lut.load_in_groups) made of the queue's registers, which the placer can put
    among them.

    `room_copy`, if given, is driven with a copy of `room` in flip-flops of its own
    (RegisterCopy), for a producer whose control sits away from the queue, so no path
    runs from the producer's gates to the queue and back. `room_next`, if given, is
    driven with the value `room` takes on the next edge."""
    width = Shape.cast(out.payload.shape()).width
    entries = [Signal(width, name=f"{name}{i}") for i in range(2)]
    full = Signal(2, name=f"{name}_full")
    wr = Signal(name=f"{name}_wr")
    rd = Signal(name=f"{name}_rd")
    valid = Signal(name=f"{name}_valid")
    take = valid & out.ready
    full_next = Signal(2)
    wr_next = Signal()
    rd_next = Signal()
    room_next_value = Signal(name="room_next")
    room = Signal(init=1, name=f"{name}_room")
    for i in range(2):
        m.d.comb += full_next[i].eq((full[i] & ~(take & (rd == i))) | (put & (wr == i)))
    m.d.comb += [
        wr_next.eq(wr ^ put),
        rd_next.eq(rd ^ take),
        room_next_value.eq(~Mux(wr_next, full_next[1], full_next[0])),
    ]
    for i, entry in enumerate(entries):
        load_in_groups(m, f"{name}{i}", _loads_entry, Cat(full[i], wr if i else ~wr),
                       [(entry, word)])
    m.d.sync += [
        full.eq(full_next),
        wr.eq(wr_next),
        rd.eq(rd_next),
        room.eq(room_next_value),
        valid.eq(Mux(rd_next, full_next[1], full_next[0])),
    ]
    m.d.comb += [
        out.valid.eq(valid),
        out.payload.eq(Mux(rd, entries[1], entries[0])),
    ]
    if room_next is not None:
        m.d.comb += room_next.eq(room_next_value)
    if room_copy is not None:
        # Held inverted, so the copy's reset (clear) is room, as `room`'s is.
        copy = m.submodules[f"{name}_room_copy"] = RegisterCopy(1)
        m.d.comb += [copy.d.eq(~room_next_value), room_copy.eq(~copy.q)]
    return room
