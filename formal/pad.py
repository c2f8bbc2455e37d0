"""The pad stage's contract, on every row: following a free-but-fixed row number and byte
lane, the row's UB writes are its words in address order, `last` on the final one and
`cmd_last` with it if the row ends its command; the lane's strobe is set exactly where
the lane lies in [ub_addr, ub_addr + extent) (select = 0: [ub_addr, ub_addr + length));
and the lane's byte is, at a data byte's address, that of the data word the stage takes
as it writes that UB word, else the pad byte of its address (byte x mod 8 of pad8). No
word goes out for a row not taken. Rows are free within what RowJob gives (length >= 1;
select = 1: left + length <= extent; inside UB): any length, anywhere in UB.

The data words are the aligner's: while the stage writes the followed row's UB word k
and takes a data word, that word is the one whose bytes fall in UB word k, so the
tracked lane's strobe marks whether the lane's address is a data byte. That is the
aligner's stream because the stage takes one data word for each UB word holding data,
in turn, and none for the others, which the sequencer's group proves of every row. The
tracked lane's byte of that data word is the low 8 bits of UB word k's address, so a
byte written from another word shows, and one from another lane shows as the other
lanes are free.

The proof is in four parts, each a group (PARTS): the input and set-up stages, the word
sequencer, the output queue, the UB writes. Each part's induction invariant ties the
registers of its part that can hold the followed row to the harness's record of it,
taking the invariants of the parts before as assumptions (each proved by its own group)
and leaving those after out, so no one induction holds the whole stage."""

from dataclasses import dataclass

from amaranth.asserts import AnyConst
from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib import data, stream

from hdl.datapath import pad
from hdl.datapath.pad import (ROW_LOAD_GROUPS, PadInserter, PadRow, _loads_row, spots_layout,
                              ub_write_layout)
from hdl.layouts import EXTENT_BITS
from hdl.lib.arith import sum_mod
from hdl.lib.stream import buffered_output
from model.isa import UB_ADDR_BITS

from .gm_side import output_queue_entries
from .inputs import free, free_stream
from .props import add_block, assume, counter, follow, prop, registers, stream_rule
from .runner import Mutation

# Rows numbered modulo 2^ROW_NUMBER_BITS, more than the stage holds: two in each of its
# input and set-up stages, the one it writes and the rows of its two queued words.
ROW_NUMBER_BITS = 3
# Byte offsets within a row's words, from byte 0 of its first word: up to W - 1 + extent.
OFFSET_BITS = EXTENT_BITS + 2
# Data words taken counted modulo 256: a row's count since it loaded is checked mod 256.
DATA_COUNT_BITS = 8


@dataclass
class RowFacts:
    """The followed row as the stage's contract reads it, offsets from byte 0 of the
    row's first UB word."""
    row: Value              # the PadRow as taken
    start_word: Value       # UB word of its first byte
    head: Value             # offset of its first byte
    data_start: Value       # offset of its first data byte
    data_end: Value         # offset past its last data byte
    row_end: Value          # offset past its last byte
    words_m1: Value         # its UB words - 1
    first_data: Value       # index of its first UB word holding data
    last_data: Value        # index of its last UB word holding data


# The parts of the proof, in order: each proves its invariant taking those before as
# assumptions (proved by the groups before). The whole stage's invariant in one induction
# did not end in 16 minutes at W = 8; the four parts take 3 s to 7 minutes each.
PARTS = ("setup", "sequencer", "queue", "stage")


def _checks(part):
    """For each part of the proof, how group `part` checks its properties: those of the
    parts before are assumed, its own asserted, those after left out."""
    def skip(m, name, test):
        pass
    at = PARTS.index(part)
    return {name: (assume if k < at else prop if k == at else skip)
            for k, name in enumerate(PARTS)}


def pad_harness(width_bytes, part):
    checks = _checks(part)

    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", PadInserter(width_bytes), mutation)
        regs = registers(m.submodules["dut"])
        shift = width_bytes.bit_length() - 1
        lane = Signal(shift, name="tracked_lane")
        m.d.comb += lane.eq(AnyConst(shift))
        taken, followed = _take_rows(m, dut.rows)
        facts = _facts(followed.payload, width_bytes)
        free(m, dut.ub.ready)
        written, index = _count_writes(m, dut.ub)
        counts = _row_counts(m, regs, taken, written)
        given, base = _feed_data(m, dut.data, regs, counts, followed.number, lane, facts)
        walked_k = (facts.words_m1 - regs["rest"])[:len(regs["rest"])]
        _setup_invariant(m, checks["setup"], regs, counts, followed, facts, width_bytes)
        _sequencer_invariant(m, checks["sequencer"], regs, counts.walks(followed.number),
                             facts, walked_k, lane, (given, base))
        if part in ("queue", "stage"):
            stream_rule(m, checks["queue"], "ub", dut.ub)
            _queue_invariant(m, checks["queue"], regs, counts, (written, index),
                             followed.number, facts, walked_k, lane)
            _check_writes(m, checks["stage"], dut.ub.payload,
                          dut.ub.valid & (written == followed.number), facts, index, lane)
        return m
    return build


