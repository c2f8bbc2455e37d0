"""PadInserter in the Amaranth simulator: every UB word of every row, against a word-level
reference and against the SPEC's byte rule, at one word per cycle.

Rows: element sizes 1, 2, 4, 8 with distinct pad values, every left pad 0..32 bytes in
whole elements, right pads, row strides that leave several words of right fill,
select = 0 rows, rows shorter than a word and rows of many words, packed rows (a5: select
= 0 rows back to back, starting at any byte of a line); W = 16, 32, 64 and 128."""

import random

import pytest
from amaranth.back import verilog

from hdl.datapath.pad import PadInserter
from model.isa import PAD_MAX_BYTES, UB_ADDR_BITS, UB_LINE
from model.rules import align_up
from hdl_helpers import BLOCK_WIDTHS, idle, run_sim, stream_put
from test_hdl_aligner import byte_mask, collect, words_of

UB_TOP = 1 << UB_ADDR_BITS


def make_rows(width, rng, count):
    """Rows as the address generator makes them, each with the element size and pad value
    it came from (the SPEC's terms) beside the PadRow fields."""
    rows = []
    # Every left pad of every element size, then random shapes.
    plan = [(es, left, True) for es in (1, 2, 4, 8)
            for left in range(0, PAD_MAX_BYTES + 1, es)]
    plan += [(rng.choice((1, 2, 4, 8)), None, rng.random() < 0.7)
             for _ in range(max(0, count - len(plan)))]
    for es, left, select in plan:
        pad_val = rng.getrandbits(8 * es)
        kind = rng.randrange(4)
        if kind == 0:
            length = es * rng.randint(1, max(1, width // es - 1))          # under a word
        elif kind == 1:
            length = es * rng.randint(1, 12 * width // es)                 # many words
        else:
            length = es * rng.randint(1, 3 * width // es)
        if select:
            if left is None:
                left = es * rng.randint(0, PAD_MAX_BYTES // es)
            right = es * rng.randint(0, PAD_MAX_BYTES // es)
            footprint = left + length + right
            stride = rng.choice((0, footprint, footprint + rng.randint(1, 5 * width)))
            extent = align_up(max(stride, footprint), UB_LINE)
        else:
            left, extent = 0, length
        ub_addr = UB_LINE * rng.randrange((UB_TOP - extent) // UB_LINE)
        if not select and rng.random() < 0.3:
            # select = 0 ignores left and extent: any leftovers there must not matter.
            left, extent = rng.randint(1, PAD_MAX_BYTES), extent + rng.randint(1, 4 * width)
        pattern = pad_val.to_bytes(8, "little")[:es] * (8 // es)
        rows.append({
            "row": {"ub_addr": ub_addr, "length": length, "left": left, "extent": extent,
                    "select": int(select), "pad8": int.from_bytes(pattern, "little"),
                    "last": int(rng.random() < 0.3)},
            "es": es, "pad_val": pad_val, "body": rng.randbytes(length),
        })
    return rows


def aligned_words(width, row, body, rng):
    """The Aligner's words for a row: strb marks the row's bytes, the rest is noise."""
    dst_off = (row["ub_addr"] + (row["left"] if row["select"] else 0)) % width
    n = words_of(dst_off, row["length"], width)
    raw = bytearray(rng.randbytes(n * width))
    raw[dst_off:dst_off + len(body)] = body
    words = []
    for k in range(n):
        strb = sum(1 << p for p in range(width)
                   if 0 <= k * width + p - dst_off < row["length"])
        words.append({"data": int.from_bytes(raw[k * width:(k + 1) * width], "little"),
                      "strb": strb, "last": int(k == n - 1)})
    return words


def expected_ub_words(width, row, body):
    """Reference: (addr, data, strb, last, cmd_last) of every UB word of the row."""
    span = row["extent"] if row["select"] else row["length"]
    start = row["ub_addr"]
    data_lo = start + (row["left"] if row["select"] else 0)
    pad8 = row["pad8"].to_bytes(8, "little")
    first, final = start // width, (start + span - 1) // width
    out = []
    for w in range(first, final + 1):
        word, strb = bytearray(width), 0
        for p in range(width):
            x = w * width + p
            if start <= x < start + span:
                strb |= 1 << p
                word[p] = body[x - data_lo] if data_lo <= x < data_lo + len(body) else pad8[x % 8]
        out.append((w, int.from_bytes(word, "little"), strb, int(w == final),
                    int(w == final and row["last"])))
    return out


def run_pad(width, rows, rng, in_stall=0.0, out_stall=0.0):
    """Streams `rows` through one PadInserter, the inputs idling on a random `in_stall`
    fraction of items and `ub` refusing a random `out_stall` fraction of cycles; checks
    every word; returns the cycle at which the last word left and the number of words."""
    dut = PadInserter(width)
    data_words = [w for r in rows for w in aligned_words(width, r["row"], r["body"], rng)]
    expected = [w for r in rows for w in expected_ub_words(width, r["row"], r["body"])]
    got = []

    async def feed(ctx, stream, items):
        for item in items:
            if in_stall and rng.random() < in_stall:
                await idle(ctx, rng.randint(1, 3))
            await stream_put(ctx, stream, item)

    async def feed_rows(ctx):
        await feed(ctx, dut.rows, [r["row"] for r in rows])

    async def feed_data(ctx):
        await feed(ctx, dut.data, data_words)

    async def drain(ctx):
        got.extend(await collect(ctx, dut.ub, len(expected),
                                 ("addr", "data", "strb", "last", "cmd_last"), out_stall, rng))

    run_sim(dut, feed_rows, feed_data, drain, timeout=8 * len(expected) + 100)

    n = 0
    for i, r in enumerate(rows):
        row, body = r["row"], r["body"]
        for want in expected_ub_words(width, row, body):
            _, addr, data, strb, last, cmd_last = got[n]
            where = f"row {i} {row} word {n}"
            assert (addr, strb, last, cmd_last) == (want[0], want[2], want[3], want[4]), where
            assert data & byte_mask(strb, width) == want[1], where
            n += 1
        check_spec_bytes(width, r, got[n - len(expected_ub_words(width, row, body)):n])
    return got[-1][0], len(expected)


def check_spec_bytes(width, r, words):
    """The SPEC's rule, independently of the reference: the bytes written are exactly the
    row's; pad at row offset o is byte (o mod es) of the pad value; data follows the left
    pad (select = 1), or is all there is (select = 0)."""
    row, body, es = r["row"], r["body"], r["es"]
    written = {}
    for _, addr, data, strb, _, _ in words:
        for p in range(width):
            if strb >> p & 1:
                written[addr * width + p] = data >> (8 * p) & 0xFF
    start = row["ub_addr"]
    if row["select"]:
        left, span = row["left"], row["extent"]
    else:
        left, span = 0, row["length"]
    assert sorted(written) == list(range(start, start + span))
    pad = r["pad_val"].to_bytes(8, "little")
    for o in range(span):
        if left <= o < left + len(body):
            assert written[start + o] == body[o - left]
        else:
            assert written[start + o] == pad[o % es]


# A row taken on edge 1 is set up on edge 3 (its input register, then a set-up
# register); its first word leaves on edge 4 and is seen taken on the consumer's count 4.
LATENCY = 4


@pytest.mark.parametrize("width", BLOCK_WIDTHS)
def test_rows_full_rate(width):
    rng = random.Random(width)
    rows = make_rows(width, rng, 400)
    cycles, words = run_pad(width, rows, rng)
    assert cycles <= words + LATENCY


@pytest.mark.parametrize("width", BLOCK_WIDTHS)
@pytest.mark.parametrize("in_stall, out_stall", [(0.3, 0.3), (0.0, 0.7), (0.6, 0.0)])
def test_rows_random_stalls(width, in_stall, out_stall):
    rng = random.Random(1000 + width)
    run_pad(width, make_rows(width, rng, 200), rng, in_stall, out_stall)


def test_mid_word_rows_w64():
    """W = 64: rows starting at byte 32 of a word, shorter than the half word left, and
    ending in the first half of a word."""
    width, rng = 64, random.Random(3)
    rows = []
    for length, left, extent in ((1, 0, 32), (8, 24, 32), (32, 0, 32), (4, 4, 64),
                                 (40, 8, 96), (1, 32, 64), (2, 0, 2)):
        for base in (0, 32):
            rows.append({
                "row": {"ub_addr": 4096 + base + 64 * len(rows), "length": length,
                        "left": left, "extent": extent, "select": int(extent != length),
                        "pad8": 0x0807060504030201, "last": 1},
                "es": 8, "pad_val": 0x0807060504030201, "body": rng.randbytes(length)})
    cycles, words = run_pad(width, rows, rng)
    assert cycles <= words + LATENCY


def packed_rows(width, rng, copies):
    """select = 0 rows as a5's packed copies make them: each copy's rows back to back
    from a line (row r at ub + r * len_burst), so all but the first start mid-line, at
    any byte of a word, and two rows share the word where one ends and the next begins."""
    rows = []
    for _ in range(copies):
        es = rng.choice((1, 2, 4, 8))
        length = es * rng.choice((1, rng.randint(1, 2 * width // es), rng.randint(1, 80 // es)))
        n = rng.randint(2, 6)
        ub = UB_LINE * rng.randrange((UB_TOP - n * length) // UB_LINE)
        for r in range(n):
            rows.append({
                "row": {"ub_addr": ub + r * length, "length": length, "left": 0,
                        "extent": length, "select": 0, "pad8": 0, "last": int(r == n - 1)},
                "es": es, "pad_val": 0, "body": rng.randbytes(length)})
    return rows


@pytest.mark.parametrize("width", BLOCK_WIDTHS)
def test_packed_rows_start_anywhere(width):
    """Rows starting at every byte of a line: exactly their bytes are written, at one
    word per cycle, also under stalls."""
    rng = random.Random(55 + width)
    rows = packed_rows(width, rng, 40)
    offsets = {r["row"]["ub_addr"] % UB_LINE for r in rows}
    assert len(offsets) >= UB_LINE // 2 and any(o % 2 for o in offsets), offsets
    cycles, words = run_pad(width, rows, rng)
    assert cycles <= words + LATENCY
    run_pad(width, packed_rows(width, rng, 20), rng, 0.3, 0.3)


@pytest.mark.parametrize("width", BLOCK_WIDTHS)
def test_converts_to_verilog(width):
    text = verilog.convert(PadInserter(width), name="pad_inserter")
    assert "module pad_inserter" in text
