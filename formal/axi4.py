"""A reusable AXI4 master property checker, for any master port of `hdl.lib.axi`'s
signatures.

What a master must do is asserted; what the slave may do is assumed, and nothing else is:
  - AR, AW, W: VALID is held until READY, with the payload stable (`stream_rule`; W's
    data and strobes on a free-but-fixed byte lane, so on every lane);
  - every burst is INCR, AxSIZE = log2(W), and stays in one 4 KiB page (AxLEN <= 255 is
    the field's width);
  - write bursts: the i-th W burst has exactly AWLEN + 1 beats of the i-th AW and WLAST on
    its last beat only, compared in whichever order the two come (W may run ahead of AW,
    as AXI4 allows, by as many bursts as AW may run ahead of W: max_outstanding, made a
    power of two);
  - bursts awaiting their last R beat or their B response are at most `max_outstanding`;
  - no ARVALID, AWVALID or WVALID in the cycle after a reset;
  - with `one_id`, bursts in flight all have one ID, so a slave answers them in order;
  - the slave: R beats only while a read burst is outstanding (RLAST free); B only for a
    burst whose AW and last W beat have both gone; R and B held until taken.
"""

from dataclasses import dataclass

from amaranth.asserts import AnyConst
from amaranth.hdl import Array, Cat, Mux, ResetSignal, Signal, Value, signed
from amaranth.utils import ceil_log2

from .props import assume, counter, on_lane, past, prop, stream_rule

PAGE_BYTES = 4096


class _Channel:
    """A channel of an AXI port seen as a stream: valid, ready and the payload members,
    with WDATA and WSTRB cut to byte lane `lane` if given (props.on_lane)."""
    def __init__(self, axi, prefix, members, lane=None):
        self.valid = getattr(axi, f"{prefix}valid")
        self.ready = getattr(axi, f"{prefix}ready")
        member = lambda name: getattr(axi, f"{prefix}{name}")
        self.payload = Cat(*(member(name) if lane is None else on_lane(name, member(name), lane)
                             for name in members))


_ADDRESS = ("id", "addr", "len", "size", "burst", "lock", "cache", "prot", "qos")


@dataclass(frozen=True)
class _WriteRecord:
    """What the checker counts of the write channels: AW bursts issued, W bursts whose
    last beat went, B responses taken (each modulo 2^count_bits), the beats of the W burst
    in progress, and the ring of the lengths (AxLEN) of the bursts one channel has sent
    and the other not yet, by burst number modulo its size."""
    issued: Value
    written: Value
    answered: Value
    beat: Value
    lengths: Array

    def length(self, number):
        """The ring's entry of burst `number` (a count of `issued`'s width)."""
        return self.lengths[number[:ceil_log2(len(self.lengths))]]


