"""The aligner's "any byte" contract on a stream of rows that overlap in the block: rows
of up to 4 W bytes, any offsets, are offered whenever the block takes them, and their
source words whenever the producer has them, so short rows fill the set-up registers,
the row queue and the rotator at once. The harness numbers the rows taken and, across
rows, the source words taken and the destination words given, and keeps a history of
the rows taken (each row and where its words start in the two streams) as long as the
block may hold them; it follows a free-but-fixed row number, and in that row a
free-but-fixed destination position (word and lane) and byte value v, as
formal/aligner.py's one-row harness does: if the row offset p that lands there is one
of the row's bytes and each of the row's source words holds v at p, the destination
byte there is v. Every row is some row number and every position some position, so
the contract holds for every byte of every row. Its words' strobes mark exactly the
row's bytes and `last` its final word; no source word is taken, and no destination
word given, for a row not taken.

The induction invariant numbers the rows wherever the block holds them: in the set-up
registers (rows taken, not yet loaded by the source side), the source side, the merge
(the row entering its row queue, the queue, the head row) and the output queue, from
the rows loaded, the rows whose last word the merge emitted and the rows whose last
word went; each register that holds a row holds the history's row of its number, the
merge's control registers say what the head row's next output word is, and the words
in the rotator and the ring are the ones after the head row's retired words, the
followed row's carrying the tracked byte."""

from dataclasses import dataclass

from amaranth.asserts import AnyConst
from amaranth.hdl import Array, Cat, Module, Mux, Signal, Value
from amaranth.lib import data

from hdl.datapath import aligner
from hdl.datapath.aligner import QUEUE_DEPTH, Aligner, _rotate_slices, rotate_stages

from .aligner import (Record, assume_src_tracked_byte, carries, dst_word_contract, ends_hold,
                      ends_layout, head_holds, holds_at, merge_control_holds,
                      merge_row_checks, merge_row_holds, ring_invariant, row_byte, row_facts,
                      setup_holds, setup_layout, source_handshake_holds,
                      source_side_holds, tracked_byte)
from .gm_side import output_queue_entries, queue_entries, queue_slots
from .inputs import free, free_stream
from .props import (add_block, assume, child, combinational, counter, prop, registers,
                    stream_rule)
from .runner import Mutation

# Rows of at most ROW_WORDS * W bytes: it is short rows that overlap most; formal/
# aligner.py proves rows of every length, one at a time.
ROW_WORDS = 4
# Rows numbered modulo 2^ROW_NUMBER_BITS, more than the block holds: 4 in the set-up
# registers, up to 10 in the merge (the head row, its row queue's 8 at W = 8 and the row
# entering it) and rows ended in the 2-entry output queue.
ROW_NUMBER_BITS = 5
HISTORY = 1 << ROW_NUMBER_BITS
# Words summed over the rows, modulo 2^STREAM_BITS: more than the rows held have (16
# rows of up to 5 source words).
STREAM_BITS = 8


@dataclass
class _Stream:
    """The harness's numbering of rows and words. Rows: `taken` (at `rows`), `loaded`
    (by the source side), `ended` (the merge emitted their last word), `given` (their
    last word went on `dst`). Words: source words taken, destination words given, and
    the words of the rows taken. `history` holds, by row number, each row taken and the
    numbers its source and destination words start at."""
    taken: Value
    loaded: Value
    ended: Value
    given: Value
    src_count: Value
    dst_count: Value
    src_due: Value
    dst_due: Value
    rows: Array
    src_bases: Array
    dst_bases: Array
    width_bytes: int
    lane_bits: int

    def row(self, number):
        return _history_layout(self.width_bytes)(self.rows[number])

    def src_base(self, number):
        """Where row `number`'s source words start; for the row after the last taken,
        the words of the rows taken."""
        return Mux(number == self.taken, self.src_due, self.src_bases[number])

    def dst_base(self, number):
        return Mux(number == self.taken, self.dst_due, self.dst_bases[number])

    def held(self, number, since):
        """Row `number` is one of those taken from row `since` on."""
        return _rows(number - since) < _rows(self.taken - since)


def _history_layout(width_bytes):
    """A row as the history keeps it: its length cut to the bits a short row needs."""
    shift = width_bytes.bit_length() - 1
    return data.StructLayout({"src_off": shift, "dst_off": shift,
                              "length": (ROW_WORDS * width_bytes).bit_length()})


def _rows(value):
    return Value.cast(value)[:ROW_NUMBER_BITS]


