"""The byte aligner: moves each row's bytes from any byte offset of the source words to
any byte offset of the destination words, one word in and one word out per cycle.

How it works. Let r = (dst_off - src_off) mod W. Rotating every source word left by r
bytes puts each byte at its destination byte lane; a destination word is then lanes
[0, r) of one rotated source word ("lo") and lanes [r, W) of the next ("hi"). With
dst_off >= src_off, output word k is lo = rotated word k-1, hi = rotated word k; with
dst_off < src_off it is lo = word k, hi = word k+1. So the rotation depends only on the
row, and can be a pipeline that knows nothing of word boundaries; the merge after it
only picks, per lane, between two queued words.

The rotation is a log-shifter split into registered stages that each resolve
ROTATE_BITS = 3 bits of the rotate amount (an 8:1 mux per bit, as a balanced tree of 2:1
muxes on the amount bits; on ECP5, four LUT4s and the slice's PFUMX/L6MUX muxes, one
LUT level), ceil(log2(W) / 3) stages, the first resolving the bits left over: 2 stages
at W = 16, 32 and 64. The merge reads the two oldest entries of a 4-deep queue
and retires up to two per output word: a row whose first output needs two source words
(dst_off < src_off) draws on words the queue took in while an earlier output needed
none, so no row costs a cycle more than the larger of its input and output word counts.

For timing, every wide mux is selected by registers: the queue is a ring read through
registered pointers, the head row's masks and first-word decisions are registers loaded
when that row becomes the head, and the output is a two-entry queue whose entries load
the merged word with no mux in front and which `dst.ready` only steps (see
buffered_output); that queue and the merge's control share no gate, so a route
between the two starts or ends at a flip-flop, never in the middle of a path.
"""

from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..lib.arith import sum_mod
from ..lib.kept_lut import KeptLut, truth_table
from ..lib.muxes import mux_tree
from ..lib.queue import BypassQueue
from ..lib.register_copy import RegisterCopy
from ..lib.stream import buffered_output, skid_stage
from ..layouts import LEN_BITS

# Bits of the rotate amount each rotator stage resolves: an 8:1 mux per data bit.
ROTATE_BITS = 3

# Copies of the decision to load the next row, one per group of flip-flops it enables:
# the row registers, the set-up stage, the set-up stage's skid register and the merge's
# row queue.
ROW_LOAD_GROUPS = 4

# Groups each rotator stage's data is split into, each enabled from its own copies of the
# registers the rotator's hold is made of (see Aligner.elaborate).
ROTATOR_GROUPS = 2

# The merge sees the two oldest entries; two more keep the rotator flowing. A power of
# two: the ring's pointers wrap by truncation.
QUEUE_DEPTH = 4

# Lanes of the merge's row masks whose bits in the row queue's output register take
# their load enable from one cell (they sit with their lanes, across the datapath).
LANE_GROUP = 8


def offset_bits(width_bytes):
    """log2 of a word width in bytes: a power of two of at least 2 bytes."""
    if width_bytes < 2 or width_bytes & (width_bytes - 1):
        raise ValueError(f"word width must be a power of two of at least 2 bytes, "
                         f"not {width_bytes}")
    return width_bytes.bit_length() - 1


