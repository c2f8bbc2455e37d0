"""A copy's rows are the walk of its loop nest: the address generator's rows of each copy
taken are its n_burst x loop1 x loop2 rows in the order of the seed's C loops (loop2
outer, loop1, n_burst rows), each at its GM and UB address, `last` on the final one
alone, or, for a copy an abort request cuts short, on the first row made after the
request registers. The generator reads the count flags the checker works out into a copy
(`nest_flags_hold`): this group assumes them of the copies offered, and
`checker_contract_*` proves them of the checker's results."""

from amaranth.hdl import Array, Cat, Module, Mux, Signal, Value
from amaranth.lib import data

from hdl.layouts import COPY_SEQ_BITS, RowJob
from hdl.pipe import addrgen, checker
from hdl.pipe.addrgen import ROW_ADDRESSES, AddressGenerator, Step
from hdl.pipe.checker import LOOP_COUNTS, checked_copy_layout
from model.isa import Opcode

from .addrgen import DRAIN_MUTATIONS
from .gm_side import output_queue_entries
from .inputs import free, free_stream
from .props import add_block, assume, child, combinational, counter, prop, registers
from .runner import Mutation

# The fields of a row that tell its place in the nest: `last`, and its addresses.
ADDRESS_FIELDS = ("gm_addr", "ub_addr")
# Rows made and not yet out: the address generator's output queue holds two.
ROWS_QUEUED_MAX = 2


def count_flags_hold(geom):
    """Whether a copy's (a checked copy's `geom`, or a mapping of its fields) flags are
    its counts': `<count>_many` that the count is over 1, `<count>_two` that it is 2,
    `empty` that a count or len_burst is 0."""
    counts = [geom[name] for name in LOOP_COUNTS]
    none = (geom["len_burst"] == 0) | Cat(*(count == 0 for count in counts)).any()
    holds = [geom["empty"] == none]
    for name, count in zip(LOOP_COUNTS, counts):
        holds += [geom[f"{name}_many"] == (count > 1), geom[f"{name}_two"] == (count == 2)]
    return Cat(*holds).all()


def second_row_ends_hold(geom):
    """Whether each `<count>_second_end` says the copy's second row is the last of its
    level: that row steps the innermost level of a count over 1 (loop2 if none is, past
    the nest) to index 1, every other level at 0, and a level at index i ends when its
    count is i + 1. A copy with a count of 0 has no row: its flags are not read."""
    counts = [geom[name] for name in LOOP_COUNTS]
    stepping = Mux(counts[0] > 1, 0, Mux(counts[1] > 1, 1, 2))
    ends = Cat(*(geom[f"{name}_second_end"] == (count == (stepping == level) + 1)
                 for level, (name, count) in enumerate(zip(LOOP_COUNTS, counts))))
    return Cat(*(count == 0 for count in counts)).any() | ends.all()


def nest_flags_hold(geom):
    """What the address generator reads of a copy's counts (`count_flags_hold`,
    `second_row_ends_hold`)."""
    return count_flags_hold(geom) & second_row_ends_hold(geom)


