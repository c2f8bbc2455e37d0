"""One pipe's command sequencer: MTE2, MTE3 or the UB->UB path (PIPE_V)."""

from amaranth.hdl import C, Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import PIPE_REGISTERS, PROFILES, ErrorCode, GM_ADDR_BITS, Opcode, Pipe

from ..lib.kept_lut import KeptLut, truth_table
from ..layouts import CMD_INDEX_BITS, IN_FLIGHT_DEPTH, AbortSignature, Completion, RowJob
from ..intake.commands import CommandKind, PipeCommand, op_fields
from ..intake.tokens import TokenGetSignature, TokenReleaseSignature
from .addrgen import AddressGenerator
from .checker import CopyChecker
from .flags import FlagSetSignature, FlagWaitSignature
from .in_flight import COMPLETED_BITS, InFlight
from .regfile import PipeRegisters

COPY_KIND = {
    Pipe.MTE2: Opcode.COPY_GM_TO_UBUF,
    Pipe.MTE3: Opcode.COPY_UBUF_TO_GM,
    Pipe.V: Opcode.COPY_UBUF_TO_UBUF,
}


class StatusSignature(wiring.Signature):
    """A pipe's status (Out from the pipe).

    busy:        a command of this pipe is waiting, being executed or in flight, or its
                 end or bus error is being recorded
    completed:   commands of this pipe finished since reset (wraps): a copy that runs at
                 its Completion (copies in command order), a copy that breaks a rule or
                 is empty once the copies before it have completed, any other command
                 as it executes, which may be while copies before it are in flight
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


def _ready_by_kind(kind0, kind1, checker_ready, answered):
    """Whether a pipe takes the command at its head now, by the command's kind (bits of
    its CommandKind): as logic on 1-bit values and, through `truth_table`, a table. A
    set_flag, rls_buf, wait_flag or get_buf is taken the cycle after its answer
    (`answered`, a register)."""
    immediate, copy = (
        (kind0 if k.value & 1 else ~kind0) & (kind1 if k.value & 2 else ~kind1)
        for k in (CommandKind.IMMEDIATE, CommandKind.COPY))
    return immediate | (copy & checker_ready) | (~immediate & ~copy & answered)


class PipeController(wiring.Component):
    """Executes one pipe's commands in order, with up to `in_flight` copies between its
    address generator and their Completions (the datapath's layouts.in_flight_depth).

    Ports:
      cmd       In  stream of PipeCommand, from the Dispatcher
      rows      Out stream of RowJob, to the pipe's datapath
      done      In  stream of Completion: one per non-empty copy whose rows were issued,
                    in the same order; always accepted
      abort     In  AbortSignature: the datapath cuts a failing copy short (addrgen)
      flag_set  Out FlagSetSignature, flag_wait Out FlagWaitSignature, to EventFlags
      token_get Out TokenGetSignature, token_rls Out TokenReleaseSignature, to TokenTable
      status    Out StatusSignature
      clear     In  1: clears error, error_index and error_addr

    Per command:
      register write  -> the pipe's registers (MTE2, MTE3).
      copy            -> the checker, with a snapshot of the registers. A copy that breaks a
                         rule, and an empty copy, wait until no copy of this pipe is in
                         flight (so it counts after the copies before it, and the first error
                         follows command order),
                         then count as completed; the rule error is recorded. Any other copy
                         goes to the address generator, which emits its rows while the next
                         commands are fetched and checked, and its index joins the in-flight
                         queue until its Completion arrives.
      set_flag        -> waits until no copy is in the checker or in flight (its writes
                         are committed), then offers the set until EventFlags counts it
                         (it holds the pipe while the flag's counter is full). A flag
                         whose other side is EXTERNAL does nothing.
      wait_flag       -> holds the pipe until EventFlags grants the flag.
      rls_buf         -> as a set_flag: once no copy is in the checker or in flight, offers
                         the release until the TokenTable counts it.
      get_buf         -> holds the pipe until the TokenTable grants the token.

    Copies overlap: once the checker has taken a copy, the next command is executed while
    it is checked (the copy's register snapshot is taken as the checker accepts it, so
    later register writes do not reach it); the checked results are consumed in order,
    apart from the commands.

    Timing: what crosses to other blocks or fans out wide is registered. A checked copy
    starts on the cycle its result arrives if it is clear to start, so one copy a cycle
    goes from the checker to the address generator. A set_flag, rls_buf, wait_flag or
    get_buf is taken the cycle after the flags or the token table answer it, from a
    register of the answer. A command's end is registered before it counts in
    `completed` or records an error, and `busy` covers that cycle. A Completion, which
    every datapath offers from a register, counts, and leaves the count of copies in
    flight, on the cycle it is offered; it frees room for another copy, or drains the
    pipe, a cycle later (InFlight), and `busy` covers that cycle too.
    """

    def __init__(self, pipe, profile, width_bytes=32, in_flight=IN_FLIGHT_DEPTH,
                 checker=CopyChecker, address_generator=AddressGenerator):
        """`checker` and `address_generator` build the pipe's copy checker, as
        `checker(kind, profile, width_bytes)`, and its address generator, as
        `address_generator(kind, width_bytes)`: the real blocks, unless a proof gives
        stand-ins with their signatures."""
        self.new_checker = checker
        self.new_addrgen = address_generator
        self.pipe = pipe
        self.in_flight = in_flight
        self.width_bytes = width_bytes
        self.kind = COPY_KIND[pipe]
        self.profile = PROFILES.get(profile, profile)
        super().__init__({
            "cmd": In(stream.Signature(PipeCommand)),
            "rows": Out(stream.Signature(RowJob)),
            "done": In(stream.Signature(Completion)),
            "abort": In(AbortSignature()),
            "flag_set": Out(FlagSetSignature()),
            "flag_wait": Out(FlagWaitSignature()),
            "token_get": Out(TokenGetSignature()),
            "token_rls": Out(TokenReleaseSignature()),
            "status": Out(StatusSignature()),
            "clear": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        checker = m.submodules.checker = self.new_checker(self.kind, self.profile, self.width_bytes)
        addrgen = m.submodules.addrgen = self.new_addrgen(self.kind, self.width_bytes)
        wiring.connect(m, addrgen.rows, wiring.flipped(self.rows))
        wiring.connect(m, wiring.flipped(self.abort), addrgen.abort)

        entry = self.cmd.payload.entry
        start = Signal()             # a checked copy goes to the address generator
        in_flight = self._track_in_flight(m, start, checker.result.payload.index)
        drained_next = in_flight.drained_next
        # No copy in the checker or in flight: a register, worked out from the next
        # values of the two, so the command handshake is a choice among registers.
        idle = Signal(init=1)
        m.d.sync += idle.eq(drained_next & ~checker.busy_next)
        finished = Signal()          # a command other than a copy ends this cycle
        regfile = self._registers(m, entry)
        m.d.comb += checker.request.payload.fields.eq(op_fields(entry.cmd, self.kind))
        if regfile is not None:
            m.d.comb += [checker.request.payload.regs.eq(regfile.snapshot),
                         checker.request.payload.counts_less_one.eq(regfile.counts_less_one)]
        m.d.comb += checker.request.payload.index.eq(entry.index)
        self._fetch(m, entry.cmd, idle, checker, finished)
        copy_end, rule_error = self._start_copies(m, checker, addrgen, start, in_flight)

        pending = self._status(m, in_flight, finished, copy_end, rule_error,
                               checker.result.payload.error, checker.result.payload.index)
        m.d.comb += self.status.busy.eq(self.cmd.valid | ~idle | pending)
        return m

    def _track_in_flight(self, m, start, index):
        """The copies in flight and what completes (InFlight): `start` a copy, its
        command at `index`; the datapath's Completions. Returns the block."""
        in_flight = m.submodules.in_flight = InFlight(self.in_flight)
        wiring.connect(m, wiring.flipped(self.done), in_flight.done)
        m.d.comb += [in_flight.start.eq(start), in_flight.start_index.eq(index),
                     in_flight.clear.eq(self.clear)]
        return in_flight

    def _start_copies(self, m, checker, addrgen, start, in_flight):
        """The checker's results, in order: a copy that passed goes to the address
        generator once it is clear to start (`start`, which `_track_in_flight` counts); a
        copy that broke a rule, or an empty one, ends once no copy is in flight (so
        `completed` and the first error follow command order). Returns (a copy ends here
        this cycle, it broke a rule).

        Whether a result passes, whether another copy has room in flight and the hazard
        range are registers, each stepped by a start, so a copy can start on every cycle:
        the one after a start is decided on what that start left. Whether the result is
        taken (a start or an end here) but for UB->UB's hazard is itself a register,
        worked out a cycle ahead from the next values of those registers and of the
        address generator's `copy.ready`; the hazard, a gate of registers, masks it. It
        enables every bit of the checker's wide output register, so at most one gate and
        its route lie in front of them, and the hazard's compares in front of none."""
        result = checker.result.payload
        copy_end = Signal()
        hazard = self._hazard(m, checker, in_flight.drained, start)

        def takes(valid, passes, room, ready, drained):
            # With no hazard: an end needs none in flight, and then there is none.
            return valid & Mux(passes, room & ready, drained)

        taken_unless_hazard = Signal()
        m.d.sync += taken_unless_hazard.eq(takes(
            checker.result_valid_next, checker.result_passes_next, in_flight.room_next,
            addrgen.copy_ready_next, in_flight.drained_next))
        valid, passes = checker.result.valid, checker.result_passes
        m.d.comb += [
            addrgen.copy.payload.eq(result),
            addrgen.copy.valid.eq(valid & passes & in_flight.room & ~hazard),
            start.eq(addrgen.copy.valid & addrgen.copy.ready),
            copy_end.eq(valid & ~passes & in_flight.drained),
            checker.result.ready.eq(taken_unless_hazard & ~hazard),
        ]
        return copy_end, copy_end & (result.error != ErrorCode.NONE)

    def _registers(self, m, entry):
        """The pipe's register file, written by its register-write commands; None for V."""
        if self.pipe not in PIPE_REGISTERS:
            return None
        regfile = m.submodules.regfile = PipeRegisters(self.pipe)
        # A register write is IMMEDIATE, taken on any cycle it is valid; its decoded
        # `writes` bit alone tells the register file which registers load.
        m.d.comb += [regfile.command.eq(entry.cmd), regfile.write.eq(self.cmd.valid),
                     regfile.writes.eq(self.cmd.payload.writes)]
        return regfile

    def _fetch(self, m, cmd, idle, checker, finished):
        """Execute the command at the head of `cmd`, or hand a copy to the checker. The
        command's kind comes decoded, so `cmd.ready` is a choice among registers."""
        valid = self.cmd.valid
        set_fields = op_fields(cmd, Opcode.SET_FLAG)
        wait_fields = op_fields(cmd, Opcode.WAIT_FLAG)
        m.d.comb += [
            self.flag_set.pipe.eq(set_fields.dst_pipe),
            self.flag_set.event.eq(set_fields.event_id),
            self.flag_wait.pipe.eq(wait_fields.src_pipe),
            self.flag_wait.event.eq(wait_fields.event_id),
            self.token_get.buf_id.eq(op_fields(cmd, Opcode.GET_BUF).buf_id),
            self.token_get.ticket.eq(self.cmd.payload.ticket),
            self.token_rls.buf_id.eq(op_fields(cmd, Opcode.RLS_BUF).buf_id),
        ]
        # A set_flag and an rls_buf, a wait_flag and a get_buf, share a kind; one answer
        # of each pair can be high, for the command that asked. The answer is taken
        # into `answered`, and the command the cycle after, so `cmd.ready` is a choice
        # among registers by the pipe: no answer's route from the flags or the token
        # table reaches the dispatcher's queue. Neither answer can come again that
        # cycle, as no set or wait was offered the cycle before.
        counted = self.flag_set.counted | self.token_rls.released
        granted = self.flag_wait.granted | self.token_get.granted
        answered = Signal()
        m.d.sync += answered.eq(counted | granted)
        releasing = cmd.opcode == Opcode.RLS_BUF
        getting = cmd.opcode == Opcode.GET_BUF
        kind = self.cmd.payload.kind
        # `cmd.ready` is one slice, a KeptLut: the dispatcher's queue, far from the pipe,
        # takes it as one net, and ABC cannot spread it over the queue's logic.
        ready = m.submodules.ready = KeptLut(4, truth_table(_ready_by_kind, 4))
        m.d.comb += [
            ready.a.eq(Cat(kind.as_value(), checker.request.ready, answered)),
            self.cmd.ready.eq(ready.z),
        ]
        with m.Switch(kind):
            with m.Case(CommandKind.COPY):
                m.d.comb += checker.request.valid.eq(valid)
            with m.Case(CommandKind.SET_FLAG):
                # Another pipe waits on it: this pipe's writes must be committed first.
                # The set is not offered again on the cycle it is counted, nor on the
                # one after, as it is taken.
                offer = valid & idle & ~counted & ~answered
                m.d.comb += [
                    self.flag_set.valid.eq(offer & ~releasing),
                    self.token_rls.valid.eq(offer & releasing),
                    finished.eq(valid & answered),
                ]
            with m.Case(CommandKind.WAIT_FLAG):
                # Shown until granted; not on the cycle after, as it is taken, or the
                # flags or the token table would decide it again.
                asking = valid & ~answered
                m.d.comb += [
                    self.flag_wait.valid.eq(asking & ~getting),
                    self.token_get.valid.eq(asking & getting),
                    finished.eq(valid & answered),
                ]
            with m.Case(CommandKind.IMMEDIATE):
                # Register writes (which `_registers` sends to the register file) and
                # set_flags for EXTERNAL, which do nothing.
                m.d.comb += finished.eq(valid)

    def _hazard(self, m, checker, drained, start):
        """UB->UB only: a copy must not read UB bytes that a copy still in flight writes.

        The destination spans of the copies in flight are kept as one covering range; a
        copy whose source span meets it waits until the pipe has drained. MTE2 and MTE3
        read one memory and write the other, so their copies never depend on each other.
        The spans are the checker's, so no multiply here. Whether the result offered
        meets the range is a register (`blocked`), worked out a cycle ahead for the
        result offered next (the one the checker's output loads next, its skid
        register's or its last stage's, if it loads; else the one offered now) against the
        range as the start of this cycle, if any, leaves it: so a start waits on no
        compare in its cycle."""
        if self.pipe != Pipe.V:
            return C(0, 1)
        result = checker.result
        geom = result.payload.geom
        lo = Signal.like(geom.dst, name="dirty_lo")
        hi = Signal.like(geom.dst_end, name="dirty_hi")
        with m.If(start):
            m.d.sync += [
                lo.eq(Mux(drained | (geom.dst < lo), geom.dst, lo)),
                hi.eq(Mux(drained | (geom.dst_end > hi), geom.dst_end, hi)),
            ]

        def meets(span, start_at, end):
            return (span.src < end) & (start_at < span.src_end)

        def blocked_after_this_cycle(span):
            # A start adds its own span, and with none in flight begins a new range.
            in_range = meets(span, lo, hi)
            return Mux(start, (~drained & in_range) | meets(span, geom.dst, geom.dst_end),
                       in_range)

        blocked = Signal()
        loads = ~result.valid | (result.valid & result.ready)
        # Each candidate's compares start at its own registers; only the results are picked.
        upcoming = Mux(checker.upcoming_in_skid, blocked_after_this_cycle(checker.upcoming_skid),
                       blocked_after_this_cycle(checker.upcoming_stage))
        m.d.sync += blocked.eq(Mux(loads, upcoming, blocked_after_this_cycle(geom)))
        return ~drained & blocked

    def _status(self, m, in_flight, finished, copy_end, rule_error, rule_code, rule_index):
        """The commands that end here, to the completed count and the first error of
        `in_flight` (InFlight), which the status shows. Returns 1 while an end or a bus
        error waits to be recorded."""
        status = self.status
        m.d.comb += [
            in_flight.finished.eq(finished), in_flight.copy_end.eq(copy_end),
            in_flight.rule_error.eq(rule_error), in_flight.rule_code.eq(rule_code),
            in_flight.rule_index.eq(rule_index),
            status.completed.eq(in_flight.completed), status.error.eq(in_flight.error),
            status.error_index.eq(in_flight.error_index),
            status.error_addr.eq(in_flight.error_addr),
        ]
        return in_flight.pending
