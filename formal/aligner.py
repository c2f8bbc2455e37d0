"""The aligner's "any byte" contract, on every row: for a free-but-fixed destination
position (word and lane) and byte value v, if the row offset p that lands there is one
of the row's bytes and every source word's byte at row offset p is v, the destination
byte at p is v; each output word's strobes mark exactly the row's bytes and `last` its
final word; no destination word outside a row. Every position of every row is some
destination position, so the contract holds for every byte.

Rows are free (any offsets, any length the block takes), one in the aligner at a time:
a row is offered once the row before has left whole (its last destination word taken).
The induction invariant says where the row is (set-up registers, source side, merge),
what its registers hold, how many of its words the rotator, the ring and the output
queue hold, and which lane of which of them holds the tracked byte."""

from dataclasses import dataclass

from amaranth.hdl import C, Cat, Elaboratable, Module, Mux, Signal, Value
from amaranth.lib import data
from amaranth.asserts import AnyConst

from hdl.datapath import aligner
from hdl.datapath.aligner import (QUEUE_DEPTH, Aligner, _rotate_slices, _tag_layout,
                                  _word_index_bits, rotate_stages)
from hdl.layouts import LEN_BITS

from .gm_side import output_queue_entries
from .inputs import free, free_stream
from .props import add_block, assume, child, prop, registers, stream_rule
from .runner import Mutation

COUNT_BITS = LEN_BITS + 2       # word counts and byte positions of a row, with room


@dataclass
class Record:
    """The harness's record of the row in the aligner, and the tracked byte."""
    busy: Value             # a row taken whose last destination word is not
    row: Value              # that row (align_row_layout)
    src_taken: Value        # its source words taken
    dst_taken: Value        # its destination words taken
    tracked: Value          # the tracked position is one of the row's bytes
    src_at: tuple           # (word, lane) of its row offset p in the row's source words
    dst_at: tuple           # (word, lane) of p in the row's destination words
    value: Value            # the tracked byte v


@dataclass
class Facts:
    """What the row implies for the aligner's registers, worked out from the record."""
    src_words: Value
    dst_words: Value
    r: Value                # rotate amount, (dst_off - src_off) mod W
    neg: Value              # dst_off < src_off
    tail: Value             # the last output word has a hi word
    end_off: Value          # the last byte's lane in the last output word
    uses0: Value            # output 0 has a hi word
    pops0: Value            # ring entries output 0 retires


def aligner_harness(width_bytes, lane_bits=8):
    """At `lane_bits` bits a lane: the block is bit-sliced (aligner_bit_slices_w*), so a
    byte's 8 bits go as one bit does."""
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", Aligner(width_bytes, lane_bits), mutation)
        record, facts = _record(m, dut, width_bytes, lane_bits)
        free(m, dut.dst.ready)
        stream_rule(m, prop, "dst", dut.dst)
        _contract(m, dut, record, facts, width_bytes)
        _invariant(m, m.submodules["dut"], record, facts, width_bytes)
        return m
    return build


def rotator_harness(width_bytes):
    """Each rotator stage's turn at W = `width_bytes`, as the aligner's _rotator calls it
    (`_rotate_left` on the stage's bits [lo, hi) of the rotate amount, in units of 2^lo
    lanes), on a free word and amount: on a free-but-fixed lane j, so on every lane, the
    turned word's lane j is the word's lane j - amount * 2^lo (mod W)."""
    shift = width_bytes.bit_length() - 1

    def build(mutation):
        m = Module()
        turns = add_block(m, "turns", _Turns(width_bytes), mutation)
        lane = Signal(shift, name="lane")
        m.d.comb += lane.eq(AnyConst(shift))
        for (lo, hi), value, amount, turned in zip(_rotate_slices(width_bytes), turns.words,
                                                   turns.amounts, turns.turned):
            free(m, value, amount)
            prop(m, f"rotator_bits_{lo}_to_{hi}_turn_every_lane",
                 turned.word_select(lane, 8)
                 == value.word_select((lane - (amount << lo))[:shift], 8))
        return m
    return build


