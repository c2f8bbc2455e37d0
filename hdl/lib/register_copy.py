"""A register that synthesis keeps as flip-flops of its own, for copies of one signal."""

from amaranth.hdl import ClockSignal, Instance, Module, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .ecp5 import Ecp5Target


class RegisterCopy(wiring.Component):
    """`q` is `d` one clock edge later; the domain's (synchronous) reset clears it.

    Copies of a register that fans out far are meant to be placed each near its own
    loads, but Yosys merges flip-flops that load the same value (their initial values
    only tell two apart). Elaborated for `Ecp5Target`, each bit is a TRELLIS_FF instance
    (marked `keep`, synchronous reset on LSR), which Yosys does not merge; otherwise it
    is a plain register.
    """

    def __init__(self, width):
        super().__init__({"d": In(width), "q": Out(width)})

    def elaborate(self, platform):
        m = Module()
        if not isinstance(platform, Ecp5Target):
            q = Signal.like(self.q)
            m.d.sync += q.eq(self.d)
            m.d.comb += self.q.eq(q)
            return m
        for k in range(len(self.d)):
            m.submodules[f"ff{k}"] = Instance(
                "TRELLIS_FF", a_keep=1,
                p_GSR="DISABLED", p_CEMUX="1", p_CLKMUX="CLK", p_LSRMUX="LSR",
                p_REGSET="RESET", p_SRMODE="LSR_OVER_CE",
                i_CLK=ClockSignal(), i_CE=1, i_LSR=ResetSignal(), i_DI=self.d[k], o_Q=self.q[k])
        return m
