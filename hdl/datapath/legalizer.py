"""Cuts GM rows into legal AXI4 INCR bursts and puts them on an address channel.

AXI4 forbids a burst to cross a 4 KiB boundary or to exceed 256 beats. Rows here are
byte-exact and may start anywhere; beats are W-aligned words of the bus.
"""

from amaranth.hdl import C, Cat, Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from model.isa import GM_ADDR_BITS
from ..lib.arith import sum_mod
from ..lib.axi import AXI4AddressSignature, BurstType, connect_address
from ..lib.kept_lut import load_in_groups
from ..lib.queue import BypassQueue, wrap_incr
from ..layouts import (CACHE_BITS, FirstSplit, LEN_BITS, MAX_BEATS, PAGE_BYTES,
                      ROW_TERM_BITS, SID_BITS)


def check_width(width_bytes):
    """The bus widths AXI allows: a power of two from 1 to 128 bytes."""
    if width_bytes < 1 or width_bytes > 128 or width_bytes & (width_bytes - 1):
        raise ValueError(f"bus width must be a power of two from 1 to 128 bytes, "
                         f"not {width_bytes}")
    return width_bytes.bit_length() - 1


def split_grid(width_bytes):
    """Bursts are cut at multiples of this many bytes. For W >= 16 it is the 4 KiB page,
    which already holds at most 256 beats; narrower buses need a finer grid (a divisor of
    4 KiB) so no burst exceeds 256 beats."""
    return min(PAGE_BYTES, MAX_BEATS * width_bytes)


class GmRow(data.Struct):
    """A byte-exact GM row of a command: `length` (>= 1) bytes from `addr`, with where its
    first burst ends (`first_split`)."""
    addr: GM_ADDR_BITS
    length: LEN_BITS
    sid: SID_BITS
    cache: CACHE_BITS
    last: 1             # last row of its command
    split: FirstSplit
    new_sid: 1          # its sid differs from the row before it (layouts.RowJob)


def gm_row_of(job):
    """The GmRow fields of a layouts.RowJob: its GM side."""
    return {"addr": job.gm_addr, "length": job.length, "sid": job.sid, "cache": job.cache,
            "last": job.last, "split": job.split, "new_sid": job.new_sid}


def _loads_oldest(any_unfinished, responded):
    """The burst issuer's oldest-burst register loads: none is unfinished, or the oldest
    finishes."""
    return ~any_unfinished | responded


def _either(condition, if_true, if_false):
    """Mux for Values, a conditional for ints."""
    if isinstance(condition, Value):
        return Mux(condition, if_true, if_false)
    return if_true if condition else if_false


def _add(a, b, width):
    """(a + b) mod 2^width, for ints or Values: for Values one carry chain."""
    if isinstance(a, Value) or isinstance(b, Value):
        return (a + b)[:width]
    return (a + b) % (1 << width)


def row_terms(length, width_bytes):
    """The RowTerms of rows of `length` (>= 1) bytes on a bus of `width_bytes` (ints or
    Values; for Values one carry chain each), mod 2^ROW_TERM_BITS."""
    grid = split_grid(width_bytes)
    constants = {"len_m1": -1, "end_m1": width_bytes - 1, "past": -grid - 1}
    if isinstance(length, Value):
        return {name: sum_mod([length, constant], ROW_TERM_BITS)
                for name, constant in constants.items()}
    return {name: (length + constant) % (1 << ROW_TERM_BITS)
            for name, constant in constants.items()}


def first_split(addr, length, width_bytes, terms=None):
    """FirstSplit's `end`, `end_words`, `first_fits` and `first_len` of
    `length` (>= 1) bytes at `addr` (ints or Values). `terms` is the row's RowTerms
    (row_terms of `length`), from registers when Values: each field is then one carry
    chain of two operands from them and the address, and the `fits` choice a mux after
    it. The address generator works them out into its output register (RowJob.split), so
    no carry chain of them is in front of the row queues, the burst splitter or the
    address channel."""
    shift = check_width(width_bytes)
    grid = split_grid(width_bytes)
    if terms is None:
        terms = row_terms(length, width_bytes)
    offset = addr & (grid - 1)
    lane = addr & (width_bytes - 1)
    # offset + length - grid - 1, negative (its top bit set) when the row fits its first
    # grid cell.
    past = _add(offset, terms["past"], ROW_TERM_BITS)
    fits = (past[ROW_TERM_BITS - 1] if isinstance(past, Value)
            else past >> (ROW_TERM_BITS - 1))
    # The first burst runs to the row's end if that is in its grid cell, else to the cell's.
    # The cell's words are a power of two, so its words less one after the row's first
    # word are a complement, with no carry.
    cell_words, word = grid >> shift, offset >> shift
    to_cell_end_m1 = (C(cell_words - 1, len(word)) ^ word if isinstance(word, Value)
                      else cell_words - 1 - word)
    return {"end": offset + length,
            "end_words": _add(offset, terms["end_m1"], ROW_TERM_BITS) >> shift,
            "first_fits": fits,
            "first_len": _either(fits, _add(lane, terms["len_m1"], ROW_TERM_BITS) >> shift,
                                 to_cell_end_m1)}


