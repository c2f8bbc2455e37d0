"""BlockRam: both forms against a byte model on the simulator (the ECP5 form with each
DP16KD replaced by a model of the block in the mode it is used in), and the ECP5 form
through Yosys's ECP5 synthesis."""

import random

import pytest
from amaranth.hdl import Cat, ClockSignal, Elaboratable, Fragment, Module, Signal
from amaranth.lib.memory import Memory

from hdl.lib import block_ram
from hdl.lib.block_ram import READ_LATENCY, BlockRam, block_shape, dp16kd_count
from hdl.lib.ecp5 import Ecp5Target
from hdl_helpers import run_sim, synth_ecp5_module


class Dp16kdModel(Elaboratable):
    """A DP16KD as BlockRam uses it, built from its Instance arguments: both ports in one
    of the modes x1, x2, x4 (word address on AD[13:0], AD[13:1], AD[13:2]), x9
    (AD[13:3]) or x18 (AD[13:4], byte enables on AD[1:0], bytes of 9 bits); port A
    writes, port B reads, through its output register when REGMODE_B is OUTREG. Any other
    use of the block fails here."""

    LOW_PINS = {1: 0, 2: 1, 4: 2, 9: 3, 18: 4}

    def __init__(self, type_, **kwargs):
        assert type_ == "DP16KD"
        self.params = {k[2:]: v for k, v in kwargs.items() if k.startswith("p_")}
        self.pins = {k[2:]: v for k, v in kwargs.items() if k[:2] in ("i_", "o_")}
        self.width = self.params["DATA_WIDTH_A"]
        assert self.params["DATA_WIDTH_B"] == self.width in self.LOW_PINS
        assert self.params["CSDECODE_A"] == self.params["CSDECODE_B"] == "0b000"
        low = self.LOW_PINS[self.width]
        tied = {"WEB": 0, "CEA": 1, "CEB": 1, "OCEB": 1, "RSTA": 0, "RSTB": 0,
                **{f"ADA{k}": 0 for k in range(2 if self.width == 18 else 0, low)},
                **{f"ADB{k}": 0 for k in range(low)},
                **{f"DIA{k}": 0 for k in range(self.width, 18)},
                **{f"CS{side}{k}": 0 for side in "AB" for k in range(3)}}
        for pin, value in tied.items():
            assert self.pins[pin] is value, pin
        assert isinstance(self.pins["CLKA"], ClockSignal)
        assert isinstance(self.pins["CLKB"], ClockSignal)

    def _bus(self, prefix, bits):
        return Cat(self.pins[f"{prefix}{k}"] for k in bits)

    def elaborate(self, platform):
        m = Module()
        width, low = self.width, self.LOW_PINS[self.width]
        memory = m.submodules.memory = Memory(shape=width, depth=1 << (14 - low), init=[])
        byte = 9 if width >= 9 else width
        write = memory.write_port(granularity=byte)
        read = memory.read_port()
        we = self.pins["WEA"]
        enables = Cat(self.pins["ADA0"] & we, self.pins["ADA1"] & we) if width == 18 else we
        m.d.comb += [
            write.addr.eq(self._bus("ADA", range(low, 14))),
            write.data.eq(self._bus("DIA", range(width))),
            write.en.eq(enables),
            read.addr.eq(self._bus("ADB", range(low, 14))),
        ]
        out = Signal(width)
        if self.params["REGMODE_B"] == "OUTREG":
            m.d.sync += out.eq(read.data)
        else:
            assert self.params["REGMODE_B"] == "NOREG"
            m.d.comb += out.eq(read.data)
        m.d.comb += [self.pins[f"DOB{k}"].eq(out[k]) for k in range(width)]
        return m


class ModelledEcp5(Elaboratable):
    """`dut` elaborated in its ECP5 form, for the simulator."""

    def __init__(self, dut):
        self.dut = dut

    def elaborate(self, platform):
        return Fragment.get(self.dut, Ecp5Target())


