# amaranth: UnusedElaboratable=no
# (A RegisteredMultiplier is built here for its signature alone, by _any_products.)
"""The whole engine's contracts: given nothing, it issues nothing on m_axi (no ARVALID,
AWVALID or WVALID) and stays idle, whatever the slave does; given commands, no pipe
counts a completion it was not given a command for, and idle, each has counted every
one; given a small copy, its pipe counts its completion within a bound, the slave
never stalling or stalling on a few cycles; given a copy whose first response fails,
the engine drains it within a bound of bursts and cycles.

UB is cut to a few words (`SMALL_UB_WORDS`): it holds no state the properties read, and
its full 256 KiB of memory bits would be the solver's whole problem."""

from contextlib import contextmanager
from types import SimpleNamespace
from unittest import mock

from amaranth.asserts import AnyConst
from amaranth.hdl import C, Cat, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.utils import exact_log2

from hdl import top
from hdl.datapath import axi_reader, axi_writer, mte2, mte3, ubcopy
from hdl.datapath.completions import write_to_ub
from hdl.intake.commands import op_fields
from hdl.intake.intake import ENGINE_PIPES, WholeCommandIntake
from hdl.lib.axi import resp_is_error
from hdl.lib.multiplier import RegisteredMultiplier
from hdl.pipe import checker
from hdl.pipe.pipe import PipeController
from hdl.top import MteDma
from hdl.ub.ub import UnifiedBuffer
from model.isa import UB_LINE, ErrorCode, Opcode

from .axi4 import Axi4MasterChecker
from .axi_master import issue_rows_then
from .inputs import FreeOutputs, free, free_slave, free_stream, timely_slave
from .props import add_block, assume, counter, prop
from .runner import Mutation

SMALL_UB_WORDS = 4
MAX_OUTSTANDING = 2


@contextmanager
def small_ub():
    """The engine built with its UB cut to SMALL_UB_WORDS words."""
    def small(width_bytes, size):
        return UnifiedBuffer(width_bytes, SMALL_UB_WORDS * width_bytes)
    with mock.patch.object(top, "UnifiedBuffer", small):
        yield


@contextmanager
def _any_products():
    """The copy checkers' multipliers give any product: every run of the engine is then a
    run of the harness, so what holds of the harness holds of the engine. The products
    (44 of 18 x 18 bits in the engine) are most of the solver's work, and only the
    checkers' verdicts read them: a group that follows commands to their completion takes
    any verdict, which `checker_contract_*` and the tests pin down."""
    def any_product(a_bits, b_bits):
        return FreeOutputs(RegisteredMultiplier(a_bits, b_bits))
    with mock.patch.object(checker, "RegisteredMultiplier", any_product):
        yield


def idle_engine_harness(width_bytes):
    def build(mutation):
        m = Module()
        with small_ub():
            dut = add_block(m, "dut", MteDma(width_bytes=width_bytes,
                                             max_outstanding=MAX_OUTSTANDING), mutation)
        m.d.comb += [dut.cmd.valid.eq(0), dut.ub_test.we.eq(0), dut.ub_test.re.eq(0)]
        free(m, Value.cast(dut.cmd.payload), dut.clear_errors)
        free_slave(m, dut.m_axi)
        Axi4MasterChecker(width_bytes, MAX_OUTSTANDING).add(m, dut.m_axi)
        axi = dut.m_axi
        prop(m, "idle_engine_issues_no_read", ~axi.arvalid)
        prop(m, "idle_engine_issues_no_write", ~axi.awvalid & ~axi.wvalid)
        prop(m, "engine_without_commands_stays_idle", dut.idle)
        return m
    return build


@contextmanager
def _recording(cls, seen):
    """The engine built with `cls` (a block `hdl.top` names) recording its instances."""
    class Recorded(cls):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            seen.append(self)
    with mock.patch.object(top, cls.__name__, Recorded):
        yield


def _engine_given_commands(m, width_bytes, mutation):
    """The engine in the harness `m` as the command groups take it (UB cut, products
    free), its UB test port unused and `clear_errors` free; returns it and its intake."""
    intakes = []
    with small_ub(), _any_products(), _recording(WholeCommandIntake, intakes):
        dut = add_block(m, "dut", MteDma(width_bytes=width_bytes,
                                         max_outstanding=MAX_OUTSTANDING), mutation)
    m.d.comb += [dut.ub_test.we.eq(0), dut.ub_test.re.eq(0)]
    free(m, dut.clear_errors)
    return dut, intakes[0]


def commands_accepted(m, commands, pipe, width):
    """How many commands the intake's stream `commands` has given `pipe`, modulo
    2^`width`."""
    return counter(m, f"accepted_{pipe.name.lower()}",
                   commands.valid & commands.ready & (commands.payload.pipe == pipe), width)


