"""The loop/burst address generator: the rows of a checked copy, one per cycle."""

from dataclasses import dataclass

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import enum, stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import GM_ADDR_BITS, Opcode

from ..lib.register_copy import RegisterCopy
from ..lib.stream import buffered_output
from ..layouts import COPY_SEQ_BITS, AbortSignature, RowJob
from ..datapath.legalizer import first_split
from ..datapath.ub_reader import ub_words_m1
from .checker import COPY_KINDS, LOOP_COUNTS, checked_copy_layout

# A 40-bit address add is done in two halves on consecutive stages (walk, then output), so
# no stage has a carry chain longer than this.
ADDR_SPLIT = GM_ADDR_BITS // 2

# Copies with a GM side: their rows carry where the GM row's first burst ends.
GM_KINDS = (Opcode.COPY_GM_TO_UBUF, Opcode.COPY_UBUF_TO_GM)

# Which side of the copy (src / dst) each RowJob address field carries.
ROW_ADDRESSES = {
    Opcode.COPY_GM_TO_UBUF: {"gm_addr": "src", "ub_addr": "dst"},
    Opcode.COPY_UBUF_TO_GM: {"gm_addr": "dst", "ub_addr": "src"},
    # UB->UB: the destination row (a UB address) travels in gm_addr.
    Opcode.COPY_UBUF_TO_UBUF: {"gm_addr": "dst", "ub_addr": "src"},
}


class Step(enum.Enum, shape=2):
    """How a row's addresses follow from the previous row's. The value is also the index
    of the base pointer that is advanced: the row (0), the loop1 (1) or the loop2 (2) start;
    FIRST (the copy's first row) sets all three."""
    ROW = 0
    LOOP1 = 1
    LOOP2 = 2
    FIRST = 3


def _strides(geom, side):
    """The stride added at each Step (ROW, LOOP1, LOOP2) on one side."""
    return (geom[f"{side}_stride"], geom[f"loop1_{side}"], geom[f"loop2_{side}"])


def _set_bases(m, bases, step, value):
    """Advance the base pointers for `step`: the row pointer always, the loop1 start when a
    loop1 or loop2 iteration begins, the loop2 start when a loop2 iteration begins."""
    m.d.sync += bases[0].eq(value)
    with m.If(step != Step.ROW):
        m.d.sync += bases[1].eq(value)
    with m.If((step == Step.LOOP2) | (step == Step.FIRST)):
        m.d.sync += bases[2].eq(value)


def _row_fields(row, copy, last, new_sid):
    """Assignments of `row`'s fields that come from its `copy` as they are, and its
    `last` and `new_sid`."""
    geom = copy.geom
    return [row.length.eq(geom.len_burst), row.left.eq(geom.left_bytes),
            row.extent.eq(geom.row_bytes), row.select.eq(geom.select),
            row.pad8.eq(copy.pad8), row.sid.eq(copy.sid), row.cache.eq(copy.cache),
            row.last.eq(last), row.new_sid.eq(new_sid)]


def _next_step(at_end):
    """How the row after one at these loop ends (n_burst, loop1, loop2) is reached."""
    return Mux(at_end[0], Mux(at_end[1], Step.LOOP2, Step.LOOP1), Step.ROW)


def _pick(step, choices):
    """choices[step] for step in ROW, LOOP1, LOOP2."""
    return Mux(step == Step.LOOP2, choices[2], Mux(step == Step.LOOP1, choices[1], choices[0]))