def _left_and_extent(row):
    """The row's left pad and extent as the stage writes them: with select = 0, none and
    its length."""
    return Mux(row.select, row.left, 0), Mux(row.select, row.extent, row.length)


def _is_row_job(row):
    """What RowJob gives: length >= 1; select = 1: left + length <= extent; inside UB."""
    left, extent = _left_and_extent(row)
    return ((row.length != 0) & (left + row.length <= extent)
            & (row.ub_addr + extent <= 1 << UB_ADDR_BITS))


def _take_rows(m, rows):
    """Rows offered as RowJob gives them, numbered as taken; one followed."""
    free_stream(m, "rows", rows)
    assume(m, "rows_as_row_job_gives", ~rows.valid | _is_row_job(rows.payload))
    taken = counter(m, "rows_taken", rows.valid & rows.ready, ROW_NUMBER_BITS)
    return taken, follow(m, "row", rows, taken)


def _facts(payload, width_bytes):
    """The followed row's RowFacts from the PadRow taken."""
    shift = width_bytes.bit_length() - 1
    row = data.View(PadRow, payload)
    left, extent = _left_and_extent(row)
    head = row.ub_addr[:shift]
    data_start = (head + left)[:OFFSET_BITS]
    data_end = (data_start + row.length)[:OFFSET_BITS]
    row_end = (head + extent)[:OFFSET_BITS]
    return RowFacts(row, row.ub_addr[shift:], head, data_start, data_end, row_end,
                    (row_end - 1)[shift:OFFSET_BITS], data_start[shift:],
                    (data_end - 1)[shift:OFFSET_BITS])


@dataclass
class RowCounts:
    """Where the rows taken are: the first `loaded` went to the word sequencer, the one
    it writes (if `have_row`) numbered `loaded` - 1, the rest in the set-up stages."""
    taken: Value
    loaded: Value
    have_row: Value
    written: Value

    def walks(self, number):
        """The word sequencer writes row `number`."""
        return self.have_row & ((self.loaded - 1)[:ROW_NUMBER_BITS] == number)


def _row_counts(m, regs, taken, written):
    in_setup = (regs["row_in_valid"] + regs["row_in_skid_valid"] + regs["row_spots_valid"]
                + regs["row_spots_skid_valid"])
    loaded = Signal(ROW_NUMBER_BITS, name="rows_loaded")
    m.d.comb += loaded.eq(taken - in_setup)
    return RowCounts(taken, loaded, regs["have_row0"], written)


def _count_writes(m, ub):
    """Rows written whole (their `last` word taken) and the words of the next taken."""
    go = ub.valid & ub.ready
    written = counter(m, "rows_written", go & ub.payload.last, ROW_NUMBER_BITS)
    index = Signal(OFFSET_BITS, name="ub_word_in_row")
    with m.If(go):
        m.d.sync += index.eq(Mux(ub.payload.last, 0, index + 1))
    return written, index


def _lane_spot(facts, k, lane):
    """Whether the tracked lane of the row's UB word k is one of its bytes, and one of its
    data bytes."""
    offset = Cat(lane, k)
    return ((offset >= facts.head) & (offset < facts.row_end),
            (offset >= facts.data_start) & (offset < facts.data_end))


def _lane_spot_by_word(facts, k, lane):
    """_lane_spot's answer from word indices and lanes apart, as the stage's registers
    hold them, which the solver finds far easier than the offsets' compares."""
    shift = len(lane)

    def within(first, first_lane, last, last_lane):
        return (((k > first) | ((k == first) & (lane >= first_lane)))
                & ((k < last) | ((k == last) & (lane <= last_lane))))
    return (within(0, facts.head, facts.words_m1, (facts.row_end - 1)[:shift]),
            within(facts.first_data, facts.data_start[:shift], facts.last_data,
                   (facts.data_end - 1)[:shift]))


