"""One pipe's command sequencer: MTE2, MTE3 or the UB->UB path (PIPE_V)."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import PIPE_REGISTERS, PROFILES, ErrorCode, GM_ADDR_BITS, Opcode, Pipe

from ..lib.kept_lut import KeptLut, truth_table
from ..lib.queue import BypassQueue
from ..lib.register_copy import RegisterCopy
from ..layouts import CMD_INDEX_BITS, IN_FLIGHT_DEPTH, AbortSignature, Completion, RowJob
from ..intake.commands import CommandKind, PipeCommand, op_fields
from ..intake.tokens import TokenGetSignature, TokenReleaseSignature
from .addrgen import AddressGenerator
from .checker import SPAN_FIELDS, CopyChecker
from .flags import FlagSetSignature, FlagWaitSignature
from .regfile import PipeRegisters

COPY_KIND = {
    Pipe.MTE2: Opcode.COPY_GM_TO_UBUF,
    Pipe.MTE3: Opcode.COPY_UBUF_TO_GM,
    Pipe.V: Opcode.COPY_UBUF_TO_UBUF,
}
COMPLETED_BITS = 32


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


def _ready_by_kind(kind0, kind1, checker_ready, counted, granted):
    """Whether a pipe takes the command at its head now, by the command's kind (bits of
    its CommandKind): as logic on 1-bit values and, through `truth_table`, a table."""
    immediate, copy, set_flag, wait_flag = (
        (kind0 if k.value & 1 else ~kind0) & (kind1 if k.value & 2 else ~kind1)
        for k in (CommandKind.IMMEDIATE, CommandKind.COPY, CommandKind.SET_FLAG,
                  CommandKind.WAIT_FLAG))
    return (immediate | (copy & checker_ready) | (set_flag & counted)
            | (wait_flag & granted))


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
                         flight (so `completed` and the first error follow command order),
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
    starts on the cycle its result arrives if the checker announced it as passing the
    cycle before and it was clear to start then, else a cycle after the result was first
    seen clear to start (`cleared`). A command's end is registered before it counts in
    `completed` or records an error, and `busy` covers that cycle. A Completion, which
    every datapath offers from a register, counts and leaves the in-flight queue on the
    cycle it is offered.
    """

    def __init__(self, pipe, profile, width_bytes=32, in_flight=IN_FLIGHT_DEPTH):
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
        checker = m.submodules.checker = CopyChecker(self.kind, self.profile, self.width_bytes)
        addrgen = m.submodules.addrgen = AddressGenerator(self.kind, self.width_bytes)
        wiring.connect(m, addrgen.rows, wiring.flipped(self.rows))
        wiring.connect(m, wiring.flipped(self.abort), addrgen.abort)

        entry = self.cmd.payload.entry
        start = Signal()             # a checked copy goes to the address generator
        landed = self._land_completions(m)
        in_flight, drained, drained_next, room = self._track_in_flight(m, start,
                                                         checker.result.payload.index,
                                                         landed.valid)
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
        copy_end, rule_error = self._start_copies(m, checker, addrgen, start, drained, room)

        pending = self._status(m, in_flight, landed, finished, copy_end, rule_error,
                               checker.result.payload.error, checker.result.payload.index)
        m.d.comb += self.status.busy.eq(self.cmd.valid | ~idle | pending)
        return m

    def _track_in_flight(self, m, start, index, landed):
        """The copies in flight: the in-flight queue of their indices, and as registers
        `drained` (none in flight) and `room` (another may start).

        A started copy's index is written to the queue a cycle after its start, from
        registers, so `start`, which waits on the address generator taking the copy,
        reaches none of the queue's logic. Its Completion comes many cycles after the
        start (its rows cross the datapath first), when the index is at the queue's head,
        and the index leaves the queue a cycle after it (`landed`), so the Completion,
        which may come straight from a bus response, reaches none of the queue's logic
        either. `drained` and `room` come from a count of the copies started and not
        completed, stepped by `start` and the Completions and compared alone. The count
        is at most `in_flight`, and it bounds the queue's entries: a copy started
        after a Completion, which the count allows from the next cycle, writes its index
        a cycle after the landed index has left. The queue holds one more (a BypassQueue
        refuses a write once depth - 1 are held), so it always has room. Returns (queue,
        drained, the value drained takes on the next edge, room)."""
        in_flight = m.submodules.in_flight = BypassQueue(
            width=CMD_INDEX_BITS, depth=self.in_flight + 1)
        arrived = self.done.valid
        started = Signal()
        started_index = Signal(CMD_INDEX_BITS)
        m.d.sync += [started.eq(start), started_index.eq(index)]
        m.d.comb += [in_flight.w_en.eq(started), in_flight.w_data.eq(started_index),
                     in_flight.r_en.eq(landed)]
        limit = self.in_flight
        count = Signal(range(limit + 1))
        drained = Signal(init=1)
        drained_next = Signal()
        room = Signal(init=1)
        m.d.comb += drained_next.eq(drained)
        with m.If(start & ~arrived):
            m.d.sync += [count.eq(count + 1), room.eq(count != limit - 1)]
            m.d.comb += drained_next.eq(0)
        with m.Elif(arrived & ~start):
            m.d.sync += [count.eq(count - 1), room.eq(1)]
            m.d.comb += drained_next.eq(count == 1)
        m.d.sync += drained.eq(drained_next)
        return in_flight, drained, drained_next, room

    def _start_copies(self, m, checker, addrgen, start, drained, room):
        """The checker's results, in order: a copy that passed goes to the address
        generator once it is clear to start (`start`, which `_track_in_flight` counts); a
        copy that broke a rule, or an empty one, ends once no copy is in flight (so
        `completed` and the first error follow command order). Returns (a copy ends here
        this cycle, it broke a rule)."""
        result = checker.result.payload
        ok = (result.error == ErrorCode.NONE) & ~result.geom.empty
        copy_end = Signal()
        cleared = Signal()           # the result is a copy to run, clear to start
        m.d.comb += [
            addrgen.copy.payload.eq(result),
            addrgen.copy.valid.eq(cleared),
            start.eq(addrgen.copy.valid & addrgen.copy.ready),
            copy_end.eq(checker.result.valid & ~ok & drained),
            checker.result.ready.eq(start | copy_end),
        ]
        # Only a start takes room and changes the hazard range, and a start needs
        # `cleared`, so a clearance seen a cycle ago still holds. `passing` clears a copy
        # the cycle before its result arrives.
        hazard = self._hazard(m, checker, drained, start)
        waiting = checker.result.valid & ok & ~start
        m.d.sync += cleared.eq((waiting | checker.passing) & room & ~hazard)
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
        # of each pair can be high, for the command that asked.
        counted = self.flag_set.counted | self.token_rls.released
        granted = self.flag_wait.granted | self.token_get.granted
        releasing = cmd.opcode == Opcode.RLS_BUF
        getting = cmd.opcode == Opcode.GET_BUF
        kind = self.cmd.payload.kind
        # `cmd.ready` is one slice, a KeptLut: the dispatcher's queue, far from the pipe,
        # takes it as one net, and ABC cannot spread it over the queue's logic.
        ready = m.submodules.ready = KeptLut(5, truth_table(_ready_by_kind, 5))
        m.d.comb += [
            ready.a.eq(Cat(kind.as_value(), checker.request.ready, counted, granted)),
            self.cmd.ready.eq(ready.z),
        ]
        with m.Switch(kind):
            with m.Case(CommandKind.COPY):
                m.d.comb += checker.request.valid.eq(valid)
            with m.Case(CommandKind.SET_FLAG):
                # Another pipe waits on it: this pipe's writes must be committed first.
                # The set seen on the cycle it is counted must not be offered again.
                offer = valid & idle & ~counted
                m.d.comb += [
                    self.flag_set.valid.eq(offer & ~releasing),
                    self.token_rls.valid.eq(offer & releasing),
                    finished.eq(valid & counted),
                ]
            with m.Case(CommandKind.WAIT_FLAG):
                m.d.comb += [
                    self.flag_wait.valid.eq(valid & ~getting),
                    self.token_get.valid.eq(valid & getting),
                    finished.eq(valid & granted),
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
        The spans are the checker's (the result's, or the announced copy's while its
        result is on its way), so no multiply here."""
        if self.pipe != Pipe.V:
            return 0
        geom = checker.result.payload.geom
        spans = Signal.like(checker.upcoming, name="spans")
        with m.If(checker.result.valid):
            m.d.comb += [spans[name].eq(geom[name]) for name in SPAN_FIELDS]
        with m.Else():
            m.d.comb += spans.eq(checker.upcoming)
        lo = Signal.like(geom.dst, name="dirty_lo")
        hi = Signal.like(geom.dst_end, name="dirty_hi")
        with m.If(start):
            m.d.sync += [
                lo.eq(Mux(drained | (geom.dst < lo), geom.dst, lo)),
                hi.eq(Mux(drained | (geom.dst_end > hi), geom.dst_end, hi)),
            ]
        return ~drained & (spans.src < hi) & (lo < spans.src_end)

    def _land_completions(self, m):
        """The datapath's Completions, registered: a copy's index leaves the in-flight
        queue, and a bus error is recorded, a cycle after its Completion is offered. A
        Completion may come straight from a bus response, from a block placed far from
        the pipe, so only the completed count (through a choice between two sums worked
        out from registers) and the in-flight count wait on it in its cycle. Returns a
        stream view of the landed Completion (valid for one cycle)."""
        landed = stream.Signature(Completion).create(path=("landed",))
        m.d.sync += [landed.valid.eq(self.done.valid), landed.payload.eq(self.done.payload)]
        return landed

    def _status(self, m, in_flight, landed, finished, copy_end, rule_error, rule_code,
                rule_index):
        """Completions from the datapath and the commands that end here: the completed
        count and the first error. A Completion counts on the cycle it is offered and its
        bus error is recorded a cycle later (`landed`); a command's end is registered
        first. Returns 1 while an end or a bus error waits to be recorded."""
        status = self.status
        m.d.comb += self.done.ready.eq(1)
        ended = Signal()
        failed = Signal()
        code = Signal(ErrorCode)
        index = Signal(CMD_INDEX_BITS)
        m.d.sync += [ended.eq(finished | copy_end),
                     failed.eq(rule_error), code.eq(rule_code), index.eq(rule_index)]
        # The count goes up by the ends registered here, and by one more with a
        # Completion: two sums of the count and a 2-bit register, each one carry chain,
        # which the Completion only picks between. The 2-bit registers are the chains'
        # alone, kept apart from `ended` (which the pipe's busy reads far from the count,
        # and which Yosys would merge with a bit of them), so they sit beside the chains.
        steps = m.submodules.completed_steps = RegisterCopy(4)
        ends_next = finished + copy_end
        m.d.comb += steps.d.eq(Cat(ends_next, (ends_next + 1)[:2]))
        ends, ends_and_one = steps.q[:2], steps.q[2:]
        m.d.sync += status.completed.eq(Mux(self.done.valid, status.completed + ends_and_one,
                                            status.completed + ends))

        done = landed.payload
        bus_error = landed.valid & (done.error != ErrorCode.NONE)
        with m.If(self.clear):
            m.d.sync += [status.error.eq(ErrorCode.NONE), status.error_index.eq(0),
                         status.error_addr.eq(0)]
        unrecorded = self.clear | (status.error == ErrorCode.NONE)
        # A rule error is decided with no copy in flight, so after every bus error of a
        # copy before it has landed.
        with m.If(bus_error & unrecorded):
            m.d.sync += [status.error.eq(done.error), status.error_index.eq(in_flight.r_data),
                         status.error_addr.eq(done.address)]
        with m.Elif(failed & unrecorded):
            m.d.sync += [status.error.eq(code), status.error_index.eq(index),
                         status.error_addr.eq(0)]
        return ended | bus_error