def _words(value):
    return Value.cast(value)[:STREAM_BITS]


def aligner_stream_harness(width_bytes, lane_bits=8):
    """At `lane_bits` bits a lane: the block is bit-sliced (aligner_bit_slices_w*), so a
    byte's 8 bits go as one bit does. The invariant is left out of a mutated block's
    harness, so the contract itself must catch each mutation (and a BMC's steps run
    faster without it: at W = 16 step 6 took 11 minutes with it)."""
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", Aligner(width_bytes, lane_bits), mutation)
        free_stream(m, "rows", dut.rows)
        free_stream(m, "src", dut.src)
        free(m, dut.dst.ready)
        stream_rule(m, prop, "dst", dut.dst)
        length = dut.rows.payload.length
        assume(m, "row_not_empty", ~dut.rows.valid | (length != 0))
        assume(m, "row_short", ~dut.rows.valid | (length <= ROW_WORDS * width_bytes))
        fragment = m.submodules["dut"]
        stream = _numbering(m, dut, fragment, width_bytes, lane_bits)
        record, facts = _contract(m, dut, stream)
        if mutation is None:
            _invariant(m, fragment, stream, record, facts)
        return m
    return build


def _numbering(m, dut, fragment, width_bytes, lane_bits):
    """The harness's row and word counts and its history of the rows taken."""
    regs, comb = registers(fragment), combinational(fragment)
    rows_taken = dut.rows.valid & dut.rows.ready
    taken = counter(m, "rows_taken", rows_taken, ROW_NUMBER_BITS)
    # A row the source side loads enters the merge's row queue from `entering` a cycle
    # later: `row_enters` is high on that cycle only.
    entered = counter(m, "rows_entered", regs["row_enters"], ROW_NUMBER_BITS)
    ended = counter(m, "rows_ended", comb["emit"] & regs["last"], ROW_NUMBER_BITS)
    given = counter(m, "rows_given",
                    dut.dst.valid & dut.dst.ready & dut.dst.payload.last, ROW_NUMBER_BITS)
    src_count = counter(m, "src_words_taken", dut.src.valid & dut.src.ready, STREAM_BITS)
    dst_count = counter(m, "dst_words_given", dut.dst.valid & dut.dst.ready, STREAM_BITS)
    offered = row_facts(dut.rows.payload, width_bytes)
    src_due = Signal(STREAM_BITS, name="src_words_of_rows_taken")
    dst_due = Signal(STREAM_BITS, name="dst_words_of_rows_taken")
    layout = _history_layout(width_bytes)
    rows = [Signal(layout.size, name=f"history_row_{n}") for n in range(HISTORY)]
    offered_row = dut.rows.payload
    src_bases = [Signal(STREAM_BITS, name=f"history_src_{n}") for n in range(HISTORY)]
    dst_bases = [Signal(STREAM_BITS, name=f"history_dst_{n}") for n in range(HISTORY)]
    with m.If(rows_taken):
        m.d.sync += [src_due.eq(src_due + offered.src_words),
                     dst_due.eq(dst_due + offered.dst_words)]
        for n in range(HISTORY):
            with m.If(taken == n):
                m.d.sync += [rows[n].eq(Cat(offered_row.src_off, offered_row.dst_off,
                                            offered_row.length)),
                             src_bases[n].eq(src_due),
                             dst_bases[n].eq(dst_due)]
    loaded = _rows(entered + regs["row_enters"])
    return _Stream(taken, loaded, ended, given, src_count, dst_count, src_due, dst_due,
                   Array(rows), Array(src_bases), Array(dst_bases), width_bytes, lane_bits)


def _contract(m, dut, stream):
    """The port contract, on the followed row. Returns its record and facts."""
    width_bytes = stream.width_bytes
    src_taken = dut.src.valid & dut.src.ready
    prop(m, "src_taken_only_for_rows_taken",
         ~src_taken | (stream.src_count != stream.src_due))
    prop(m, "dst_only_for_rows_taken", ~dut.dst.valid | stream.held(stream.given, stream.given))
    number = Signal(ROW_NUMBER_BITS, name="followed_row")
    m.d.comb += number.eq(AnyConst(ROW_NUMBER_BITS))
    row = stream.row(number)
    facts = row_facts(row, width_bytes)
    held = stream.held(number, stream.given)
    src_k = _words(stream.src_count - stream.src_bases[number])
    dst_k = _words(stream.dst_count - stream.dst_bases[number])
    record = Record(held & (dst_k < facts.dst_words), row, src_k, dst_k,
                    *tracked_byte(m, row, width_bytes, stream.lane_bits))
    assume_src_tracked_byte(m, dut.src, held & (src_k < facts.src_words), src_k, record,
                            width_bytes)
    dst_word_contract(m, dut.dst.payload, dut.dst.valid & record.busy, dst_k, record, facts,
                      width_bytes)
    return _Followed(number, record), facts