class Axi4MasterChecker:
    """Adds the AXI4 master properties of `axi` (a master port: AXI4ReadSignature,
    AXI4WriteSignature or AXI4Signature) to the harness module `m`."""

    def __init__(self, width_bytes, max_outstanding, one_id=False):
        self.width_bytes = width_bytes
        self.max_outstanding = max_outstanding
        # The lengths the checker keeps, a power of two: of the bursts AW is ahead of W
        # by, at most max_outstanding as each awaits its B response, or W ahead of AW by.
        self.ring = 1 << ceil_log2(max_outstanding)
        # Burst counts wide enough that their difference, within +-ring, has a sign.
        self.count_bits = ceil_log2(self.ring) + 2
        # Check that bursts in flight share one ID: the BMC of it is four times slower.
        self.one_id = one_id

    def add(self, m, axi):
        members = axi.signature.members
        # W held until taken is checked on a free-but-fixed byte lane, so on every lane.
        self.lane = Signal(range(self.width_bytes), name="checked_lane")
        m.d.comb += self.lane.eq(AnyConst(self.lane.shape()))
        after_reset = past(m, ResetSignal(), name="after_reset")
        if "arvalid" in members:
            self._address(m, axi, "ar", after_reset)
            self._read(m, axi)
        if "awvalid" in members:
            self._address(m, axi, "aw", after_reset)
            prop(m, "w_no_valid_after_reset", ~(after_reset & axi.wvalid))
            self._write(m, axi)

    def _address(self, m, axi, prefix, after_reset):
        channel = _Channel(axi, prefix, _ADDRESS)
        stream_rule(m, prop, prefix, channel)
        addr, length = getattr(axi, f"{prefix}addr"), getattr(axi, f"{prefix}len")
        valid = channel.valid
        shift = self.width_bytes.bit_length() - 1
        prop(m, f"{prefix}_burst_is_incr", ~valid | (getattr(axi, f"{prefix}burst") == 1))
        prop(m, f"{prefix}_size_is_bus_width", ~valid | (getattr(axi, f"{prefix}size") == shift))
        prop(m, f"{prefix}_addr_word_aligned", ~valid | word_aligned(addr, self.width_bytes))
        prop(m, f"{prefix}_burst_within_4k_page",
             ~valid | within_page(addr, length, self.width_bytes))
        prop(m, f"{prefix}_no_valid_after_reset", ~(after_reset & valid))

    def _one_id(self, m, prefix, axid, go, any_outstanding):
        """Bursts of one ID at a time: a slave returns them in order, as assumed here."""
        last_id = Signal.like(axid, name=f"{prefix}_last_id")
        with m.If(go):
            m.d.sync += last_id.eq(axid)
        prop(m, f"{prefix}_one_id_in_flight", ~(go & any_outstanding) | (axid == last_id))
        self.last_id = last_id          # for a harness's induction invariant

    def _read(self, m, axi):
        bits = self.count_bits
        ar_go = axi.arvalid & axi.arready
        r_go = axi.rvalid & axi.rready
        issued = counter(m, "ar_issued", ar_go, bits)
        finished = counter(m, "r_finished", r_go & axi.rlast, bits)
        outstanding = (issued - finished)[:bits]
        self.reads_issued, self.reads_finished = issued, finished
        self.reads_outstanding = outstanding
        stream_rule(m, assume, "r", _Channel(axi, "r", ("id", "data", "resp", "last")))
        assume(m, "r_only_for_issued_bursts", ~axi.rvalid | (outstanding != 0))
        prop(m, "ar_outstanding_within_max", outstanding <= self.max_outstanding)
        if self.one_id:
            self._one_id(m, "ar", axi.arid, ar_go, outstanding != 0)

    def _write(self, m, axi):
        bits = self.count_bits
        aw_go = axi.awvalid & axi.awready
        w_go = axi.wvalid & axi.wready
        b_go = axi.bvalid & axi.bready
        issued = counter(m, "aw_issued", aw_go, bits)
        written = counter(m, "w_bursts", w_go & axi.wlast, bits)
        answered = counter(m, "b_answered", b_go, bits)
        beat = Signal(8, name="w_beat")
        with m.If(w_go):
            m.d.sync += beat.eq(_next_beat(axi.wlast, beat))
        lead = Signal(signed(bits), name="aw_lead")       # AW bursts ahead of W's
        m.d.comb += lead.eq(issued - written)
        aw_leads, w_leads = lead > 0, lead < 0
        # Whichever of a burst's AW and W comes first leaves its length in the ring, and
        # the second is compared with it; when both come at once, W with AW's payload.
        lengths = Array(Signal(8, name=f"burst_len_{i}") for i in range(self.ring))
        record = _WriteRecord(issued, written, answered, beat, lengths)
        with m.If(aw_go & ~w_leads):
            m.d.sync += record.length(issued).eq(axi.awlen)
        with m.If(w_go & axi.wlast & ~aw_leads):
            m.d.sync += record.length(written).eq(beat)
        self.writes = record            # for a harness's induction invariant
        stream_rule(m, prop, "w", _Channel(axi, "w", ("data", "strb", "last"), self.lane))
        stream_rule(m, assume, "b", _Channel(axi, "b", ("id", "resp")))

        prop(m, "w_bursts_ahead_of_aw_bounded", lead >= -self.ring)
        w_known = aw_leads | ((lead == 0) & axi.awvalid)
        expected = Mux(aw_leads, record.length(written), axi.awlen)
        prop(m, "w_beats_within_awlen", ~(axi.wvalid & w_known) | (beat <= expected))
        prop(m, "wlast_on_last_beat_only",
             ~(axi.wvalid & w_known) | (axi.wlast == (beat == expected)))
        prop(m, "awlen_matches_w_beats_sent",
             ~(axi.awvalid & w_leads) | (axi.awlen == record.length(issued)))
        # AW offered with its W burst in progress (or not begun): W may not have passed
        # AWLEN.
        prop(m, "awlen_covers_w_beats_in_progress",
             ~(axi.awvalid & (lead == 0)) | (beat <= axi.awlen))

        complete = Mux(w_leads, issued, written)        # AW and last W both gone
        self.writes_awaiting_b = (complete - answered)[:bits]
        assume(m, "b_only_for_complete_bursts", ~axi.bvalid | (self.writes_awaiting_b != 0))
        outstanding = (issued - answered)[:bits]
        self.writes_outstanding = outstanding
        prop(m, "aw_outstanding_within_max", outstanding <= self.max_outstanding)
        if self.one_id:
            self._one_id(m, "aw", axi.awid, aw_go, outstanding != 0)


def word_aligned(addr, width_bytes):
    return addr[:width_bytes.bit_length() - 1] == 0


def within_page(addr, length, width_bytes):
    """A burst of AxLEN `length` from word address `addr` ends inside its 4 KiB page."""
    shift = width_bytes.bit_length() - 1
    return addr[shift:12] + length + 1 <= PAGE_BYTES >> shift


def _next_beat(last, beat):
    """The next beat number: 0 after a last beat, else one more."""
    return Mux(last, 0, beat + 1)