def rotate_stages(width_bytes):
    """Registered stages of the rotator: each resolves ROTATE_BITS bits of the rotate
    amount, the first the bits left over."""
    return -(-offset_bits(width_bytes) // ROTATE_BITS)


def _rotate_slices(width_bytes):
    """Per rotator stage, the bits [lo, hi) of the rotate amount it resolves. The first
    stage takes the bits left over, so the smallest mux is the one whose input comes
    straight from the source (R, or the UB reader's landing register, routed from afar,
    and the mux between them and the source's queue)."""
    shift = offset_bits(width_bytes)
    slices = [(lo, min(lo + ROTATE_BITS, shift)) for lo in range(0, shift, ROTATE_BITS)]
    return slices[::-1]


def align_row_layout(width_bytes):
    """One row: `length` (>= 1) bytes from byte `src_off` of its first source word to
    byte `dst_off` of its first destination word."""
    shift = offset_bits(width_bytes)
    return data.StructLayout({"src_off": shift, "dst_off": shift, "length": LEN_BITS})


def src_word_layout(width_bytes, lane_bits=8):
    return data.StructLayout({"data": lane_bits * width_bytes})


def dst_word_layout(width_bytes, lane_bits=8):
    """A destination word: `strb` bit i marks byte i as one of the row's bytes; `last`
    marks the row's final word."""
    return data.StructLayout({"data": lane_bits * width_bytes, "strb": width_bytes,
                              "last": 1})


def _word_index_bits(width_bytes):
    """Bits of a word index within a row: the last word of the longest row at the
    largest offset."""
    return ((width_bytes - 1 + (1 << LEN_BITS) - 2) >> offset_bits(width_bytes)).bit_length()


def _tag_layout(width_bytes):
    """What the merge needs of a row, carried with each of its source words."""
    shift = offset_bits(width_bytes)
    return data.StructLayout({
        "r": shift,                             # rotate amount, (dst_off - src_off) mod W
        "neg": 1,                               # dst_off < src_off: lo = word k, hi = k+1
        "tail": 1,                              # the row's last output word has a hi word
        "lout": _word_index_bits(width_bytes),  # output words - 1
        "dst_off": shift,                       # first byte of the first output word
        "end_off": shift,                       # last byte of the last output word
        # The merge's decisions for the row's first output word, worked out at set-up.
        "single": 1,                            # one output word
        "pair": 1,                              # two output words
        "uses0": 1,                             # it has a hi word
        "pops0": 2,                             # queue entries it retires
    })


def _rotate_left(value, amount, unit):
    """`value` rotated left by `amount` * `unit` bits; `amount` is 1 to ROTATE_BITS bits
    wide. The 2 ** len(amount) fixed rotations are chosen by a balanced tree of 2:1 muxes
    on the amount bits (an 8:1 mux per bit at 3 bits), not by a variable shift."""
    if not 1 <= len(amount) <= ROTATE_BITS:
        raise ValueError(f"rotate amount must be 1 to {ROTATE_BITS} bits, "
                         f"not {len(amount)}")
    return mux_tree([value.rotate_left(k * unit) for k in range(1 << len(amount))], amount)


def _thermometer_step(filled, push, pops):
    """The next value of a fill thermometer (bit i: more than i held) when `push` (0 or
    1) enters and `pops` (0, 1 or 2) leave: bit i becomes bit i - push + pops, bits
    below 0 being set and bits past the top clear."""
    padded = Cat(1, filled, 0, 0)               # bit i of `filled` is bit i + 1 here
    return Cat(*(Mux(push, padded.bit_select(i + pops, 1), padded.bit_select(i + 1 + pops, 1))
                 for i in range(len(filled))))


def _loads_head_row(have_head, nonempty, room, ends_if):
    """The merge's head row register loads: there is none, or the head row's last output
    leaves (`ends_if`: the next output is the row's last and has its words, if there is
    a word and room for the output)."""
    return ~have_head | (nonempty & room & ends_if)


def _emits(nonempty, uses_hi, two, room):
    """Output k goes: the queue holds its lo word, and its hi word if it uses one, and
    the output queue has room."""
    return nonempty & (~uses_hi | two) & room


@dataclass
class _Ring:
    """The queue of rotated words: a ring; a word is written at `wr` and stays put, and
    the merge reads the two oldest, at `rd` and `rd + 1`. So what the merge decides (how
    many entries it retires) only steps a pointer, and every wide mux is selected by
    registers. A free entry loads the rotator's word on every cycle, so it holds the word
    on the cycle it is pushed, and the wide enables are the entries' own registered
    `live` bits."""
    entries: list
    live: Signal
    rd: Signal
    wr: Signal
    # The fill as a thermometer: bit i is set while it holds more than i words, so its
    # next value is a shift picked by the handshakes, with no sum.
    filled: Signal
    full: Signal

    @classmethod
    def of(cls, word_bits):
        entries = [Signal(word_bits, name=f"ring{i}") for i in range(QUEUE_DEPTH)]
        live = Signal(QUEUE_DEPTH)
        rd = Signal(range(QUEUE_DEPTH))
        wr = Signal(range(QUEUE_DEPTH))
        filled = Signal(QUEUE_DEPTH)
        full = Signal()
        return cls(entries, live, rd, wr, filled, full)

    def write(self, m, push, word):
        """Every free entry loads `word`; `push` keeps it there and steps `wr`."""
        for i in range(QUEUE_DEPTH):
            with m.If(~self.live[i]):
                m.d.sync += self.entries[i].eq(word)
        with m.If(push):
            m.d.sync += self.wr.eq(self.wr + 1)


@dataclass
class _Merge:
    """The merge's registers: output word k of the head row, what it is and needs (for
    k = 0 the head row's single, pair, uses0 and pops0, loaded with it; for k > 0 worked
    out at the previous word), and whether it goes (`emit`) and retires (`pops`)."""
    head: Signal
    have_head: Signal
    first: Signal               # k = 0
    out_left: Signal            # for k > 0: output words of the row after word k
    last: Signal                # k is the row's last output
    next_last: Signal           # k + 1 is the row's last output
    uses_hi: Signal             # lanes [r, W) come from the hi word
    pops_if: Signal             # entries it retires
    almost_full: Signal         # the ring holds QUEUE_DEPTH - 1 words
    ends_if: Signal             # last & (~uses_hi | two): output k ends the row
    room: Signal                # the output queue's room, a copy beside the merge
    emit: Signal
    pops: Signal
    # Whether output k retires an entry if it goes: a register, so whether the ring is
    # full next, and the source side's room, wait on the output's room alone and not on
    # the merge's decision (from `uses_hi`, the fill and `pops_if`).
    retires_if: Signal

    @classmethod
    def of(cls, m, row_layout, index_bits, ring):
        head = Signal(row_layout)
        have_head = Signal()
        first = Signal(init=1)
        out_left = Signal(index_bits)
        last = Signal()
        next_last = Signal()
        uses_hi = Signal()
        pops_if = Signal(2)
        # The ring's fill as flags, so `emit` is one LUT and whether the ring will be
        # full is a gate or two from registers.
        nonempty = ring.filled[0]
        two = ring.filled[1]
        almost_full = Signal()
        ends_if = Signal()
        room = Signal()
        emit = Signal()
        pops = Signal(2)
        retires_if = Signal()
        m.d.comb += [
            emit.eq(_emits(nonempty, uses_hi, two, room)),
            pops.eq(Mux(emit, pops_if, 0)),
        ]
        return cls(head, have_head, first, out_left, last, next_last, uses_hi, pops_if,
                   almost_full, ends_if, room, emit, pops, retires_if)


class Aligner(wiring.Component):
    """Re-aligns rows of bytes between two word streams of `width_bytes` (W) bytes.

    Ports:
      rows  In  stream of align_row_layout(W): one per row
      src   In  stream of src_word_layout(W): per row exactly ceil((src_off + length) / W)
                words; the row's bytes start at byte src_off of its first word
      dst   Out stream of dst_word_layout(W), from registers: per row exactly
                ceil((dst_off + length) / W) words; row byte i is byte (dst_off + i) of the
                row's word sequence, `strb` marks exactly the row's bytes, `last` the
                row's final word

    Throughput: a row costs max(input words, output words) cycles, with no cycle between
    rows, as long as `src` offers a word and `dst` takes one every cycle.

    Latency, with L = ceil(log2(W) / 3) rotator stages (L = 2 at W = 16, 32 and 64): a
    row taken from `rows` on edge t passes two set-up registers (its offsets' sums, then
    the merge's decisions) and is set up on edge t + 2 at the earliest; its first source
    word can be taken on the next edge, and a source word taken on edge u reaches the
    queue on edge u + L; the output word that needs it is on `dst` after edge u + L + 1.
    So on an idle aligner, a row taken on edge t has its first output word on `dst` after
    edge t + L + 4 (t + L + 5 when dst_off < src_off and the row spans two source words),
    i.e. after edge t + 6 (t + 7) at W = 16, 32 and 64. The set-up registers fill while
    earlier rows run, so rows still follow each other with no gap.

    `src.ready` and `rows.ready` are registers (both set-up registers are `skid_stage`s,
    so taking a row's last source word does not reach back through them);
    `dst.ready` only steps the output queue (see buffered_output). No valid depends on a
    ready.

    A lane is `lane_bits` bits (8: a byte). The block moves whole lanes and never
    decides on their bits, so at 8 it is eight copies of itself at 1 sharing one control
    (`aligner_bit_slices_w*` proves it), and the formal groups prove its byte contract
    at 1 bit a lane where 8 is beyond the solver.
    """

    def __init__(self, width_bytes=32, lane_bits=8):
        self._width = width_bytes
        self._lane_bits = lane_bits
        self._word_bits = lane_bits * width_bytes
        self._shift = offset_bits(width_bytes)
        self.row_layout = align_row_layout(width_bytes)
        self.src_layout = src_word_layout(width_bytes, lane_bits)
        self.dst_layout = dst_word_layout(width_bytes, lane_bits)
        super().__init__({
            "rows": In(stream.Signature(self.row_layout)),
            "src": In(stream.Signature(self.src_layout)),
            "dst": Out(stream.Signature(self.dst_layout)),
        })

    def elaborate(self, platform):
        m = Module()
        width = self._width
        index_bits = _word_index_bits(width)
        tag_layout = _tag_layout(width)
        entry_layout = data.StructLayout({"data": self._word_bits, "r": self._shift})
        # What the merge needs of a row beside the tag: its lane masks, decoded as the row
        # enters the merge's row queue, so the head row's load is a mux of registers.
        row_layout = data.StructLayout({
            "tag": tag_layout,
            "lo": width,                # lanes [0, r)
            "head": width,              # lanes [dst_off, W)
            "tail": width,              # lanes [0, end_off]
        })

        # --- Row set-up: every per-row constant, registered, so the word path only
        # compares counters. The next row is taken on the edge that takes this row's last
        # source word.
        tag = Signal(tag_layout)
        next_rows = [Signal(name=f"next_row{k}") for k in range(ROW_LOAD_GROUPS)]
        # next_rows[0] loads the row registers (_source_side).
        setup_take, setup_skid_take, queue_row = next_rows[1:]
        setup_valid, setup = self._setup(m, tag_layout, index_bits, setup_take,
                                         setup_skid_take)

        # --- Rotator: stage i holds its word rotated by the amount bits of _rotate_slices
        # entries 0 .. i (the first the bits left over, then ROTATE_BITS per stage). All
        # stages move together; they hold only while the last one has a word the queue
        # has no room for, so the enable is one gate from registers.
        stages = rotate_stages(width)
        st_valid = [Signal(name=f"rot{i}_valid") for i in range(stages)]
        st = [Signal(entry_layout, name=f"rot{i}") for i in range(stages)]
        advance = Signal()
        # The next values of the last stage's valid and of `full`: the wide registers'
        # enables are worked out from copies of the two (see _data_advance).
        last_valid_next = Signal()
        full_next = Signal()
        ring = _Ring.of(self._word_bits)
        # Room is judged on the registered fill alone, so `dst.ready` does not reach back
        # to `src.ready`; the fourth entry makes up for it.
        m.d.comb += advance.eq(~st_valid[-1] | ~ring.full)

        # The rotator can take a word next cycle: its last stage will not then hold a
        # word the queue has no room for.
        src_room = Signal()
        src_take = self._source_side(m, tag, next_rows, setup_valid, setup, src_room,
                                     index_bits)
        self._rotator(m, (src_take, self.src.payload.data, tag.r), st_valid, st, advance,
                      (last_valid_next, full_next))

        push = Signal()
        m.d.comb += push.eq(st_valid[-1] & advance)
        ring.write(m, push, st[-1].data)

        # --- Merge: output word k of the head row, the oldest row not yet wholly output.
        # Rows enter a queue of their own as the source side loads them, with their lane
        # masks decoded, ahead of their words; the head row register loads the queue's
        # output register (or a row entering the empty queue) when the head row's last
        # output leaves. What each output needs and retires is known a cycle ahead: for
        # the first word from the set-up fields, for later ones from flags worked out at
        # the previous word. So `emit`, the lane selects and the strobes are a gate or two
        # from registers.
        merge = _Merge.of(m, row_layout, index_bits, ring)
        filled_next, rd_next = self._ring_read(m, ring, merge, push, advance, st_valid,
                                               src_take, (last_valid_next, full_next,
                                                          src_room))
        loading = self._row_queue(m, merge, ring, setup_valid, setup, queue_row, row_layout,
                                  stages)
        first_next, last_next, uses_hi_next = self._output_control(
            m, merge, ring, (filled_next, push), loading, index_bits)

        # The lanes read copies of the merge's registers, so the control's own registers
        # are not drawn out across the datapath, away from the gates they feed.
        lane_rd, lane_uses_hi, lane_first, lane_last = self._lane_copies(
            m, rd_next, uses_hi_next, first_next, last_next)
        self._output_queue(m, merge, ring, (lane_rd, lane_uses_hi, lane_first, lane_last))
        return m

    def _source_side(self, m, tag, next_rows, setup_valid, setup, src_room, index_bits):
        """The row registers (`tag`) and the source handshake: a row loads when there is
        none or its last source word is taken. Returns whether a source word is taken."""
        next_row = next_rows[0]
        # Source words of the current row still to come after this one; whether this one
        # is the last is known a cycle ahead (`_row_load_decisions`).
        src_left = Signal(index_bits)
        src_ready, src_take = self._row_load_decisions(
            m, next_rows, self.src.valid, src_room, setup_valid,
            loaded_last=setup.src_last, stepped_last=src_left == 1)
        m.d.comb += self.src.ready.eq(src_ready)
        with m.If(next_row):
            m.d.sync += [tag.eq(setup.tag), src_left.eq(setup.src_left)]
        with m.Elif(src_take):
            m.d.sync += src_left.eq(src_left - 1)
        return src_take

    def _rotator(self, m, source, st_valid, st, advance, hold):
        """The rotator's stages, fed by `source` (valid, data, rotate amount); the wide
        registers of each stage load in ROTATOR_GROUPS groups, each enabled from its own
        copies of `hold` (the last stage's next valid and the queue's next `full`)."""
        last_valid_next, full_next = hold
        group_bits = self._word_bits // ROTATOR_GROUPS
        for i, (lo, hi) in enumerate(_rotate_slices(self._width)):
            if i == 0:
                valid_in, data_in, r_in = source
            else:
                valid_in, data_in, r_in = st_valid[i - 1], st[i - 1].data, st[i - 1].r
            rotated = _rotate_left(data_in, r_in[lo:hi], self._lane_bits << lo)
            with m.If(advance):
                m.d.sync += st_valid[i].eq(valid_in)
            for g in range(ROTATOR_GROUPS):
                part = slice(g * group_bits, (g + 1) * group_bits)
                with m.If(self._data_advance(m, f"rot{i}_{g}", last_valid_next, full_next)):
                    m.d.sync += st[i].data[part].eq(rotated[part])
                    if g == 0:
                        m.d.sync += st[i].r.eq(r_in)

    @staticmethod
    def _ring_read(m, ring, merge, push, advance, st_valid, src_take, drives):
        """What the merge retires (`pops`) steps the ring's read pointer and its fill;
        drives `drives`: the last rotator stage's next valid, the ring's next `full` and
        the source side's room. Returns the ring's next fill and read pointer."""
        last_valid_next, full_next, src_room = drives
        filled, full = ring.filled, ring.full
        filled_next = _thermometer_step(filled, push, merge.pops)
        # The queue is full next only if it is full now or one short with a word pushed
        # (a full queue takes none), and no entry leaves: no sum on the source's path.
        st_last = st_valid[-1]
        m.d.comb += [
            last_valid_next.eq(Mux(advance, st_valid[-2] if len(st_valid) > 1 else src_take,
                                   st_last)),
            full_next.eq(~(merge.retires_if & merge.room)
                         & (full | (merge.almost_full & st_last))),
            src_room.eq(~last_valid_next | ~full_next),
        ]
        rd = ring.rd
        rd_next = Signal.like(rd)
        m.d.comb += rd_next.eq(rd + merge.pops)
        m.d.sync += [
            rd.eq(rd_next),
            filled.eq(filled_next),
            merge.almost_full.eq(filled_next[QUEUE_DEPTH - 2]
                                 & ~filled_next[QUEUE_DEPTH - 1]),
            full.eq(full_next),
        ]
        for i in range(QUEUE_DEPTH):
            popped = (i - rd)[:len(rd)] < merge.pops
            m.d.sync += ring.live[i].eq((ring.live[i] & ~popped) | (push & (ring.wr == i)))
        return filled_next, rd_next

    @staticmethod
    def _row_queue(m, merge, ring, setup_valid, setup, queue_row, row_layout, stages):
        """The merge's row queue, which rows enter as the source side loads them, and the
        head row register it loads. Returns the next head row, whether it loads, whether
        a row enters the queue, and whether the queue holds one."""
        width = len(merge.head.lo)
        # A row the source side loads enters the merge a cycle later, from a register
        # that holds its lane masks decoded, so no shift lies between it and the head row
        # (its first word reaches the queue two or more cycles after that). The rows
        # between the source side and the merge are at most one per word in the rotator
        # or the queue, the row the source side holds and the entering one, so the row
        # queue never refuses one.
        # Its output register loads in groups: the tag, which the control reads, and
        # each LANE_GROUP lanes of each mask, which sit with those lanes.
        tag_bits = setup.tag.shape().size
        row_queue = m.submodules.row_queue = BypassQueue(
            width=row_layout.size, depth=stages + QUEUE_DEPTH + 3,
            split_at=range(tag_bits, row_layout.size, LANE_GROUP))
        row_enters = Signal()
        entering = Signal(row_layout)
        ones = Const((1 << width) - 1, width)
        m.d.sync += [
            row_enters.eq(queue_row & setup_valid),
            entering.tag.eq(setup.tag),
            entering.lo.eq(~(ones << setup.tag.r)),
            entering.head.eq(ones << setup.tag.dst_off),
            entering.tail.eq(ones >> ~setup.tag.end_off),
        ]
        next_head = row_layout(Mux(row_queue.r_rdy, row_queue.r_data, entering))
        # The head row's bits take the load decision from a cell of their own (a
        # KeptLut) of registers, which the placer can put among them; the control
        # registers work it out again beside its inputs.
        nonempty, have_head = ring.filled[0], merge.have_head
        load_head = m.submodules.load_head = KeptLut(4, truth_table(_loads_head_row, 4))
        m.d.comb += load_head.a.eq(Cat(have_head, nonempty, merge.room, merge.ends_if))
        with m.If(load_head.z):
            m.d.sync += merge.head.eq(next_head)
        head_loads = _loads_head_row(have_head, nonempty, merge.room, merge.ends_if)
        m.d.comb += [
            row_queue.w_data.eq(entering),
            row_queue.w_en.eq(row_enters & ~(head_loads & ~row_queue.r_rdy)),
            row_queue.r_en.eq(head_loads),
        ]
        return next_head, head_loads, row_enters, row_queue.r_rdy

    @staticmethod
    def _output_control(m, merge, ring, filling, loading, index_bits):
        """What output k is and retires, a cycle ahead: `first`, `last`, `uses_hi`,
        `pops_if`, `retires_if` and `ends_if` of the next output, from the head row
        loaded (`loading`: the next head row, whether it loads, whether a row enters the
        row queue, whether that queue holds one) or the output going. `filling`: the
        ring's next fill and whether a word is pushed. Returns the next `first`, `last`
        and `uses_hi`."""
        filled_next, push = filling
        next_head, head_loads, row_enters, queued = loading
        first, last, uses_hi = merge.first, merge.last, merge.uses_hi
        next_last, pops_if, emit, head = merge.next_last, merge.pops_if, merge.emit, merge.head
        # The control registers' next values, so `ends_if` can be one of them.
        first_next, last_next, uses_hi_next = Signal(), Signal(), Signal()
        m.d.comb += [first_next.eq(first), last_next.eq(last), uses_hi_next.eq(uses_hi)]
        # The head row's fields the control needs, in registers of their own beside it
        # (the head row register's bits sit with the lanes they select).
        head_lout = Signal.like(head.tag.lout)
        head_tail = Signal()
        left_now = Signal(index_bits)
        m.d.comb += left_now.eq(Mux(first, head_lout, merge.out_left))
        # Output 0 with dst_off >= src_off has no lo word, and lanes [0, r) are not the
        # row's, so entry 0 alone serves and stays as the next output's lo. Every later
        # output retires its lo; a row's last output has a hi word only if the row has a
        # source word after its lo, and retires it too.
        with m.If(head_loads):
            # Output 0 of the new head row is next.
            m.d.sync += [head_lout.eq(next_head.tag.lout), head_tail.eq(next_head.tag.tail)]
            m.d.sync += [merge.have_head.eq(queued | row_enters),
                         next_last.eq(next_head.tag.pair),
                         pops_if.eq(next_head.tag.pops0)]
            m.d.comb += [first_next.eq(1), last_next.eq(next_head.tag.single),
                         uses_hi_next.eq(next_head.tag.uses0)]
        with m.Elif(emit):
            m.d.sync += [
                merge.out_left.eq(left_now - 1),
                next_last.eq(left_now == 2),
                pops_if.eq(1 + (next_last & head_tail)),
            ]
            m.d.comb += [first_next.eq(0), last_next.eq(next_last),
                         uses_hi_next.eq(~next_last | head_tail)]
        m.d.sync += [first.eq(first_next), last.eq(last_next), uses_hi.eq(uses_hi_next)]
        # `pops_if` after this edge is non-zero: the new head row's pops0 if it loads,
        # else 1 or 2 if an output goes, else as it is.
        pops_any_next = Mux(head_loads, next_head.tag.pops0.any(), emit | pops_if.any())
        m.d.sync += merge.retires_if.eq(filled_next[0] & (~uses_hi_next | filled_next[1])
                                        & pops_any_next)

        def ends_if_next(emitting):
            """last_next & (~uses_hi_next | two after this edge), if `emit` is
            `emitting`. Emitting, the head row loads if there is none or this output ends
            it; else only if there is none (`ends_if` implies the output may go)."""
            two_next = _thermometer_step(ring.filled, push, pops_if if emitting else 0)[1]
            loaded = next_head.tag.single & (~next_head.tag.uses0 | two_next)
            if emitting:
                return Mux(~merge.have_head | merge.ends_if, loaded,
                           next_last & (~head_tail | two_next))
            return Mux(~merge.have_head, loaded, last & (~uses_hi | two_next))
        # Worked out for both ways `emit` goes, so `emit` is the last gate before it.
        m.d.sync += merge.ends_if.eq(Mux(emit, ends_if_next(True), ends_if_next(False)))
        return first_next, last_next, uses_hi_next

    def _output_queue(self, m, merge, ring, lane_copies):
        """The output word, merged lane by lane from the two oldest ring entries as the
        copies of the merge's registers (`lane_copies`) pick, into the output queue."""
        lane_rd, lane_uses_hi, lane_first, lane_last = lane_copies
        width, head = self._width, merge.head
        word = Signal(self.dst_layout)
        # Lane p comes from the oldest entry (lo) or the next (hi): one ring index per
        # lane, then one mux over the ring per bit.
        lanes = []
        for p in range(width):
            index = Signal.like(ring.rd, name=f"lane{p}_entry")
            m.d.comb += index.eq(lane_rd + (lane_uses_hi & ~head.lo[p]))
            lanes.append(mux_tree([entry.word_select(p, self._lane_bits)
                                   for entry in ring.entries], index))
        m.d.comb += [
            word.data.eq(Cat(lanes)),
            word.strb.eq((head.head | ~lane_first.replicate(width))
                         & (head.tail | ~lane_last.replicate(width))),
            word.last.eq(lane_last),
        ]
        # The output queue sits with its consumer, away from the merge's control. So it
        # takes `emit` from a cell of its own (a KeptLut) on its own `room`, and the merge
        # reads a copy of that room: a route between the two starts or ends at a
        # flip-flop, and no path runs out of one side and back.
        put = m.submodules.put = KeptLut(4, truth_table(_emits, 4))
        out_room = Signal()
        m.d.comb += [
            put.a.eq(Cat(ring.filled[0], merge.uses_hi, ring.filled[1], out_room)),
            out_room.eq(buffered_output(m, self.dst, word, put.z, room_copy=merge.room)),
        ]

    @staticmethod
    def _lane_copies(m, rd_next, uses_hi_next, first_next, last_next):
        """Flip-flops of their own (RegisterCopy) holding what the merge's `rd`,
        `uses_hi`, `first` and `last` hold, for the lanes. `first` (reset high) is held
        inverted, so the copy's reset (clear) gives `first`'s reset value. Returns the
        four copies."""
        copy = m.submodules.lane_copy = RegisterCopy(len(rd_next) + 3)
        m.d.comb += copy.d.eq(Cat(rd_next, uses_hi_next, ~first_next, last_next))
        rd_bits = len(rd_next)
        return (copy.q[:rd_bits], copy.q[rd_bits], ~copy.q[rd_bits + 1],
                copy.q[rd_bits + 2])

    @staticmethod
    def _data_advance(m, name, last_valid_next, full_next):
        """The rotator's advance (its last stage is empty or the queue is not full) for
        one group of its wide registers, from the group's own copies of the last stage's
        valid and of `full`. The copies load the same values as those registers, so the
        enable is the same every cycle; but the net that reaches the group's few hundred
        flip-flops is not the one the decision to take a source word starts from, and
        each copy can sit beside its group."""
        copy = m.submodules[f"{name}_hold"] = RegisterCopy(2)
        enable = Signal(name=f"{name}_advance")
        m.d.comb += [
            copy.d.eq(Cat(last_valid_next, full_next)),
            enable.eq(~copy.q[0] | ~copy.q[1]),
        ]
        return enable

    @staticmethod
    def _row_load_decisions(m, next_rows, src_valid, src_room, setup_valid, loaded_last,
                            stepped_last):
        """Drives each of `next_rows` with the decision to load the next row: there is no
        row, or the row's last source word is taken. Each is worked out from its own copy
        of the source side's state: `have_row`, `src_ready` (the source may send: there is
        a row and `src_room`, worked out a cycle ahead, so `src.ready` is a register) and
        `src_last` (the next word taken is the row's last), which loads `loaded_last` with
        the row and `stepped_last` as a word is taken. A copy's update goes through its
        own decision, so synthesis keeps the copies apart and each group of flip-flops a
        decision enables has a net of its own. Returns the first copy's `src_ready` and
        whether it takes a word."""
        copies = []
        for k, next_row in enumerate(next_rows):
            have_row = Signal(name=f"have_row{k}")
            src_ready = Signal(name=f"src_ready{k}")
            src_last = Signal(name=f"src_last{k}")
            # src_ready & src_last as a register, so the decision is one gate
            ready_last = Signal(name=f"src_ready_last{k}")
            take = Signal(name=f"src_take{k}")
            m.d.comb += [
                take.eq(src_valid & src_ready),
                next_row.eq(~have_row | (src_valid & ready_last)),
            ]
            src_last_next = Mux(next_row, loaded_last, Mux(take, stepped_last, src_last))
            src_ready_next = Mux(next_row, setup_valid, have_row) & src_room
            with m.If(next_row):
                m.d.sync += have_row.eq(setup_valid)
            m.d.sync += [src_last.eq(src_last_next), src_ready.eq(src_ready_next),
                         ready_last.eq(src_ready_next & src_last_next)]
            copies.append((src_ready, take))
        return copies[0]

    def _setup(self, m, tag_layout, index_bits, take, skid_take):
        """The two set-up registers in front of the row registers: the row's ends, then
        its tag and source word count. Returns (valid, set-up) of the second; `take` and
        its copy `skid_take`: the row registers load it (see skid_stage)."""
        shift = self._shift
        row = self.rows.payload
        ends_layout = data.StructLayout({
            "src_end": LEN_BITS + 1,    # last byte, from the first word's byte 0
            "dst_end": LEN_BITS + 1,
            "r": shift, "neg": 1, "dst_off": shift,
        })
        ends = Signal(ends_layout)
        # Each end is a carry-save level and one carry chain.
        m.d.comb += [
            ends.src_end.eq(sum_mod([row.length, row.src_off, -1], LEN_BITS + 1)),
            ends.dst_end.eq(sum_mod([row.length, row.dst_off, -1], LEN_BITS + 1)),
            ends.r.eq(row.dst_off - row.src_off),
            ends.neg.eq(row.src_off > row.dst_off),
            ends.dst_off.eq(row.dst_off),
        ]
        ends_take = Signal()
        ends_valid, ends, ready = skid_stage(m, self.rows.valid, ends, ends_take, "row_ends")
        m.d.comb += self.rows.ready.eq(ready)

        setup = Signal(data.StructLayout({"tag": tag_layout, "src_left": index_bits,
                                          "src_last": 1}))
        tag, src_words_m1 = setup.tag, ends.src_end[shift:]
        m.d.comb += [
            tag.r.eq(ends.r),
            tag.neg.eq(ends.neg),
            tag.lout.eq(ends.dst_end[shift:]),
            # lout + neg <= src_words_m1, from the low bits alone: the ends differ by
            # src_off - dst_off, so their word indices differ by the carry of
            # end_off + (src_off - dst_off), and the sum reaches neg exactly when
            # end_off >= r.
            tag.tail.eq(tag.end_off >= tag.r),
            tag.dst_off.eq(ends.dst_off),
            tag.end_off.eq(ends.dst_end[:shift]),
            tag.single.eq(tag.lout == 0),
            tag.pair.eq(tag.lout == 1),
            tag.uses0.eq(tag.neg & (~tag.single | tag.tail)),
            tag.pops0.eq(Mux(tag.single, 1 + tag.uses0, tag.neg)),
            setup.src_left.eq(src_words_m1),
            setup.src_last.eq(src_words_m1 == 0),
        ]
        setup_valid, setup, ends_ready = skid_stage(m, ends_valid, setup, take, "row_setup",
                                                    skid_take)
        m.d.comb += ends_take.eq(ends_ready)
        return setup_valid, setup
