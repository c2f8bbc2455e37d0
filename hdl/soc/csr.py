"""The CSR front end: an AXI4-Lite slave through which a CPU drives the engine.

The registers are those of `hdl.soc.regmap`. One write and one read are handled at a
time; a read takes 4 + TEST_READ_LATENCY cycles (address, the UB request, the UB's head
and read, the UB word into a landing register, its lane into a register, then data) so that
UB_DATA can read the UB's synchronous port like any other register: the route from the
UB's block RAMs, which lie all over the device, ends at the landing register with no
logic on it, and the lane select ends in a register before the read mux. The other
registers use those cycles for a first registered level of the read mux, per group (the
front end's own, each pipe's status). A write to CMD waits (AWREADY/WREADY low) while the
command FIFO is full, so no command word is ever lost.

What reaches the engine is registered: the UB window's requests (`ub` is driven from
registers, a cycle after the AXI handshake), `clear_errors`, and the done / error terms
of the interrupt, so no AXI input reaches the UB's block RAMs or the pipes in one cycle.
"""

import operator
from functools import reduce

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from model.isa import WORD_BITS, ErrorCode

from ..lib.axi import RESP_WIDTH, PROT_WIDTH, Resp
from ..lib.queue import BypassQueue
from ..ub.ub import TEST_READ_LATENCY, UbTestSignature
from ..intake.intake import RoutedWord, route_word
from ..pipe.pipe import StatusSignature
from . import regmap

DATA_BITS = 32


