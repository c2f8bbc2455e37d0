"""The simulation top: the whole engine behind one command stream and one AXI4 master."""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import DEFAULT_PROFILE, GM_ADDR_BITS, PROFILES, ErrorCode, Pipe

from .lib.axi import AXI4Signature
from .layouts import BUS_WIDTHS, in_flight_depth
from .ub.ub import UbTestSignature, UnifiedBuffer
from .datapath.mte2 import Mte2Datapath
from .datapath.mte3 import Mte3Datapath
from .datapath.ubcopy import UbCopyDatapath
from .intake.commands import Command
from .intake.intake import (BAD_OPCODE_BITS, ENGINE_PIPES, CommandIntake, Dispatcher,
                            RoutedWord, WholeCommandIntake)
from .intake.tokens import TokenTable
from .pipe.flags import EventFlags
from .pipe.pipe import PipeController, StatusSignature

AXI_ID_BITS = 4


class MteDma(wiring.Component):
    """The MTE DMA engine (docs/architecture.md, "The simulation top").

    Ports:
      cmd            In  stream of whole commands (commands.Command: the command's
                     model.isa words, first word lowest, as wide as the widest op), one
                     per cycle; with `routed_words`, of intake.RoutedWords, 32-bit words
                     (the CSR front end's), which the engine assembles into commands
      m_axi          Out AXI4Signature(40, 8W, 4): GM; reads from MTE2, writes from MTE3
      ub_test        In  UbTestSignature(W): direct UB access, highest priority
      status_mte2, status_mte3, status_v   Out StatusSignature
      clear_errors   In  1: clears every pipe's error fields
      idle           Out 1: no command buffered or running anywhere
      irq            Out 1: idle, or any pipe has an error
      bad_opcodes    Out 16: command words dropped for an unknown opcode
    """

    def __init__(self, profile=DEFAULT_PROFILE, width_bytes=32, max_outstanding=8,
                 routed_words=False):
        if width_bytes not in BUS_WIDTHS:
            raise ValueError(f"bus width W must be one of {', '.join(map(str, BUS_WIDTHS))} "
                             f"bytes, not {width_bytes}")
        self.profile = PROFILES[profile]
        self.width_bytes = width_bytes
        self.max_outstanding = max_outstanding
        self._routed_words = routed_words
        self.ub = UnifiedBuffer(width_bytes, self.profile.ub_size)
        super().__init__({
            "cmd": In(stream.Signature(RoutedWord if routed_words else Command)),
            "m_axi": Out(AXI4Signature(GM_ADDR_BITS, 8 * width_bytes, AXI_ID_BITS)),
            "ub_test": In(UbTestSignature(width_bytes)),
            **{_status_port(pipe): Out(StatusSignature()) for pipe in ENGINE_PIPES},
            "clear_errors": In(1),
            "idle": Out(1),
            "irq": Out(1),
            "bad_opcodes": Out(BAD_OPCODE_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        w = self.width_bytes
        intake = m.submodules.intake = (CommandIntake(routed=True) if self._routed_words
                                        else WholeCommandIntake())
        dispatcher = m.submodules.dispatcher = Dispatcher()
        flags = m.submodules.flags = EventFlags()
        tokens = m.submodules.tokens = TokenTable(ENGINE_PIPES)
        ub = m.submodules.ub = self.ub
        in_flight = in_flight_depth(self.max_outstanding)
        pipes = {pipe: PipeController(pipe, self.profile, w, in_flight)
                 for pipe in ENGINE_PIPES}
        for pipe, controller in pipes.items():
            m.submodules[f"pipe_{pipe.name.lower()}"] = controller
        mte2 = m.submodules.mte2 = Mte2Datapath(w, self.max_outstanding, AXI_ID_BITS)
        mte3 = m.submodules.mte3 = Mte3Datapath(w, self.max_outstanding, AXI_ID_BITS)
        ubcopy = m.submodules.ubcopy = UbCopyDatapath(w)

        wiring.connect(m, wiring.flipped(self.cmd),
                       intake.words if self._routed_words else intake.commands_in)
        wiring.connect(m, intake.commands, dispatcher.commands)
        for pipe, controller in pipes.items():
            name = pipe.name.lower()
            wiring.connect(m, getattr(dispatcher, name), controller.cmd)
            wiring.connect(m, controller.flag_set, getattr(flags, f"set_{name}"))
            wiring.connect(m, controller.flag_wait, getattr(flags, f"wait_{name}"))
            wiring.connect(m, controller.token_get, getattr(tokens, f"get_{name}"))
            wiring.connect(m, controller.token_rls, getattr(tokens, f"rls_{name}"))
            wiring.connect(m, controller.status, wiring.flipped(getattr(self, _status_port(pipe))))
            m.d.comb += controller.clear.eq(self.clear_errors)
        for pipe, datapath in ((Pipe.MTE2, mte2), (Pipe.MTE3, mte3), (Pipe.V, ubcopy)):
            wiring.connect(m, pipes[pipe].rows, datapath.rows)
            wiring.connect(m, datapath.done, pipes[pipe].done)
            if "abort" in datapath.signature.members:
                wiring.connect(m, datapath.abort, pipes[pipe].abort)

        wiring.connect(m, mte2.ub, ub.mte2_wr)
        wiring.connect(m, mte3.ub, ub.mte3_rd)
        wiring.connect(m, ubcopy.rd, ub.v_rd)
        wiring.connect(m, ubcopy.wr, ub.v_wr)
        wiring.connect(m, wiring.flipped(self.ub_test), ub.test)
        _join_axi(m, self.m_axi, (mte2.axi, mte3.axi))

        busy = intake.busy | dispatcher.busy
        for controller in pipes.values():
            busy |= controller.status.busy
        error = 0
        for controller in pipes.values():
            error |= controller.status.error != ErrorCode.NONE
        m.d.comb += [
            self.idle.eq(~busy),
            self.irq.eq(~busy | error),
            self.bad_opcodes.eq(intake.bad_opcodes),
        ]
        return m


def _status_port(pipe):
    return f"status_{pipe.name.lower()}"


def _join_axi(m, port, halves):
    """Drives the full AXI4 port from the read half (AR, R) and the write half (AW, W, B):
    each member of a half is the port's member of the same name."""
    for half in halves:
        for name, member in half.signature.members.items():
            ours, theirs = getattr(half, name), getattr(port, name)
            if member.flow == Out:
                m.d.comb += theirs.eq(ours)
            else:
                m.d.comb += ours.eq(theirs)