def _random_traffic(dut, top, seed, cycles=1500):
    """Writes and reads at random, most of them to a few words of every row, checked
    against a byte model: each read shows READ_LATENCY edges after its address."""
    rng = random.Random(seed)
    width = dut.width_bytes
    words = block_shape(width, dut.depth).words     # a block's words: a grid row's
    hot = [a for row in range(0, dut.depth, words) for a in (row, row + 1, row + words - 1)
           if a < dut.depth]
    model = [0] * dut.depth
    stats = {"checked": 0}

    async def bench(ctx):
        expect = [None] * READ_LATENCY
        for _ in range(cycles):
            w_addr = rng.choice(hot) if rng.random() < 0.8 else rng.randrange(dut.depth)
            r_addr = rng.choice(hot) if rng.random() < 0.8 else rng.randrange(dut.depth)
            while r_addr == w_addr:         # the forms differ there: not a use case
                r_addr = rng.randrange(dut.depth)
            data = rng.getrandbits(8 * width)
            en = rng.getrandbits(width) if rng.random() < 0.7 else 0
            for signal, value in ((dut.w_addr, w_addr), (dut.w_data, data), (dut.w_en, en),
                                  (dut.r_addr, r_addr)):
                ctx.set(signal, value)
            want = expect.pop(0)
            if want is not None:
                assert ctx.get(dut.r_data) == want
                stats["checked"] += 1
            expect.append(model[r_addr])
            mask = sum(0xFF << (8 * i) for i in range(width) if en >> i & 1)
            model[w_addr] = (model[w_addr] & ~mask) | (data & mask)
            await ctx.tick()

    run_sim(top, bench)
    assert stats["checked"] >= cycles - READ_LATENCY


# Shapes: x18 in 3 rows and in 1, x4, x2, x1, x9 (an odd width) in 3 rows.
SIZES = [(16, 3000), (4, 1024), (8, 4096), (8, 8192), (2, 16384), (3, 5000)]


@pytest.mark.parametrize("width_bytes, depth", SIZES)
def test_generic_form_reads_what_was_written(width_bytes, depth):
    dut = BlockRam(width_bytes, depth)
    _random_traffic(dut, dut, seed=depth)


@pytest.mark.parametrize("width_bytes, depth", SIZES)
def test_ecp5_form_reads_what_was_written(monkeypatch, width_bytes, depth):
    """The grid's wiring, row select and latency, with each block modelled."""
    monkeypatch.setattr(block_ram, "Instance", Dp16kdModel)
    dut = BlockRam(width_bytes, depth)
    _random_traffic(dut, ModelledEcp5(dut), seed=depth)


def test_shapes_cover_the_cases_tested():
    assert [block_shape(*size).data_width for size in SIZES] == [18, 18, 4, 2, 1, 9]
    assert [dp16kd_count(*size) for size in SIZES] == [24, 2, 16, 32, 16, 9]


def _synthesized_cells(dut, tmp_path):
    cells = synth_ecp5_module(dut, "bram", tmp_path)["cells"]
    by_type = {}
    for cell in cells.values():
        by_type.setdefault(cell["type"], []).append(cell)
    return by_type


def _check_blocks(blocks, data_width):
    for block in blocks:
        params = block["parameters"]
        assert params["REGMODE_B"] == "OUTREG" and params["REGMODE_A"] == "NOREG"
        assert params["GSR"] == "DISABLED"
        assert int(params["DATA_WIDTH_A"], 2) == int(params["DATA_WIDTH_B"], 2) == data_width


def test_ecp5_form_is_a_grid_of_registered_blocks(tmp_path):
    """3000 words of 16 bytes: 3 rows of 8 x18 blocks, each with its output register on,
    and the only flip-flops the two stages of the read's row number."""
    cells = _synthesized_cells(BlockRam(16, 3000), tmp_path)
    assert len(cells["DP16KD"]) == dp16kd_count(16, 3000) == 3 * 8
    _check_blocks(cells["DP16KD"], 18)
    assert len(cells["TRELLIS_FF"]) == 2 * 2    # row number: 2 bits, READ_LATENCY stages


def test_ecp5_form_of_one_row_is_the_blocks_alone(tmp_path):
    """8192 words of 16 bytes (half of profile a5's UB at W = 32): 64 x2 blocks, one
    row, so no logic at all: the blocks' output registers are the read data, and each
    block's write enable is its byte's."""
    cells = _synthesized_cells(BlockRam(16, 8192), tmp_path)
    assert len(cells["DP16KD"]) == dp16kd_count(16, 8192) == 64
    _check_blocks(cells["DP16KD"], 2)
    assert set(cells) == {"DP16KD"}
