"""The dispatcher's contract, the link from the engine's command port to each pipe: the
n-th command a pipe is given is the n-th command taken for that pipe (its entry and kind
as taken), each once, none invented; a command for EXTERNAL is taken at once and reaches
no pipe; each get_buf taken for an engine pipe carries its id's next ticket, the k-th
get_buf of an id ticket k (modulo 2^TICKET_BITS), so the token table grants them in
program order.

Induction closes with an invariant tying each pipe's queue to the harness's count of its
commands (`formal.gm_side.queue_entries`, as the row fork's group does) and the ticket
registers to the harness's count of get_bufs of a free-but-fixed id."""

from amaranth.asserts import AnyConst
from amaranth.hdl import Array, Cat, Module, Signal
from amaranth.lib import data

from hdl.intake import intake
from hdl.intake.commands import CommandEntry, CommandKind, PipeCommand, op_fields
from hdl.intake.intake import ENGINE_PIPES, Dispatcher, one_hot_pipe
from hdl.intake.tokens import TICKET_BITS
from model.isa import BUF_ID_BITS, Opcode, Pipe

from .gm_side import queue_entries, queue_slots
from .inputs import free, free_stream
from .props import add_block, assume, child, counter, prop, registers, stream_rule
from .runner import Mutation

# Commands are numbered per pipe modulo 2^NUMBER_BITS, more than a pipe's queue holds.
NUMBER_BITS = 4
_FOLLOWED = data.StructLayout({"entry": CommandEntry, "kind": CommandKind})


def dispatcher_harness(depth):
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", Dispatcher(depth), mutation)
        fragment = m.submodules["dut"]
        commands = dut.commands
        free_stream(m, "commands", commands)
        offered = commands.payload
        # The intake gives each command its pipe's bit (`RoutedCommand`).
        assume(m, "enters_is_the_pipes_bit", offered.enters == one_hot_pipe(offered.pipe))
        take = commands.valid & commands.ready
        prop(m, "external_command_taken_at_once",
             ~(commands.valid & (offered.pipe == Pipe.EXTERNAL)) | commands.ready)
        number, value = (Signal(NUMBER_BITS, name="followed_number"),
                         Signal(_FOLLOWED, name="followed_value"))
        m.d.comb += [number.eq(AnyConst(NUMBER_BITS)),
                     value.as_value().eq(AnyConst(len(value.as_value())))]
        tickets = _tickets(m, dut, fragment, take)
        for i, pipe in enumerate(ENGINE_PIPES):
            _pipe_order(m, dut, fragment, i, pipe, (number, value), tickets)
        return m
    return build


def _pipe_order(m, dut, fragment, i, pipe, followed, tickets):
    """Numbering the commands taken for `pipe` and those it is given: it is given only
    commands taken, and following a free-but-fixed number and value, if the n-th taken
    had that entry and kind, so has the n-th given, and if it was a get_buf of the
    followed id, with the ticket it was taken with; its queue holds the rest in order."""
    name = pipe.name.lower()
    out = getattr(dut, name)
    free(m, out.ready)
    stream_rule(m, prop, name, out)
    commands = dut.commands
    take = commands.valid & commands.ready & commands.payload.enters[i]
    taken = counter(m, f"{name}_taken", take, NUMBER_BITS)
    given = counter(m, f"{name}_given", out.valid & out.ready, NUMBER_BITS)
    level = (taken - given)[:NUMBER_BITS]
    number, value = followed
    tracked = Signal(name=f"{name}_followed_has_the_value")
    of_the_id = Signal(name=f"{name}_followed_is_a_get_buf_of_the_id")
    its_ticket = Signal(TICKET_BITS, name=f"{name}_followed_ticket")
    offered = Signal(_FOLLOWED)
    m.d.comb += [offered.entry.eq(commands.payload.entry),
                 offered.kind.eq(commands.payload.kind)]
    get_buf_of_the_id, gets = tickets
    with m.If(take & (taken == number)):
        m.d.sync += [tracked.eq(offered.as_value() == value.as_value()),
                     of_the_id.eq(get_buf_of_the_id), its_ticket.eq(gets)]

    def holds_its_command(held, nth, queued):
        return ~(held & (nth == number) & tracked) | (
            (Cat(queued.entry.as_value(), queued.kind) == value.as_value())
            & (~of_the_id | (queued.ticket == its_ticket)))

    queue = child(fragment, f"fifo_{name}")
    prop(m, f"{name}_given_only_commands_taken", ~out.valid | (level != 0))
    prop(m, f"{name}_holds_at_most_its_depth", level <= dut.depth)
    prop(m, f"{name}_nth_given_is_the_nth_taken",
         holds_its_command(out.valid, given, out.payload))
    _, held = queue_entries(m, f"{name}_queue", queue)
    prop(m, f"{name}_queue_holds_level", held == level)
    regs = registers(queue)
    prop(m, f"{name}_output_holds_its_command",
         holds_its_command(regs["r_rdy"], given, PipeCommand(regs["r_data"])))
    for slot, (held_here, entry, age) in enumerate(queue_slots(queue)):
        prop(m, f"{name}_queue_slot_{slot}_holds_its_command",
             holds_its_command(held_here, (given + age)[:NUMBER_BITS], PipeCommand(entry)))


