"""UB->UB's write side at W <= 32, as UbCopyDatapath wires it: the LineWriter writes
each row's words and marks the command's last, and WriteCompletions, whose results are
always offered (a UB->UB copy cannot fail once checked), gives a Completion as each
command's last word is written (completions.write_to_ub).

Rows are numbered as the writer takes them. Following a free-but-fixed row number: its
words go out at its UB words `first` .. `first` + `words_m1` in turn, `last` on the
final one, `cmd_last` with it if the row was its command's last; no word goes out for a
row not taken; one Completion per command written, on the cycle its last word is, never
one for a command whose last row was not taken."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data

from hdl.datapath import completions, line_writer
from hdl.datapath.completions import WriteCompletions, write_to_ub
from hdl.datapath.line_writer import LineRow, LineWriter
from hdl.datapath.pad import ub_write_layout
from hdl.layouts import UbWriteSignature
from model.isa import UB_ADDR_BITS

from .gm_side import output_queue_entries
from .inputs import free, free_stream
from .props import add_block, assume, counter, follow, prop, registers
from .runner import Mutation

# Rows numbered modulo 2^ROW_NUMBER_BITS, more than the writer holds (the row it walks
# and two queued words' rows).
ROW_NUMBER_BITS = 3
# Rows taken and not written whole: the row walked and the rows of the two queued words.
ROWS_HELD = 3
# A row's words counted: words_m1 + 1.
WORD_COUNT_BITS = UB_ADDR_BITS + 1


def line_writer_harness(width_bytes):
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", LineWriter(width_bytes), mutation)
        path = add_block(m, "completions", WriteCompletions(), mutation)
        ub = UbWriteSignature(width_bytes).create(path=("ub",))
        write_to_ub(m, ub, dut.ub, path)
        # A UB->UB copy's result is always known, NONE; the pipe takes every Completion.
        m.d.comb += [path.results.valid.eq(1), path.done.ready.eq(1)]
        free(m, ub.ready)
        free_stream(m, "rows", dut.rows)
        free_stream(m, "data", dut.data)
        rows = dut.rows
        taken = counter(m, "rows_taken", rows.valid & rows.ready, ROW_NUMBER_BITS)
        current = Signal(LineRow, name="row_walked")
        with m.If(rows.valid & rows.ready):
            m.d.sync += current.eq(rows.payload)
        to_put = _words_to_put(m, dut, current)
        out = dut.ub.payload
        written = counter(m, "rows_written", ub.valid & ub.ready & out.last, ROW_NUMBER_BITS)
        index = Signal(WORD_COUNT_BITS, name="word_in_row")
        with m.If(ub.valid & ub.ready):
            m.d.sync += index.eq(Mux(out.last, 0, index + 1))
        unended = (taken - written)[:ROW_NUMBER_BITS]
        prop(m, "rows_written_never_past_taken", unended <= ROWS_HELD)
        prop(m, "word_only_of_a_row_taken", ~ub.valid | (unended != 0))
        followed = follow(m, "row", rows, taken)
        prop(m, "followed_rows_words_in_turn",
             ~(ub.valid & (written == followed.number))
             | _is_word_of(out, followed.payload, index))
        _completions_per_command(m, path, ub, out)
        _writer_invariant(m, dut, (taken, written, index), current, to_put, followed)
        return m
    return build


def _words_to_put(m, dut, current):
    """The words of the row taken still to come on `data`: a word comes only once its row
    is offered or taken (the row fork queues it before the UB reader reads it)."""
    to_put = Signal(WORD_COUNT_BITS, name="words_to_put")
    put = dut.data.valid & dut.data.ready
    assume(m, "word_offered_once_its_row_is", ~dut.data.valid | (to_put != 0) | dut.rows.valid)
    with m.If(put):
        m.d.sync += to_put.eq(Mux(to_put == 0, dut.rows.payload.words_m1, to_put - 1))
    return to_put


def _is_word_of(word, row, index):
    """Whether `word` is word `index` of `row` as the writer writes it: at UB word
    first + index, `last` on the final one, `cmd_last` with it if the row's is set."""
    final = index == row.words_m1
    return ((word.addr == (row.first + index)[:len(word.addr)]) & (word.last == final)
            & (word.cmd_last == (final & row.cmd_last)))


