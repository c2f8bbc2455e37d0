"""A memory of byte-enabled words with one write port and one read port whose data is
registered, as an ECP5 DP16KD holds it inside the block.

Elaborated for `Ecp5Target` (what `make fpga` builds), it is a grid of DP16KD blocks in
the shape (`Dp16kdShape`) that takes the fewest blocks, then the fewest rows, with the
read port's output register on (REGMODE OUTREG), so the blocks' slow clock-to-out stays
inside them and nextpnr times a register's clock-to-out instead. A grid of more than one
row is followed by a mux of its rows, selected by a registered copy of the read address.
Elaborated for anything else (simulation, the generic Verilog), it is an
`amaranth.lib.memory` with a register on its read data. Both read a word two clock edges
after its address.
"""

from dataclasses import dataclass

from amaranth.hdl import Cat, ClockSignal, Const, Instance, MemoryData, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from .ecp5 import Ecp5Target
from .muxes import mux_tree

# Edges from a read address to its word on `r_data`: the memory's read, then the output
# register.
READ_LATENCY = 2
ADDRESS_PINS = 14           # AD0 .. AD13 of each DP16KD port


@dataclass(frozen=True)
class Dp16kdShape:
    """One of the DP16KD's data widths, as used here: `bits` data bits of each of
    2 ** 14 / bits words (in the x9 and x18 modes, 8 and 16 bits of the 9 and 18: the
    ninth bit of each byte is unused)."""
    data_width: int         # the block's DATA_WIDTH parameter

    @property
    def bits(self):
        return {9: 8, 18: 16}.get(self.data_width, self.data_width)

    @property
    def words(self):
        return (1 << ADDRESS_PINS) // self.bits

    @property
    def low_pins(self):
        """Address pins below the word address: the x18 mode's two byte enables, and
        pins the narrower-word modes leave at 0."""
        return ADDRESS_PINS - exact_log2(self.words)


SHAPES = tuple(Dp16kdShape(width) for width in (1, 2, 4, 9, 18))


