"""MTE2's GM side marks each command's end where MTE2's completion path counts it: the
AXI reader's words on `beats` are the R words in order, each with its response's failure
and its burst's address, and marked `cmd_last` exactly when it is the last R beat of a
burst the splitter marked `last` (the last burst of a command's last row). With the
splitter's contract (`last` on the last burst of a row marked `last`) and
mte2_completions (commands numbered by the words marked `cmd_last`), MTE2's i-th
Completion is that of the i-th row marked `last` the reader took."""

from amaranth.hdl import Cat, Mux, Signal, Value
from amaranth.lib import data

from hdl.datapath import axi_reader
from hdl.datapath.axi_reader import read_beat_layout
from hdl.lib.axi import resp_is_error

from .axi_master import reader_harness
from .completions import issued_bursts
from .gm_side import queue_slots
from .props import child, counter, follow, prop, registers
from .runner import Mutation

# Words numbered modulo 2^WORD_NUMBER_BITS, more than wait between R and `beats` (the
# reader's words queue holds 3).
WORD_NUMBER_BITS = 3
# Bursts answered, counted as the AXI checker counts its bursts.
BURST_COUNT_BITS = 6


def reader_commands_harness(width_bytes, max_outstanding):
    """The reader's AXI4 master harness (rows and slave free), and: following a
    free-but-fixed word number, the word `beats` gives with it is the R word taken with
    it, marked `cmd_last` exactly if its burst ends a command."""
    reader = reader_harness(width_bytes, max_outstanding)

    def build(mutation):
        m = reader(mutation)
        fragment = m.submodules["dut"]
        dut = fragment.origins[0]
        axi, beats = dut.axi, dut.beats
        r_go = axi.rvalid & axi.rready
        answered = counter(m, "r_bursts_answered", r_go & axi.rlast, BURST_COUNT_BITS)
        burst = issued_bursts(m, child(fragment, "issuer"), r_go & axi.rlast, answered)
        # The R word on offer as `beats` should give it: its burst the oldest unanswered.
        word = Signal(read_beat_layout(width_bytes), name="r_word_expected")
        m.d.comb += [word.data.eq(axi.rdata), word.cmd_last.eq(axi.rlast & burst.last),
                     word.error.eq(resp_is_error(axi.rresp)), word.err_addr.eq(burst.addr)]
        r_stream = _Offered(axi.rvalid, axi.rready, word)
        taken = counter(m, "r_words_taken", r_go, WORD_NUMBER_BITS)
        given = counter(m, "beats_given", beats.valid & beats.ready, WORD_NUMBER_BITS)
        followed = follow(m, "r_word", r_stream, taken)
        waiting = (taken - given)[:WORD_NUMBER_BITS] != 0
        prop(m, "beat_only_for_an_r_word", ~beats.valid | waiting | axi.rvalid)
        prop(m, "beat_is_its_r_word_in_order",
             ~(beats.valid & (given == followed.number))
             | _same(beats.payload, Mux(waiting, followed.payload.as_value(),
                                        word.as_value())))
        _words_queue_invariant(m, child(fragment, "words"), taken, given, followed)
        return m
    return build


class _Offered:
    """A stream's handshake and payload, as `follow` takes it."""
    def __init__(self, valid, ready, payload):
        self.valid = valid
        self.ready = ready
        self.payload = payload


def _same(beat, expected):
    """Whether `beat` is `expected` (read_beat_layout values) but for `row_last`."""
    layout = read_beat_layout(_width_of(beat))
    beat, expected = (data.View(layout, Value.cast(value)) for value in (beat, expected))
    return Cat(beat.data == expected.data, beat.cmd_last == expected.cmd_last,
               beat.error == expected.error, beat.err_addr == expected.err_addr).all()


def _width_of(beat):
    """The bus width in bytes of a read_beat_layout value."""
    return (len(Value.cast(beat)) - read_beat_layout(0).size) // 8


def _words_queue_invariant(m, queue, taken, given, followed):
    """The reader's words queue holds the R words taken and not given, and its output
    register and each slot holding the followed word hold that word."""
    regs = registers(queue)
    prop(m, "words_queue_holds_the_words_waiting",
         (regs["held"] + regs["r_rdy"]) == (taken - given)[:WORD_NUMBER_BITS])
    held_words = [(regs["r_rdy"], regs["r_data"], 0), *queue_slots(queue)]
    for where, (held, entry, age) in enumerate(held_words):
        prop(m, f"words_queue_entry_{where}_holds_its_word",
             ~(held & ((given + age)[:WORD_NUMBER_BITS] == followed.number))
             | _same(entry, followed.payload.as_value()))


def _cmd_last_on_every_row(elaborate):
    """The AXI reader marking the last word of every row as its command's."""
    def patched(self, platform):
        m = elaborate(self, platform)
        m.d.comb += self.beats.payload.cmd_last.eq(self.beats.payload.row_last)
        return m
    return patched


CMD_LAST_ON_EVERY_ROW = Mutation(
    "cmd_last_on_every_row", "the AXI reader marks every row's last word cmd_last",
    ((axi_reader.AxiReader, "elaborate",
      _cmd_last_on_every_row(axi_reader.AxiReader.elaborate)),))