@dataclass
class _Followed:
    number: Value
    record: Record


def _invariant(m, fragment, stream, followed, facts):
    regs = registers(fragment)
    _history_invariant(m, stream)
    _setup_invariant(m, regs, stream)
    _source_invariant(m, fragment, regs, stream)
    words = _ring_words(m, regs, stream)
    _merge_rows_invariant(m, fragment, regs, stream, words)
    emitted_all = _output_invariant(m, regs, stream, followed)
    emitted = _merge_invariant(m, fragment, regs, stream, emitted_all)
    _words_invariant(m, regs, stream, emitted, words)
    _data_invariant(m, regs, stream, followed, facts, words)


def _history_invariant(m, stream):
    """Each row held (taken, its last word not given) is a row the harness takes, and the
    next row's words start where its words end."""
    width_bytes = stream.width_bytes
    for n in range(HISTORY):
        row = stream.row(n)
        facts = row_facts(row, width_bytes)
        after = (n + 1) % HISTORY
        prop(m, f"history_row_{n}_chains",
             ~stream.held(n, stream.given)
             | ((row.length != 0) & (row.length <= ROW_WORDS * width_bytes)
                & (stream.src_base(after) == _words(stream.src_bases[n] + facts.src_words))
                & (stream.dst_base(after) == _words(stream.dst_bases[n] + facts.dst_words))))


def _setup_invariant(m, regs, stream):
    """The rows taken and not loaded by the source side are in the set-up registers,
    oldest first: the second stage's register, its skid register, the first stage's,
    its skid register (a skid register holds a row only behind a full register)."""
    width_bytes = stream.width_bytes
    ends, setup = ends_layout(width_bytes), setup_layout(width_bytes)
    stages = [(regs["row_setup_valid"], setup(regs["row_setup"]), setup_holds),
              (regs["row_setup_skid_valid"], setup(regs["row_setup_skid"]), setup_holds),
              (regs["row_ends_valid"], ends(regs["row_ends"]), ends_hold),
              (regs["row_ends_skid_valid"], ends(regs["row_ends_skid"]), ends_hold)]
    for stage in ("row_setup", "row_ends"):
        prop(m, f"aligner_{stage}_skid_behind_a_full_register",
             ~regs[f"{stage}_skid_valid"] | regs[f"{stage}_valid"])
    number = stream.loaded
    for k, (valid, word, holds) in enumerate(stages):
        if k == 2:
            number = _rows(stream.loaded + stages[0][0] + stages[1][0])
        elif k:
            number = _rows(number + 1)
        row = stream.row(number)
        prop(m, f"aligner_setup_register_{k}_holds_its_row",
             ~valid | holds(word, row, row_facts(row, width_bytes)))
    prop(m, "aligner_setup_holds_the_rows_not_loaded",
         _rows(stream.taken - stream.loaded) == sum(valid for valid, _, _ in stages))


def _source_invariant(m, fragment, regs, stream):
    """The source side holds the last row loaded until its last source word is taken,
    counting the words still to come; its four copies of the handshake state agree."""
    width_bytes = stream.width_bytes
    have_row = regs["have_row0"]
    source_handshake_holds(m, fragment, regs, width_bytes)
    number = _rows(stream.loaded - 1)
    row = stream.row(number)
    taken = _words(stream.src_count - stream.src_bases[number])
    prop(m, "aligner_source_side_holds_the_last_row_loaded",
         ~have_row | (stream.held(number, stream.given)
                      & source_side_holds(regs, row, row_facts(row, width_bytes), taken,
                                          width_bytes)))
    prop(m, "aligner_source_side_done_after_its_last_word",
         have_row | (stream.src_count == stream.src_base(stream.loaded)))