def _completions_of_accepted(m, dut, intake):
    """Per pipe of the engine `dut`, (name, its `completed` count, the commands `intake`
    gave it), asserting that the count never runs ahead of those commands."""
    for pipe in ENGINE_PIPES:
        name = pipe.name.lower()
        completed = getattr(dut, f"status_{name}").completed
        accepted = commands_accepted(m, intake.commands, pipe, len(completed))
        prop(m, f"{name}_completions_only_for_accepted_commands", completed <= accepted)
        yield name, completed, accepted


def completions_harness(width_bytes):
    """Commands and a slave free within their rules: no pipe counts a completion without
    a command of its own accepted, so none completes twice and none is invented; while
    the engine is idle, each pipe has counted every command it was given. The checkers'
    products are free (`_any_products`)."""
    def build(mutation):
        m = Module()
        dut, intake = _engine_given_commands(m, width_bytes, mutation)
        free_stream(m, "cmd", dut.cmd)
        free_slave(m, dut.m_axi)
        Axi4MasterChecker(width_bytes, MAX_OUTSTANDING).add(m, dut.m_axi)
        for name, completed, accepted in _completions_of_accepted(m, dut, intake):
            # Idle, nothing is queued, checked or in flight: every command is counted.
            prop(m, f"{name}_idle_only_when_every_command_completed",
                 ~dut.idle | (completed == accepted))
        return m
    return build


# The copy `copy_completes_harness` follows, small enough to end within its bound at
# W = 8: at most 2 rows of at most 2 bus words, or of one UB line for UB->UB (len_burst
# counts lines); MTE2's pads of at most one element each and its UB row stride at most a
# line, so each row's UB extent is one line.
SMALL_ROWS = 2
SMALL_ROW_WORDS = 2


def _small_copy(m, kind, fields, width_bytes):
    assume(m, "copy_rows_few", fields.n_burst <= SMALL_ROWS)
    if kind == Opcode.COPY_UBUF_TO_UBUF:
        assume(m, "copy_row_one_line", fields.len_burst <= 1)
        return
    assume(m, "copy_rows_short", fields.len_burst <= SMALL_ROW_WORDS * width_bytes)
    if kind == Opcode.COPY_GM_TO_UBUF:
        assume(m, "copy_pads_one_element",
               (fields.left_padding <= 1) & (fields.right_padding <= 1))
        assume(m, "copy_ub_stride_one_line", fields.dst_stride <= UB_LINE)


def _one_copy_from_reset(m, dut, kind):
    """The copy's command offered from reset until taken, its words free but its kind;
    returns its fields."""
    taken = Signal(name="copy_taken")
    m.d.sync += taken.eq(taken | dut.cmd.ready)
    command = Value.cast(dut.cmd.payload)
    m.d.comb += [dut.cmd.valid.eq(~taken), command.eq(AnyConst(len(command)))]
    assume(m, "copy_of_the_kind", dut.cmd.payload.opcode == kind)
    return op_fields(dut.cmd.payload, kind)


def _completed_in_time(m, dut, intake, completed_by, idle_by):
    """By cycle `completed_by` each pipe has counted the commands it was given, by
    `idle_by` the engine is idle, and no pipe ever counts a completion it was not given a
    command for. Returns the cycle count (it stops at `idle_by`)."""
    cycle = Signal(range(idle_by + 1), name="cycle")
    with m.If(cycle != idle_by):
        m.d.sync += cycle.eq(cycle + 1)
    for name, completed, accepted in _completions_of_accepted(m, dut, intake):
        prop(m, f"{name}_every_command_completed_by_cycle_{completed_by}",
             (cycle < completed_by) | (completed == accepted))
    prop(m, f"engine_idle_by_cycle_{idle_by}", (cycle < idle_by) | dut.idle)
    return cycle


def copy_completes_harness(kind, completed_by, idle_by, width_bytes, stalls=0):
    """One copy of `kind` offered from reset (a small copy, `_small_copy`, its fields
    otherwise free), the pipe registers as reset leaves them, and a slave that holds the
    engine up on at most `stalls` cycles (`inputs.timely_slave`; with 0, never), its
    responses free: by cycle `completed_by`
    the copy's pipe has counted its completion, whatever the checker's verdict (with
    `_any_products`: a rule error, or a copy that runs) and the bus responses (a bus
    error and its drain), and by `idle_by` the engine is idle; no pipe ever counts a
    completion it was not given a command for."""
    def build(mutation):
        m = Module()
        dut, intake = _engine_given_commands(m, width_bytes, mutation)
        _small_copy(m, kind, _one_copy_from_reset(m, dut, kind), width_bytes)
        axi_checker = Axi4MasterChecker(width_bytes, MAX_OUTSTANDING)
        axi_checker.add(m, dut.m_axi)
        timely_slave(m, dut.m_axi, axi_checker, stalls)
        _completed_in_time(m, dut, intake, completed_by, idle_by)
        return m
    return build


