"""A registered 18 x 18-bit unsigned multiplier: operand registers and a product register.

Elaborated for `Ecp5Target` (what `make fpga` builds), it is one MULT18X18D with its
input registers on and its output register off, and the product register in the fabric:
the block's multiply (3.9 ns from its input registers) and a short route to flip-flops
that have no other source, so the placer keeps them beside the block and whatever logic
reads the product starts from them, not from a route out of a multiplier row (3 ns and
more in the whole design, which bound it). Elaborated for anything else (simulation, the
generic Verilog), it is the same registers around a `*`.
"""

from amaranth.hdl import ClockSignal, Const, Instance, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .ecp5 import Ecp5Target

OPERAND_BITS = 18


class RegisteredMultiplier(wiring.Component):
    """p = a * b of the operands as they were on the last cycle `load` was high, one cycle
    after that cycle's edge: `a` and `b` are registered on an edge where `load` is high,
    and `p` is the registered product of those registers (valid on the second edge).

    `a_bits`, `b_bits`: operand widths, at most OPERAND_BITS each. Nothing reads the
    operand registers before a load, so they need no reset."""

    def __init__(self, a_bits, b_bits):
        if not (1 <= a_bits <= OPERAND_BITS and 1 <= b_bits <= OPERAND_BITS):
            raise ValueError(f"operands must be 1 to {OPERAND_BITS} bits, "
                             f"not {a_bits} x {b_bits}")
        super().__init__({
            "a": In(a_bits),
            "b": In(b_bits),
            "load": In(1),
            "p": Out(a_bits + b_bits),
        })

    def elaborate(self, platform):
        m = Module()
        if isinstance(platform, Ecp5Target):
            self._mult18x18d(m)
            return m
        a = Signal.like(self.a, reset_less=True)
        b = Signal.like(self.b, reset_less=True)
        with m.If(self.load):
            m.d.sync += [a.eq(self.a), b.eq(self.b)]
        m.d.sync += self.p.eq(a * b)
        return m

    def _mult18x18d(self, m):
        """CE0 enables the input registers (`load`), on CLK0, not reset: RST0 is tied low
        and the global reset is off. The product leaves the block unregistered into `p`'s
        fabric flip-flops, which no reset needs either."""
        a = Const(0, OPERAND_BITS) | self.a
        b = Const(0, OPERAND_BITS) | self.b
        product = Signal(2 * OPERAND_BITS)
        ports = {f"i_A{k}": a[k] for k in range(OPERAND_BITS)}
        ports.update({f"i_B{k}": b[k] for k in range(OPERAND_BITS)})
        ports.update({f"i_C{k}": 0 for k in range(OPERAND_BITS)})
        ports.update({f"o_P{k}": product[k] for k in range(2 * OPERAND_BITS)})
        ports.update({f"i_{name}": 0 for name in ("SIGNEDA", "SIGNEDB", "SOURCEA", "SOURCEB")})
        m.submodules.dsp = Instance(
            "MULT18X18D",
            p_REG_INPUTA_CLK="CLK0", p_REG_INPUTA_CE="CE0", p_REG_INPUTA_RST="RST0",
            p_REG_INPUTB_CLK="CLK0", p_REG_INPUTB_CE="CE0", p_REG_INPUTB_RST="RST0",
            p_REG_OUTPUT_CLK="NONE",
            p_GSR="DISABLED", p_RESETMODE="SYNC",
            i_CLK0=ClockSignal(), i_CE0=self.load, i_RST0=0,
            **ports,
        )
        p = Signal.like(self.p, reset_less=True)
        m.d.sync += p.eq(product[:len(self.p)])
        m.d.comb += self.p.eq(p)