class _NestWalk:
    """The harness's walk of a copy's nest, as the seed's C loops step it: the copy, the
    next row's index on each level (n_burst, loop1, loop2, inner to outer) and its offset
    there (index x the level's stride, summed stride by stride, per address side), and
    whether rows of the copy are left to make and an abort request named it. `fields`: the
    RowJob fields it works out of each row (`last`, and of ADDRESS_FIELDS those it
    follows)."""

    def __init__(self, kind, fields):
        layout = checked_copy_layout(kind)
        self.kind = kind
        self.copy = Signal(layout, name="nest_copy")
        geom = self.copy.geom
        self.index = [Signal(len(geom[name]), name=f"nest_{name}_index")
                      for name in LOOP_COUNTS]
        self.sides = [side for field, side in ROW_ADDRESSES[kind].items() if field in fields]
        self.offset = {side: [Signal(len(geom[side]), name=f"nest_{side}_offset{level}")
                              for level in range(len(LOOP_COUNTS))] for side in self.sides}
        self.walking = Signal(name="nest_walking")
        # An abort request named the copy walked: the next row made is its last.
        self.cut = Signal(name="nest_cut")

    @staticmethod
    def strides(geom, side):
        """Each level's stride on `side`, inner to outer."""
        return [geom[f"{side}_stride"], geom[f"loop1_{side}"], geom[f"loop2_{side}"]]

    @staticmethod
    def starts(geom, offsets, side):
        """Where a row's level begins on `side`, inner to outer: the row itself, its loop1
        iteration's first row, its loop2 iteration's first row."""
        width = len(geom[side])
        starts = [geom[side]]
        for offset in reversed(offsets):
            starts.insert(0, (starts[0] + offset)[:width])
        return starts[:-1]

    def make(self, m, made, incoming, named):
        """On `made` (a row goes into the generator's output queue), the row the walk is
        at, or the `incoming` copy's first while none is walked, and the walk steps; the
        row is the copy's last at the nest's end, or once an abort request `named` the
        copy walked on a cycle before. Returns the row made's place (its `fields` of a
        RowJob)."""
        copy = Signal.like(self.copy, name="nest_copy_made")
        m.d.comb += copy.eq(Mux(self.walking, self.copy, incoming))
        geom = copy.geom
        index = [Mux(self.walking, now, 0) for now in self.index]
        counts = [geom[name] for name in LOOP_COUNTS]
        at_end = [now == (count - 1)[:len(count)] for now, count in zip(index, counts)]
        place = Signal(RowJob, name="nest_row_made")
        m.d.comb += place.last.eq(Cat(*at_end).all() | (self.walking & self.cut))
        m.d.sync += self.cut.eq(self.walking & (self.cut | named))
        for field, side in ROW_ADDRESSES[self.kind].items():
            if side not in self.sides:
                continue
            offsets = [Mux(self.walking, now, 0) for now in self.offset[side]]
            m.d.comb += place[field].eq(self.starts(geom, offsets, side)[0])
        with m.If(made):
            m.d.sync += [self.copy.eq(copy), self.walking.eq(~place.last)]
            with m.If(place.last):
                m.d.sync += self.cut.eq(0)
            self._step(m, geom, index, at_end)
        return place

    def _step(self, m, geom, index, at_end):
        """The next row's indices and offsets: the innermost level not at its end steps,
        the levels inside it start over."""
        for level in range(len(LOOP_COUNTS)):
            steps = Cat(*at_end[:level]).all() & ~at_end[level]
            over = Cat(*at_end[:level + 1]).all()
            with m.If(steps):
                m.d.sync += self.index[level].eq(index[level] + 1)
                for side in self.sides:
                    offset = self.offset[side][level]
                    stride = self.strides(geom, side)[level]
                    m.d.sync += offset.eq(Mux(self.walking, offset, 0) + stride)
            with m.Elif(over):
                m.d.sync += self.index[level].eq(0)
                m.d.sync += [self.offset[side][level].eq(0) for side in self.sides]
            with m.Elif(~self.walking):
                # A copy's first row: the levels outside the one that steps are at 0.
                m.d.sync += self.index[level].eq(0)
                m.d.sync += [self.offset[side][level].eq(0) for side in self.sides]


class _MadeRows:
    """The places of the rows made and not yet out, oldest first (at most
    ROWS_QUEUED_MAX): the n-th row out is the n-th made."""

    def __init__(self, m, made, place, taken):
        self.count = Signal(range(ROWS_QUEUED_MAX + 2), name="rows_made_not_out")
        self.entries = [Signal(RowJob, name=f"row_made_{k}") for k in range(ROWS_QUEUED_MAX)]
        m.d.sync += self.count.eq(self.count + made - taken)
        with m.If(taken):
            m.d.sync += self.entries[0].eq(self.entries[1])
        slot = (self.count - taken)[:len(self.count)]
        with m.If(made):
            m.d.sync += Array(self.entries)[slot].eq(place)


def _same_place(row, place, fields):
    return Cat(*(row[name] == place[name] for name in fields)).all()