# The GM side's channel whose first response fails, per kind of a copy over AXI, the
# address channel whose bursts the drain bounds, the pipe that records the error, and
# the copy's address and stride fields.
_FAILING = {
    Opcode.COPY_GM_TO_UBUF: ("r", "ar", "mte2",
                             ("gm_src", "src_stride", "ub_dst", "dst_stride")),
    Opcode.COPY_UBUF_TO_GM: ("b", "aw", "mte3",
                             ("ub_src", "src_stride", "gm_dst", "dst_stride")),
}


def _rows_of_a_word(m, kind, fields, width_bytes):
    """Rows of at most a bus word, each starting on a word in GM and in UB: a one-beat
    burst and a UB word each. MTE2's rows unpadded, so each writes its bytes alone."""
    _, _, _, addresses = _FAILING[kind]
    low = exact_log2(width_bytes)
    assume(m, "rows_of_a_word", (fields.len_burst <= width_bytes)
           & Cat(fields[name][:low] == 0 for name in addresses).all())
    if kind == Opcode.COPY_GM_TO_UBUF:
        assume(m, "rows_unpadded", ~fields.data_select_bit)


def copy_drains_harness(kind, bursts_after, completed_by, idle_by, width_bytes):
    """The drain after a bus error in the whole engine. One copy of `kind` offered from
    reset, of any number of rows (`n_burst` free, the loop counts as reset leaves them)
    of a bus word each (`_rows_of_a_word`), a slave that never holds the engine up, and
    the copy's first response (R beat or B response) an error, the others free: from
    that response on, the engine issues at most `bursts_after` more bursts (AR or AW
    handshakes); its pipe has counted the copy's completion by `completed_by`, and by
    `idle_by` the engine is idle and, if the checker passed the copy (with
    `_any_products` its verdict is free), the pipe has recorded a BUS_ERROR. A copy not
    cut short would run for as many rows as `n_burst` gives, up to 65,535."""
    response, address, pipe, _ = _FAILING[kind]

    def build(mutation):
        m = Module()
        dut, intake = _engine_given_commands(m, width_bytes, mutation)
        _rows_of_a_word(m, kind, _one_copy_from_reset(m, dut, kind), width_bytes)
        assume(m, "errors_never_cleared", ~dut.clear_errors)
        axi = dut.m_axi
        axi_checker = Axi4MasterChecker(width_bytes, MAX_OUTSTANDING)
        axi_checker.add(m, axi)
        timely_slave(m, axi, axi_checker)
        answered = getattr(axi, f"{response}valid") & getattr(axi, f"{response}ready")
        failed = Signal(name="first_response_failed")
        m.d.sync += failed.eq(failed | answered)
        assume(m, "first_response_fails",
               failed | ~getattr(axi, f"{response}valid")
               | resp_is_error(getattr(axi, f"{response}resp")))
        issued = getattr(axi, f"{address}valid") & getattr(axi, f"{address}ready")
        # Wide enough for a burst on every cycle the BMC reaches: it never wraps.
        bursts = counter(m, "bursts_after_the_failing_response", failed & issued,
                         (idle_by + 1).bit_length())
        prop(m, f"at_most_{bursts_after}_bursts_after_the_failing_response",
             bursts <= bursts_after)
        cycle = _completed_in_time(m, dut, intake, completed_by, idle_by)
        # The error is recorded a cycle after the completion counts; idle shows it.
        prop(m, "failing_copy_records_a_bus_error",
             ~failed | (cycle < idle_by)
             | (getattr(dut, f"status_{pipe}").error == ErrorCode.BUS_ERROR))
        return m
    return build


def _phantom_row(m, splitter, issuer):
    """Every GM side's splitter offered a row on every cycle, which nobody sent."""
    m.d.comb += splitter.rows.valid.eq(1)


PHANTOM_ROW = Mutation("phantom_row", "the GM sides' splitters see a row nobody sent",
                       ((axi_reader, "issue_rows", issue_rows_then(_phantom_row)),
                        (axi_writer, "issue_rows", issue_rows_then(_phantom_row))))


class _CompletesTwice(PipeController):
    """A pipe that counts a command that ends in it (not a copy) twice."""
    def _status(self, m, in_flight, finished, copy_end, *rest):
        return super()._status(m, in_flight, finished, finished | copy_end, *rest)


