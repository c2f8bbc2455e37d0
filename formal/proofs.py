"""Every property group `make formal` proves, with the mutations each must catch: the
harnesses and mutations come from the groups' modules, the depths are here."""

from hdl.datapath import aligner, axi_reader, axi_writer
from hdl.intake.intake import ENGINE_PIPES, QUEUE_DEPTH
from hdl.layouts import BUS_WIDTHS, IN_FLIGHT_DEPTH
from hdl.pipe import checker
from hdl.pipe.pipe import COPY_KIND
from model.isa import Opcode

from .addrgen import (DRAIN_MUTATIONS, ROWS_NUMBERED_MUTATIONS, drain_harness,
                      rows_numbered_harness)
from .aligner import FIRST_KEPT, ROTATOR_OFF, aligner_harness, rotator_harness
from .aligner_slices import BITS_SWAPPED, bit_slices_harness
from .aligner_stream import ROW_QUEUE_SHORT, aligner_stream_harness
from .axi_master import (AXSIZE_WRONG, RESULT_OF_COMMAND_BEFORE_MTE3, WLAST_ON_FIRST,
                         no_id_fence_in, one_burst_too_many_in, reader_harness,
                         writer_completions_harness, writer_harness)
from .copy_checker import CHECKER_MUTATIONS, copy_checker_harness
from .dispatcher import DISPATCHER_MUTATIONS, dispatcher_harness
from .drain import drain_chain_harness
from .engine import (BUBBLE_AFTER_STALL, COMPLETES_TWICE, COUNTS_LATE, ENDS_UNCOUNTED,
                     LAST_WRITE_UNREPORTED, PHANTOM_ROW, completions_harness,
                     copy_completes_harness, copy_drains_harness, idle_engine_harness)
from .engine_contract import ENTERS_THE_NEXT_PIPE, engine_contract_harness
from .flags import FLAGS_MUTATIONS, flags_harness
from .intake import INTAKE_MUTATIONS, intake_harness
from .line_writer import LINE_WRITER_MUTATIONS, line_writer_harness
from .loop_nest import NEST_MUTATIONS, SOURCE_STRIDES_ON_BOTH_SIDES, nest_harness
from .mte2_completions import RESULT_OF_COMMAND_BEFORE_MTE2, mte2_completions_harness
from .pad import PAD_MUTATIONS, PARTS as PAD_PARTS, pad_harness
from .pipe_controller import PIPE_CONTROLLER_MUTATIONS, pipe_controller_harness
from .pipe_in_flight import PIPE_IN_FLIGHT_MUTATIONS, in_flight_harness
from .read_commands import CMD_LAST_ON_EVERY_ROW, reader_commands_harness
from .rowfork import (ENTRY_OF_THE_ROW_BEFORE, ROOM_ONE_ROW_LATE, ROOM_TWO_ROWS_LATE,
                      rowfork_harness)
from .runner import Proof, family
from .splitter import CROSS_4K, splitter_harness

