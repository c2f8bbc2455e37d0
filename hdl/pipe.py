"""One pipe's command sequencer: MTE2, MTE3 or the UB->UB path (PIPE_V)."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from model.isa import PIPE_REGISTERS, PROFILES, ErrorCode, GM_ADDR_BITS, Opcode, Pipe

from .addrgen import AddressGenerator
from .checker import CopyChecker
from .commands import CommandEntry, op_fields
from .flags import FlagSetSignature, FlagWaitSignature
from .layouts import CMD_INDEX_BITS, COPY_SEQ_BITS, AbortSignature, Completion, RowJob
from .regfile import PipeRegisters

COPY_KIND = {
    Pipe.MTE2: Opcode.COPY_GM_TO_UBUF,
    Pipe.MTE3: Opcode.COPY_UBUF_TO_GM,
    Pipe.V: Opcode.COPY_UBUF_TO_UBUF,
}
COMPLETED_BITS = 32
IN_FLIGHT_DEPTH = 16     # copies whose rows are issued but whose Completion has not come
assert IN_FLIGHT_DEPTH < 2 ** COPY_SEQ_BITS     # abort requests name copies unambiguously


class StatusSignature(wiring.Signature):
    """A pipe's status (Out from the pipe).

    busy:        a command of this pipe is waiting, being executed or in flight
    completed:   commands of this pipe finished since reset (wraps)
    error:       the first ErrorCode since the last clear (NONE if none)
    error_index: that command's position in the command stream
    error_addr:  the faulting GM address of a BUS_ERROR (0 for rule errors)
    """
    def __init__(self):
        super().__init__({
            "busy": Out(1),
            "completed": Out(COMPLETED_BITS),
            "error": Out(ErrorCode),
            "error_index": Out(CMD_INDEX_BITS),
            "error_addr": Out(GM_ADDR_BITS),
        })


class PipeController(wiring.Component):
    """Executes one pipe's commands in order.

    Ports:
      cmd       In  stream of CommandEntry, from the Dispatcher
      rows      Out stream of RowJob, to the pipe's datapath
      done      In  stream of Completion: one per non-empty copy whose rows were issued,
                    in the same order; always accepted
      abort     In  AbortSignature: the datapath cuts a failing copy short (addrgen)
      flag_set  Out FlagSetSignature, flag_wait Out FlagWaitSignature, to EventFlags
      status    Out StatusSignature
      clear     In  1: clears error, error_index and error_addr

    Per command:
      register write  -> the pipe's registers (MTE2, MTE3).
      copy            -> the checker, with a snapshot of the registers. A copy that breaks a
                         rule, and an empty copy, wait until no copy of this pipe is in
                         flight (so `completed` and the first error follow command order),
                         then count as completed; the rule error is recorded. Any other copy
                         goes to the address generator, which emits its rows while the next
                         commands are fetched and checked, and its index joins the in-flight
                         queue until its Completion arrives.
      set_flag        -> waits until no copy is in flight (its writes are committed), then
                         sets the flag. A flag whose other side is EXTERNAL does nothing.
      wait_flag       -> holds the pipe until EventFlags grants the flag.

    Timing: what crosses to other blocks or fans out wide is registered. A checked copy
    starts on the cycle its result arrives if the checker announced it as passing the
    cycle before and it was clear to start then, else a cycle after the result was first
    seen clear to start (`cleared`); the checker sees its result taken (`result.ready`) a
    cycle after it was used. A command's end is registered before it counts in
    `completed` or records an error, and `busy` covers that cycle. A Completion, which
    every datapath offers from a register, counts and leaves the in-flight queue on the
    cycle it is offered.
    """

    def __init__(self, pipe, profile):
        self.pipe = pipe
        self.kind = COPY_KIND[pipe]
        self.profile = PROFILES.get(profile, profile)
        super().__init__({
            "cmd": In(stream.Signature(CommandEntry)),
            "rows": Out(stream.Signature(RowJob)),
            "done": In(stream.Signature(Completion)),
            "abort": In(AbortSignature()),
            "flag_set": Out(FlagSetSignature()),
            "flag_wait": Out(FlagWaitSignature()),
            "status": Out(StatusSignature()),
            "clear": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        checker = m.submodules.checker = CopyChecker(self.kind, self.profile)
        addrgen = m.submodules.addrgen = AddressGenerator(self.kind)
        in_flight = m.submodules.in_flight = SyncFIFOBuffered(
            width=CMD_INDEX_BITS, depth=IN_FLIGHT_DEPTH)
        wiring.connect(m, addrgen.rows, wiring.flipped(self.rows))
        wiring.connect(m, wiring.flipped(self.abort), addrgen.abort)

        entry = self.cmd.payload
        drained = in_flight.level == 0
        finished = Signal()          # a command other than a started copy ends this cycle
        rule_error = Signal()        # ... and it is a copy that broke a rule
        index = Signal(CMD_INDEX_BITS)
        result = checker.result.payload

        regfile = self._registers(m, entry)
        m.d.comb += checker.request.payload.fields.eq(op_fields(entry.cmd, self.kind))
        if regfile is not None:
            m.d.comb += checker.request.payload.regs.eq(regfile.snapshot)

        start = Signal()
        taken = Signal()             # the checker's result is used this cycle
        cleared = Signal()           # last cycle the result was valid, unused, a copy to
                                     # run and clear to start
        ok = (result.error == ErrorCode.NONE) & ~result.geom.empty
        m.d.comb += [
            addrgen.copy.payload.eq(result),
            addrgen.copy.valid.eq(cleared),
            start.eq(addrgen.copy.valid & addrgen.copy.ready),
            in_flight.w_data.eq(index),
            in_flight.w_en.eq(start),
        ]

        # A result waits in CHECK, where the in-flight queue only drains and the hazard
        # range stays put, so a clearance seen a cycle ago still holds. `cleared` implies
        # CHECK and a valid result: a used result (`taken`, then `result.ready` the cycle
        # after) clears it, and the checker has no other result to offer. The checker's
        # `passing` clears a copy the cycle before its result arrives (the hazard
        # range's inputs are valid by then), so a copy clear at once starts with it.
        clear_to_start = in_flight.w_rdy & ~self._hazard(m, checker.result, drained, start)
        usable = (checker.result.valid & ok & ~checker.result.ready) | checker.passing
        m.d.sync += cleared.eq(usable & ~taken & clear_to_start)
        # The checker learns a cycle late that its result was used (FETCH ignores the
        # result meanwhile), so the address generator's ready does not reach its counter.
        m.d.sync += checker.result.ready.eq(taken)

        with m.FSM() as fsm:
            with m.State("FETCH"):
                self._fetch(m, entry, regfile, drained, checker, finished, index)
            with m.State("CHECK"):
                with m.If(start):
                    m.d.comb += taken.eq(1)
                    m.next = "FETCH"
                with m.Elif(checker.result.valid & ~ok & drained):
                    m.d.comb += [
                        taken.eq(1),
                        finished.eq(1),
                        rule_error.eq(result.error != ErrorCode.NONE),
                    ]
                    m.next = "FETCH"

        pending = self._status(m, in_flight, finished, rule_error, result.error, index)
        m.d.comb += self.status.busy.eq(self.cmd.valid | ~fsm.ongoing("FETCH") | ~drained
                                        | pending)
        return m

    def _registers(self, m, entry):
        """The pipe's register file, written by its register-write commands; None for V."""
        if self.pipe not in PIPE_REGISTERS:
            return None
        regfile = m.submodules.regfile = PipeRegisters(self.pipe)
        m.d.comb += regfile.command.eq(entry.cmd)
        return regfile

    def _fetch(self, m, entry, regfile, drained, checker, finished, index):
        """FETCH: execute the command at the head of `cmd`, or hand a copy to the checker."""
        opcode = entry.cmd.opcode
        valid = self.cmd.valid
        set_fields = op_fields(entry.cmd, Opcode.SET_FLAG)
        wait_fields = op_fields(entry.cmd, Opcode.WAIT_FLAG)
        m.d.comb += [
            self.flag_set.pipe.eq(set_fields.dst_pipe),
            self.flag_set.event.eq(set_fields.event_id),
            self.flag_wait.pipe.eq(wait_fields.src_pipe),
            self.flag_wait.event.eq(wait_fields.event_id),
        ]
        with m.Switch(opcode):
            with m.Case(self.kind):
                m.d.comb += [
                    checker.request.valid.eq(valid),
                    self.cmd.ready.eq(checker.request.ready),
                ]
                with m.If(valid & checker.request.ready):
                    m.d.sync += index.eq(entry.index)
                    m.next = "CHECK"
            with m.Case(Opcode.SET_FLAG):
                # Only a flag another pipe of this engine waits on needs this pipe drained.
                external = set_fields.dst_pipe == Pipe.EXTERNAL
                go = valid & (external | drained)
                m.d.comb += [
                    self.flag_set.valid.eq(go & ~external),
                    self.cmd.ready.eq(external | drained),
                    finished.eq(go),
                ]
            with m.Case(Opcode.WAIT_FLAG):
                m.d.comb += [
                    self.flag_wait.valid.eq(valid),
                    self.cmd.ready.eq(self.flag_wait.granted),
                    finished.eq(valid & self.flag_wait.granted),
                ]
            with m.Default():
                # Register writes (MTE2, MTE3); the Dispatcher sends nothing else here.
                if regfile is not None:
                    m.d.comb += regfile.write.eq(valid)
                m.d.comb += [self.cmd.ready.eq(1), finished.eq(valid)]

    def _hazard(self, m, checked, drained, start):
        """UB->UB only: a copy must not read UB bytes that a copy still in flight writes.

        The destination spans of the copies in flight are kept as one covering range; a
        copy whose source span meets it waits until the pipe has drained. MTE2 and MTE3
        read one memory and write the other, so their copies never depend on each other.
        The spans' ends are the checker's (geom.src_end / dst_end), so no multiply here."""
        if self.pipe != Pipe.V:
            return 0
        geom = checked.payload.geom
        lo = Signal.like(geom.dst, name="dirty_lo")
        hi = Signal.like(geom.dst_end, name="dirty_hi")
        with m.If(start):
            m.d.sync += [
                lo.eq(Mux(drained | (geom.dst < lo), geom.dst, lo)),
                hi.eq(Mux(drained | (geom.dst_end > hi), geom.dst_end, hi)),
            ]
        return ~drained & (geom.src < hi) & (lo < geom.src_end)

    def _status(self, m, in_flight, finished, rule_error, rule_code, index):
        """Completions from the datapath and the commands that end here: the completed
        count and the first error. A Completion counts on the cycle it is offered (every
        datapath offers it from a register); a command's end is registered first. Returns
        1 while an end waits to be counted."""
        status, done = self.status, self.done.payload
        m.d.comb += self.done.ready.eq(1)
        # `index` needs no copy: the next copy is accepted (and `index` loaded) at the
        # earliest on the cycle after `finished`.
        ended = Signal()
        failed = Signal()
        code = Signal(ErrorCode)
        m.d.sync += [ended.eq(finished), failed.eq(rule_error), code.eq(rule_code)]
        arrived = self.done.valid
        bus_error = arrived & (done.error != ErrorCode.NONE)
        m.d.comb += in_flight.r_en.eq(arrived)
        m.d.sync += status.completed.eq(status.completed + ended + arrived)

        with m.If(self.clear):
            m.d.sync += [status.error.eq(ErrorCode.NONE), status.error_index.eq(0),
                         status.error_addr.eq(0)]
        unrecorded = self.clear | (status.error == ErrorCode.NONE)
        # A rule error is decided with no copy in flight, so no Completion comes with it.
        with m.If(bus_error & unrecorded):
            m.d.sync += [status.error.eq(done.error), status.error_index.eq(in_flight.r_data),
                         status.error_addr.eq(done.address)]
        with m.Elif(failed & unrecorded):
            m.d.sync += [status.error.eq(code), status.error_index.eq(index),
                         status.error_addr.eq(0)]
        return ended