def _ring_words(m, regs, stream):
    """The words the rotator and the ring hold, the last taken: the rotator stages'
    valid bits, how many, and the number of the ring's oldest word."""
    rot_valid = [regs[f"rot{i}_valid"] for i in range(rotate_stages(stream.width_bytes))]
    held = sum(rot_valid) + sum(regs["filled"][i] for i in range(QUEUE_DEPTH))
    popped = Signal(STREAM_BITS, name="ring_first_word")
    m.d.comb += popped.eq(stream.src_count - held)
    return _RingWords(rot_valid, held, popped)


@dataclass
class _RingWords:
    rot_valid: list
    held: Value
    popped: Value


def _merge_rows_invariant(m, fragment, regs, stream, words):
    """The rows loaded whose last word the merge has not emitted: the head row, the row
    queue's, oldest first, and the row entering the queue, the last loaded. Each but the
    head row has its source words from the ring's oldest on: the queue holds no more rows
    than the ring and the rotator have words, and the row entering it."""
    width_bytes = stream.width_bytes
    have_head, entering = regs["have_head"], regs["row_enters"]
    row_queue = child(fragment, "row_queue")
    entries, level = queue_entries(m, "aligner_row_queue", row_queue)
    prop(m, "aligner_merge_holds_the_rows_loaded_not_ended",
         _rows(stream.loaded - stream.ended) == have_head + level + entering)
    # With no head row the head register loads on every edge, from the queue or the row
    # entering it.
    prop(m, "aligner_row_queue_empty_without_a_head", have_head | (level == 0))

    def holds(value, number):
        row = stream.row(number)
        return merge_row_holds(value, row, row_facts(row, width_bytes), width_bytes)
    def after_the_ring_start(number):
        return _words(stream.src_bases[number] - words.popped) <= words.held
    number = _rows(stream.loaded - 1)
    prop(m, "aligner_entering_row_is_the_last_loaded",
         ~entering | (holds(regs["entering"], number) & after_the_ring_start(number)))
    # Each storage slot's row by the slot's age, not each age's by the slot the read
    # pointer picks (gm_side.queue_slots): at W = 8 a slot's property takes 15 to 90 s
    # in the induction step, an age's up to over 4 minutes.
    for i, (held, entry, age) in enumerate(queue_slots(row_queue)):
        number = _rows(stream.ended + 1 + age)
        prop(m, f"aligner_row_queue_slot_{i}_holds_its_row",
             ~held | (holds(entry, number) & after_the_ring_start(number)))
    # The queue's output register (its next row) a check at a time: at W = 32 the five
    # take 1 to 3 minutes each in the induction step, together over 28 minutes.
    held, entry = entries[0]
    number = _rows(stream.ended + 1)
    row = stream.row(number)
    checks = merge_row_checks(entry, row, row_facts(row, width_bytes), width_bytes)
    for field, check in checks.items():
        prop(m, f"aligner_row_queue_output_holds_its_{field}", ~held | check)
    prop(m, "aligner_row_queue_output_after_the_ring_start",
         ~held | after_the_ring_start(number))
    row = stream.row(stream.ended)
    prop(m, "aligner_head_row_is_the_oldest_not_ended",
         ~have_head | head_holds(regs, row, row_facts(row, width_bytes), width_bytes))


def _word_of_row(word, k, row, facts):
    """Destination word `word` is the k-th of `row`: `last` on its final word, strobes on
    its bytes."""
    test = (k < facts.dst_words) & (word.last == (k + 1 == facts.dst_words))
    for lane in range(len(word.strb)):
        test &= word.strb[lane] == row_byte(k, lane, row, facts)
    return test


def _output_invariant(m, regs, stream, followed):
    """The output queue holds the destination words after those given, of the oldest row
    not given and the row after it; the followed row's carry the tracked byte. Returns
    the words emitted (given or queued)."""
    width_bytes = stream.width_bytes
    layout = aligner.dst_word_layout(width_bytes, stream.lane_bits)
    entries = [(held, layout(word))
               for held, word in output_queue_entries(m, "aligner_output_queue", regs, "out")]
    given = stream.given
    row = stream.row(given)
    facts = row_facts(row, width_bytes)
    base = stream.dst_bases[given]
    prop(m, "aligner_given_words_of_the_oldest_row",
         Mux(stream.held(given, given), _words(stream.dst_count - base) < facts.dst_words,
             stream.dst_count == stream.dst_due))
    prop(m, "aligner_output_queue_holds_the_rows_ended_not_given",
         _rows(stream.ended - given) == sum(held & word.last for held, word in entries))
    after = _rows(given + 1)
    after_row = stream.row(after)
    after_facts = row_facts(after_row, width_bytes)
    record = followed.record
    tracked_word, lane = record.dst_at
    tracked_index = _words(stream.dst_bases[followed.number] + tracked_word)
    followed_held = stream.held(followed.number, given) & record.tracked
    for i, (held, word) in enumerate(entries):
        index = _words(stream.dst_count + i)
        k = _words(index - base)
        in_after = ((k >= facts.dst_words) & stream.held(after, given)
                    & (index == stream.dst_bases[after])
                    & _word_of_row(word, 0, after_row, after_facts))
        prop(m, f"aligner_output_entry_{i}_holds_its_word",
             ~held | (stream.held(given, given)
                      & (_word_of_row(word, k, row, facts) | in_after)))
        prop(m, f"aligner_output_entry_{i}_carries_the_tracked_byte",
             ~(held & followed_held & (index == tracked_index))
             | holds_at(word.data, lane, record.value, width_bytes))
    return _words(stream.dst_count + sum(held for held, _ in entries))