@dataclass
class _Loops:
    """The loop walk's state, one entry per level of LOOP_COUNTS (n_burst, loop1, loop2)."""
    counters: list      # rows or iterations of the level left
    # Whether the level's counter is 1 and whether the copy's count is 2, as registers:
    # the at-end flags below are a choice among registers, with no wide compare in front.
    at_one: list
    count_two: list
    # Whether the walked row is its level's last (registers). How the next row is reached
    # follows from them alone, so it is a register loaded with the flags: it enables most
    # of the block's flip-flops.
    at_end: list
    # What the flags become if a row is walked (`walked`, from registers) or a copy taken
    # (`taken`, the checker's registers); `moved`: the one of the two that happens. The
    # output queue's room, which waits on `ready` from afar, only picks between that and
    # holding, one gate before each.
    walked: list
    taken: list
    moved: list

    @classmethod
    def of(cls, m, job, incoming, walking):
        """The state for copies like `job`; `moved` follows `walked` while a copy is
        `walking`, else the `incoming` copy's `taken`."""
        loops = cls(
            counters=[Signal(len(job.geom[name]), name=f"{name}_left") for name in LOOP_COUNTS],
            at_one=[Signal(name=f"{name}_left_one") for name in LOOP_COUNTS],
            count_two=[Signal(name=f"{name}_two") for name in LOOP_COUNTS],
            at_end=[Signal(name=f"{name}_at_end") for name in LOOP_COUNTS],
            walked=[Signal(name=f"{name}_at_end_walked") for name in LOOP_COUNTS],
            taken=[incoming.geom[f"{name}_second_end"] for name in LOOP_COUNTS],
            moved=[Signal(name=f"{name}_at_end_moved") for name in LOOP_COUNTS])
        m.d.comb += [flag.eq(Mux(walking, w, t))
                     for flag, w, t in zip(loops.moved, loops.walked, loops.taken)]
        return loops

    def load_first(self, m, incoming, first_next):
        """The counters as after the incoming copy's first row: the level that steps has
        counted it."""
        for level, name in enumerate(LOOP_COUNTS):
            count = incoming.geom[name]
            m.d.sync += self.count_two[level].eq(incoming.geom[f"{name}_two"])
            with m.If(first_next == level):
                m.d.sync += [self.counters[level].eq(count - 2),
                             self.at_one[level].eq(count == 3)]
            with m.Else():
                m.d.sync += [self.counters[level].eq(count - 1),
                             self.at_one[level].eq(count == 2)]