class AXI4LiteSignature(wiring.Signature):
    """AXI4-Lite as the master drives it, with the spec's member names (cocotbext-axi's
    `AxiLiteBus.from_prefix(dut, "s_axil_")` binds a top-level port `s_axil`)."""
    def __init__(self, addr_width, data_width=DATA_BITS):
        super().__init__({
            "awaddr": Out(addr_width), "awprot": Out(PROT_WIDTH),
            "awvalid": Out(1), "awready": In(1),
            "wdata": Out(data_width), "wstrb": Out(data_width // 8),
            "wvalid": Out(1), "wready": In(1),
            "bresp": In(RESP_WIDTH), "bvalid": In(1), "bready": Out(1),
            "araddr": Out(addr_width), "arprot": Out(PROT_WIDTH),
            "arvalid": Out(1), "arready": In(1),
            "rdata": In(data_width), "rresp": In(RESP_WIDTH),
            "rvalid": In(1), "rready": Out(1),
        })


def status_port(pipe):
    return f"status_{pipe.name.lower()}"


class CsrFrontEnd(wiring.Component):
    """Ports:
      axil          In  AXI4LiteSignature(regmap.ADDR_BITS): the CPU's registers
      cmd           Out stream of intake.RoutedWords, to the engine: each word with its
                    route as a command's first word, decoded as it is written, so the
                    engine's intake decodes nothing from the FIFO's output
      status_mte2, status_mte3, status_v   In StatusSignature, from the engine
      engine_idle   In  1
      clear_errors  Out 1: a one-cycle pulse, the cycle after IRQ_STATUS.error is written
                        with 1
      ub            Out UbTestSignature(W), from registers: the UB_ADDR / UB_DATA window
      irq           Out 1: the level interrupt, from the idle and error state a cycle ago
    """

    def __init__(self, width_bytes, ub_size):
        self.width_bytes = width_bytes
        self.ub_size = ub_size
        super().__init__({
            "axil": In(AXI4LiteSignature(regmap.ADDR_BITS)),
            "cmd": Out(stream.Signature(RoutedWord)),
            **{status_port(p): In(StatusSignature()) for p in regmap.PIPES},
            "engine_idle": In(1),
            "clear_errors": Out(1),
            "ub": Out(UbTestSignature(width_bytes)),
            "irq": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        # The FIFO's output register loads as the intake takes a word, which it decides
        # through the dispatcher's queues. Its bits load in groups, each on a cell of its
        # own placed among them: the fields the intake's control reads, and each byte of
        # the word, which goes out to the queues and the held command.
        m.submodules.fifo = fifo = BypassQueue(width=RoutedWord.as_shape().size,
                                               depth=regmap.CMD_FIFO_DEPTH,
                                               split_at=range(8, WORD_BITS + 1, 8))
        m.d.comb += [
            self.cmd.payload.eq(fifo.r_data),
            self.cmd.valid.eq(fifo.r_rdy),
            fifo.r_en.eq(self.cmd.ready),
        ]

        ub_addr = Signal(range(self.ub_size), name="ub_byte_addr")
        # The FIFO's free space as of the cycle before, a register: the level's sum and
        # the subtraction stay beside the FIFO, out of the read mux's paths. A read
        # returns it cycles after any write the CPU saw complete.
        cmd_free = Signal(range(regmap.CMD_FIFO_DEPTH + 1), name="cmd_free",
                          init=regmap.CMD_FIFO_DEPTH)
        m.d.sync += cmd_free.eq(regmap.CMD_FIFO_DEPTH - fifo.level)
        irq_enable = Signal(2)
        done = Signal()
        any_error = Signal()
        m.d.sync += [
            # The FIFO is empty exactly when its output register is: it refills on every
            # edge it is free. So no sum of the level lies before the interrupt.
            done.eq(self.engine_idle & ~fifo.r_rdy),
            any_error.eq(Cat(Value.cast(getattr(self, status_port(p)).error) != ErrorCode.NONE
                             for p in regmap.PIPES).any()),
        ]
        m.d.comb += self.irq.eq((irq_enable[0] & done) | (irq_enable[1] & any_error))

        # The UB window's request, registered: the handshakes below set it for one cycle.
        ub = self.ub
        m.d.sync += [ub.we.eq(0), ub.re.eq(0)]
        write_accepted = self._write_channel(m, fifo, ub_addr, irq_enable)
        self._read_channel(m, write_accepted, ub_addr, self._read_values(
            cmd_free, irq_enable, done, any_error, ub_addr))
        return m

    def _ub_word(self, ub_addr):
        return ub_addr >> exact_log2(self.width_bytes)

    def _ub_lane(self, ub_addr):
        """Which 32-bit lane of a UB word the byte address falls in."""
        return ub_addr[2:exact_log2(self.width_bytes)]

    def _write_channel(self, m, fifo, ub_addr, irq_enable):
        axil = self.axil
        offset = Signal(regmap.ADDR_BITS)
        bvalid = Signal()
        m.d.comb += [offset.eq(axil.awaddr & ~3), axil.bvalid.eq(bvalid),
                     axil.bresp.eq(Resp.OKAY)]
        m.d.sync += self.clear_errors.eq(0)
        to_cmd = offset == regmap.BY_NAME["CMD"].offset
        accepted = Signal()
        m.d.comb += accepted.eq(axil.awvalid & axil.wvalid & ~bvalid & (~to_cmd | fifo.w_rdy))
        m.d.comb += [axil.awready.eq(accepted), axil.wready.eq(accepted)]
        with m.If(bvalid & axil.bready):
            m.d.sync += bvalid.eq(0)

        m.d.comb += fifo.w_data.eq(route_word(m, axil.wdata))

        lanes = self.width_bytes // 4
        with m.If(accepted):
            m.d.sync += bvalid.eq(1)
            with m.Switch(offset):
                with m.Case(regmap.BY_NAME["CMD"].offset):
                    m.d.comb += fifo.w_en.eq(1)
                with m.Case(regmap.BY_NAME["IRQ_ENABLE"].offset):
                    m.d.sync += irq_enable.eq(axil.wdata[:2])
                with m.Case(regmap.BY_NAME["IRQ_STATUS"].offset):
                    error_bit = regmap.BY_NAME["IRQ_STATUS"].field("error").lsb
                    m.d.sync += self.clear_errors.eq(axil.wdata[error_bit])
                with m.Case(regmap.BY_NAME["UB_ADDR"].offset):
                    m.d.sync += ub_addr.eq(axil.wdata & ~3)
                with m.Case(regmap.BY_NAME["UB_DATA"].offset):
                    m.d.sync += [
                        self.ub.addr.eq(self._ub_word(ub_addr)),
                        self.ub.wdata.eq(Cat(axil.wdata for _ in range(lanes))),
                        self.ub.wstrb.eq(axil.wstrb << (self._ub_lane(ub_addr) * 4)),
                        self.ub.we.eq(1),
                        ub_addr.eq(ub_addr + 4),
                    ]
        return accepted

    def _read_values(self, cmd_free, irq_enable, done, any_error, ub_addr):
        """Per group of registers (the front end's own, then each pipe's status, which
        sits with its pipe): offset -> the value a read returns (UB_DATA is handled by the
        read channel)."""
        config = self.width_bytes | ((self.ub_size // 1024) << 8)
        groups = [{
            "ID": Const(regmap.ID_VALUE, DATA_BITS),
            "CONFIG": Const(config, DATA_BITS),
            "CMD_FREE": cmd_free,
            "IRQ_ENABLE": irq_enable,
            "IRQ_STATUS": Cat(done, any_error, self.irq),
            "UB_ADDR": ub_addr,
        }]
        for pipe in regmap.PIPES:
            status = getattr(self, status_port(pipe))
            p = pipe.name
            groups.append({
                f"{p}_STATUS": status.busy,
                f"{p}_COMPLETED": status.completed,
                f"{p}_ERROR": Value.cast(status.error),
                f"{p}_ERROR_INDEX": status.error_index,
                f"{p}_ERROR_ADDR_LO": status.error_addr[:32],
                f"{p}_ERROR_ADDR_HI": status.error_addr[32:],
            })
        return [{regmap.BY_NAME[name].offset: value for name, value in group.items()}
                for group in groups]

    def _read_channel(self, m, write_accepted, ub_addr, values):
        axil = self.axil
        rvalid = Signal()
        rdata = Signal(DATA_BITS)
        requested = Signal()                     # address taken, the UB reads next cycle
        # `requested` delayed by the UB's read latency and a cycle more: the word is in
        # `ub_word`.
        in_ub = [Signal(name=f"ub_read{k}") for k in range(TEST_READ_LATENCY + 1)]
        pending = in_ub[-1]
        selected = Signal()                      # the word's lane is in ub_lane_data
        pending_offset = Signal(regmap.ADDR_BITS)
        pending_lane = Signal(range(max(self.width_bytes // 4, 2)))
        ub_lane_data = Signal(DATA_BITS)
        m.d.comb += [axil.rvalid.eq(rvalid), axil.rdata.eq(rdata), axil.rresp.eq(Resp.OKAY)]
        with m.If(rvalid & axil.rready):
            m.d.sync += rvalid.eq(0)

        # A read waits for a cycle without a write, so the two never share the UB window
        # (both requests are registered alike, so they stay a cycle apart). One read at a
        # time: `busy` is a register, high from the edge that accepts a read until the
        # edge that ends its data transfer.
        accepted = Signal()
        busy = Signal()
        m.d.comb += [accepted.eq(axil.arvalid & ~busy & ~write_accepted),
                     axil.arready.eq(accepted)]
        ub_data = regmap.BY_NAME["UB_DATA"].offset
        m.d.sync += [requested.eq(accepted), selected.eq(pending)]
        m.d.sync += [stage.eq(before) for before, stage in zip([requested, *in_ub], in_ub)]
        with m.If(accepted):
            m.d.sync += busy.eq(1)
        with m.Elif(rvalid & axil.rready):
            m.d.sync += busy.eq(0)
        with m.If(accepted):
            offset = axil.araddr & ~3
            m.d.sync += [pending_offset.eq(offset),
                         pending_lane.eq(self._ub_lane(ub_addr))]
            with m.If(offset == ub_data):
                m.d.sync += [self.ub.addr.eq(self._ub_word(ub_addr)), self.ub.re.eq(1),
                             ub_addr.eq(ub_addr + 4)]

        # The UB's word lands in a register of its own, loaded on every cycle; then only
        # its 32-bit lane is registered, so the lane select ends there, not in the read
        # mux below. Meaningful only the cycle after `pending`, so they need no enable.
        ub_word = Signal.like(self.ub.rdata, name="ub_word")
        m.d.sync += [ub_word.eq(self.ub.rdata),
                     ub_lane_data.eq(ub_word.word_select(pending_lane, DATA_BITS))]

        # The read mux in two registered levels, as every read waits for the UB's latency
        # anyway: each group's value at `pending_offset` (0 if it is not in the group),
        # loaded on every cycle, then their OR.
        chosen = []
        for k, group in enumerate(values):
            value = Signal(DATA_BITS, name=f"read_group{k}")
            with m.Switch(pending_offset):
                for offset, register in group.items():
                    with m.Case(offset):
                        m.d.sync += value.eq(register)
                with m.Default():
                    m.d.sync += value.eq(0)
            chosen.append(value)
        chosen.append(Mux(pending_offset == ub_data, ub_lane_data, 0))
        with m.If(selected):
            m.d.sync += [rvalid.eq(1), rdata.eq(reduce(operator.or_, chosen))]
