"""cocotb test: the UB backdoor (tb/backdoor.py) and the `ub_test` port agree, so a run
with either compares the same memory.

Each way is checked against the other on whole random images: written in place and read
back through the port, written through the port and read in place. A backdoor that took
its parts in another order, or a word's bytes in another order, fails both.
"""

import os

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles

from hdl.ub.ub import TEST_READ_LATENCY

from tb.backdoor import UbBackdoor
from tb.harness import Harness


@cocotb.test()
async def backdoor_matches_port(dut):
    h = Harness(dut, os.environ.get("MTE_PROFILE", "a5"), ub_access="port")
    await h.start()
    backdoor = UbBackdoor(h.ub_words, h.width)
    rng = np.random.default_rng(59)
    for _ in range(2):
        image = rng.integers(0, 256, h.ub_words * h.width, dtype=np.uint8).tobytes()
        backdoor.write(image)
        h.shadow = None                   # the port's shadow no longer knows UB
        assert await h.read_ub() == image, "backdoor write, port read"
        image = rng.integers(0, 256, h.ub_words * h.width, dtype=np.uint8).tobytes()
        await h.write_ub(image)
        await ClockCycles(dut.clk, TEST_READ_LATENCY)     # the port's last write lands
        assert backdoor.read() == image, "port write, backdoor read"