# k-induction closes at 1 with the GM sides' invariants (formal/gm_side.py) and MTE3's
# completions' (formal/completions.py).
AXI_DEPTH = 1
# The mutations' BMC: the first counterexamples come 4 cycles from reset; a burst past the
# limit as the issuer takes its (max_outstanding + 1)-th burst, one a cycle from step 1.
AXI_MUTATION_DEPTH = 6
SPLITTER_DEPTH = 4              # k-induction closes at 4 with the splitter's invariant
# The pad stage's four groups (formal/pad.py's PARTS) close by k-induction at depth 1;
# their mutations run by BMC to 8: a row taken at step 1 is set up at 3 and its first UB
# word out at 5, its last data word a few words after.
PAD_DEPTH = 1
PAD_MUTATION_DEPTH = 8
FLAGS_DEPTH = 2                 # sets a counter holds: 2 fill it within the bound
# k-induction closes at 4; at 10 the base case holds a set lost or invented and seen.
FLAGS_PROVE_DEPTH = 10
INTAKE_DEPTH = 3                # k-induction closes at 3 with the invariant
ENGINE_WIDTH = 8                # the narrowest bus, for the smallest engine
ENGINE_DEPTH = 24               # 76 to 144 s: given nothing, the engine stays simple
# A one-word command completes 3 cycles after it is accepted; with free commands and the
# checkers' products free yices takes about 90 s to depth 12, each step about 2.5 times
# the one before (with the real products, 93 to 227 s to depth 10); with at most two
# commands given, 89 s to depth 14, each step about 1.8 times the one before, so depth 24
# is days away. Bitwuzla is no faster (111 s to depth 12), nor is the R data held at 0,
# nor narrower commands, copies or slave (docs/formal.md, "What is not proved").
COMPLETIONS_DEPTH = 12
# The engine's command path with stand-ins (formal/engine_contract.py) closes by
# k-induction at 2, as the pipe controller's; its mutations' BMC: a command routed to the
# wrong queue shows at step 1, a command counted twice or not at all at 2.
ENGINE_CONTRACT_DEPTH = 2
ENGINE_CONTRACT_MUTATION_DEPTH = 3
# A small copy offered from reset, the slave never holding the engine up: the cycle by
# which its pipe has counted its completion, and the engine is idle, at W = 8 (each the
# least that holds: the cycle before fails). The BMC runs past the idle cycle, and to
# ENGINE_DEPTH at least.
COPY_COMPLETES_BY = {
    Opcode.COPY_GM_TO_UBUF: (24, 25),
    Opcode.COPY_UBUF_TO_GM: (23, 24),
    Opcode.COPY_UBUF_TO_UBUF: (20, 21),
}
# The same copies over AXI (UB->UB has none) with a slave that holds the engine up on at
# most SLAVE_STALLS cycles: the cycles of completion and of idle, each completion bound
# the least that holds (cycle 24 fails). Each step past 20 takes about 1.5 times the one
# before: with a slave that may hold each channel up a cycle at a time any number of
# times, step 25 alone took 3.5 minutes.
SLAVE_STALLS = 2
COPY_COMPLETES_STALLED_BY = {
    Opcode.COPY_GM_TO_UBUF: (25, 26),
    Opcode.COPY_UBUF_TO_GM: (25, 26),
}
# A copy of any number of short rows, each a burst, whose first response fails (MTE2's
# first R beat, MTE3's first B response), the slave never stalling: the most bursts the
# engine issues from that response on (the least that holds: 5 fails), and the cycles
# by which the copy's pipe has counted its completion and the engine is idle (each the
# least: GM->UB's 24 fails, UB->GM's 31; the engine is idle a cycle after the count, as
# the error is recorded). The BMC runs past the idle cycle; each step past 30 takes about
# 1.2 times the one before.
# The abort acting a row late gives GM->UB a seventh burst; at UB->GM a BMC to 37 finds
# no seventh burst with it (796 s), so that group runs the abort ignored alone.
COPY_DRAINS_BY = {
    Opcode.COPY_GM_TO_UBUF: (6, 25, 26, DRAIN_MUTATIONS),
    Opcode.COPY_UBUF_TO_GM: (6, 32, 33, DRAIN_MUTATIONS[:1]),
}
# The completion paths close at depth 1 (MTE3) and 2 (MTE2); at 4 the base case holds a
# mutation's counterexample (the second command's Completion, a few cycles from reset).
COMPLETIONS_PROVE_DEPTH = 4
# The drain's induction closes at 1; at 4 the base case holds a row too many.
DRAIN_DEPTH = 4
# The drain from the address generator through the row fork to the GM side closes at 1;
# the mutations' counterexamples need the GM queue filled with the copy's rows before
# its abort, and the rows after it.
DRAIN_TO_GM_SIDE_DEPTH = 1
DRAIN_TO_GM_SIDE_MUTATION_DEPTH = 14
# The rows' numbering's induction closes at 1; at 4 the base case holds a copy's rows
# after its first, walked.
ROWS_NUMBERED_DEPTH = 4
# The loop nest's walk: its induction closes at 1; at 4 the base case holds a copy's
# first rows walked.
NEST_DEPTH = 4
# With the rows' addresses too, the induction closes at 1 (7 to 55 s); the mutation runs
# by BMC to NEST_DEPTH, which holds a copy's rows after its first.
NEST_ADDRESSES_DEPTH = 1
# UB->UB's write side at W <= 32 (a UB line whole words), the engine's 32 among them.
LINE_WRITER_WIDTHS = (8, 32)
LINE_WRITER_DEPTH = 4
# The row fork's induction closes at 1; at 8 the base case fills its deeper queue.
ROWFORK_DEPTH = 8
# The pipe's in-flight limit in its harness: the engine's least (layouts.in_flight_depth).
# Its induction closes at depth 1; the mutations run by BMC to the limit + 2, which holds
# a copy past the limit.
PIPE_IN_FLIGHT = IN_FLIGHT_DEPTH
PIPE_IN_FLIGHT_DEPTH = 1
# The pipe controller's induction closes at depth 2 (InFlight's completed count's step
# register is the ends of the cycle before); its mutations run by BMC to the limit + 2:
# a pipe starts a copy per cycle at most, so the start past the limit is offered at step
# limit + 1 (BMC to the limit + 1 does not reach it).
PIPE_CONTROLLER_DEPTH = 2
PIPE_CONTROLLER_MUTATION_DEPTH = PIPE_IN_FLIGHT + 2
# CopyChecker's guarantees to the pipe close by k-induction at depth 1; at 8 the base
# case holds a full pipeline and queue (6 copies) and one taken after them.
CHECKER_CONTRACT_DEPTH = 8
# The aligner's "any byte" contract closes by k-induction at depth 1 with its invariant;
# its mutations run by BMC to 7 + L, L the rotator's stages, which holds their
# counterexamples (at W = 8: steps 4 and 7).
ALIGNER_DEPTH = 1
ALIGNER_DEPTH_BEYOND_ROTATOR = 7
# The block is bit-sliced (aligner_bit_slices_w*: at 8 bits a lane it is eight copies of
# itself at 1), so the contract at 1 bit a lane is the contract at 8. At 8 bits the
# induction step takes 1.6 minutes at W = 8, 3 at 16, 14 at 32 and does not end at 64;
# at 1 bit 3 to 6 minutes a width from 16 to 128. W = 8 runs at 8 bits a lane.
ALIGNER_LANE_BITS = {8: 8, 16: 1, 32: 1, 64: 1, 128: 1}
ALIGNER_GROUP_NAME = {8: "aligner_any_byte", 1: "aligner_any_bit"}
# A source word's bits reach the rotator's first stage on the first edge.
BIT_SLICES_DEPTH = 1
BIT_SLICES_MUTATION_DEPTH = 2
# Rows overlapping in the aligner, at 1 bit a lane (the block is bit-sliced, as for
# aligner_any_bit_w*). k-induction closes at depth 1 with the harness's invariant, proved
# a part at a time (Proof.split); all at once, its induction step did not end in 20
# minutes at W = 8.
ALIGNER_STREAM_LANE_BITS = 1
# Bitwuzla answers this harness's largest steps many times faster than yices: at W = 64
# the rotator's first stage in 58 s, where yices had not answered in 74 minutes.
ALIGNER_STREAM_SOLVER = "bitwuzla"
# At W = 8 and 16 the mutations run to 11, which holds a row lost from the row queue (it
# shows at step 10, as the row behind it leaves); at 32 to 10, which holds the merge's
# `first` kept on a new row (it shows at step 9 at 16 and 32; with yices the eleventh
# step cost about ten times the tenth); at 64 and 128 to 9, the rotator's alone (it shows
# at step 8).
PROVED_STREAM_MUTATIONS = ((ROTATOR_OFF, FIRST_KEPT, ROW_QUEUE_SHORT), 11)
ALIGNER_STREAM_MUTATIONS = {8: PROVED_STREAM_MUTATIONS, 16: PROVED_STREAM_MUTATIONS,
                            32: ((ROTATOR_OFF, FIRST_KEPT), 10), 64: ((ROTATOR_OFF,), 9),
                            128: ((ROTATOR_OFF,), 9)}