class _Turns(Elaboratable):
    """Each of an aligner's rotator stages' turn: `turned[i]` is stage i's turn of
    `words[i]` by `amounts[i]`."""

    def __init__(self, width_bytes):
        slices = _rotate_slices(width_bytes)
        self.words = [Signal(8 * width_bytes, name=f"word_{lo}") for lo, _ in slices]
        self.amounts = [Signal(hi - lo, name=f"amount_{lo}") for lo, hi in slices]
        self.turned = [Signal(8 * width_bytes, name=f"turned_{lo}") for lo, _ in slices]
        self._units = [8 << lo for lo, _ in slices]

    def elaborate(self, platform):
        m = Module()
        for word, amount, unit, turned in zip(self.words, self.amounts, self._units,
                                              self.turned):
            # Looked up as the aligner does, so a mutation patched into it is turned here.
            m.d.comb += turned.eq(aligner._rotate_left(word, amount, unit))
        return m


def _words(first_off, length, width_bytes):
    shift = width_bytes.bit_length() - 1
    return ((first_off + length + width_bytes - 1) >> shift)[:COUNT_BITS]


def _record(m, dut, width_bytes, lane_bits):
    """Takes rows one at a time and feeds each its source words, every one's byte at the
    tracked row offset v; returns the record and the row's facts. The tracked position
    is a free-but-fixed destination word and lane, and each row's tracked row offset p
    the one that lands there: so every check past the rotator reads one fixed lane, not
    a lane worked out from the row's offsets (at W = 16 the induction step takes 174 s,
    not 278 s as with a fixed p)."""
    free_stream(m, "rows", dut.rows)
    free_stream(m, "src", dut.src)
    busy = Signal(name="row_busy")
    row = Signal.like(dut.rows.payload, name="row")
    src_taken = Signal(COUNT_BITS, name="src_taken")
    dst_taken = Signal(COUNT_BITS, name="dst_taken")
    record = Record(busy, row, src_taken, dst_taken,
                    *tracked_byte(m, row, width_bytes, lane_bits))
    offered = dut.rows.payload
    assume(m, "row_not_empty", ~dut.rows.valid | (offered.length != 0))
    assume(m, "one_row_at_a_time", ~dut.rows.valid | ~busy)
    facts = row_facts(row, width_bytes)
    assume(m, "src_words_of_the_row",
           ~dut.src.valid | (busy & (src_taken < facts.src_words)))
    with m.If(dut.src.valid & dut.src.ready):
        m.d.sync += src_taken.eq(src_taken + 1)
    with m.If(dut.dst.valid & dut.dst.ready):
        m.d.sync += dst_taken.eq(dst_taken + 1)
        with m.If(dst_taken + 1 == facts.dst_words):
            m.d.sync += busy.eq(0)
    with m.If(dut.rows.valid & dut.rows.ready):
        m.d.sync += [busy.eq(1), row.eq(offered), src_taken.eq(0), dst_taken.eq(0)]
    assume_src_tracked_byte(m, dut.src, dut.src.valid, src_taken, record, width_bytes)
    return record, facts


def tracked_byte(m, row, width_bytes, lane_bits=8):
    """The tracked byte of `row`: a free-but-fixed destination position and value v of
    `lane_bits` bits. Returns whether the row offset p that lands there is one of the
    row's bytes, p's (word, lane) in the row's source words and in its destination words,
    and v."""
    position = Signal(COUNT_BITS, name="tracked_position")
    value = Signal(lane_bits, name="tracked_value")
    m.d.comb += [position.eq(AnyConst(COUNT_BITS)), value.eq(AnyConst(lane_bits))]
    shift = width_bytes.bit_length() - 1
    spot = (position - row.dst_off)[:COUNT_BITS]
    src_at = (row.src_off + spot)[:COUNT_BITS]
    return ((position >= row.dst_off) & (spot < row.length),
            (src_at[shift:], src_at[:shift]), (position[shift:], position[:shift]), value)