def _word_parts(facts, k, lane, spot=_lane_spot):
    """The row's UB word k as the contract has it: (addr, last, cmd_last, the tracked
    lane's strobe, the byte it holds there if written: a data byte's is its data word's,
    which carries the low 8 bits of the address of the UB word it is taken for)."""
    covered, is_data = spot(facts, k, lane)
    final = k == facts.words_m1
    addr = (facts.start_word + k)[:UB_ADDR_BITS]
    byte = Mux(is_data, addr[:8], facts.row.pad8.word_select(lane[:3], 8))
    return addr, final, final & facts.row.last, covered, byte


def _is_word(word, facts, k, lane):
    """Whether UB write `word` is the row's word k on the tracked lane, part by part:
    {part: whether it is}."""
    addr, final, cmd_last, covered, byte = _word_parts(facts, k, lane, _lane_spot_by_word)
    return {"address": (word.addr == addr[:len(word.addr)]) & (k <= facts.words_m1),
            "last": (word.last == final) & (word.cmd_last == cmd_last),
            "strobe": word.strb.bit_select(lane, 1) == covered,
            "byte": ~covered | (word.data.word_select(lane, 8) == byte)}


def _check_writes(m, check, write, followed_valid, facts, index, lane):
    """The contract on each UB word of the followed row, the `index`-th it writes."""
    addr, final, cmd_last, covered, byte = _word_parts(facts, index, lane)
    valid = followed_valid
    check(m, "ub_words_in_address_order", ~valid | (write.addr == addr[:len(write.addr)]))
    check(m, "ub_last_on_rows_final_word", ~valid | (write.last == final))
    check(m, "ub_cmd_last_on_commands_final_word", ~valid | (write.cmd_last == cmd_last))
    check(m, "strb_covers_exactly_the_row",
          ~valid | (write.strb.bit_select(lane, 1) == covered))
    check(m, "byte_is_its_data_or_pad",
          ~(valid & covered) | (write.data.word_select(lane, 8) == byte))


def _feed_data(m, words, regs, counts, number, lane, facts):
    """The aligner's data words: while the stage writes the followed row's data words,
    the word offered is the one for the UB word written, its tracked lane's strobe that
    of the lane's address and its byte there the low 8 bits of the UB word's address
    (the sequencer's `addr`, which its group proves is the row's start + k). Returns the
    data words taken and, once the followed row is loaded, those taken before its first."""
    free_stream(m, "data", words)
    taking = words.valid & words.ready
    given = counter(m, "data_words_taken", taking, DATA_COUNT_BITS)
    base = Signal(DATA_COUNT_BITS, name="followed_row_data_base")
    loads = _loads_row(regs["have_row0"], regs["in_data0"], regs["end0"], regs["out_room"],
                       words.valid)
    # The row before may take its last data word on the edge the row loads.
    with m.If(loads & regs["row_spots_valid"] & (counts.loaded == number)):
        m.d.sync += base.eq(given + taking)
    k = (facts.words_m1 - regs["rest"])[:len(regs["rest"])]
    _, is_data = _lane_spot_by_word(facts, k, lane)
    offered = words.valid & counts.walks(number) & regs["in_data0"]
    assume(m, "data_tracked_strobe_of_the_followed_rows_word",
           ~offered | (words.payload.strb.bit_select(lane, 1) == is_data))
    assume(m, "data_tracked_lane_tagged_with_its_ub_word",
           ~offered | (words.payload.data.word_select(lane, 8) == regs["addr"][:8]))
    return given, base


def _expected_setup(m, followed, facts, width_bytes):
    """The followed row as the input stage registers it (select = 0: no left pad, its
    extent its length) and as the set-up stage does (its byte positions)."""
    row = facts.row
    incoming = Signal(PadRow, name="followed_row_in")
    m.d.comb += incoming.eq(followed.payload)
    with m.If(~row.select):
        m.d.comb += [incoming.left.eq(0), incoming.extent.eq(row.length)]
    spots = Signal(spots_layout(width_bytes), name="followed_row_spots")
    m.d.comb += [
        spots.addr.eq(facts.start_word),
        spots.head.eq(facts.head),
        spots.first_m1.eq(facts.first_data - 1),
        spots.first_zero.eq(facts.first_data == 0),
        spots.data_end.eq(facts.data_end - 1),
        spots.row_end.eq(facts.row_end - 1),
        spots.pad8.eq(row.pad8),
        spots.last.eq(row.last),
    ]
    return incoming, spots


