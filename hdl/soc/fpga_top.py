"""The FPGA top: the engine behind its AXI4-Lite CSR front end.

A CPU reaches everything through `s_axil` (registers of `hdl.soc.regmap`, including a UB
window); the engine reaches external memory through `m_axi`; the UB is the engine's own
block RAM.
"""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from model.isa import DEFAULT_PROFILE, GM_ADDR_BITS

from ..lib.axi import AXI4Signature
from ..top import AXI_ID_BITS, MteDma
from . import regmap
from .csr import AXI4LiteSignature, CsrFrontEnd, status_port


class MteDmaFpga(wiring.Component):
    """Ports: s_axil (AXI4-Lite slave), m_axi (AXI4 master to GM), irq (level)."""

    def __init__(self, profile=DEFAULT_PROFILE, width_bytes=32, max_outstanding=8):
        self.engine = MteDma(profile, width_bytes, max_outstanding, routed_words=True)
        self.csr = CsrFrontEnd(width_bytes, self.engine.profile.ub_size)
        super().__init__({
            "s_axil": In(AXI4LiteSignature(regmap.ADDR_BITS)),
            "m_axi": Out(AXI4Signature(GM_ADDR_BITS, 8 * width_bytes, AXI_ID_BITS)),
            "irq": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.engine = engine = self.engine
        m.submodules.csr = csr = self.csr
        wiring.connect(m, wiring.flipped(self.s_axil), csr.axil)
        wiring.connect(m, wiring.flipped(self.m_axi), engine.m_axi)
        wiring.connect(m, csr.cmd, engine.cmd)
        wiring.connect(m, csr.ub, engine.ub_test)
        for pipe in regmap.PIPES:
            wiring.connect(m, getattr(engine, status_port(pipe)), getattr(csr, status_port(pipe)))
        m.d.comb += [
            csr.engine_idle.eq(engine.idle),
            engine.clear_errors.eq(csr.clear_errors),
            self.irq.eq(csr.irq),
        ]
        return m