# The families of the rows-overlapping induction proved a register at a time: each
# follows a row or a word through one register, and together their parts outgrow the
# solver (with yices, at W = 8 the row queue's slots took about 45 s each, 8 together
# over 25 minutes; a history row 13 s, 32 together over 5 minutes; at W = 32 the output
# queue's two entries 95 s and 68 s, together over 20 minutes).
ALIGNER_STREAM_PER_REGISTER = ("aligner_row_queue_slot_holds_its_row", "history_row_chains",
                               "aligner_setup_register_holds_its_row",
                               "aligner_rotator_holds_its_word",
                               "aligner_output_entry_holds_its_word",
                               "aligner_output_entry_carries_the_tracked_byte")


def _aligner_stream_part(name):
    """The parts of the rows-overlapping induction: a property a part in the families
    above, every other family whole (the strobes' properties together 97 s at W = 8,
    each alone 75 to 145 s)."""
    return name if family(name) in ALIGNER_STREAM_PER_REGISTER else family(name)


def _aligner_stream_proof(width):
    mutations, mutation_depth = ALIGNER_STREAM_MUTATIONS[width]
    return Proof(f"aligner_rows_overlapping_w{width}",
                 aligner_stream_harness(width, ALIGNER_STREAM_LANE_BITS), "prove", 1,
                 mutations, mutation_depth=mutation_depth, split=_aligner_stream_part,
                 solver=ALIGNER_STREAM_SOLVER)


