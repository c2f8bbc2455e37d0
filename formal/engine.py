"""The whole engine's contract when it is given nothing: an idle engine issues nothing on
m_axi (no ARVALID, AWVALID or WVALID) and stays idle, whatever the slave does.

UB is cut to a few words (`SMALL_UB_WORDS`): it holds no state the property reads, and
its full 256 KiB of memory bits would be the solver's whole problem."""

from contextlib import contextmanager
from unittest import mock

from amaranth.hdl import C, Module, Value

from hdl import top
from hdl.datapath import axi_reader, axi_writer
from hdl.intake.intake import ENGINE_PIPES, WholeCommandIntake
from hdl.pipe.pipe import PipeController
from hdl.top import MteDma
from hdl.ub.ub import UnifiedBuffer

from .axi4 import Axi4MasterChecker
from .axi_master import issue_rows_then
from .inputs import free, free_slave, free_stream
from .props import add_block, counter, prop
from .runner import Mutation

SMALL_UB_WORDS = 4
MAX_OUTSTANDING = 2


@contextmanager
def _small_ub():
    def small(width_bytes, size):
        return UnifiedBuffer(width_bytes, SMALL_UB_WORDS * width_bytes)
    with mock.patch.object(top, "UnifiedBuffer", small):
        yield


def idle_engine_harness(width_bytes):
    def build(mutation):
        m = Module()
        with _small_ub():
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


def completions_harness(width_bytes):
    """Commands and a slave free within their rules: no pipe counts a completion without
    a command of its own accepted, so none completes twice and none is invented; while
    the engine is idle, each pipe has counted every command it was given."""
    def build(mutation):
        m = Module()
        intakes = []
        with _small_ub(), _recording(WholeCommandIntake, intakes):
            dut = add_block(m, "dut", MteDma(width_bytes=width_bytes,
                                             max_outstanding=MAX_OUTSTANDING), mutation)
        free_stream(m, "cmd", dut.cmd)
        m.d.comb += [dut.ub_test.we.eq(0), dut.ub_test.re.eq(0)]
        free(m, dut.clear_errors)
        free_slave(m, dut.m_axi)
        Axi4MasterChecker(width_bytes, MAX_OUTSTANDING).add(m, dut.m_axi)
        commands = intakes[0].commands
        for pipe in ENGINE_PIPES:
            status = getattr(dut, f"status_{pipe.name.lower()}")
            accepted = counter(
                m, f"accepted_{pipe.name.lower()}",
                commands.valid & commands.ready & (commands.payload.pipe == pipe),
                len(status.completed))
            prop(m, f"{pipe.name.lower()}_completions_only_for_accepted_commands",
                 status.completed <= accepted)
            # Idle, nothing is queued, checked or in flight: every command is counted.
            prop(m, f"{pipe.name.lower()}_idle_only_when_every_command_completed",
                 ~dut.idle | (status.completed == accepted))
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