def _merge_invariant(m, fragment, regs, stream, emitted_all):
    """The merge's control registers say what the head row's next output word is and
    retires; the copies of them agree. Returns the head row's words emitted."""
    width_bytes = stream.width_bytes
    have_head = regs["have_head"]
    facts = row_facts(stream.row(stream.ended), width_bytes)
    emitted = Signal(STREAM_BITS, name="head_row_emitted")
    m.d.comb += emitted.eq(emitted_all - stream.dst_bases[stream.ended])
    prop(m, "aligner_head_row_not_yet_ended",
         Mux(have_head, emitted < facts.dst_words,
             emitted_all == stream.dst_base(stream.ended)))
    merge_control_holds(m, fragment, regs, facts, emitted)
    return emitted


def _words_invariant(m, regs, stream, emitted, words):
    """The ring and the rotator hold the source words taken after the head row's retired
    ones (none without a head row)."""
    ring_invariant(m, regs, sum(regs["filled"][i] for i in range(QUEUE_DEPTH)))
    facts = row_facts(stream.row(stream.ended), stream.width_bytes)
    retired = Mux(emitted == 0, 0, emitted - 1 + facts.neg)
    prop(m, "aligner_ring_starts_after_the_head_rows_retired_words",
         ~regs["have_head"]
         | (words.popped == _words(stream.src_bases[stream.ended] + retired)))
    prop(m, "aligner_ring_empty_without_a_head_row",
         regs["have_head"] | ((words.held == 0)
                              & (stream.src_count == stream.src_base(stream.ended))))


def _data_invariant(m, regs, stream, followed, facts, counts):
    """Where the followed row's tracked byte is: each rotator stage holding one of its
    source words holds it rotated by the amount bits that stage and those before it
    resolve, each ring entry one rotated by r."""
    rot_valid, popped = counts.rot_valid, counts.popped
    width_bytes = stream.width_bytes
    number, record = followed.number, followed.record
    in_merge = _rows(number - stream.ended) < _rows(stream.loaded - stream.ended)
    base = stream.src_bases[number]
    entry_layout = data.StructLayout({"data": stream.lane_bits * width_bytes,
                                      "r": width_bytes.bit_length() - 1})
    for i, (lo, _) in enumerate(_rotate_slices(width_bytes)):
        stage = data.View(entry_layout, regs[f"rot{i}"])
        k = _words(stream.src_count - 1 - sum(rot_valid[:i]) - base)
        prop(m, f"aligner_rotator_{i}_holds_its_word",
             ~(rot_valid[i] & in_merge & (k < facts.src_words))
             | ((stage.r == facts.r)
                & carries(stage.data, k, facts.r[:lo], record, width_bytes)))
    rd, live = regs["rd"], regs["live"]
    for e in range(QUEUE_DEPTH):
        k = _words(popped + (e - rd)[:len(rd)] - base)
        prop(m, f"aligner_ring_entry_{e}_holds_its_word",
             ~(live[e] & in_merge & (k < facts.src_words))
             | carries(regs[f"ring{e}"], k, facts.r[:0], record, width_bytes))


def _row_queue_of_two(queue):
    def patched(*, width, depth, split_at=()):
        return queue(width=width, depth=2, split_at=split_at)
    return patched


ROW_QUEUE_SHORT = Mutation("row_queue_of_two", "the merge's row queue holds 2 rows, so "
                           "a row entering it while one waits is lost",
                           ((aligner, "BypassQueue", _row_queue_of_two(aligner.BypassQueue)),))