COMPLETES_TWICE = Mutation("completes_twice", "a command that ends in its pipe counts as "
                           "two completions", ((top, "PipeController", _CompletesTwice),))


class _EndsUncounted(PipeController):
    """A pipe that counts no command that ends in it (not a copy)."""
    def _status(self, m, in_flight, finished, copy_end, *rest):
        return super()._status(m, in_flight, C(0, 1), copy_end, *rest)


ENDS_UNCOUNTED = Mutation("ends_uncounted", "a command that ends in its pipe is not "
                          "counted", ((top, "PipeController", _EndsUncounted),))


class _CountShownLate:
    """An InFlight whose completed count is read a cycle late."""

    def __init__(self, m, in_flight):
        self._in_flight = in_flight
        self.completed = Signal.like(in_flight.completed, name="completed_late")
        m.d.sync += self.completed.eq(in_flight.completed)

    def __getattr__(self, name):
        return getattr(self._in_flight, name)


class _CountsLate(PipeController):
    """A pipe whose status shows its completed count a cycle late."""
    def _status(self, m, in_flight, *rest):
        return super()._status(m, _CountShownLate(m, in_flight), *rest)


COUNTS_LATE = Mutation("counts_late", "each pipe's completed count shown a cycle late",
                       ((top, "PipeController", _CountsLate),))


def _last_write_unreported(m, ub, words, completions):
    """write_to_ub, but the completions never told of a command's last UB word."""
    write_to_ub(m, ub, words, SimpleNamespace(written=Signal(name="written_unheard")))
    m.d.comb += completions.written.eq(0)


LAST_WRITE_UNREPORTED = Mutation(
    "last_write_unreported", "MTE2's and UB->UB's completions never told that a "
    "command's last UB word was written",
    ((mte2, "write_to_ub", _last_write_unreported),
     (ubcopy, "write_to_ub", _last_write_unreported)))


class _BubbleAfterStall(wiring.Component):
    """A GM side (`side`, AxiReader or AxiWriter) that, on the cycle after its slave held
    back a response it waited for (an R beat while a read burst is outstanding, a B
    response while a burst whose data have all gone awaits one), refuses one: its RREADY
    or BREADY low, and the response hidden from it. A slave that never stalls never
    shows it."""

    def __init__(self, side, response, *args):
        self._inner = side(*args)
        self._response = response
        super().__init__(self._inner.signature)

    def elaborate(self, platform):
        m = Module()
        inner = m.submodules.inner = self._inner
        for name, member in self.signature.members.items():
            if name == "axi":
                continue
            if member.flow == wiring.In:
                wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(inner, name))
            else:
                wiring.connect(m, getattr(inner, name), wiring.flipped(getattr(self, name)))
        outer_axi, inner_axi = self.axi, inner.axi
        for name, member in self.axi.signature.members.items():
            if member.flow == wiring.Out:
                m.d.comb += getattr(outer_axi, name).eq(getattr(inner_axi, name))
            else:
                m.d.comb += getattr(inner_axi, name).eq(getattr(outer_axi, name))
        valid, ready = (getattr(outer_axi, f"{self._response}{handshake}")
                        for handshake in ("valid", "ready"))
        bubble = Signal(name="bubble_after_stall")
        m.d.sync += bubble.eq(self._awaiting(m, outer_axi) & ~valid)
        m.d.comb += [getattr(inner_axi, f"{self._response}valid").eq(valid & ~bubble),
                     ready.eq(getattr(inner_axi, f"{self._response}ready") & ~bubble)]
        return m

    def _awaiting(self, m, axi):
        """A read burst outstanding (R), or a burst whose AW and last W beat have gone
        awaiting its B response (B): the handshakes counted modulo 16, as at most
        max_outstanding (< 16) bursts are on the bus."""
        def count(name, valid, ready, *last):
            return counter(m, f"{name}_seen", valid & ready & Cat(*last).all(), 4)
        if self._response == "r":
            return (count("ar", axi.arvalid, axi.arready)
                    != count("rlast", axi.rvalid, axi.rready, axi.rlast))
        answered = count("b", axi.bvalid, axi.bready)
        return ((count("aw", axi.awvalid, axi.awready) != answered)
                & (count("wlast", axi.wvalid, axi.wready, axi.wlast) != answered))


BUBBLE_AFTER_STALL = Mutation(
    "bubble_after_stall", "MTE2's RREADY and MTE3's BREADY low for a cycle after the "
    "slave held back an R beat or B response awaited",
    ((mte2, "AxiReader",
      lambda *args: _BubbleAfterStall(axi_reader.AxiReader, "r", *args)),
     (mte3, "AxiWriter",
      lambda *args: _BubbleAfterStall(axi_writer.AxiWriter, "b", *args))))
