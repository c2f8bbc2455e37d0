# amaranth: UnusedElaboratable=no
# (The real datapaths are built here for their signatures alone.)
"""The engine contract by k-induction, following one pipe: the engine's command path
(the intake, the dispatcher, the three pipe controllers, the event flags and the token
table) as `hdl.top.MteDma` wires it, every other block a stand-in. Each pipe's copy
checker and address generator are those of formal/pipe_stand_ins.py, which keep only
what the real blocks guarantee (proved of them by `checker_contract_*` and
`addrgen_rows_numbered_*`); each datapath has its real ports with every output free,
but for the followed pipe's datapath giving a Completion only while a copy it started
has none yet (`completion_after_its_start`, as formal/pipe_controller.py assumes it);
the UB is cut to a few words, as formal/engine.py cuts it. Every input of the engine
is free: commands (any words, on any cycle, not even held until taken), the slave,
`clear_errors`.

The contract, on the followed pipe: its `completed` count trails the commands the intake
gave it by exactly the commands the engine still holds for it (in the dispatcher's
queue for the pipe, in its checker, in flight, ending), counted modulo 2^COMPLETED_BITS:
no completion is invented or counted twice, and none is lost; while the engine is
`idle` the count is every command the pipe was given. The induction closes with the
pipe controller's invariant (formal/pipe_controller.py) and the dispatcher queue's own.
`engine_completions_w8` (formal/engine.py) checks the same of the whole engine, real
datapaths and all, by BMC."""

from contextlib import ExitStack, contextmanager
from unittest import mock

from amaranth.hdl import Module
from amaranth.lib.wiring import Flow

from hdl import top
from hdl.intake import intake
from hdl.pipe.in_flight import COMPLETED_BITS
from hdl.pipe.pipe import COPY_KIND, PipeController
from hdl.top import MteDma

from .engine import commands_accepted, small_ub
from .gm_side import queue_entries
from .inputs import FreeOutputs, free_ports
from .pipe_controller import pipe_contract
from .pipe_stand_ins import FreeAddressGenerator, FreeCopyChecker
from .props import add_block, child, prop
from .runner import Mutation

# The blocks of hdl.top that the harness replaces by their ports, outputs free.
_FREE_BLOCKS = ("Mte2Datapath", "Mte3Datapath", "UbCopyDatapath")


@contextmanager
def _command_path_alone(stand_ins):
    """MteDma built with `_FREE_BLOCKS` free, a small UB, and each pipe with the
    stand-ins of its checker and address generator, which `stand_ins` records by pipe. A
    mutation that replaces PipeController by a subclass keeps them: the subclass's
    `__init__` is this one."""
    build_pipe = PipeController.__init__

    def with_stand_ins(self, pipe, profile, width_bytes, in_flight):
        kind = COPY_KIND[pipe]
        checker = FreeCopyChecker(kind, profile, width_bytes)
        addrgen = FreeAddressGenerator(kind, width_bytes)
        stand_ins[pipe] = (checker, addrgen)
        build_pipe(self, pipe, profile, width_bytes, in_flight,
                   checker=lambda *_: checker, address_generator=lambda *_: addrgen)

    def freed(cls):
        return lambda *args: FreeOutputs(cls(*args))

    with ExitStack() as stack:
        stack.enter_context(small_ub())
        for name in _FREE_BLOCKS:
            stack.enter_context(mock.patch.object(top, name, freed(getattr(top, name))))
        stack.enter_context(mock.patch.object(PipeController, "__init__", with_stand_ins))
        yield


def engine_contract_harness(pipe, width_bytes):
    """The contract above, following `pipe`."""
    def build(mutation):
        m = Module()
        stand_ins = {}
        with _command_path_alone(stand_ins):
            dut = add_block(m, "dut", MteDma(width_bytes=width_bytes), mutation)
        free_ports(m, dut, Flow.In)
        engine = m.submodules["dut"]
        name = pipe.name.lower()
        pipe_fragment = child(engine, f"pipe_{name}")
        controller = pipe_fragment.origins[0]
        taken, unfinished = pipe_contract(m, pipe_fragment, controller, stand_ins[pipe])
        dispatcher = child(engine, "dispatcher").origins[0]
        accepted = commands_accepted(m, dispatcher.commands, pipe, COMPLETED_BITS)
        _, queued = queue_entries(m, f"dispatcher_{name}_queue",
                                  child(engine, "dispatcher", f"fifo_{name}"))
        prop(m, f"dispatcher_queue_holds_the_{name}_commands_not_taken",
             queued == (accepted - taken)[:COMPLETED_BITS])
        completed = getattr(dut, f"status_{name}").completed
        prop(m, f"{name}_completed_trails_accepted_by_the_commands_held",
             (accepted - completed)[:COMPLETED_BITS] == queued + unfinished)
        prop(m, f"{name}_idle_only_when_every_command_completed",
             ~dut.idle | (completed == accepted))
        return m
    return build


class _EntersTheNextPipe(intake.WholeCommandIntake):
    """An intake that routes each command into the queue of the pipe after its own,
    while naming its own pipe."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        enters = intake.one_hot_pipe(self.commands.payload.pipe)
        m.d.comb += self.commands.payload.enters.eq(enters.rotate_left(1))
        return m


ENTERS_THE_NEXT_PIPE = Mutation(
    "enters_the_next_pipe", "the intake routes each command into the next pipe's queue",
    ((top, "WholeCommandIntake", _EntersTheNextPipe),))
