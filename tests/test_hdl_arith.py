"""arith.sum_mod: carry-save sums of Values and constants, against Python's modular sums."""

import random

import pytest
from amaranth.hdl import Module, Signal

from hdl.lib.arith import sum_mod
from hdl_helpers import run_sim


@pytest.mark.parametrize("widths,constants,width", [
    ((17, 5), (-1,), 18),               # length + offset - 1
    ((20, 17), (-4097,), 22),           # the sign of offset + length - grid - 1
    ((17, 5, 9), (-1,), 19),            # four terms: two carry-save levels
    ((12, 12, 12, 12, 12), (), 15),     # five Values, no constant
    ((8,), (3, -7), 8),                 # one Value: constants folded, one add
])
def test_sum_matches_modular_arithmetic(widths, constants, width):
    terms = [Signal(w, name=f"t{k}") for k, w in enumerate(widths)]
    total = Signal(width)
    m = Module()
    m.d.comb += total.eq(sum_mod([*terms, *constants], width))
    m.d.sync += Signal().eq(0)          # a clock domain for the simulator's ticks
    rng = random.Random(width)

    async def bench(ctx):
        for _ in range(200):
            values = [rng.getrandbits(w) for w in widths]
            for term, value in zip(terms, values):
                ctx.set(term, value)
            await ctx.delay(1e-9)
            assert ctx.get(total) == (sum(values) + sum(constants)) % (1 << width)

    run_sim(m, bench)
