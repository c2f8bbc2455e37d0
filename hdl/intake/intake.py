"""Command intakes (32-bit words -> whole commands, or whole commands as they come) and the
per-pipe dispatcher."""

from amaranth.hdl import C, Cat, Module, Mux, Shape, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from model.isa import MAX_COMMAND_WORDS, OPCODE_BITS, OPS, WORD_BITS, Opcode, Pipe

from ..lib.kept_lut import KeptLut, truth_table
from ..lib.queue import BypassQueue
from ..layouts import CMD_INDEX_BITS
from .commands import (COMMAND_BITS, Command, CommandEntry, CommandKind, PipeCommand,
                       command_kind, op_fields, register_write_bits)
from .tokens import TokenTickets

BAD_OPCODE_BITS = 16

ENGINE_PIPES = (Pipe.MTE2, Pipe.MTE3, Pipe.V)
QUEUE_DEPTH = 8                 # commands each pipe's dispatcher queue holds


class RoutedCommand(data.Struct):
    """A whole command, the pipe that executes it (isa.op_pipe) and its kind; `enters`,
    one bit per ENGINE_PIPES, is the pipe's bit if the command is valid and an engine
    pipe's (so each pipe's queue takes it on `valid & enters[i]` with no pipe compare)."""
    entry: CommandEntry
    pipe: Pipe
    kind: CommandKind
    enters: len(ENGINE_PIPES)


class RoutedWord(data.Struct):
    """A command word with what the intake needs of it as a command's first word,
    decoded where the word is stored ahead of the intake (`route_word`): whether it is a
    whole command (a flag), the pipe of the command it starts (`command_pipe`), that
    command's kind (`commands.command_kind`, which the opcode and a flag's fields fix) and
    `flag_to`, one bit per ENGINE_PIPES: the word is a flag for that pipe."""
    word: WORD_BITS
    flag: 1
    pipe: Pipe
    kind: CommandKind
    flag_to: len(ENGINE_PIPES)


def one_hot_pipe(pipe):
    """One bit per ENGINE_PIPES: `pipe` is that pipe (none for Pipe.EXTERNAL)."""
    return Cat(pipe == p for p in ENGINE_PIPES)


def route_word(m, word):
    """`word` with its route: a RoutedWord view, decoded in `m`."""
    routed = Signal(RoutedWord)
    flag = word_count(m, word) == 1
    pipe = command_pipe(m, word)
    m.d.comb += [routed.word.eq(word), routed.flag.eq(flag), routed.pipe.eq(pipe),
                 routed.kind.eq(command_kind(m, first_word_command(word))),
                 routed.flag_to.eq(Mux(flag, one_hot_pipe(pipe), 0))]
    return routed


