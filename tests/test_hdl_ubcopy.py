"""UbCopyDatapath (UB->UB) against a UB model: rows of whole lines copied byte for byte,
nothing else written, each command's Completion after its last row's bytes are in; W = 16
and 32 (words written as read), 64 and 128 (lines moved between places in a word)."""

import random

import numpy as np
import pytest

from hdl.datapath.line_writer import LineWriter
from hdl.datapath.ub_reader import ub_words_m1
from hdl.datapath.ubcopy import UbCopyDatapath
from hdl_helpers import BLOCK_WIDTHS, driver_types, run_sim, synth_ecp5_module
from model.isa import UB_LINE

UB_BYTES = 64 * 1024
SRC_REGION = (0, UB_BYTES // 2)
DST_REGION = (UB_BYTES // 2, UB_BYTES)


def random_commands(rng, count):
    """Commands as lists of rows (src, dst, length): line-aligned, whole lines, sources
    in the lower half of the UB and destinations, apart from each other, in the upper."""
    commands, dst = [], DST_REGION[0]
    for _ in range(count):
        rows = []
        for _ in range(rng.choice((1, 1, 2, 3, 5))):
            lines = rng.choice((1, 1, 2, 3, 4, 7))
            src = rng.randrange(SRC_REGION[0], SRC_REGION[1] - lines * UB_LINE, UB_LINE)
            dst += UB_LINE * rng.randint(0, 2)
            rows.append((src, dst, lines * UB_LINE))
            dst += lines * UB_LINE
        commands.append(rows)
    assert dst <= DST_REGION[1]
    return commands


def run_copy(width, commands, rng, rd_ready, wr_ready):
    """Runs the rows through the datapath with the UB ports' `ready` high on the given
    fraction of cycles and read data 3 to 5 cycles after the request; returns
    (UB image before, after, for each Completion the commands whose rows were all written
    by then)."""
    dut = UbCopyDatapath(width)
    image = np.frombuffer(random.Random(1).randbytes(UB_BYTES), dtype=np.uint8).copy()
    before = image.copy()
    rows = [(src, dst, length, index == len(command) - 1)
            for command in commands for index, (src, dst, length) in enumerate(command)]
    completions = []

    def done_so_far():
        """How many commands, from the first, have all their bytes at the destination."""
        count = 0
        for command in commands:
            if not all((image[dst:dst + length] == before[src:src + length]).all()
                       for src, dst, length in command):
                break
            count += 1
        return count

    async def feeder(ctx):
        for src, dst, length, last in rows:
            ctx.set(dut.rows.payload, {"ub_addr": src, "gm_addr": dst, "length": length,
                                       "extent": length, "last": last,
                                       "ub_words_m1": ub_words_m1(src, length - 1, width)})
            ctx.set(dut.rows.valid, 1)
            await ctx.tick().until(dut.rows.ready)
            ctx.set(dut.rows.valid, 0)

    async def memory(ctx):
        due, free_at, cycle = {}, 0, 0
        while len(completions) < len(commands):
            read_ready, write_ready = rng.random() < rd_ready, rng.random() < wr_ready
            ctx.set(dut.rd.ready, read_ready)
            ctx.set(dut.wr.ready, write_ready)
            landing = due.pop(cycle, None)
            ctx.set(dut.rd.rvalid, landing is not None)
            ctx.set(dut.rd.rdata, 0 if landing is None else landing)
            ctx.set(dut.done.ready, 1)
            *_, rd_valid, rd_addr, wr_valid, wr_addr, wr_data, wr_strb, done_valid = \
                await ctx.tick().sample(dut.rd.valid, dut.rd.addr, dut.wr.valid,
                                        dut.wr.addr, dut.wr.data, dut.wr.strb,
                                        dut.done.valid)
            if rd_valid and read_ready:
                free_at = max(free_at + 1, cycle + rng.randint(3, 5))
                start = rd_addr * width
                due[free_at] = int.from_bytes(image[start:start + width].tobytes(), "little")
            if wr_valid and write_ready:
                data = wr_data.to_bytes(width, "little")
                for lane in range(width):
                    if wr_strb >> lane & 1:
                        image[wr_addr * width + lane] = data[lane]
            if done_valid:
                completions.append(done_so_far())
            cycle += 1

    run_sim(dut, feeder, memory, timeout=200 * len(rows) + 200)
    return before, image, completions


def expected_image(before, commands):
    image = before.copy()
    for command in commands:
        for src, dst, length in command:
            image[dst:dst + length] = before[src:src + length]
    return image


@pytest.mark.parametrize("width", BLOCK_WIDTHS)
@pytest.mark.parametrize("rd_ready,wr_ready", [(1.0, 1.0), (0.6, 0.5)])
def test_copies_rows_whole_and_completes_after_them(width, rd_ready, wr_ready):
    rng = random.Random(f"{width}-{rd_ready}")
    commands = random_commands(rng, 40)
    before, after, completions = run_copy(width, commands, rng, rd_ready, wr_ready)
    # the whole UB: the rows' bytes, and not one byte more (the gaps between rows and
    # the source half are the image's own bytes, which every other place keeps)
    assert (after == expected_image(before, commands)).all()
    # Completion k comes once commands 0 .. k are all written
    assert all(done >= k + 1 for k, done in enumerate(completions)), completions
    assert len(completions) == len(commands)


def test_one_word_rows_at_full_rate():
    """Rows of one line at W = 32, the UB always ready: a word is written every cycle."""
    commands = [[(k * UB_LINE, DST_REGION[0] + k * UB_LINE, UB_LINE)] for k in range(32)]
    dut = UbCopyDatapath(32)
    writes = []

    async def bench(ctx):
        ctx.set(dut.rd.ready, 1)
        ctx.set(dut.wr.ready, 1)
        ctx.set(dut.done.ready, 1)
        due, sent, cycle = {}, 0, 0
        while len(writes) < len(commands):
            src, dst, length = commands[min(sent, len(commands) - 1)][0]
            ctx.set(dut.rows.valid, sent < len(commands))
            ctx.set(dut.rows.payload, {"ub_addr": src, "gm_addr": dst, "length": length,
                                       "extent": length, "last": 1})
            landing = due.pop(cycle, None)
            ctx.set(dut.rd.rvalid, landing is not None)
            ctx.set(dut.rd.rdata, landing or 0)
            *_, rows_ready, rd_valid, rd_addr, wr_valid = await ctx.tick().sample(
                dut.rows.ready, dut.rd.valid, dut.rd.addr, dut.wr.valid)
            sent += rows_ready and sent < len(commands)
            if rd_valid:
                due[cycle + 3] = rd_addr + 1
            if wr_valid:
                writes.append(cycle)
            cycle += 1

    run_sim(dut, bench, timeout=400)
    assert writes == list(range(writes[0], writes[0] + len(commands))), writes


def test_line_writer_data_ready_is_a_flip_flop(tmp_path):
    """After synth_ecp5, the line writer's `data.ready` is a flip-flop's output with no
    gate after it (its output queue's room), so the UB reader's queue, which it reads,
    takes its read enable from a register."""
    module = synth_ecp5_module(LineWriter(32), "writer", tmp_path)
    assert driver_types(module, module["ports"]["data__ready"]["bits"]) == ["TRELLIS_FF"]