# A stage's turn is a mux tree, no register: its check holds on every cycle.
ROTATOR_DEPTH = 1
AXI_WIDTH = 8                   # the narrowest bus: 256-beat bursts end inside a page
AXI_OUTSTANDING = 8             # the engine's (MteDma's max_outstanding)
# The AXI groups are proved at every W with their mutations; the bursts past the limit
# (minutes of BMC each) run at the narrowest and widest.
AXI_LIMIT_MUTATION_WIDTHS = (BUS_WIDTHS[0], BUS_WIDTHS[-1])
# The fast subset's (tests/test_formal*.py): the same proofs, where the writer's takes a
# sixth of the time.
FAST_AXI_OUTSTANDING = 2
# The dispatcher's queues hold 8 commands each; its induction closes at 1. The mutations'
# BMC: a pipe's second command is given 3 cycles from reset, a get_buf taken on its
# third cycle.
DISPATCHER_DEPTH = 1
DISPATCHER_MUTATION_DEPTH = 6


WHY_ENGINE_BMC = ("induction would need invariants over every pipe, queue and datapath "
                  "register of the engine (that an engine given no command keeps them "
                  "empty; that each pipe's completed count trails its accepted commands by "
                  "what its queue and datapath hold)")


def axi_proofs(width_bytes, max_outstanding, past_the_limit=True):
    """The AXI4 master groups and MTE3's completions at W = `width_bytes` and
    `max_outstanding`, with their mutations; the bursts past the limit, whose BMC takes
    minutes, if `past_the_limit`."""
    bursts_past_limit = max(AXI_MUTATION_DEPTH, max_outstanding + 2)
    groups = (
        ("axi4_master_read", reader_harness, bursts_past_limit,
         (AXSIZE_WRONG, no_id_fence_in(axi_reader),
          *((one_burst_too_many_in(axi_reader),) if past_the_limit else ()))),
        ("axi4_master_write", writer_harness, bursts_past_limit,
         (WLAST_ON_FIRST, no_id_fence_in(axi_writer),
          *((one_burst_too_many_in(axi_writer),) if past_the_limit else ()))),
        ("mte3_completions", writer_completions_harness, COMPLETIONS_PROVE_DEPTH,
         (RESULT_OF_COMMAND_BEFORE_MTE3,)),
    )
    return tuple(Proof(f"{group}_w{width_bytes}", harness(width_bytes, max_outstanding),
                       "prove", AXI_DEPTH, mutations,
                       mutation_depth=mutation_depth)
                 for group, harness, mutation_depth, mutations in groups)