def assume_src_tracked_byte(m, src, in_row, k, record, width_bytes):
    """The row's source word k, offered on `src` while `in_row`, holds v at p."""
    word, lane = record.src_at
    assume(m, "src_tracked_byte_is_v",
           ~(src.valid & in_row & (k == word) & record.tracked)
           | holds_at(src.payload.data, lane, record.value, width_bytes))


def dst_word_contract(m, out, given, k, record, facts, width_bytes):
    """Destination word `out`, given while `given` as the row's k-th: `last` on the row's
    final word, strobes on the row's bytes, v at p."""
    prop(m, "dst_last_on_rows_final_word", ~given | (out.last == (k + 1 == facts.dst_words)))
    for lane in range(width_bytes):
        prop(m, f"dst_strb_{lane}_marks_the_rows_bytes",
             ~given | (out.strb[lane] == row_byte(k, lane, record.row, facts)))
    word, lane = record.dst_at
    prop(m, "dst_tracked_byte_arrives",
         ~(given & record.tracked & (k == word))
         | holds_at(out.data, lane, record.value, width_bytes))


def row_facts(row, width_bytes):
    shift = width_bytes.bit_length() - 1
    src_words = _words(row.src_off, row.length, width_bytes)
    dst_words = _words(row.dst_off, row.length, width_bytes)
    neg = row.src_off > row.dst_off
    # The last output word (dst_words - 1) has a hi word when the source has a word past
    # its lo word (dst_words - 1 + neg).
    tail = dst_words + neg <= src_words
    single = dst_words == 1
    uses0 = neg & (~single | tail)
    return Facts(src_words, dst_words, (row.dst_off - row.src_off)[:shift], neg, tail,
                 (row.dst_off + row.length - 1)[:shift], uses0,
                 Mux(single, 1 + uses0, neg))


def row_byte(k, lane, row, facts):
    """Lane `lane` of the row's k-th destination word is one of the row's bytes."""
    return (((k != 0) | (lane >= row.dst_off))
            & ((k + 1 != facts.dst_words) | (lane <= facts.end_off)))


def _dst_word_holds(word, k, record, facts, width_bytes):
    """Destination word `word` (dst_word_layout) is the row's k-th: `last` on its final
    word, strobes on the row's bytes, the tracked byte in its lane."""
    test = (word.last == (k + 1 == facts.dst_words)) & (k < facts.dst_words)
    for lane in range(width_bytes):
        test &= word.strb[lane] == row_byte(k, lane, record.row, facts)
    tracked_word, tracked_lane = record.dst_at
    return test & (~(record.tracked & (k == tracked_word))
                   | holds_at(word.data, tracked_lane, record.value, width_bytes))


def _contract(m, dut, record, facts, width_bytes):
    out = dut.dst.payload
    offered, k = dut.dst.valid, record.dst_taken
    prop(m, "dst_only_within_a_row", ~offered | (record.busy & (k < facts.dst_words)))
    dst_word_contract(m, out, offered, k, record, facts, width_bytes)


def _invariant(m, fragment, record, facts, width_bytes):
    """The induction invariant: the aligner's registers tied to the record."""
    regs = registers(fragment)
    stages = rotate_stages(width_bytes)
    rot_valid = [regs[f"rot{i}_valid"] for i in range(stages)]
    in_rotator = sum(rot_valid)
    filled = regs["filled"]
    in_ring = sum(filled[i] for i in range(QUEUE_DEPTH))
    out_full = regs["out_full"]
    in_output = out_full[0] + out_full[1]
    emitted = (record.dst_taken + in_output)[:COUNT_BITS]
    loaded = _setup_invariant(m, regs, record, facts, width_bytes)
    _source_invariant(m, fragment, regs, record, facts, loaded, width_bytes)
    empty = (in_rotator == 0) & (in_ring == 0)
    entering, have_head = regs["row_enters"], regs["have_head"]
    # One row at a time: once it is set up, its tag enters the merge (row_enters) a cycle
    # after the source side loads it, and the head row register on the next edge, as no
    # row is ahead of it; the head row is let go when its last output word is put into
    # the output queue, which has all the row's source words.
    prop(m, "aligner_merge_follows_the_row",
         (~loaded | entering | have_head | (emitted == facts.dst_words))
         & (~entering | (~have_head & (emitted == 0) & (record.src_taken == 0)
                         & empty & regs["have_row0"]))
         & (~have_head | (loaded & (emitted < facts.dst_words)))
         & (have_head | empty | entering)
         & (~loaded | have_head | entering | (record.src_taken == facts.src_words)))
    retired = Mux(emitted == 0, 0, emitted - 1 + facts.neg)
    prop(m, "aligner_words_taken_are_retired_ringed_or_rotating",
         ~have_head | (record.src_taken == retired + in_ring + in_rotator))
    ring_invariant(m, regs, in_ring)
    _merge_invariant(m, fragment, regs, record, facts, emitted, width_bytes)
    _data_invariant(m, regs, record, facts, (rot_valid, retired), width_bytes)
    _idle_invariant(m, regs, record, (in_rotator, in_ring, in_output))