def _tickets(m, dut, fragment, take):
    """Following a free-but-fixed id: the ticket table's count of it is the get_bufs of
    it taken for an engine pipe, and one more while the offered one has its ticket
    found. Returns whether the offered command is such a get_buf, and that count: the
    k-th taken must reach its pipe with ticket k (`_pipe_order`)."""
    buf_id = Signal(BUF_ID_BITS, name="followed_buf_id")
    m.d.comb += buf_id.eq(AnyConst(BUF_ID_BITS))
    offered = dut.commands.payload
    get_buf = ((offered.entry.cmd.opcode == Opcode.GET_BUF)
               & (offered.pipe != Pipe.EXTERNAL))
    offered_id = op_fields(offered.entry.cmd, Opcode.GET_BUF).buf_id
    of_the_id = get_buf & (offered_id == buf_id)
    gets = counter(m, "get_bufs_taken", take & of_the_id, TICKET_BITS)
    regs = registers(fragment)
    found, looking, held_id = (regs["ticket_found"], regs["ticket_looking"],
                               regs["ticket_held_id"])
    issued = Array(registers(child(fragment, "tickets"))[f"issued_{k}"]
                   for k in range(1 << BUF_ID_BITS))
    ticket = regs["ticket_held"]
    prop(m, "get_buf_taken_only_with_its_ticket", ~(take & get_buf) | found)
    prop(m, "found_ticket_is_the_offered_get_bufs",
         ~found | (dut.commands.valid & get_buf & (held_id == offered_id)))
    prop(m, "looking_up_the_offered_get_buf",
         ~looking | (dut.commands.valid & get_buf & ~found & (held_id == offered_id)))
    prop(m, "found_ticket_is_the_ids_count",
         ~(found & (held_id == buf_id)) | (ticket == gets))
    prop(m, "ticket_count_is_the_get_bufs_taken",
         issued[buf_id] == (gets + (found & (held_id == buf_id)))[:TICKET_BITS])
    return of_the_id, gets


def _entry_of_the_command_before(elaborate):
    """MTE3's queue given each command with the entry and kind of the one before it."""
    def patched(self, platform):
        m = elaborate(self, platform)
        queue = m.submodules["fifo_mte3"]
        before = Signal.like(queue.w_data, name="command_before")
        with m.If(queue.w_en):
            m.d.sync += before.eq(queue.w_data)
        m.d.comb += queue.w_data.eq(before)
        return m
    return patched


def _ticket_read_after_its_step(ticket):
    """A get_buf queued with its id's count as the lookup reads it when taken, after
    the lookup stepped it, not as it was looked up."""
    def patched(self, m, entry, pipe, queued):
        ticketed = ticket(self, m, entry, pipe, queued)
        m.d.comb += queued.ticket.eq(m.submodules.tickets.ticket)
        return ticketed
    return patched


DISPATCHER_MUTATIONS = (
    Mutation("entry_of_the_command_before", "MTE3's queue takes each command with the "
             "entry of the one before", ((intake.Dispatcher, "elaborate",
                                          _entry_of_the_command_before(
                                              intake.Dispatcher.elaborate)),)),
    Mutation("ticket_read_after_its_step", "a get_buf queued with its id's ticket count "
             "after the lookup stepped it", ((intake.Dispatcher, "_ticket",
                                             _ticket_read_after_its_step(
                                                 intake.Dispatcher._ticket)),)),
)