class Burst(data.Struct):
    """One legal burst: bytes [addr, addr + length) of a row, within one 4 KiB page.

    `addr` is the burst's first byte (unaligned); the burst moves axlen + 1 W-aligned
    words, ceil(((addr % W) + length) / W) of them."""
    addr: GM_ADDR_BITS
    axlen: 8
    length: PAGE_BYTES.bit_length()
    new_sid: 1          # first burst of a row whose sid differs from the burst before
    last_of_row: 1
    last: 1             # last burst of its command
    sid: SID_BITS
    cache: CACHE_BITS


class IssuedBurst(data.Struct):
    """What the owner of an issued burst needs of it when its data or response comes."""
    addr: GM_ADDR_BITS
    last_of_row: 1
    last: 1


class BurstSplitter(wiring.Component):
    """Splits each row at every multiple of `split_grid(W)` bytes.

    Ports:
      rows    In  stream of GmRow
      bursts  Out stream of Burst

    A row's first burst is offered in the cycle the row is (worked out from `rows.payload`
    without a register, so a copy's first address is not delayed), and the row is taken
    with it; the row's further bursts come from registers, one per cycle, and the next
    row's first burst follows its predecessor's last without a gap. `rows.ready` depends
    only on registers and `bursts.ready`.

    Every burst but a row's last one ends on the grid, so all of them after the first start
    on it: the address advances by incrementing its grid cell number, not by a 40-bit add.
    """

    def __init__(self, width_bytes):
        self._shift = check_width(width_bytes)
        self._width = width_bytes
        super().__init__({
            "rows": In(stream.Signature(GmRow)),
            "bursts": Out(stream.Signature(Burst)),
        })

    def elaborate(self, platform):
        m = Module()
        grid = split_grid(self._width)
        grid_bits = grid.bit_length() - 1
        shift = self._shift
        grid_words = grid >> shift
        new = self.rows.payload

        # The rest of the row being split once its first burst has gone (`active`): it
        # starts on the grid, and where it ends is counted from the start of the current
        # grid cell, in bytes and in words (rounded up), so moving on to the next cell
        # only decrements upper bits and each burst takes one subtraction.
        active = Signal()
        cell = Signal(GM_ADDR_BITS - grid_bits)
        end = Signal(LEN_BITS + 1)
        end_len = Signal(LEN_BITS + 1 - shift)     # its words (rounded up) - 1
        fits = Signal()             # the rest of the row is this burst
        row = Signal(GmRow)         # sid, cache and last of the row being split

        # A new row's first burst, from the row itself: where it ends came with the row, so
        # the path from `rows.payload` to `bursts.payload` is one carry chain and a mux,
        # and the decision to go on with the row is a mux.
        offset = new.addr[:grid_bits]
        split = new.split
        new_end, new_end_words, first_fits = split.end, split.end_words, split.first_fits

        out = self.bursts
        last = Mux(active, row.last, new.last)
        now_fits = Mux(active, fits, first_fits)
        m.d.comb += [
            out.valid.eq(active | self.rows.valid),
            out.payload.addr.eq(Mux(active, Cat(C(0, grid_bits), cell), new.addr)),
            out.payload.length.eq(Mux(active, Mux(fits, end, grid),
                                      Mux(first_fits, new.length, grid - offset))),
            out.payload.axlen.eq(Mux(active, Mux(fits, end_len, grid_words - 1),
                                     split.first_len)),
            out.payload.new_sid.eq(~active & new.new_sid),
            out.payload.last_of_row.eq(now_fits),
            out.payload.last.eq(now_fits & last),
            out.payload.sid.eq(Mux(active, row.sid, new.sid)),
            out.payload.cache.eq(Mux(active, row.cache, new.cache)),
            self.rows.ready.eq(~active & out.ready),
        ]

        with m.If(out.valid & out.ready):
            with m.If(now_fits):
                m.d.sync += active.eq(0)
            with m.Elif(active):
                m.d.sync += [
                    cell.eq(cell + 1),
                    end.eq(end - grid),
                    end_len.eq(end_len - grid_words),
                    fits.eq(end <= 2 * grid),
                ]
            with m.Else():
                m.d.sync += [
                    active.eq(1),
                    cell.eq(new.addr[grid_bits:] + 1),
                    end.eq(new_end - grid),
                    end_len.eq(new_end_words - (grid_words + 1)),
                    fits.eq(new_end <= 2 * grid),
                    row.eq(new),
                ]
        return m