def _idle_invariant(m, regs, record, held):
    """With no row in it, or its row still in the set-up registers, the aligner holds no
    word and no row past them."""
    in_rotator, in_ring, in_output = held
    ends, setup = regs["row_ends_valid"], regs["row_setup_valid"]
    holds_nothing = (~regs["have_row0"] & ~regs["row_enters"] & ~regs["have_head"]
                     & (in_rotator == 0) & (in_ring == 0) & (in_output == 0))
    nothing_past_setup = holds_nothing & (record.src_taken == 0) & (record.dst_taken == 0)
    # One row at a time: it is in one of the two set-up registers, never in a skid
    # register (a stage takes a row while it is empty), and then past them.
    prop(m, "aligner_setup_skids_empty",
         ~regs["row_ends_skid_valid"] & ~regs["row_setup_skid_valid"])
    prop(m, "aligner_idle_without_a_row",
         record.busy | (~ends & ~setup & holds_nothing))
    prop(m, "aligner_row_in_one_setup_register",
         (~ends | (record.busy & ~setup & nothing_past_setup))
         & (~setup | (record.busy & ~ends & nothing_past_setup)))


def _tag_holds(tag, row, facts):
    """`tag` (the aligner's _tag_layout) is the row's."""
    return ((tag.r == facts.r) & (tag.neg == facts.neg) & (tag.tail == facts.tail)
            & (tag.lout == facts.dst_words - 1) & (tag.dst_off == row.dst_off)
            & (tag.end_off == facts.end_off) & (tag.single == (facts.dst_words == 1))
            & (tag.pair == (facts.dst_words == 2)) & (tag.uses0 == facts.uses0)
            & (tag.pops0 == facts.pops0))


def ends_layout(width_bytes):
    """The first set-up register's word: the row's ends."""
    shift = width_bytes.bit_length() - 1
    return data.StructLayout({"src_end": LEN_BITS + 1, "dst_end": LEN_BITS + 1, "r": shift,
                              "neg": 1, "dst_off": shift})


def setup_layout(width_bytes):
    """The second set-up register's word: the row's tag and source word count."""
    return data.StructLayout({"tag": _tag_layout(width_bytes),
                              "src_left": _word_index_bits(width_bytes), "src_last": 1})


def ends_hold(ends, row, facts):
    """`ends` (ends_layout) are `row`'s."""
    return ((ends.src_end == row.src_off + row.length - 1)
            & (ends.dst_end == row.dst_off + row.length - 1)
            & (ends.r == facts.r) & (ends.neg == facts.neg) & (ends.dst_off == row.dst_off))


def setup_holds(setup, row, facts):
    """`setup` (setup_layout) is `row`'s tag and source word count."""
    return (_tag_holds(setup.tag, row, facts) & (setup.src_left == facts.src_words - 1)
            & (setup.src_last == (facts.src_words == 1)))


def source_side_holds(regs, row, facts, taken, width_bytes):
    """The source side holds `row`, `taken` of its source words taken: its tag and the
    words still to come."""
    tag = data.View(_tag_layout(width_bytes), regs["tag"])
    src_left = regs["src_left"]
    return ((taken < facts.src_words) & _tag_holds(tag, row, facts)
            & (src_left == facts.src_words - 1 - taken)
            & (regs["src_last0"] == (src_left == 0)))


