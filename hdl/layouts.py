"""Payloads and port signatures shared between the engine's stages.

Widths come from `model.isa`; this file only arranges them. See docs/architecture.md
for which stage produces and consumes each of these.
"""

from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from model.isa import (GM_ADDR_BITS, PAD_MAX_BYTES, UB_ADDR_BITS, ErrorCode, OP_BY_OPCODE,
                       Opcode)

LEN_BITS = OP_BY_OPCODE[Opcode.COPY_GM_TO_UBUF].field("len_burst").width
EXTENT_BITS = LEN_BITS + 1           # E = align_up(max(dst_stride, footprint), 32) < 2^22
LEFT_BITS = PAD_MAX_BYTES.bit_length()
SID_BITS = OP_BY_OPCODE[Opcode.COPY_GM_TO_UBUF].field("sid").width
CACHE_BITS = OP_BY_OPCODE[Opcode.COPY_GM_TO_UBUF].field("l2_cache_ctl").width
PAGE_BYTES = 4096                    # AXI: no burst crosses a 4 KiB boundary
BUS_WIDTHS = (8, 16, 32, 64, 128)    # W, bytes: AXI's powers of two up to 128, and at
                                     # least the pad stage's 8-byte lane groups
MAX_BEATS = 256                      # AXI4: the longest INCR burst
CMD_INDEX_BITS = 24                  # position of a command in the stream since reset
IN_FLIGHT_DEPTH = 16                 # copies of a pipe whose rows are issued but whose
                                     # Completion has not come (the pipe holds to it), at
                                     # least; more with more bursts in flight
ROWS_PAST_BUS = 8                    # MTE2 rows past the bus: in the reader's word
                                     # queue, aligner and pad stage
COPY_SEQ_BITS = 8                    # numbers a pipe's non-empty copies, modulo 256: more
                                     # than a pipe ever has between its address generator
                                     # and its bus responses (in_flight_depth)


def in_flight_depth(max_outstanding):
    """Copies a pipe keeps between its address generator and their Completions: one per
    AXI burst in flight and per row past the bus, so that copies of one burst each keep
    the bus busy; IN_FLIGHT_DEPTH at least."""
    depth = max(IN_FLIGHT_DEPTH, max_outstanding + ROWS_PAST_BUS)
    if depth >= 2 ** COPY_SEQ_BITS:     # abort requests name copies unambiguously
        raise ValueError(f"max_outstanding {max_outstanding}: at most "
                         f"{2 ** COPY_SEQ_BITS - 1 - ROWS_PAST_BUS} bursts in flight")
    return depth


# A row's length plus a constant, as two's complement (RowTerms).
ROW_TERM_BITS = LEN_BITS + 2


class RowTerms(data.Struct):
    """A copy's row length plus each constant that the per-row sums of
    `legalizer.first_split` and `ub_reader.ub_words_m1` add to an address's low bits, at
    the bus width W (`legalizer.row_terms`). The checker works them out once per copy, so
    each of those sums is one carry chain of two operands, with no carry-save level in
    front of it."""
    len_m1: ROW_TERM_BITS               # length - 1
    end_m1: ROW_TERM_BITS               # length + W - 1
    past: ROW_TERM_BITS                 # length - grid - 1: its sum's sign, the row fits


class FirstSplit(data.Struct):
    """Where a GM row's first burst ends (`legalizer.first_split`). Worked out by the
    address generator into its output register, from registers, so no carry chain of it
    lies between the row and the queues that take it."""
    end: LEN_BITS + 1                   # the row's end, counted from its grid cell's start
    end_words: LEN_BITS + 1             # ... in words, rounded up
    first_fits: 1                       # the row ends in its first grid cell: one burst
    first_len: 8                        # the first burst's words - 1 (its AxLEN)


class RowJob(data.Struct):
    """One burst row of a copy, in loop order, as the address generator emits it.

    MTE2 (GM->UB): `length` bytes are read from GM at `gm_addr`; the UB row at `ub_addr`
    receives `extent` bytes: `left` pad bytes, the data, then pad up to `extent` when
    `select`; otherwise exactly the `length` data bytes at `ub_addr` (left = 0,
    extent = length).
    MTE3 (UB->GM): `length` bytes are read from UB at `ub_addr` and written to GM at
    `gm_addr`; left = 0, extent = length, select = 0.
    `pad8` is the pad pattern for 8 bytes of UB starting at an 8-byte-aligned address:
    byte i is byte (i mod es) of pad_val, so replicating it fills any aligned word.
    `split`: where the first burst of the GM row at `gm_addr` ends (MTE2 and MTE3).
    `ub_words_m1`: the W-byte words the UB row at `ub_addr` of `length` bytes touches,
    less one (ub_words_m1_bits); the address generator works it out into its output
    register, so the UB reader's row needs no carry chain.
    `new_sid`: the row is its copy's first and its sid differs from the row before it
    (from the sid of the pipe's previous non-empty copy; 0 after reset), so the GM side
    fences its bursts on a flag rather than a compare.
    """
    gm_addr: GM_ADDR_BITS
    ub_addr: UB_ADDR_BITS
    length: LEN_BITS
    left: LEFT_BITS
    extent: EXTENT_BITS
    select: 1
    pad8: 64
    sid: SID_BITS
    cache: CACHE_BITS
    last: 1             # last row of its command
    split: FirstSplit
    ub_words_m1: UB_ADDR_BITS
    new_sid: 1


class AbortSignature(wiring.Signature):
    """A datapath asks its address generator to cut a copy short (Out from the datapath).

    `valid` for one cycle per bus error; `copy` is the number of the failing copy among the
    pipe's non-empty copies since reset (modulo 2^COPY_SEQ_BITS), counted by the datapath
    as the copies whose last row it has finished with. The address generator stops walking
    that copy if it still is, and otherwise ignores the request."""
    def __init__(self):
        super().__init__({"valid": Out(1), "copy": Out(COPY_SEQ_BITS)})


class Completion(data.Struct):
    """A pipe datapath reports each finished copy, in command order."""
    error: ErrorCode    # NONE or BUS_ERROR
    address: GM_ADDR_BITS


def ub_word_bits(width_bytes):
    """Address bits of a UB word of `width_bytes` bytes."""
    return UB_ADDR_BITS - (width_bytes.bit_length() - 1)


class UbWriteSignature(wiring.Signature):
    """A requester's write port into UB (Out from the requester).

    A write happens on a cycle with valid & ready; the arbiter may hold ready low.
    `strb` bit i enables byte i of `data` (little-endian bytes in the word)."""
    def __init__(self, width_bytes):
        super().__init__({
            "addr": Out(ub_word_bits(width_bytes)),
            "data": Out(8 * width_bytes),
            "strb": Out(width_bytes),
            "valid": Out(1),
            "ready": In(1),
        })


class UbReadSignature(wiring.Signature):
    """A requester's read port into UB (Out from the requester).

    A request is accepted on a cycle with valid & ready; its word appears on `rdata` with
    `rvalid` high three or more cycles later (the request's slot, the memory's read, then
    its output register; see ub.UnifiedBuffer), words in request order. The
    response has no backpressure: the requester must have room for every word it asks
    for."""
    def __init__(self, width_bytes):
        super().__init__({
            "addr": Out(ub_word_bits(width_bytes)),
            "valid": Out(1),
            "ready": In(1),
            "rdata": In(8 * width_bytes),
            "rvalid": In(1),
        })