PROOFS = (
    *(proof for width in BUS_WIDTHS
      for proof in axi_proofs(width, AXI_OUTSTANDING, width in AXI_LIMIT_MUTATION_WIDTHS)),
    Proof("mte2_read_commands", reader_commands_harness(AXI_WIDTH, AXI_OUTSTANDING), "prove",
          AXI_DEPTH, (CMD_LAST_ON_EVERY_ROW,), mutation_depth=AXI_MUTATION_DEPTH),
    Proof("mte2_completions", mte2_completions_harness(AXI_WIDTH),
          "prove", COMPLETIONS_PROVE_DEPTH, (RESULT_OF_COMMAND_BEFORE_MTE2,)),
    *(Proof(f"drain_addrgen_{kind.name.lower()}", drain_harness(kind, AXI_WIDTH), "prove",
            DRAIN_DEPTH, DRAIN_MUTATIONS)
      for kind in (Opcode.COPY_GM_TO_UBUF, Opcode.COPY_UBUF_TO_GM)),
    *(Proof(f"drain_to_gm_side_{kind.name.lower()}", drain_chain_harness(kind, AXI_WIDTH),
            "prove", DRAIN_TO_GM_SIDE_DEPTH, (*DRAIN_MUTATIONS, ROOM_ONE_ROW_LATE),
            mutation_depth=DRAIN_TO_GM_SIDE_MUTATION_DEPTH)
      for kind in (Opcode.COPY_GM_TO_UBUF, Opcode.COPY_UBUF_TO_GM)),
    *(Proof(f"addrgen_rows_numbered_{kind.name.lower()}",
            rows_numbered_harness(kind, AXI_WIDTH), "prove", ROWS_NUMBERED_DEPTH,
            ROWS_NUMBERED_MUTATIONS) for kind in checker.COPY_KINDS),
    *(Proof(f"addrgen_nest_last_{kind.name.lower()}", nest_harness(kind, AXI_WIDTH, False),
            "prove", NEST_DEPTH, NEST_MUTATIONS[kind]) for kind in checker.COPY_KINDS),
    *(Proof(f"addrgen_nest_addresses_{kind.name.lower()}", nest_harness(kind, AXI_WIDTH, True),
            "prove", NEST_ADDRESSES_DEPTH, (SOURCE_STRIDES_ON_BOTH_SIDES,),
            mutation_depth=NEST_DEPTH) for kind in checker.COPY_KINDS),
    *(Proof(f"line_writer_w{width}", line_writer_harness(width), "prove", LINE_WRITER_DEPTH,
            LINE_WRITER_MUTATIONS) for width in LINE_WRITER_WIDTHS),
    Proof("row_fork", rowfork_harness(), "prove", ROWFORK_DEPTH,
          (ROOM_ONE_ROW_LATE, ROOM_TWO_ROWS_LATE, ENTRY_OF_THE_ROW_BEFORE)),
    Proof("pipe_in_flight", in_flight_harness(PIPE_IN_FLIGHT), "prove", PIPE_IN_FLIGHT_DEPTH,
          PIPE_IN_FLIGHT_MUTATIONS, mutation_depth=PIPE_IN_FLIGHT + 2),
    *(Proof(f"pipe_controller_{pipe.name.lower()}",
            pipe_controller_harness(pipe, PIPE_IN_FLIGHT, AXI_WIDTH), "prove",
            PIPE_CONTROLLER_DEPTH, PIPE_CONTROLLER_MUTATIONS,
            mutation_depth=PIPE_CONTROLLER_MUTATION_DEPTH) for pipe in ENGINE_PIPES),
    *(Proof(f"checker_contract_{pipe.name.lower()}",
            copy_checker_harness(COPY_KIND[pipe], AXI_WIDTH), "prove", CHECKER_CONTRACT_DEPTH,
            CHECKER_MUTATIONS) for pipe in ENGINE_PIPES),
    *(Proof(f"burst_splitter_w{width}", splitter_harness(width), "prove", SPLITTER_DEPTH,
            (CROSS_4K,)) for width in BUS_WIDTHS),
    *(Proof(f"pad_{part}_w{width}", pad_harness(width, part), "prove", PAD_DEPTH,
            PAD_MUTATIONS[part], mutation_depth=PAD_MUTATION_DEPTH)
      for width in BUS_WIDTHS for part in PAD_PARTS),
    Proof("command_intake", intake_harness(), "prove", INTAKE_DEPTH, INTAKE_MUTATIONS),
    Proof("dispatcher", dispatcher_harness(QUEUE_DEPTH), "prove", DISPATCHER_DEPTH,
          DISPATCHER_MUTATIONS, mutation_depth=DISPATCHER_MUTATION_DEPTH),
    Proof("event_flags", flags_harness(FLAGS_DEPTH), "prove", FLAGS_PROVE_DEPTH,
          FLAGS_MUTATIONS),
    *(Proof(f"{ALIGNER_GROUP_NAME[lane_bits]}_w{width}", aligner_harness(width, lane_bits),
            "prove", ALIGNER_DEPTH, (ROTATOR_OFF, FIRST_KEPT),
            mutation_depth=ALIGNER_DEPTH_BEYOND_ROTATOR + aligner.rotate_stages(width))
      for width, lane_bits in ALIGNER_LANE_BITS.items()),
    *(Proof(f"aligner_bit_slices_w{width}", bit_slices_harness(width), "prove",
            BIT_SLICES_DEPTH, (BITS_SWAPPED,), mutation_depth=BIT_SLICES_MUTATION_DEPTH)
      for width in BUS_WIDTHS),
    *(_aligner_stream_proof(width) for width in BUS_WIDTHS),
    *(Proof(f"aligner_rotator_w{width}", rotator_harness(width), "prove", ROTATOR_DEPTH,
            (ROTATOR_OFF,)) for width in BUS_WIDTHS),
    Proof(f"idle_engine_w{ENGINE_WIDTH}", idle_engine_harness(ENGINE_WIDTH), "bmc",
          ENGINE_DEPTH, (PHANTOM_ROW,), WHY_ENGINE_BMC),
    Proof(f"engine_completions_w{ENGINE_WIDTH}", completions_harness(ENGINE_WIDTH), "bmc",
          COMPLETIONS_DEPTH, (COMPLETES_TWICE, ENDS_UNCOUNTED), WHY_ENGINE_BMC),
    *(Proof(f"engine_contract_{pipe.name.lower()}_w{ENGINE_WIDTH}",
            engine_contract_harness(pipe, ENGINE_WIDTH), "prove", ENGINE_CONTRACT_DEPTH,
            (ENTERS_THE_NEXT_PIPE, COMPLETES_TWICE, ENDS_UNCOUNTED),
            mutation_depth=ENGINE_CONTRACT_MUTATION_DEPTH) for pipe in ENGINE_PIPES),
    *(Proof(f"engine_{kind.name.lower()}_completes_w{ENGINE_WIDTH}",
            copy_completes_harness(kind, completed_by, idle_by, ENGINE_WIDTH), "bmc",
            max(idle_by + 1, ENGINE_DEPTH), (COUNTS_LATE,) + ((LAST_WRITE_UNREPORTED,)
                                           if kind != Opcode.COPY_UBUF_TO_GM else ()),
            WHY_ENGINE_BMC)
      for kind, (completed_by, idle_by) in COPY_COMPLETES_BY.items()),
    *(Proof(f"engine_{kind.name.lower()}_completes_stalled_w{ENGINE_WIDTH}",
            copy_completes_harness(kind, completed_by, idle_by, ENGINE_WIDTH, SLAVE_STALLS),
            "bmc", idle_by + 1, (BUBBLE_AFTER_STALL,), WHY_ENGINE_BMC)
      for kind, (completed_by, idle_by) in COPY_COMPLETES_STALLED_BY.items()),
    *(Proof(f"engine_{kind.name.lower()}_drains_w{ENGINE_WIDTH}",
            copy_drains_harness(kind, bursts_after, completed_by, idle_by, ENGINE_WIDTH),
            "bmc", idle_by + 1, mutations, WHY_ENGINE_BMC)
      for kind, (bursts_after, completed_by, idle_by, mutations) in COPY_DRAINS_BY.items()),
)