def head_holds(regs, row, facts, width_bytes):
    """The merge's head register holds `row`."""
    return (merge_row_holds(regs["head"], row, facts, width_bytes)
            & (regs["head_lout"] == facts.dst_words - 1) & (regs["head_tail"] == facts.tail))


def _setup_invariant(m, regs, record, facts, width_bytes):
    """The set-up registers hold the row's ends, then its tag and source word count.
    Returns whether the row is past them."""
    ends = ends_layout(width_bytes)(regs["row_ends"])
    setup = setup_layout(width_bytes)(regs["row_setup"])
    prop(m, "aligner_row_ends_are_the_rows",
         ~regs["row_ends_valid"] | ends_hold(ends, record.row, facts))
    prop(m, "aligner_row_setup_is_the_rows",
         ~regs["row_setup_valid"] | setup_holds(setup, record.row, facts))
    return record.busy & ~regs["row_ends_valid"] & ~regs["row_setup_valid"]


def _source_invariant(m, fragment, regs, record, facts, loaded, width_bytes):
    """The source side holds the row until its last source word is taken, counting the
    words still to come; its four copies of the handshake state agree."""
    have_row = regs["have_row0"]
    source_handshake_holds(m, fragment, regs, width_bytes)
    prop(m, "aligner_source_side_holds_the_row",
         ~have_row | (loaded & source_side_holds(regs, record.row, facts, record.src_taken,
                                                 width_bytes)))
    prop(m, "aligner_source_side_done_after_its_last_word",
         ~loaded | have_row | (record.src_taken == facts.src_words))


def source_handshake_holds(m, fragment, regs, width_bytes):
    """The source side's four copies of its handshake state agree, `src.ready` says the
    rotator has room, and the rotator's copies of its hold agree."""
    have_row, src_ready, src_last = regs["have_row0"], regs["src_ready0"], regs["src_last0"]
    # The copies load the same values from the same inputs.
    for k in range(1, 4):
        prop(m, f"aligner_source_copy_{k}_agrees",
             (regs[f"have_row{k}"] == have_row) & (regs[f"src_ready{k}"] == src_ready)
             & (regs[f"src_last{k}"] == src_last)
             & (regs[f"src_ready_last{k}"] == regs["src_ready_last0"]))
    # src.ready was worked out a cycle ahead from the rotator's room: a word taken
    # always finds the rotator advancing.
    last_valid = regs[f"rot{rotate_stages(width_bytes) - 1}_valid"]
    prop(m, "aligner_source_ready_with_room",
         (regs["src_ready_last0"] == (src_ready & src_last))
         & (~src_ready | (have_row & (~last_valid | ~regs["full"]))))
    for i in range(rotate_stages(width_bytes)):
        for g in range(2):
            hold = registers(child(fragment, f"rot{i}_{g}_hold"))["q"]
            prop(m, f"aligner_rotator_{i}_{g}_hold_copies_agree",
                 hold == Cat(last_valid, regs["full"]))


def ring_invariant(m, regs, in_ring):
    """The ring holds its words at rd, rd + 1, ...: its fill thermometer, live bits, write
    pointer and flags agree."""
    filled, rd, wr, live = regs["filled"], regs["rd"], regs["wr"], regs["live"]
    prop(m, "aligner_ring_fill_is_a_thermometer",
         Cat(*(~filled[i + 1] | filled[i] for i in range(QUEUE_DEPTH - 1))).all())
    prop(m, "aligner_ring_write_pointer_past_its_words",
         wr == (rd + in_ring)[:len(wr)])
    for e in range(QUEUE_DEPTH):
        prop(m, f"aligner_ring_entry_{e}_live_while_held",
             live[e] == ((e - rd)[:len(rd)] < in_ring))
    prop(m, "aligner_ring_flags_follow_fill",
         (regs["full"] == filled[QUEUE_DEPTH - 1])
         & (regs["almost_full"] == (filled[QUEUE_DEPTH - 2] & ~filled[QUEUE_DEPTH - 1])))


