"""The command intake's contract: each command it offers is exactly the words it was
given since the command's first word, in order (later words zero), offered with its last
word and numbered in order; a first word of no opcode is dropped and counted; a word that
ends no command is always taken. Word counts are the isa table's (`word_count`).

Induction closes with an invariant tying the intake's registers (the words held, where
the next goes, how many are missing) to the harness's record of the command."""

from amaranth.hdl import Module, Mux, Signal

from hdl.intake import intake
from hdl.intake.commands import COMMAND_BITS
from hdl.intake.intake import CommandIntake, word_count
from hdl.layouts import CMD_INDEX_BITS
from model.isa import MAX_COMMAND_WORDS, WORD_BITS

from .inputs import free, free_stream
from .props import add_block, prop, registers, stream_rule
from .runner import Mutation


def intake_harness():
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", CommandIntake(), mutation)
        free_stream(m, "words", dut.words)
        free(m, dut.commands.ready)
        stream_rule(m, prop, "commands", dut.commands)
        record = _record_words(m, dut)
        _intake_registers_match(m, registers(m.submodules["dut"]), record)
        return m
    return build


def _record_words(m, dut):
    """The harness's record of the command coming in, and the properties on it."""
    words, out = dut.words, dut.commands
    word = words.payload
    given = Signal(COMMAND_BITS, name="words_given")      # the command's words so far
    at = Signal(range(MAX_COMMAND_WORDS), name="words_at")  # how many (0: none)
    size = Signal(range(MAX_COMMAND_WORDS + 1), name="command_words")
    commands = Signal(CMD_INDEX_BITS, name="commands_given")
    dropped = Signal.like(dut.bad_opcodes, name="words_dropped")
    word_size = word_count(m, word)
    completes = Mux(at == 0, word_size == 1, at + 1 == size)
    whole = Signal(COMMAND_BITS, name="command_expected")
    m.d.comb += whole.eq(Mux(at == 0, word, given | (word << (at * WORD_BITS))))
    prop(m, "command_offered_with_its_last_word", out.valid == (words.valid & completes))
    prop(m, "command_is_the_words_given", ~out.valid | (out.payload.entry.cmd.raw == whole))
    prop(m, "commands_numbered_in_order", ~out.valid | (out.payload.entry.index == commands))
    prop(m, "other_words_always_taken", ~words.valid | completes | words.ready)
    prop(m, "unknown_opcodes_counted", dut.bad_opcodes == dropped)
    prop(m, "busy_while_a_command_is_partly_in", dut.busy == (at != 0))
    with m.If(words.valid & words.ready):
        with m.If(at == 0):
            with m.If(word_size == 0):
                m.d.sync += dropped.eq(dropped + (dropped != (1 << len(dropped)) - 1))
            with m.Elif(word_size != 1):
                m.d.sync += [given.eq(word), at.eq(1), size.eq(word_size)]
        with m.Elif(completes):
            m.d.sync += at.eq(0)
        with m.Else():
            m.d.sync += [given.eq(whole), at.eq(at + 1)]
    with m.If(out.valid & out.ready):
        m.d.sync += commands.eq(commands + 1)
    return given, at, size, commands


def _intake_registers_match(m, dut, record):
    """The induction invariant: the intake's registers hold the harness's record."""
    given, at, size, commands = record
    inside = ((dut["held"] == given) & (dut["position"] == at) & (dut["pending"] == size - at)
              & ((given >> (at * WORD_BITS)) == 0) & (dut["last"] == (at + 1 == size))
              & (at < size) & (size <= MAX_COMMAND_WORDS))
    prop(m, "intake_holds_the_command_coming_in",
         (dut["first"] == (at == 0)) & ((at == 0) | inside))
    prop(m, "intake_numbers_from_the_commands_given", dut["next_index"] == commands)


def _word_count_one_short(m, word):
    """The intake's word counts with 7-word commands taken as 6."""
    size = word_count(m, word)
    return Mux(size == 7, 6, size)


def _taken_without_ready(valid, ready, first, flag, last):
    """The intake's `first` set by a command not accepted, so the command is lost."""
    return valid & ((first & flag) | (~first & last))


INTAKE_MUTATIONS = (
    Mutation("command_one_word_short", "the 7-word commands end after 6 words",
             ((intake, "word_count", _word_count_one_short),)),
    Mutation("command_lost_when_refused", "a command not accepted is dropped",
             ((intake, "_takes", _taken_without_ready),)),
)