def nest_harness(kind, width_bytes, addresses):
    """Copies offered as the checker gives them (its count flags hold, not empty), held
    until taken; any abort requests; `rows` taken at will: each row out is the one of its
    place in the walk of its copy's nest, marked `last` exactly on the nest's final row or
    on the first row made after an abort request named the copy walked, and if
    `addresses`, at its GM and UB addresses per the seed's C loops."""
    fields = ("last", *(ADDRESS_FIELDS if addresses else ()))

    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", AddressGenerator(kind, width_bytes), mutation)
        free_stream(m, "copy", dut.copy)
        free(m, dut.rows.ready, dut.abort.valid, dut.abort.copy)
        copy = dut.copy.payload
        # The pipe offers only a copy that passed and has a row (pipe_controller_*).
        assume(m, "copy_offered_as_checked",
               ~dut.copy.valid | (nest_flags_hold(copy.geom) & ~copy.geom.empty))
        fragment = m.submodules["dut"]
        made = combinational(fragment)["put"]
        take = dut.copy.valid & dut.copy.ready
        # Copies numbered as the datapath numbers them, from 0.
        last_taken = (counter(m, "copies_taken", take, COPY_SEQ_BITS) - 1)[:COPY_SEQ_BITS]
        named = dut.abort.valid & (dut.abort.copy == last_taken)
        walk = _NestWalk(kind, fields)
        prop(m, "row_made_only_of_a_copy_taken", ~made | walk.walking | take)
        prop(m, "copy_taken_once_the_one_before_is_made", ~take | ~walk.walking)
        place = walk.make(m, made, copy, named)
        rows = dut.rows
        made_rows = _MadeRows(m, made, place, rows.valid & rows.ready)
        prop(m, "row_out_only_as_made", ~rows.valid | (made_rows.count != 0))
        prop(m, "row_out_at_its_place_in_the_nest",
             ~rows.valid | _same_place(rows.payload, made_rows.entries[0], fields))
        state = registers(fragment)
        _queue_invariant(m, state, made_rows, fields)
        prop(m, "generator_number_is_last_taken", state["number"] == last_taken)
        _walk_invariant(m, fragment, state, walk)
        return m
    return build


def _queue_invariant(m, state, made_rows, fields):
    """The generator's output queue holds the rows made and not out, each at its place."""
    queued = output_queue_entries(m, "row_queue", state, "row")
    (head_held, _), (second_held, _) = queued
    prop(m, "row_queue_holds_the_rows_made", made_rows.count == head_held + second_held)
    for k, ((_, entry), place) in enumerate(zip(queued, made_rows.entries)):
        prop(m, f"row_queue_entry_{k}_at_its_place",
             (made_rows.count <= k) | _same_place(data.View(RowJob, entry), place, fields))


def _walk_invariant(m, fragment, state, walk):
    """The generator's walk is the harness's: it walks a copy exactly while the harness
    does, that copy, not aborted; its counters are the rows or iterations each level has
    left after the walked row (its row to make next), its at-end flags and `ending` that
    row's place, its step how the row was reached and its next step how the row after it
    is; its address bases that row's (`_bases_hold`)."""
    walking = state["walking"]
    prop(m, "generator_walks_as_the_nest", walking == walk.walking)
    geom = walk.copy.geom
    prop(m, "nest_copy_as_checked", ~walk.walking | (nest_flags_hold(geom) & ~geom.empty))
    prop(m, "generator_walks_the_nests_copy",
         ~walking | (state["job"] == Value.cast(walk.copy)))
    prop(m, "generator_aborted_as_the_nest_is_cut",
         ~walking | (state["aborted"] == walk.cut))
    counts = [geom[name] for name in LOOP_COUNTS]
    at_end = [index == (count - 1)[:len(count)] for index, count in zip(walk.index, counts)]
    reached = Mux(walk.index[0] != 0, Step.ROW,
                  Mux(walk.index[1] != 0, Step.LOOP1, Step.LOOP2))
    next_step = Mux(at_end[0], Mux(at_end[1], Step.LOOP2, Step.LOOP1), Step.ROW)
    # The walked row is never a copy's first: that one is made as the copy is taken.
    holds = [Cat(*walk.index).any(), state["step"] == reached,
             state["ending"] == (Cat(*at_end).all() | walk.cut),
             state["next_step"] == next_step]
    holds += [registers(child(fragment, f"next_step_{use}"))["q"] == next_step
              for use in ("count", "flags")]
    for level, (name, index, count) in enumerate(zip(LOOP_COUNTS, walk.index, counts)):
        left = (count - 1 - index)[:len(count)]
        holds += [index < count, state[f"{name}_left"] == left,
                  state[f"{name}_left_one"] == (left == 1),
                  state[f"{name}_two"] == (count == 2),
                  state[f"{name}_at_end"] == at_end[level]]
    prop(m, "generator_walk_at_the_nests_row", ~walk.walking | Cat(*holds).all())
    for side in walk.sides:
        high = combinational(fragment)[f"{side}_high"]
        prop(m, f"generator_{side}_bases_at_the_nests_row",
             ~walk.walking | _bases_hold(state, high, walk, side))


