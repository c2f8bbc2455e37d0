"""Every property group `make formal` proves, with the mutations each must catch."""

from amaranth.hdl import Mux

from hdl.datapath import axi_reader
from hdl.datapath import axi_writer
from hdl.datapath import legalizer
from hdl.layouts import BUS_WIDTHS

from .axi_master import reader_harness, writer_harness
from .runner import Mutation, Proof
from .splitter import splitter_harness

# Rows enter, are split, queued and issued in about 4 cycles; 24 cycles hold several
# whole bursts and their responses. Where yices does not reach 24 in about 20 minutes,
# the depth it reaches in a few.
BMC_DEPTH = 24
WRITER_DEPTH = 12               # about 10 minutes; each further step about doubles it
SPLITTER_DEPTH = 4              # k-induction closes at 4 with the splitter's invariant
AXI_WIDTH = 8                   # the narrowest bus: 256-beat bursts end inside a page
AXI_OUTSTANDING = 2             # the limit is a parameter; 2 reaches it within the depth

WHY_BMC = ("induction needs invariants tying the checker's burst counters to every "
           "queue and issuer register the rows and bursts pass through (row queue, "
           "splitter, issuer, response queue); only the splitter's are written")


def _grid_too_coarse(width_bytes):
    """Splits at twice 4 KiB (or 256 beats), so bursts cross a page."""
    return 2 * max(4096, 256 * width_bytes)


def _size_one_too_big(width_bytes):
    return width_bytes.bit_length()


AXSIZE_WRONG = Mutation("axsize_off_by_one", "the issuer's AxSIZE is log2(W) + 1",
                        ((legalizer, "check_width", _size_one_too_big),))

CROSS_4K = Mutation("burst_crosses_4k", "the splitter cuts rows at 8 KiB, not 4 KiB",
                    ((legalizer, "split_grid", _grid_too_coarse),))


def _one_more_outstanding(issue_rows):
    def patched(m, rows, axi, prefix, width_bytes, max_outstanding, id_width):
        return issue_rows(m, rows, axi, prefix, width_bytes, max_outstanding + 1, id_width)
    return patched


def _wlast_on_first(condition, if_true, if_false):
    """AxiWriter's `is_last` mux with WLAST on every burst's first word."""
    return Mux(condition, 1, if_false)


PROOFS = (
    Proof("axi4_master_read", reader_harness(AXI_WIDTH, AXI_OUTSTANDING), "bmc", BMC_DEPTH,
          (AXSIZE_WRONG,
           Mutation("one_burst_too_many", "the issuer lets max_outstanding + 1 out",
                    ((axi_reader, "issue_rows", _one_more_outstanding(legalizer.issue_rows)),)),
           ), WHY_BMC),
    Proof("axi4_master_write", writer_harness(AXI_WIDTH, AXI_OUTSTANDING), "bmc", WRITER_DEPTH,
          (Mutation("wlast_on_first_beat", "WLAST on each burst's first word too",
                    ((axi_writer, "Mux", _wlast_on_first),)),
           Mutation("one_burst_too_many", "the issuer lets max_outstanding + 1 out",
                    ((axi_writer, "issue_rows", _one_more_outstanding(legalizer.issue_rows)),)),
           ), WHY_BMC),
    *(Proof(f"burst_splitter_w{width}", splitter_harness(width), "prove", SPLITTER_DEPTH,
            (CROSS_4K,)) for width in BUS_WIDTHS),
)