def _setup_invariant(m, check, regs, counts, followed, facts, width_bytes):
    """The input and set-up stages, and the five copies of the word sequencer's state
    (which decide when the set-up stage's rows move on), which agree: a skid register
    full only behind its stage's register; the rows they hold those after the ones
    loaded, in turn, the set-up register's the oldest; the followed row, where held, a
    row as RowJob gives it, as taken (input stage) or by its byte positions (set-up
    stage)."""
    copies = range(1, ROW_LOAD_GROUPS)
    check(m, "sequencer_copies_agree",
          Cat(*(regs[f"{field}{i}"] == regs[f"{field}0"]
                for i in copies for field in ("have_row", "in_data", "end"))).all())
    # Rows enter [loaded - have_row, taken) only as they are taken.
    unended = (followed.number - counts.loaded + counts.have_row)[:ROW_NUMBER_BITS]
    check(m, "followed_row_held_as_row_job_gives",
          (unended >= (counts.taken - counts.loaded + counts.have_row)[:ROW_NUMBER_BITS])
          | _is_row_job(facts.row))
    incoming, spots = _expected_setup(m, followed, facts, width_bytes)
    spots_held = regs["row_spots_valid"] + regs["row_spots_skid_valid"]
    stages = (("row_spots", counts.loaded, spots),
              ("row_in", counts.loaded + spots_held, incoming))
    for stage, first, expected in stages:
        check(m, f"{stage}_skid_only_behind_its_register",
              ~regs[f"{stage}_skid_valid"] | regs[f"{stage}_valid"])
        for register, offset in ((stage, 0), (f"{stage}_skid", 1)):
            holds = (regs[f"{register}_valid"]
                     & ((first + offset)[:ROW_NUMBER_BITS] == followed.number))
            check(m, f"{register}_holds_the_followed_row",
                  ~holds | (regs[register] == Value.cast(expected)))


def _sequencer_invariant(m, check, regs, walks, facts, k, lane, data_counts):
    """The word sequencer's count-down flags are those of `rest` while it has a row, and
    while it writes the followed row, word k = words_m1 - rest of it, each register is
    what that row and k make it, and the data words taken since the row loaded are its
    data words before k."""
    rest = regs["rest"]
    check(m, "sequencer_flags_of_rest", ~regs["have_row0"]
          | ((regs["end0"] == (rest == 0)) & (regs["rest_one"] == (rest == 1))))
    given, base = data_counts
    first, last = facts.first_data, facts.last_data
    shift = len(lane)
    check(m, "sequencer_walks_the_followed_row", ~walks | (
        (rest <= facts.words_m1)
        & (regs["addr"] == (facts.start_word + k)[:len(regs["addr"])])
        & (regs["at_start"] == (k == 0))
        & (regs["cmd_last"] == facts.row.last)
        & (regs["pad8"] == facts.row.pad8)))
    check(m, "sequencer_data_words_of_the_followed_row", ~walks | (
        (regs["data_on_p1"] == (facts.words_m1 - first + 2)[:len(regs["data_on_p1"])])
        & (regs["data_off_p1"] == (facts.words_m1 - last + 1)[:len(regs["data_off_p1"])])
        & (regs["rest_on"] == (k + 1 == first))
        & (regs["rest_off"] == (k == last))
        & (regs["in_data0"] == ((k >= first) & (k <= last)))))
    before_k = Mux(k <= first, 0, Mux(k > last, last + 1 - first, k - first))
    check(m, "sequencer_data_taken_for_the_followed_row",
          ~walks | ((given - base)[:DATA_COUNT_BITS] == before_k[:DATA_COUNT_BITS]))
    end_off = (facts.row_end - 1)[:shift]
    check(m, "sequencer_masks_of_the_followed_row", ~walks | (
        (regs["head_mask"].bit_select(lane, 1) == (lane >= facts.head))
        & (regs["tail_mask"].bit_select(lane, 1) == (lane <= end_off))))