class CommandIntake(wiring.Component):
    """Assembles command words into whole commands and names each one's pipe.

    The first word of a command carries the opcode, which fixes the command's word count
    (`model.isa.Op.words`); the following words fill the command in order. A first word
    whose opcode is not in the isa table is dropped and counted in `bad_opcodes`
    (saturating), and the next word is taken as a first word again.

    The words before a command's last one are held in registers; `commands` offers the
    command on the cycle its last word is offered, as those registers with that word in
    its place, and the last word is taken when the command is. So the intake adds no
    clock edge: `commands.valid` and `commands.payload` follow `words` combinationally and
    `words.ready` follows `commands.ready` for a last word (any other word is always
    taken). Throughput: one word per cycle, also across commands.

    Only a one-word command (a flag) decides its pipe, kind and end from the word on
    `words`; a longer command's pipe and kind are decoded from its first word into
    registers, and whether the next word is its last is a register too, so the path from
    the intake into the pipes' queues starts at registers (`pipe` and `kind` always,
    `valid` but for flags). With `routed`, `words` carries RoutedWords, decoded where the
    words are queued (the CSR front end's command FIFO), so a flag's route and end come
    from there too.

    `commands.payload.entry.index` numbers the commands of the stream from 0 since reset;
    dropped words take no number. `busy`: part of a command has come in, so an engine
    that has the first words of a command is not idle.
    """

    def __init__(self, routed=False):
        self._routed = routed
        super().__init__({
            "words": In(stream.Signature(RoutedWord if routed else WORD_BITS)),
            "commands": Out(stream.Signature(RoutedCommand)),
            "bad_opcodes": Out(BAD_OPCODE_BITS),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        out = self.commands
        routed = self.words.payload if self._routed else route_word(m, self.words.payload)
        word = routed.word
        pending = Signal(range(MAX_COMMAND_WORDS))       # words still missing from the command
        first = Signal(init=1)                           # pending == 0
        last = Signal()                                  # pending == 1
        position = Signal(range(MAX_COMMAND_WORDS))      # where the next word goes
        held = Signal.like(out.payload.entry.cmd.raw)    # the command's earlier words
        held_pipe = Signal(Pipe)                         # the pipe of the command in `held`
        held_kind = Signal(CommandKind)                  # and its kind
        last_to = Signal(len(ENGINE_PIPES))              # last, one-hot by held_pipe
        next_index = Signal(CMD_INDEX_BITS)
        size = word_count(m, word)
        flag = routed.flag
        completes = Mux(first, flag, last)
        word_pipe = routed.pipe

        raw = out.payload.entry.cmd.raw
        m.d.comb += [
            out.valid.eq(self.words.valid & completes),
            out.payload.entry.index.eq(next_index),
            out.payload.pipe.eq(Mux(first, word_pipe, held_pipe)),
            out.payload.kind.eq(Mux(first, routed.kind, held_kind)),
            out.payload.enters.eq(Mux(first, routed.flag_to, last_to)),
            self.words.ready.eq(~completes | out.ready),
            self.busy.eq(~first),
        ]
        with m.If(first):
            m.d.comb += raw.eq(word)
        with m.Else():
            m.d.comb += [raw.eq(held), raw.word_select(position, WORD_BITS).eq(word)]

        # A word that ends no command is always taken, so only `first` and the command
        # number wait on `commands.ready`: the command's other registers are read only
        # while `first` is low, and its first word sets them all.
        with m.If(self.words.valid & ~completes):
            with m.If(first):
                with m.If(size == 0):
                    with m.If(self.bad_opcodes != (1 << BAD_OPCODE_BITS) - 1):
                        m.d.sync += self.bad_opcodes.eq(self.bad_opcodes + 1)
                with m.Else():
                    # Assigning the whole value clears the words of the previous command.
                    m.d.sync += [held.eq(word), held_pipe.eq(word_pipe),
                                 held_kind.eq(routed.kind),
                                 pending.eq(size - 1), position.eq(1),
                                 first.eq(0), last.eq(size == 2),
                                 last_to.eq(Mux(size == 2, one_hot_pipe(word_pipe), 0))]
            with m.Else():
                m.d.sync += [held.word_select(position, WORD_BITS).eq(word),
                             pending.eq(pending - 1), position.eq(position + 1),
                             last.eq(pending == 2),
                             last_to.eq(Mux(pending == 2, one_hot_pipe(held_pipe), 0))]
        with m.If(out.valid & out.ready):
            m.d.sync += next_index.eq(next_index + 1)
        # `first` is set by a gate of its own: the command number's enable reaches the
        # dispatcher's queues, and a gate shared with it is placed out there.
        taken = m.submodules.first_taken = KeptLut(5, truth_table(_takes, 5))
        m.d.comb += taken.a.eq(Cat(self.words.valid, out.ready, first, flag, last))
        with m.If(taken.z):
            m.d.sync += first.eq(1)
        return m


class WholeCommandIntake(wiring.Component):
    """Takes one whole command per cycle and names its pipe and kind.

    `commands_in` carries a `commands.Command` (COMMAND_BITS, as wide as the widest op of
    the isa table), its first word at the low bits; the words past its op's own are not
    read. A command whose opcode is not in the isa table is dropped and counted in
    `bad_opcodes` (saturating). Every other command is offered on `commands` in the same
    cycle, with its route decoded from its first word (`route_word`) and its index in the
    stream since reset, and taken when `commands` takes it. So the intake adds no clock
    edge and takes a command per cycle. `busy` is 0: no command is ever partly in.
    """

    def __init__(self):
        super().__init__({
            "commands_in": In(stream.Signature(Command)),
            "commands": Out(stream.Signature(RoutedCommand)),
            "bad_opcodes": Out(BAD_OPCODE_BITS),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        given, out = self.commands_in, self.commands
        routed = route_word(m, given.payload.raw[:WORD_BITS])
        known = word_count(m, routed.word) != 0
        next_index = Signal(CMD_INDEX_BITS)
        m.d.comb += [
            out.valid.eq(given.valid & known),
            out.payload.entry.cmd.eq(given.payload),
            out.payload.entry.index.eq(next_index),
            out.payload.pipe.eq(routed.pipe),
            out.payload.kind.eq(routed.kind),
            out.payload.enters.eq(one_hot_pipe(routed.pipe)),
            given.ready.eq(~known | out.ready),
        ]
        with m.If(out.valid & out.ready):
            m.d.sync += next_index.eq(next_index + 1)
        with m.If(given.valid & ~known & (self.bad_opcodes != (1 << BAD_OPCODE_BITS) - 1)):
            m.d.sync += self.bad_opcodes.eq(self.bad_opcodes + 1)
        return m


def _takes(valid, ready, first, flag, last):
    """Whether the intake's command is taken: a word is offered that completes the
    command (a flag if it is a first word, else the command's last word), and the
    command is accepted."""
    return valid & ready & ((first & flag) | (~first & last))


def word_count(m, word):
    """Word count of the command a first word starts; 0 for an unknown opcode."""
    size = Signal(range(MAX_COMMAND_WORDS + 1))
    with m.Switch(word[:OPCODE_BITS]):
        for op in OPS:
            with m.Case(op.opcode):
                m.d.comb += size.eq(op.words)
    return size


def first_word_command(first_word):
    """A `Command` view of a command's first word (the later words 0)."""
    return Command(Cat(first_word, C(0, COMMAND_BITS - len(first_word))))


def command_pipe(m, first_word):
    """The pipe that executes the command this word starts (isa.op_pipe): fixed per op, the
    flag's own side, or the token's pipe (a flag or a token is one word).

    An opcode outside the table maps to EXTERNAL, so it is dropped like a foreign flag."""
    cmd = first_word_command(first_word)
    pipe = Signal(Pipe, init=Pipe.EXTERNAL)
    with m.Switch(cmd.opcode):
        for op in OPS:
            with m.Case(op.opcode):
                if op.opcode == Opcode.SET_FLAG:
                    m.d.comb += pipe.eq(op_fields(cmd, op.opcode).src_pipe)
                elif op.opcode == Opcode.WAIT_FLAG:
                    m.d.comb += pipe.eq(op_fields(cmd, op.opcode).dst_pipe)
                elif op.opcode in (Opcode.GET_BUF, Opcode.RLS_BUF):
                    m.d.comb += pipe.eq(op_fields(cmd, op.opcode).pipe)
                else:
                    m.d.comb += pipe.eq(op.pipe)
    return pipe


class Dispatcher(wiring.Component):
    """Routes each command to a FIFO of the pipe that executes it (`payload.pipe`, which
    the intake works out: set_flag runs on its src_pipe, wait_flag on its dst_pipe, every
    other op on its isa pipe; the FIFO takes it by `payload.enters`, the same pipe as one
    bit per FIFO). A command for Pipe.EXTERNAL is accepted and dropped. Each
    command is queued with its kind (`PipeCommand`), which the intake names with its pipe.

    Each pipe has its own `depth`-entry FIFO, so a pipe that stalls only holds up the
    command stream once its FIFO is full; until then the other pipes keep receiving.
    A get_buf for an engine pipe is queued with its ticket (`tokens.TokenTickets`), as
    the dispatcher takes commands in program order. Its ticket is looked up from
    registers: the dispatcher registers the get_buf's id on the cycle it is offered,
    looks the ticket up on the next, and takes the get_buf on the one after at the
    earliest, so that no lookup hangs on the command path.
    Latency: a command reaches an empty pipe's output one cycle after it is accepted
    (BypassQueue). Throughput: one command per cycle; a get_buf, one per three.

    `busy`: some FIFO holds a command (including one not yet visible on its output).
    """

    def __init__(self, depth=QUEUE_DEPTH):
        self.depth = depth
        super().__init__({
            "commands": In(stream.Signature(RoutedCommand)),
            **{pipe.name.lower(): Out(stream.Signature(PipeCommand)) for pipe in ENGINE_PIPES},
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        entry, pipe = self.commands.payload.entry, self.commands.payload.pipe
        queued = Signal(PipeCommand)
        ticketed = self._ticket(m, entry, pipe, queued)
        m.d.comb += [queued.entry.eq(entry), queued.kind.eq(self.commands.payload.kind),
                     queued.writes.eq(register_write_bits(entry.cmd.opcode))]
        # A dropped flag is consumed at once; a routed command waits for its pipe's FIFO.
        m.d.comb += self.commands.ready.eq(pipe == Pipe.EXTERNAL)
        decoded = [PipeCommand.as_shape()[name] for name in ("kind", "writes")]
        decoded_bounds = [bound for field in decoded
                          for bound in (field.offset,
                                        field.offset + Shape.cast(field.shape).width)]
        for i, p in enumerate(ENGINE_PIPES):
            # The kind, which the pipe's `ready` reads, and the register-write bits, which
            # its register file's enables read, load on cells of their own.
            fifo = m.submodules[f"fifo_{p.name.lower()}"] = BypassQueue(
                width=PipeCommand.as_shape().size, depth=self.depth,
                split_at=decoded_bounds)
            out = getattr(self, p.name.lower())
            enters = self.commands.payload.enters[i]
            m.d.comb += [
                fifo.w_data.eq(queued.as_value()),
                fifo.w_en.eq(self.commands.valid & enters & ticketed),
                out.payload.eq(fifo.r_data),
                out.valid.eq(fifo.r_rdy),
                fifo.r_en.eq(out.ready),
            ]
            with m.If(enters):
                m.d.comb += self.commands.ready.eq(fifo.w_rdy & ticketed)
            with m.If(fifo.level != 0):
                m.d.comb += self.busy.eq(1)
        return m

    def _ticket(self, m, entry, pipe, queued):
        """Gives `queued` its ticket if the offered command is a get_buf for an engine
        pipe; returns whether the command may be taken (its ticket is ready, or it needs
        none). The get_buf's id is registered on its first cycle (`looking`), its ticket
        looked up and its id's count stepped on the next (`found`), and from then on
        the ticket waits in a register until the get_buf is taken."""
        tickets = m.submodules.tickets = TokenTickets(len(ENGINE_PIPES) * self.depth)
        needs = (entry.cmd.opcode == Opcode.GET_BUF) & (pipe != Pipe.EXTERNAL)
        held_id = Signal.like(tickets.buf_id, name="ticket_held_id")
        looking = Signal(name="ticket_looking")     # held_id is the offered get_buf's
        found = Signal(name="ticket_found")         # queued.ticket is the offered one's
        ticket = Signal.like(tickets.ticket, name="ticket_held")
        taken = self.commands.valid & self.commands.ready
        m.d.comb += [tickets.buf_id.eq(held_id), tickets.take.eq(looking),
                     queued.ticket.eq(ticket)]
        m.d.sync += [held_id.eq(op_fields(entry.cmd, Opcode.GET_BUF).buf_id),
                     looking.eq(self.commands.valid & needs & ~looking & ~found)]
        with m.If(looking):
            m.d.sync += [ticket.eq(tickets.ticket), found.eq(1)]
        with m.If(taken):
            m.d.sync += found.eq(0)
        return ~needs | found