def _completions_per_command(m, path, ub, out):
    """One Completion per command whose last word is written, on that cycle."""
    written = ub.valid & ub.ready & out.cmd_last
    prop(m, "completion_exactly_as_a_commands_last_word_is_written",
         path.done.valid == written)
    prop(m, "no_completion_waits", registers(m.submodules["completions"])["waiting"] == 0)


def _writer_invariant(m, dut, counts, current, to_put, followed):
    """What closes the induction: the writer's walk is the harness's row taken with
    `to_put` words to come, its two-entry output queue's flags agree, the rows taken and
    not written whole are those whose last word is queued and the one walked, the words
    of the row walked are those given, queued and put, and each queued word of the
    followed row is its word of its place."""
    taken, written, index = counts
    regs = registers(m.submodules["dut"])
    width = len(regs["addr"])
    (head_held, head), (second_held, second) = [
        (held, data.View(ub_write_layout(len(dut.ub.payload.strb)), entry))
        for held, entry in output_queue_entries(m, "ub_queue", regs, "out")]
    active = regs["active"]
    put = (current.words_m1 + 1 - to_put)[:len(to_put)]
    prop(m, "walk_active_while_words_to_put", active == (to_put != 0))
    prop(m, "walk_follows_the_row_taken",
         ~active | ((to_put <= current.words_m1)
                    & (regs["at_end"] == (to_put == 1)) & (regs["left"] == to_put - 1)
                    & (regs["addr"] == (current.first + put)[:width])
                    & (regs["cmd_last"] == current.cmd_last)))
    prop(m, "rows_unended_are_queued_or_walked",
         (taken - written)[:ROW_NUMBER_BITS]
         == (head_held & head.last) + (second_held & second.last) + active)
    prop(m, "queued_word_not_last_has_its_row_behind",
         (~head_held | head.last | second_held | active)
         & (~second_held | second.last | active))
    walked = (taken - 1)[:ROW_NUMBER_BITS]
    second_row = (written + head.last)[:ROW_NUMBER_BITS]
    output_is_walked = active & (written == walked)
    queued_of_walked = ((head_held & (written == walked))
                        + (second_held & (second_row == walked)))
    prop(m, "walked_rows_words_given_queued_and_put",
         ~active | (put == Mux(written == walked, index, 0) + queued_of_walked))
    prop(m, "word_index_only_while_its_row_goes", (index == 0) | head_held | output_is_walked)
    number = followed.number
    prop(m, "row_walked_is_the_followed_row",
         ~(active & (walked == number)) | (current.as_value() == followed.payload.as_value()))
    second_index = Mux(head.last, 0, index + 1)
    prop(m, "queued_words_of_the_followed_row_in_place",
         (~(head_held & (written == number)) | _is_word_of(head, followed.payload, index))
         & (~(second_held & (second_row == number))
            | _is_word_of(second, followed.payload, second_index)))


def _completion_a_cycle_late(elaborate):
    """WriteCompletions offering each Completion on the cycle after its command's last
    word is written."""
    def patched(self, platform):
        m = elaborate(self, platform)
        late = Signal(name="written_late")
        m.d.sync += late.eq(self.written)
        m.d.comb += self.done.valid.eq(late & self.results.valid)
        return m
    return patched


LINE_WRITER_MUTATIONS = (
    # The writer's one Mux picks the row's cmd_last: the walked row's or the one taken.
    Mutation("cmd_last_of_the_row_before", "a row taken with its first word marked with "
             "the cmd_last of the row before", ((line_writer, "Mux", lambda c, a, b: a),)),
    Mutation("completion_a_cycle_late", "a Completion offered the cycle after its "
             "command's last word is written",
             ((completions.WriteCompletions, "elaborate",
               _completion_a_cycle_late(completions.WriteCompletions.elaborate)),)),
)