def address_entry(id_width):
    """What the burst issuer queues of a burst for its address channel."""
    return data.StructLayout({"id": id_width, "addr": GM_ADDR_BITS, "len": 8,
                              "cache": CACHE_BITS})


class BurstIssuer(wiring.Component):
    """Issues bursts on an AXI address channel and remembers them until they finish.

    Ports:
      bursts  In  stream of Burst
      a       Out AXI4AddressSignature(40, id_width): AxID = sid, AxCACHE = cache,
              AxADDR = addr aligned down to W, AxLEN = beats - 1, AxSIZE = log2 W, INCR
      resp    Out stream of IssuedBurst: the oldest unfinished burst, from registers; the
              owner takes it (ready) when the burst's last R beat or its B response is
              accepted

    At most `max_outstanding` bursts are unfinished, counted from the moment a burst is
    taken, so at most that many are on the bus. Bursts of one ID complete in order; a burst
    with another ID waits until every earlier burst has finished, so responses never come
    back out of order. A burst's `new_sid` says its ID differs from the burst taken before
    it (as BurstSplitter's bursts carry it from their rows), so the fence is a flag and
    `bursts.ready` depends only on registers and that flag. One burst per cycle while
    neither limit binds; AxVALID rises one clock edge after the edge that takes a burst.
    AxLOCK, AxPROT and AxQOS stay 0 (normal, secure, unprivileged data access without a
    QoS hint).
    """

    def __init__(self, width_bytes, max_outstanding, id_width):
        self._shift = check_width(width_bytes)
        if max_outstanding < 1:
            raise ValueError("max_outstanding must be at least 1")
        if id_width < SID_BITS:
            raise ValueError(f"id_width must hold a sid ({SID_BITS} bits)")
        self._depth = max_outstanding
        self._id_width = id_width
        super().__init__({
            "bursts": In(stream.Signature(Burst)),
            "a": Out(AXI4AddressSignature(GM_ADDR_BITS, id_width)),
            "resp": Out(stream.Signature(IssuedBurst)),
        })

    @staticmethod
    def _issued(m, burst):
        """The IssuedBurst of a Burst."""
        issued = Signal(IssuedBurst)
        m.d.comb += [issued[name].eq(burst[name]) for name in ("addr", "last_of_row", "last")]
        return issued

    def elaborate(self, platform):
        m = Module()
        depth = self._depth
        shift = self._shift

        queue = m.submodules.queue = Memory(shape=IssuedBurst, depth=depth, init=[])
        push = queue.write_port()
        taken_ptr = Signal(range(depth))
        unfinished = Signal(range(depth + 1))

        # The address channel is the read side of a small FIFO: its outputs come straight
        # from registers and `bursts.ready` does not wait on AxREADY.
        a_layout = address_entry(self._id_width)
        a_fifo = m.submodules.a_fifo = BypassQueue(width=a_layout.size, depth=3)
        a_in = data.View(a_layout, a_fifo.w_data)
        a_out = data.View(a_layout, a_fifo.r_data)

        # Whether bursts are unfinished, and whether another may start, are registers
        # worked out with the count, so `bursts.ready` waits on no compare of it; and
        # `bursts.ready` itself, with and without the fence, is a register worked out
        # from their next values, so it is a choice by `new_sid` alone.
        b = self.bursts
        take = Signal()
        pop = self.resp.valid & self.resp.ready
        taken = self._issued(m, b.payload)
        any_unfinished = Signal()
        below_limit = Signal(init=1)
        any_next, below_next = Signal(), Signal()
        m.d.comb += [any_next.eq(any_unfinished), below_next.eq(below_limit)]
        with m.If(take & ~pop):
            m.d.comb += [any_next.eq(1), below_next.eq(unfinished != depth - 1)]
        with m.Elif(pop & ~take):
            m.d.comb += [any_next.eq(unfinished != 1), below_next.eq(1)]
        m.d.sync += [any_unfinished.eq(any_next), below_limit.eq(below_next)]
        open_ = Signal(init=1)                  # a burst with this ID may go
        open_fenced = Signal(init=1)            # a burst with a new ID may go
        m.d.sync += [open_.eq(a_fifo.w_rdy_next & below_next),
                     open_fenced.eq(a_fifo.w_rdy_next & below_next & ~any_next)]
        m.d.comb += [
            b.ready.eq(Mux(b.payload.new_sid, open_fenced, open_)),
            take.eq(b.valid & b.ready),
            a_fifo.w_en.eq(take),
            a_in.id.eq(b.payload.sid),
            a_in.addr.eq(b.payload.addr[shift:] << shift),
            a_in.len.eq(b.payload.axlen),
            a_in.cache.eq(b.payload.cache),
            push.addr.eq(taken_ptr),
            push.data.eq(taken),
            push.en.eq(take),
        ]
        with m.If(take):
            m.d.sync += taken_ptr.eq(wrap_incr(taken_ptr, depth))

        a = self.a
        m.d.comb += [
            a.id.eq(a_out.id),
            a.addr.eq(a_out.addr),
            a.len.eq(a_out.len),
            a.size.eq(shift),
            a.burst.eq(BurstType.INCR),
            a.cache.eq(a_out.cache),
            a.valid.eq(a_fifo.r_rdy),
            a_fifo.r_en.eq(a.ready),
        ]

        # The oldest unfinished burst, in a register, so the owner's decisions on a
        # response start at flip-flops, not at a LUT RAM read. The entry after it is read
        # from a pointer register, with no handshake in front of the read: on a response
        # the register loads that entry, or the burst taken now if no other is left, and
        # it takes the burst taken when none is unfinished. Which of the two it loads is a
        # choice by registers; only its load enable waits on the response, through a
        # cell of its own (kept_lut.load_in_groups) beside the register's bits.
        resp = self.resp
        read = queue.read_port(domain="comb")
        # The entry after the oldest's: the queue's read pointer, one ahead.
        after_ptr = Signal(range(depth), init=1 % depth)
        only_one = Signal()                     # unfinished == 1
        m.d.comb += [read.addr.eq(after_ptr), resp.valid.eq(any_unfinished)]
        with m.If(pop):
            m.d.sync += after_ptr.eq(wrap_incr(after_ptr, depth))
        load_in_groups(m, "resp", _loads_oldest, Cat(any_unfinished, resp.ready),
                       [(resp.payload, Mux(any_unfinished & ~only_one, read.data, taken))])
        with m.If(take & ~pop):
            m.d.sync += only_one.eq(~any_unfinished)
        with m.Elif(pop & ~take):
            m.d.sync += only_one.eq(unfinished == 2)
        # The count +- 1 from the register alone, picked by the handshakes: no carry
        # chain after them.
        with m.If(take & ~pop):
            m.d.sync += unfinished.eq(unfinished + 1)
        with m.Elif(pop & ~take):
            m.d.sync += unfinished.eq(unfinished - 1)
        return m


def issue_rows(m, rows, axi, prefix, width_bytes, max_outstanding, id_width):
    """What every GM side puts first: its `rows` (an In stream of GmRow of the component
    that owns `m`) become legal bursts on the `prefix` ("ar" or "aw") address channel of
    its master port `axi`. Returns the splitter and the issuer, whose bursts and
    responses the data channel follows."""
    splitter = m.submodules.splitter = BurstSplitter(width_bytes)
    issuer = m.submodules.issuer = BurstIssuer(width_bytes, max_outstanding, id_width)
    wiring.connect(m, wiring.flipped(rows), splitter.rows)
    wiring.connect(m, splitter.bursts, issuer.bursts)
    connect_address(m, issuer.a, axi, prefix)
    return splitter, issuer