def merge_row_checks(value, row, facts, width_bytes):
    """`value` (the merge's row) is `row`'s: {field: its check}, for the tag and each of
    its lane masks (`lo` the lanes below r, `head` those from the row's first destination
    lane, `tail` those to its last)."""
    merge_row = data.View(data.StructLayout({
        "tag": _tag_layout(width_bytes), "lo": width_bytes, "head": width_bytes,
        "tail": width_bytes}), value)
    lanes = range(width_bytes)
    return {"tag": _tag_holds(merge_row.tag, row, facts),
            "lo": Cat(merge_row.lo[lane] == (lane < facts.r) for lane in lanes).all(),
            "head": Cat(merge_row.head[lane] == (lane >= row.dst_off) for lane in lanes).all(),
            "tail": Cat(merge_row.tail[lane] == (lane <= facts.end_off)
                        for lane in lanes).all()}


def merge_row_holds(value, row, facts, width_bytes):
    """`value` (the merge's row: the tag and its lane masks) is `row`'s."""
    checks = merge_row_checks(value, row, facts, width_bytes).values()
    return Cat(*checks).all()


def _merge_invariant(m, fragment, regs, record, facts, emitted, width_bytes):
    """The merge's head row is the row, and its control registers say what output word
    `emitted` (the next) is and retires; the copies of them agree."""
    have_head = regs["have_head"]
    prop(m, "aligner_entering_row_is_the_rows",
         ~regs["row_enters"] | merge_row_holds(regs["entering"], record.row, facts,
                                                width_bytes))
    # The row enters the head register straight away (no row ahead of it), so the row
    # queue stays empty.
    queue = registers(child(fragment, "row_queue"))
    prop(m, "aligner_row_queue_empty",
         ~queue["r_rdy"] & (queue["held"] == 0) & ~queue["has_head"] & queue["has_room"]
         & (queue["w_ptr"] == queue["r_ptr"]))
    # Output k = emitted: the first, the last, the one before the last; each output but
    # the first retires its lo word, the last its hi word too if it has one.
    prop(m, "aligner_head_row_is_the_rows",
         ~have_head | head_holds(regs, record.row, facts, width_bytes))
    merge_control_holds(m, fragment, regs, facts, emitted)
    output_queue_entries(m, "aligner_output_queue", regs, "out")
    prop(m, "aligner_emitted_within_the_row", emitted <= facts.dst_words)


def merge_control_holds(m, fragment, regs, facts, emitted):
    """The merge's control registers say what the head row's next output word is, the
    row's `emitted` words out (its `facts`, formal.aligner.row_facts)."""
    have_head, first, last = regs["have_head"], regs["first"], regs["last"]
    uses_hi, pops_if, filled = regs["uses_hi"], regs["pops_if"], regs["filled"]
    prop(m, "aligner_merge_counts_the_output_word",
         ~have_head | ((first == (emitted == 0))
                       & (first | (regs["out_left"] == facts.dst_words - 1 - emitted))
                       & (last == (emitted + 1 == facts.dst_words))
                       & (regs["next_last"] == (emitted + 2 == facts.dst_words))))
    prop(m, "aligner_merge_knows_what_the_output_word_needs",
         ~have_head | ((uses_hi == Mux(first, facts.uses0, ~last | facts.tail))
                       & (pops_if == Mux(first, facts.pops0, 1 + (last & facts.tail)))
                       & (regs["ends_if"] == (last & (~uses_hi | filled[1])))))
    # With no head row the head register loads on every edge, which sets `first`.
    prop(m, "aligner_merge_first_without_a_head", have_head | first)
    # Registers worked out with the ones they copy or are made of, from the same values.
    prop(m, "aligner_merge_retires_if_follows",
         regs["retires_if"] == (filled[0] & (~uses_hi | filled[1]) & pops_if.any()))
    lane_copy = registers(child(fragment, "lane_copy"))["q"]
    prop(m, "aligner_lane_copies_agree", lane_copy == Cat(regs["rd"], uses_hi, ~first, last))
    room_copy = registers(child(fragment, "out_room_copy"))["q"]
    prop(m, "aligner_room_copy_agrees", room_copy == ~regs["out_room"])