class AddressGenerator(wiring.Component):
    """Walks the loop nest of a checked copy and emits its rows (layouts.RowJob).

    `copy`: `checker.checked_copy_layout(kind)` (the CopyChecker result); its `error` and
    `empty` are not looked at: the caller passes only copies that passed and have a row
    (the pipe ends an empty copy itself). `rows`: one RowJob per row in the order of the
    seed's C loops (loop2 outer, loop1, n_burst rows), `last` on the final row. Row
    fields: MTE2 gm_addr = source row, ub_addr = destination row, length = len_burst,
    left = L*es and extent = E with data_select (else 0 and len_burst); MTE3 ub_addr =
    source row, gm_addr = destination row, extent = length; UB->UB ub_addr = source row,
    gm_addr = destination row (a UB address), length = len*32. pad8 is the copy's (the
    checker works it out). MTE2 and MTE3 rows carry `split`, where the first burst of the
    GM row ends (legalizer.first_split at W = `width_bytes` bytes), worked out in the
    output register from the walk stage's low address bits and the copy's `row_terms`
    (which the checker works out at the same W), and every row `ub_words_m1`, its UB
    row's words less one, likewise: each a carry chain of two operands from registers.

    `busy`: a taken copy still has rows to emit. `copy_ready_next`: the value
    `copy.ready` takes on the next edge (`copy.ready` is a choice among registers), so
    the pipe can decide a cycle ahead whether a copy is taken then.

    `abort` cuts a copy short (a bus error downstream): if the copy it names is the one
    being walked, the row generated after the next one is that copy's final one, marked
    `last`, and the rest of its loop nest is not walked. Rows already generated still go
    out, so the copy ends after what is in flight; a request for a copy no longer walked
    does nothing.

    Pipeline: a walk stage (loop counters and the low halves of the addresses, incremental
    adds of the stride of the loop level that steps) and the output register (the high
    halves, with the walk stage's carry). The first row needs no add: taking a copy puts
    its first row in the output register and walks it, so the row is on `rows` one clock
    edge after its copy was taken. A copy is taken once the previous one's last row is in
    the output register and that register is free; throughput is one row per cycle, also
    from one copy to the next.
    """

    def __init__(self, kind, width_bytes=32):
        assert kind in COPY_KINDS
        self.kind = kind
        self.width_bytes = width_bytes
        super().__init__({
            "copy": In(stream.Signature(checked_copy_layout(kind))),
            "rows": Out(stream.Signature(RowJob)),
            "abort": In(AbortSignature()),
            "busy": Out(1),
            "copy_ready_next": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        incoming = self.copy.payload
        job = Signal(checked_copy_layout(self.kind))    # the copy being walked
        walking = Signal()
        step = Signal(Step)                              # how the walked row was reached
        # The row made this cycle (walked, or a taken copy's first) goes to a two-entry
        # output queue (stream.buffered_output), whose `room` is a register: so whether
        # a row is made, which enables most of this block's flip-flops, waits on no
        # `ready` from afar, only on registers of this block.
        row = Signal(RowJob)
        put = Signal()
        advance_next = Signal()
        advance = buffered_output(m, self.rows, row, put, name="row", room_next=advance_next)
        loops = _Loops.of(m, job, incoming, walking)
        number, aborted, hit = self._abort(m, walking)
        # Whether the walked row ends the copy (it is the last, or the copy is aborted), as
        # a register of its own: it picks the at-end flags that decide the next step, so no
        # gate of the two lies in front of them.
        ending = Signal()

        take = self.copy.valid & self.copy.ready
        m.d.comb += [self.copy.ready.eq(~walking & advance),
                     self.busy.eq(walking | self.rows.valid)]
        walk = Signal()
        # A row is made while a copy is walked or one is taken: walk | take, with no gate
        # of the handshake in front, which the pipe shares.
        m.d.comb += [walk.eq(walking & advance),
                     put.eq(advance & (walking | self.copy.valid))]
        # A copy is taken only while none is walked, so the walk's registers load the
        # incoming copy's first row on every cycle none is walked, as `job` does: their
        # enables are registers and `advance`, never the pipe's `copy.valid`. Only
        # `walking`, the copy number and the last sid wait on a copy being taken.
        idle = ~walking
        next_step, count_step, flags_step = self._next_steps(m, loops, walk | idle)
        # `ending` of the row walked next, from registers (and `hit`): while a copy is
        # walked, whether the row after the walked one is the last (if the walked one ends
        # the copy, none is walked next and the value is not looked at); while none is,
        # whether the incoming copy's second row is. Not the AND of the `moved` flags,
        # whose LUTs would stand in front of it.
        walked_last = self._walked_last(job, loops.at_one, loops.at_end, flags_step)
        m.d.sync += ending.eq(Mux(walking, Mux(advance, walked_last, ending) | aborted | hit,
                                  loops.taken[0] & loops.taken[1] & loops.taken[2]))
        # The incoming copy's first row, walked as it is taken. A copy is not empty, so a
        # count that is not many is 1.
        first_at_end = [~incoming.geom[f"{name}_many"] for name in LOOP_COUNTS]
        first_next = _next_step(first_at_end)
        first_ending = first_at_end[0] & first_at_end[1] & first_at_end[2]

        self._row_addresses(m, row, job, walking, idle, walk, (step, next_step, first_next))
        first_sid = self._row_fields(m, row, job, walking, ending, first_ending)
        walking_next = Mux(take, ~first_ending, walking & ~(walk & ending))
        m.d.sync += walking.eq(walking_next)
        m.d.comb += self.copy_ready_next.eq(~walking_next & advance_next)
        with m.If(walk):
            m.d.sync += step.eq(next_step)
            with m.If(~ending):
                self._count(m, job, loops.counters, loops.at_one, loops.count_two,
                            count_step)
        self._walked_at_end(m, job, loops.at_one, loops.at_end, flags_step, loops.walked)
        self._take(m, take, number, first_sid)
        # The copy to walk, and the walk as after its first row, load on every cycle none
        # is walked: the copy taken is the one they hold when walking starts.
        with m.If(idle):
            m.d.sync += [job.eq(incoming), aborted.eq(0), step.eq(first_next)]
            loops.load_first(m, incoming, first_next)
        return m

    def _abort(self, m, walking):
        """The number of the copy taken last, and whether an abort request names it:
        registered (`aborted`) while the copy is walked, and as it comes (`hit`)."""
        # Copies are numbered as the datapath counts them, from 0.
        number = Signal(COPY_SEQ_BITS, init=-1 % 2 ** COPY_SEQ_BITS)
        # A request is registered before it ends the copy, so the copy-number compare is
        # not in front of the loop counters' enables.
        aborted = Signal()
        hit = self.abort.valid & (self.abort.copy == number)
        with m.If(walking):
            m.d.sync += aborted.eq(aborted | hit)
        return number, aborted, hit

    @staticmethod
    def _next_steps(m, loops, moves):
        """How the next row is reached, as a register loaded with the at-end flags when
        the walk `moves`, and two copies of it: one for the loop counters, one for the
        at-end flags. Returns the three."""
        next_step = Signal(Step, name="next_step").as_value()   # compared as a number
        with m.If(moves):
            m.d.sync += [now.eq(flag) for now, flag in zip(loops.at_end, loops.moved)]
            m.d.sync += next_step.eq(_next_step(loops.moved))
        # Copies of `next_step` for the loop counters and for the at-end flags, apart from
        # the one that picks the walk's bases and strides: the datapath is wide and far,
        # and a decode of one register shared with it would sit among it.
        step_copies = []
        for use in ("count", "flags"):
            copy = m.submodules[f"next_step_{use}"] = RegisterCopy(len(next_step))
            m.d.comb += copy.d.eq(Mux(moves, _next_step(loops.moved), copy.q))
            step_copies.append(copy.q)
        return next_step, *step_copies

    def _row_addresses(self, m, row, job, walking, idle, walk, steps):
        """The row's addresses, walked (`_walk_low`, `_output_high`) while a copy is
        walked, else the incoming copy's start; its `split` and `ub_words_m1`. `steps`:
        how the walked row was reached, how the next one is, and how the incoming copy's
        second row is."""
        step, next_step, first_next = steps
        incoming = self.copy.payload
        for field, side in ROW_ADDRESSES[self.kind].items():
            low, carry = self._walk_low(m, job, incoming.geom, side, idle, walk, next_step,
                                        first_next)
            high = self._output_high(m, job, incoming.geom[side], side, idle, walk, step,
                                     carry)
            # Worked out from the walked row's low address bits and the copy's length and
            # row terms (the copy's own for its first row), from registers: where the GM
            # row's first burst ends, and the UB row's words.
            for made, addr, source, full in (
                    (walking, low, job, Cat(low, high)),
                    (~walking, incoming.geom[side][:len(low)], incoming,
                     incoming.geom[side])):
                with m.If(made):
                    m.d.comb += row[field].eq(full)
                    self._row_terms(m, row, field, addr, source)
        if self.kind not in GM_KINDS:
            m.d.comb += row.split.eq(0)         # no GM row

    def _row_terms(self, m, row, field, addr, source):
        """What a row's `field` address gives it: where its GM row's first burst ends
        (`split`), or its UB row's words less one (`ub_words_m1`)."""
        if field == "gm_addr" and self.kind in GM_KINDS:
            split = first_split(addr, source.geom.len_burst, self.width_bytes,
                                source.row_terms)
            m.d.comb += [row.split[name].eq(value) for name, value in split.items()]
        if field == "ub_addr":
            m.d.comb += row.ub_words_m1.eq(
                ub_words_m1(addr, source.row_terms.len_m1, self.width_bytes))

    def _row_fields(self, m, row, job, walking, ending, first_ending):
        """The row's other fields: walked while a copy is walked, else the first of the
        copy taken. Returns whether that first row's sid differs from the row before it."""
        first_sid = Signal()
        with m.If(walking):
            m.d.comb += _row_fields(row, job, last=ending, new_sid=0)
        with m.Else():
            m.d.comb += _row_fields(row, self.copy.payload, last=first_ending,
                                    new_sid=first_sid)
        return first_sid

    def _take(self, m, take, number, first_sid):
        """Taking a copy: its number, and whether its sid is new."""
        incoming = self.copy.payload
        # The sid of the last copy taken: a copy's first row tells whether its sid differs
        # from the row before it.
        last_sid = Signal.like(incoming.sid)
        m.d.comb += first_sid.eq(incoming.sid != last_sid)
        with m.If(take):
            m.d.sync += [number.eq(number + 1), last_sid.eq(incoming.sid)]

    @staticmethod
    def _count(m, job, counters, at_one, count_two, step):
        """Step the loop counters: the level that steps counts down, the levels inside it
        start over."""
        for level, name in enumerate(LOOP_COUNTS):
            counter = counters[level]
            with m.If(step == level):
                m.d.sync += [counter.eq(counter - 1), at_one[level].eq(counter == 2)]
            with m.Elif(step > level):
                m.d.sync += [counter.eq(job.geom[name] - 1),
                             at_one[level].eq(count_two[level])]

    @staticmethod
    def _walked_at_end(m, job, at_one, at_end, step, walked):
        """Drives `walked`, the at-end flags of the row after the walked one, reached by
        `step`: the level that steps is at its end if its counter is 1, the levels inside
        it, starting over, if their count is 1, the levels outside it as they are. (After
        the copy's last row, none is walked and the flags are not looked at.)"""
        for level, name in enumerate(LOOP_COUNTS):
            m.d.comb += walked[level].eq(Mux(
                step < level, at_end[level],
                Mux(step == level, at_one[level], ~job.geom[f"{name}_many"])))

    @staticmethod
    def _walked_last(job, at_one, at_end, step):
        """All of `walked` (_walked_at_end) set, as a choice by `step` among one AND of
        registers per step, not an AND of the three flags' LUTs."""
        last_if = []
        for stepping in range(len(LOOP_COUNTS)):
            flags = [~job.geom[f"{name}_many"] for name in LOOP_COUNTS[:stepping]]
            flags += [at_one[stepping], *at_end[stepping + 1:]]
            last_if.append(Cat(*flags).all())
        return _pick(step, last_if)

    @staticmethod
    def _walk_low(m, job, incoming, side, idle, walk, next_step, first_next):
        """Walk stage, one side: the low ADDR_SPLIT bits of the row, loop1-start and
        loop2-start pointers, and the carry of the last add for the output stage. While
        no copy is walked, the incoming copy's first row is walked, from its start."""
        start = incoming[side]
        width = min(ADDR_SPLIT, len(start))
        bases = [Signal(width, name=f"{side}_low{i}") for i in range(3)]
        carry = Signal(name=f"{side}_carry")
        strides = [s[:width] for s in _strides(job.geom, side)]
        total = Signal(width + 1, name=f"{side}_low_sum")
        m.d.comb += total.eq(_pick(next_step, bases) + _pick(next_step, strides))
        first_strides = [s[:width] for s in _strides(incoming, side)]
        first_total = Signal(width + 1, name=f"{side}_low_first_sum")
        m.d.comb += first_total.eq(start[:width] + _pick(first_next, first_strides))
        with m.If(walk):
            _set_bases(m, bases, next_step, total[:width])
            m.d.sync += carry.eq(total[width])
        with m.If(idle):
            _set_bases(m, bases, Step.FIRST, start[:width])
            _set_bases(m, bases, first_next, first_total[:width])
            m.d.sync += carry.eq(first_total[width])
        return bases[0], carry

    @staticmethod
    def _output_high(m, job, start, side, idle, walk, step, carry):
        """Output stage, one side: the high address bits of the walked row, from the
        previous row's and the walk stage's carry (the copy's start for the first row,
        which is output while no copy is walked)."""
        width = len(start) - min(ADDR_SPLIT, len(start))
        bases = [Signal(width, name=f"{side}_high{i}") for i in range(3)]
        strides = [s[ADDR_SPLIT:len(start)] for s in _strides(job.geom, side)]
        high = Signal(width, name=f"{side}_high")
        m.d.comb += high.eq(_pick(step, bases) + _pick(step, strides) + carry)
        with m.If(walk):
            _set_bases(m, bases, step, high)
        with m.If(idle):
            _set_bases(m, bases, Step.FIRST, start[ADDR_SPLIT:])
        return high