def _grid(shape, width_bytes, depth):
    """(columns, rows) of a grid of `shape` blocks for `depth` words of `width_bytes`."""
    return -(-8 * width_bytes // shape.bits), -(-depth // shape.words)


def block_shape(width_bytes, depth):
    """The shape of the ECP5 form's blocks: of those whose words split the memory's into
    whole columns, the fewest blocks, then the fewest rows."""
    def cost(shape):
        columns, rows = _grid(shape, width_bytes, depth)
        return columns * rows, rows
    return min((shape for shape in SHAPES if 8 * width_bytes % shape.bits == 0), key=cost)


def dp16kd_count(width_bytes, depth):
    """DP16KD blocks of the ECP5 form."""
    columns, rows = _grid(block_shape(width_bytes, depth), width_bytes, depth)
    return columns * rows


class BlockRam(wiring.Component):
    """`depth` words of `width_bytes` bytes.

    Write: on every cycle, the bytes of `w_data` whose bit of `w_en` is set are stored at
    word `w_addr` (no bit set: no write). Read: on every cycle word `r_addr` is read, and
    `r_data` shows it READ_LATENCY edges later, for that cycle. A read of a word written on
    the same cycle returns the old word in the generic form; the ECP5 form leaves it
    undefined (two DP16KD ports at one address), so users must not depend on it.
    Addresses are taken modulo 2 ** ceil_log2(depth); below that, those at or beyond
    `depth` hold no word. The contents start zeroed."""

    def __init__(self, width_bytes, depth):
        self.width_bytes = width_bytes
        self.depth = depth
        self.addr_bits = max(ceil_log2(depth), 1)
        # The generic form's words, which a simulator testbench may read and write in
        # place (ctx.get / ctx.set of contents[i]).
        self.contents = MemoryData(shape=8 * width_bytes, depth=depth, init=[])
        super().__init__({
            "w_addr": In(self.addr_bits),
            "w_data": In(8 * width_bytes),
            "w_en": In(width_bytes),
            "r_addr": In(self.addr_bits),
            "r_data": Out(8 * width_bytes),
        })

    def elaborate(self, platform):
        m = Module()
        if isinstance(platform, Ecp5Target):
            self._dp16kd_grid(m)
            return m
        memory = m.submodules.memory = Memory(self.contents)
        write = memory.write_port(granularity=8)
        read = memory.read_port()
        m.d.comb += [write.addr.eq(self.w_addr), write.data.eq(self.w_data),
                     write.en.eq(self.w_en), read.addr.eq(self.r_addr)]
        m.d.sync += self.r_data.eq(read.data)
        return m

    def _dp16kd_grid(self, m):
        """Column c of the grid holds bits [c * bits, (c + 1) * bits) of every word, row r
        the words from r * words on. Port A writes, port B reads through its output
        register; the read's row number is registered alongside it, twice, to pick the
        row's blocks."""
        shape = block_shape(self.width_bytes, self.depth)
        columns, rows = _grid(shape, self.width_bytes, self.depth)
        word_bits = exact_log2(shape.words)
        w_word = Const(0, word_bits) | self.w_addr[:word_bits]
        r_word = Const(0, word_bits) | self.r_addr[:word_bits]
        w_row = self.w_addr[word_bits:]
        r_row = self.r_addr[word_bits:]
        row_words = []
        for row in range(rows):
            hit = w_row == row if rows > 1 else Const(1)
            row_words.append(Cat(
                self._dp16kd(m, f"block_{row}_{column}", shape, column, hit, w_word, r_word)
                for column in range(columns)))
        if rows == 1:
            m.d.comb += self.r_data.eq(row_words[0])
            return
        picked = [Signal.like(r_row, name=f"read_row{k}") for k in range(READ_LATENCY)]
        m.d.sync += [stage.eq(before) for before, stage in zip([r_row, *picked], picked)]
        m.d.comb += self.r_data.eq(mux_tree(row_words, picked[-1]))

    def _dp16kd(self, m, name, shape, column, hit, w_word, r_word):
        """One block: data bits [column * bits, (column + 1) * bits). Returns its read
        data."""
        data = self.w_data.word_select(column, shape.bits)
        first_byte = column * shape.bits // 8
        enables = self.w_en[first_byte:first_byte + -(-shape.bits // 8)]
        out = Signal(18, name=f"{name}_do")
        low = [0] * shape.low_pins
        if shape.data_width == 18:
            # The x18 mode's byte enables; each byte is 9 bits wide in the block.
            low[:2] = [enables[0], enables[1]]
            pins_in, pins_out = Cat(data[:8], 0, data[8:], 0), Cat(out[:8], out[9:17])
        else:
            pins_in, pins_out = data, out[:shape.bits]
        ports = {
            **{f"i_DIA{k}": bit for k, bit in enumerate(pins_in)},
            **{f"i_ADA{k}": bit for k, bit in enumerate([*low, *w_word])},
            "i_WEA": hit & enables.any(),
            **{f"i_DIB{k}": 0 for k in range(18)},
            **{f"i_ADB{k}": bit for k, bit in enumerate([*([0] * shape.low_pins), *r_word])},
            "i_WEB": 0,
            **{f"o_DOB{k}": out[k] for k in range(18)},
        }
        ports.update({f"i_DIA{k}": 0 for k in range(len(pins_in), 18)})
        for side in "AB":
            ports.update({f"i_CLK{side}": ClockSignal(), f"i_CE{side}": 1,
                          f"i_OCE{side}": 1, f"i_RST{side}": 0,
                          **{f"i_CS{side}{k}": 0 for k in range(3)}})
        m.submodules[name] = Instance(
            "DP16KD",
            p_DATA_WIDTH_A=shape.data_width, p_DATA_WIDTH_B=shape.data_width,
            p_REGMODE_A="NOREG", p_REGMODE_B="OUTREG",
            p_RESETMODE="SYNC", p_ASYNC_RESET_RELEASE="SYNC",
            p_CSDECODE_A="0b000", p_CSDECODE_B="0b000",
            p_WRITEMODE_A="NORMAL", p_WRITEMODE_B="NORMAL",
            p_GSR="DISABLED",
            **ports,
        )
        return pins_out