def holds_at(entry, lane_now, value, width_bytes):
    """Byte lane `lane_now` of `entry` is `value`: one implication per lane, which the
    solver takes lane by lane more readily than one variable byte select."""
    test = C(1, 1)
    for lane in range(width_bytes):
        test &= (lane_now != lane) | (entry.word_select(lane, len(value)) == value)
    return test


def carries(entry, word, still_to_turn, record, width_bytes):
    """`entry` (a word of W lanes), the row's source word `word` rotated left by r
    less `still_to_turn` (the low bits of r that later stages resolve), holds the
    tracked byte in the destination lane less that amount, if it is that byte's word
    and the tracked position is one of the row's bytes."""
    shift = width_bytes.bit_length() - 1
    tracked_word, _ = record.src_at
    _, dst_lane = record.dst_at
    return ((word != tracked_word) | ~record.tracked
            | holds_at(entry, (dst_lane - still_to_turn)[:shift], record.value,
                        width_bytes))


def _data_invariant(m, regs, record, facts, counts, width_bytes):
    """Where the tracked byte is: each rotator stage holds a source word rotated by the
    amount bits it and the stages before it resolve, each ring entry one rotated by r,
    each output queue entry a destination word of the row."""
    rot_valid, retired = counts
    lane_bits = len(record.value)
    entry_layout = data.StructLayout({"data": lane_bits * width_bytes,
                                      "r": width_bytes.bit_length() - 1})
    for i, (lo, _) in enumerate(_rotate_slices(width_bytes)):
        stage = data.View(entry_layout, regs[f"rot{i}"])
        # The stages move together: stage i holds the word taken before those of the
        # valid stages ahead of it.
        word = record.src_taken - 1 - sum(rot_valid[:i])
        prop(m, f"aligner_rotator_{i}_holds_its_word",
             ~rot_valid[i] | ((stage.r == facts.r)
                              & carries(stage.data, word, facts.r[:lo], record,
                                         width_bytes)))
    rd, live = regs["rd"], regs["live"]
    for e in range(QUEUE_DEPTH):
        word = retired + (e - rd)[:len(rd)]
        prop(m, f"aligner_ring_entry_{e}_holds_its_word",
             ~live[e] | carries(regs[f"ring{e}"], word, facts.r[:0], record, width_bytes))
    layout = aligner.dst_word_layout(width_bytes, lane_bits)
    full, out_rd = regs["out_full"], regs["out_rd"]
    for i in range(2):
        k = record.dst_taken + (i - out_rd)[:1]
        prop(m, f"aligner_output_entry_{i}_holds_its_word",
             ~full[i] | _dst_word_holds(data.View(layout, regs[f"out{i}"]), k, record,
                                        facts, width_bytes))


def _rotated_one_lane_more(rotate_left):
    def patched(value, amount, unit):
        return rotate_left(value, amount, unit).rotate_left(unit)
    return patched


ROTATOR_OFF = Mutation("rotator_one_lane_off", "each rotator stage turns one lane more",
                       ((aligner, "_rotate_left", _rotated_one_lane_more(aligner._rotate_left)),))


def _first_kept_on_a_new_row(output_control):
    """The merge's `first` not set when a new head row loads: it is set at reset, so the
    first row is right, and a row after one of two or more output words starts at k > 0."""
    def patched(m, merge, ring, filling, loading, index_bits):
        first_next, last_next, uses_hi_next = output_control(m, merge, ring, filling,
                                                             loading, index_bits)
        kept = Signal()
        m.d.comb += kept.eq(Mux(loading[1], merge.first, first_next))
        m.d.sync += merge.first.eq(kept)
        return kept, last_next, uses_hi_next
    return staticmethod(patched)


FIRST_KEPT = Mutation("first_kept_on_a_new_row", "the merge's `first` is not set when "
                      "the next row's head loads", ((aligner.Aligner, "_output_control",
                      _first_kept_on_a_new_row(aligner.Aligner._output_control)),))
