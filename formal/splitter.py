"""The burst splitter's contract: a row's bursts cover exactly its bytes, in order, each
inside one 4 KiB page and at most 256 beats, and the row is taken with its first burst."""

from amaranth.hdl import C, Cat, Module, Mux, Signal
from amaranth.lib import data

from hdl.layouts import PAGE_BYTES
from hdl.datapath import legalizer
from hdl.datapath.legalizer import BurstSplitter, GmRow, split_grid
from model.isa import GM_ADDR_BITS

from .inputs import free, free_rows
from .props import add_block, prop, registers, stream_rule
from .runner import Mutation


def splitter_harness(width_bytes):
    def build(mutation):
        m = Module()
        dut = add_block(m, "dut", BurstSplitter(width_bytes), mutation)
        free_rows(m, dut.rows, width_bytes)
        free(m, dut.bursts.ready)
        stream_rule(m, prop, "bursts", dut.bursts)
        splitter_contract(m, m.submodules["dut"], width_bytes)
        return m
    return build


def splitter_contract(m, fragment, width_bytes):
    """The splitter's contract on its streams, and the invariant that closes its
    induction; `fragment` is the elaborated splitter, alone or inside a GM side."""
    splitter = fragment.origins[0]
    progress = _covers_rows(m, splitter.rows, splitter.bursts, width_bytes)
    _rest_of_row_matches(m, registers(fragment), progress, width_bytes)


def _rest_of_row_matches(m, dut, progress, width_bytes):
    """The induction invariant: the splitter's registers hold the rest of the row the
    harness has seen begin, from the grid cell where the next burst starts."""
    in_row, next_addr, row_end, row_last = progress
    grid = split_grid(width_bytes)
    grid_bits = grid.bit_length() - 1
    shift = width_bytes.bit_length() - 1
    end = dut["end"]
    prop(m, "splitter_active_while_row_in_progress", dut["active"] == in_row)
    inside = ~in_row | ((next_addr == Cat(C(0, grid_bits), dut["cell"]))
                        & (row_end == next_addr + end)
                        & (row_end <= 1 << GM_ADDR_BITS)
                        & (end != 0)
                        & (dut["fits"] == (end <= grid))
                        & (dut["end_len"] + 1 == (end + width_bytes - 1) >> shift)
                        & (data.View(GmRow, dut["row"]).last == row_last))
    prop(m, "splitter_registers_hold_rest_of_row", inside)


def _covers_rows(m, rows, bursts, width_bytes):
    """Each burst starts where the one before it ended (a row's first, at the row's
    start) and the row's last one ends at the row's end."""
    shift = width_bytes.bit_length() - 1
    row, burst = rows.payload, bursts.payload
    in_row = Signal()                           # a row's first burst has gone
    next_addr = Signal(GM_ADDR_BITS + 1)        # where the row's next burst starts
    row_end = Signal(GM_ADDR_BITS + 1)
    row_last = Signal()
    start = Mux(in_row, next_addr, row.addr)
    end = Mux(in_row, row_end, row.addr + row.length)
    last = Mux(in_row, row_last, row.last)
    burst_end = burst.addr + burst.length
    words = ((burst.addr[:shift] + burst.length + width_bytes - 1) >> shift)
    offered = bursts.valid
    prop(m, "rows_wait_for_bursts", ~rows.valid | in_row | offered)
    prop(m, "row_taken_with_its_first_burst",
         ~(rows.valid & rows.ready) | (~in_row & bursts.ready))
    prop(m, "burst_starts_where_row_continues", ~offered | (burst.addr == start))
    prop(m, "burst_not_empty", ~offered | (burst.length != 0))
    prop(m, "burst_within_row", ~offered | (burst_end <= end))
    prop(m, "last_of_row_exactly_at_row_end",
         ~offered | (burst.last_of_row == (burst_end == end)))
    prop(m, "last_marks_commands_last_row",
         ~offered | (burst.last == (burst.last_of_row & last)))
    prop(m, "burst_within_4k_page",
         ~offered | (burst.addr[:12] + burst.length <= PAGE_BYTES))
    prop(m, "axlen_is_words_minus_one", ~offered | (burst.axlen + 1 == words))
    prop(m, "burst_at_most_256_beats", ~offered | (words <= 256))
    prop(m, "no_burst_without_row", in_row | ~offered | rows.valid)
    with m.If(offered & bursts.ready):
        m.d.sync += [in_row.eq(~burst.last_of_row), next_addr.eq(burst_end)]
        with m.If(~in_row):
            m.d.sync += [row_end.eq(end), row_last.eq(row.last)]
    return in_row, next_addr, row_end, row_last


def _grid_too_coarse(width_bytes):
    """Splits at twice 4 KiB (or 256 beats), so bursts cross a page."""
    return 2 * max(4096, 256 * width_bytes)


CROSS_4K = Mutation("burst_crosses_4k", "the splitter cuts rows at 8 KiB, not 4 KiB",
                    ((legalizer, "split_grid", _grid_too_coarse),))