def _queue_invariant(m, check, regs, counts, output, number, facts, walked_k, lane):
    """The output queue's flags agree; the rows the sequencer ended and not written
    whole are those of its queued `last` words; a queued word not `last` has its row's
    next word behind it; the followed row's words put are those written and queued, and
    each queued word of it is its word of its place; the followed row, while not written
    whole, a row as RowJob gives it."""
    written, index = output
    width_bytes = len(regs["head_mask"])
    (head_held, head), (second_held, second) = [
        (held, data.View(ub_write_layout(width_bytes), entry))
        for held, entry in output_queue_entries(m, "ub_queue", regs, "out")]
    have_row = counts.have_row
    lasts = (head_held & head.last) + (second_held & second.last)
    check(m, "rows_ended_are_written_or_queued",
          (counts.loaded - have_row - written)[:ROW_NUMBER_BITS] == lasts)
    check(m, "ub_write_only_for_taken_row", ~regs["out_valid"] | (counts.taken != written))
    unwritten = (counts.taken - written)[:ROW_NUMBER_BITS]
    check(m, "followed_row_unwritten_as_row_job_gives",
          ((number - written)[:ROW_NUMBER_BITS] >= unwritten) | _is_row_job(facts.row))
    check(m, "queued_word_not_last_has_its_row_behind",
          (~head_held | head.last | second_held | have_row)
          & (~second_held | second.last | have_row))
    walked = (counts.loaded - 1)[:ROW_NUMBER_BITS]
    check(m, "word_index_only_while_its_row_goes",
          (index == 0) | head_held | (have_row & (walked == written)))
    second_row = (written + head.last)[:ROW_NUMBER_BITS]
    head_followed = head_held & (written == number)
    second_followed = second_held & (second_row == number)
    check(m, "followed_rows_words_put_are_written_or_queued",
          ~counts.walks(number)
          | (walked_k == Mux(written == number, index, 0) + head_followed + second_followed))
    second_index = Mux(head.last, 0, index + 1)
    head_is = _is_word(head, facts, index, lane)
    second_is = _is_word(second, facts, second_index, lane)
    for part in head_is:
        check(m, f"queued_words_of_the_followed_row_{part}",
              (~head_followed | head_is[part]) & (~second_followed | second_is[part]))


def _row_end_one_byte_long(terms, width):
    """The pad stage's sums with the row's last byte (extent + head - 1) one too far."""
    if len(terms) == 3 and width == EXTENT_BITS + 1:
        terms = [*terms, 1]
    return sum_mod(terms, width)


def _first_two_lanes_swapped(*parts):
    """The pad stage's Cat of its byte lanes (one list) with lanes 0 and 1 swapped."""
    if len(parts) == 1 and isinstance(parts[0], list):
        lanes = parts[0]
        return Cat(lanes[1], lanes[0], *lanes[2:])
    return Cat(*parts)


def _data_counts_one_word_off(terms, width):
    """The pad stage's sums of where the row's data starts and ends, as counted down from
    its last word (data_on_p1, data_off_p1), each one more."""
    if len(terms) == 3 and isinstance(terms[2], int) and terms[2] == 1:
        terms = [*terms, 1]
    return sum_mod(terms, width)


def _cmd_last_queued_on_every_rows_end(m, out, word, put, *args, **kwargs):
    """The pad stage's output queue given each row's last word with `cmd_last` set."""
    marked = Signal.like(word, name="cmd_last_on_every_rows_end")
    m.d.comb += [marked.eq(word), marked.cmd_last.eq(word.last)]
    return buffered_output(m, out, marked, put, *args, **kwargs)


def _cmd_last_out_on_every_rows_end(m, out, word, put, *args, **kwargs):
    """The pad stage's UB writes given `cmd_last` on each row's last word past its output
    queue, whose registers are as they were."""
    queued = stream.Signature(out.payload.shape()).create()
    room = buffered_output(m, queued, word, put, *args, **kwargs)
    m.d.comb += [out.valid.eq(queued.valid), queued.ready.eq(out.ready),
                 out.payload.eq(queued.payload), out.payload.cmd_last.eq(queued.payload.last)]
    return room


PAD_MUTATIONS = {
    "setup": (Mutation("right_fill_one_byte_long", "the row's last byte written is extent, "
                       "not extent - 1", ((pad, "sum_mod", _row_end_one_byte_long),)),),
    "sequencer": (Mutation("data_counts_one_word_off", "the row's data words counted a "
                           "word off", ((pad, "sum_mod", _data_counts_one_word_off),)),),
    "queue": (Mutation("lanes_0_1_swapped", "the UB word's byte lanes 0 and 1 swapped",
                       ((pad, "Cat", _first_two_lanes_swapped),)),
              Mutation("cmd_last_on_every_rows_end", "each row's last word queued with "
                       "cmd_last", ((pad, "buffered_output",
                                     _cmd_last_queued_on_every_rows_end),))),
    "stage": (Mutation("ub_cmd_last_on_every_rows_end", "each row's last UB write given "
                       "cmd_last past the output queue",
                       ((pad, "buffered_output", _cmd_last_out_on_every_rows_end),)),),
}