def _bases_hold(state, high, walk, side):
    """Whether the walk stage's low bases are the walked row's level starts on `side` (a
    level at index 0 adding nothing), and the output stage's high half of the row (its
    high base of the level the row stepped, that level's stride and the low add's carry)
    the row's, its high bases of the levels outside that one their starts."""
    geom = walk.copy.geom
    starts = walk.starts(geom, walk.offset[side], side)
    low = len(state[f"{side}_low0"])
    holds = [state[f"{side}_low{level}"] == start[:low] for level, start in enumerate(starts)]
    # A level at index 0 adds nothing: a row reached by a loop1 or loop2 step is its
    # level's start.
    holds += [(index != 0) | (offset == 0)
              for index, offset in zip(walk.index, walk.offset[side])]
    holds.append(high == starts[0][low:])
    holds += [(state["step"] >= level) | (state[f"{side}_high{level}"] == start[low:])
              for level, start in enumerate(starts)]
    return Cat(*holds).all()


def _loop1_reloaded_one_short(count):
    """The address generator's loop1 counter reloaded one iteration short as a loop2
    iteration starts (the later assignment wins): every loop1 pass after the first ends
    early."""
    def patched(m, job, counters, at_one, count_two, step):
        count(m, job, counters, at_one, count_two, step)
        loop1 = job.geom.loop1_count
        with m.If(step > addrgen.Step.LOOP1):
            m.d.sync += [counters[1].eq(loop1 - 2), at_one[1].eq(loop1 == 3)]
    return staticmethod(patched)


def _last_at_the_inner_end(job, at_one, at_end, step):
    """`last` (and the copy's end) on the last row of the n_burst loop, whatever the outer
    loops' indices."""
    inner_starts_over = ~job.geom.n_burst_many
    return addrgen._pick(step, [at_one[0], inner_starts_over, inner_starts_over])


def _burst_end_a_row_early(count):
    """The n_burst counter seen at its end with two rows left, not one."""
    def patched(m, job, counters, at_one, count_two, step):
        count(m, job, counters, at_one, count_two, step)
        with m.If(step == addrgen.Step.ROW):
            m.d.sync += at_one[0].eq(counters[0] == 3)
    return staticmethod(patched)


BURST_END_A_ROW_EARLY = Mutation(
    "burst_end_a_row_early", "the n_burst loop seen at its end a row early",
    ((addrgen.AddressGenerator, "_count",
      _burst_end_a_row_early(addrgen.AddressGenerator._count)),))
LOOPS_MUTATIONS = (
    Mutation("loop1_reloaded_one_short", "the loop1 counter reloaded one iteration short as "
             "a loop2 iteration starts",
             ((addrgen.AddressGenerator, "_count",
               _loop1_reloaded_one_short(addrgen.AddressGenerator._count)),)),
    Mutation("last_at_the_inner_loops_end", "`last` on the n_burst loop's last row, "
             "whatever loop1's and loop2's indices",
             ((addrgen.AddressGenerator, "_walked_last",
               staticmethod(_last_at_the_inner_end)),)),
)
# Beside an abort acting a row late: UB->UB copies have no loop1 or loop2 (counts 1), so
# the n_burst loop's mutation stands for the loops'.
NEST_MUTATIONS = {
    kind: (DRAIN_MUTATIONS[1], *((BURST_END_A_ROW_EARLY,) if kind == Opcode.COPY_UBUF_TO_UBUF
                                 else LOOPS_MUTATIONS))
    for kind in checker.COPY_KINDS}


def _source_strides(strides):
    """The address generator's strides of the source side, whichever side asks."""
    return lambda geom, side: strides(geom, "src")


SOURCE_STRIDES_ON_BOTH_SIDES = Mutation(
    "source_strides_on_both_sides", "the destination's rows stepped by the source's strides",
    ((addrgen, "_strides", _source_strides(addrgen._strides)),))
