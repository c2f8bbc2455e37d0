"""The ECP5 builds' results: what Yosys's cell counts and nextpnr's report say of a build
(resources, Fmax, the registers whose inputs come too late), where each block's cells
go, and the tables `python -m hdl.fpga.build` prints and writes.
"""

import json
import re
from dataclasses import dataclass

from model.isa import PROFILES

from ..lib.block_ram import dp16kd_count
from ..ub.ub import PART_BYTES, part_count

GOAL_MHZ = 125
DP16KD_AVAILABLE = 208          # LFE5U-85F


@dataclass(frozen=True)
class Reference:
    """A published build of an open design in this same flow."""
    name: str
    comb: int
    ff: int
    fmax: float


AXI_CDMA = Reference("verilog-axi axi_cdma (256-bit, unaligned)", comb=4495, ff=965, fmax=75.0)


@dataclass
class Result:
    name: str
    lut4: int
    comb: int
    ff: int
    carry: int
    dp16kd: int
    mult: int
    fmax: float
    critical_path: list
    late: list          # LateRegister, latest first: inputs too late for the goal
    inputs: int         # timed register inputs


@dataclass(frozen=True)
class LateRegister:
    """A register (or block) of the design with inputs too late for the period."""
    name: str
    inputs: int         # how many of its inputs (bits, enables) are too late
    needed: float       # the latest input's arrival plus its setup, ns after the edge


# The setup nextpnr-ecp5 charges at a register input (default speed grade), by port name:
# read from the critical path it reports for a probe design that drives one such port
# through logic. A port not listed has none (a slice flip-flop's DI, M and CE, a
# distributed RAM's WAD and WD). Only inputs of the cells this design uses are listed;
# a slice's CE is `CE`, a multiplier's clock enables `CE0`..`CE3`.
SETUP_NS = {
    r"LSR": 0.424,                                  # slice flip-flop's set/reset
    r"WRE": 0.392,                                  # distributed RAM's write enable
    r"ADA\d+": 0.251, r"ADB\d+": 0.205,             # DP16KD
    r"DI[AB]\d+": 0.218, r"WE[AB]": 0.139, r"CEA": 0.211, r"CEB": 0.340,
    r"[AB]\d+": 0.084, r"CE\d": 0.252,              # MULT18X18D, input registers on
}


def setup_ns(port):
    return next((setup for pattern, setup in SETUP_NS.items()
                 if re.fullmatch(pattern, port)), 0.0)


def late_registers(report, period):
    """The registers with inputs that need more than `period` ns after the clock edge: the
    arrival nextpnr reports at each register input (`detailed_net_timings`) plus the
    input's setup. Latest first; and the number of timed register inputs."""
    needed = {}
    for net in report.get("detailed_net_timings", []):
        for sink in net["endpoints"]:
            key = (sink["cell"], sink["port"])
            need = sink["delay"][1] + setup_ns(sink["port"])
            needed[key] = max(needed.get(key, 0.0), need)
    late = {}
    for (cell, _), need in needed.items():
        if need > period:
            origin = _cell_origin(cell)
            count, latest = late.get(origin, (0, 0.0))
            late[origin] = (count + 1, max(latest, need))
    registers = [LateRegister(name, count, need) for name, (count, need) in late.items()]
    return sorted(registers, key=lambda r: (-r.needed, r.name)), len(needed)


def read_result(name, directory, report, period):
    cells = _cell_counts(json.loads((directory / "stat.json").read_text()))
    nextpnr = json.loads(report.read_text())
    used = {cell: entry["used"] for cell, entry in nextpnr["utilization"].items()}
    fmax = min(clock["achieved"] for clock in nextpnr["fmax"].values())
    paths = nextpnr.get("critical_paths", [])
    late, inputs = late_registers(nextpnr, period)
    return Result(name, lut4=cells.get("LUT4", 0), comb=used.get("TRELLIS_COMB", 0),
                  ff=used.get("TRELLIS_FF", 0), carry=cells.get("CCU2C", 0),
                  dp16kd=used.get("DP16KD", 0), mult=used.get("MULT18X18D", 0), fmax=fmax,
                  critical_path=paths[0]["path"] if paths else [], late=late, inputs=inputs)


def _cell_counts(stat):
    """Cells of the (flattened) top in a `stat -json` report."""
    design = stat.get("design") or next(iter(stat["modules"].values()))
    return design["num_cells_by_type"]


def path_summary(path):
    """The critical path as `start -> end` (the registers or blocks it leaves and sets
    up) and its delay."""
    if not path:
        return "no register-to-register path"
    start = _cell_origin(path[0]["from"]["cell"])
    end = _cell_origin(path[-1]["to"]["cell"])
    delay = sum(step["delay"] for step in path)
    routing = sum(step["delay"] for step in path if step["type"] == "routing")
    return f"{start} -> {end}: {delay:.2f} ns, of it {routing:.2f} ns routing"


def _cell_origin(cell):
    """The design name a mapped cell was made from (mapping appends `_TRELLIS_FF_Q...`,
    `$CCU2_COMB0` and the like)."""
    return re.split(r"_TRELLIS_|_DP16KD|_MULT18X18D|\$", cell)[0]


def ub_blocks(size, width_bytes):
    """DP16KD blocks of a UB of `size` bytes in words of `width_bytes`, as the ECP5 builds
    lay it out: a BlockRam per PART_BYTES bytes of the word."""
    return part_count(width_bytes) * dp16kd_count(PART_BYTES, size // width_bytes)


def ub_fit_lines(width_bytes):
    """Per profile: the UB's DP16KD count and whether the device has that many."""
    lines = []
    for name, profile in PROFILES.items():
        need = ub_blocks(profile.ub_size, width_bytes)
        fits = "fits" if need <= DP16KD_AVAILABLE else "does NOT fit"
        lines.append(f"  {name:10s} UB {profile.ub_size // 1024:4d} KiB: {need:3d} DP16KD "
                     f"of {DP16KD_AVAILABLE} -> {fits}")
    return lines


COLUMNS = (("LUT4", 6), ("TRELLIS_COMB", 12), ("TRELLIS_FF", 10), ("CCU2C", 6),
           ("DP16KD", 6), ("MULT18X18D", 10), ("Fmax MHz", 8))
NAME_WIDTH = 41


def _row(name, values, columns=COLUMNS):
    cells = (f"{value:>{width}}" for value, (_, width) in zip(values, columns))
    return f"{name:{NAME_WIDTH}s} " + " ".join(cells)


def table(results, profile, width_bytes, freq, flow):
    """The builds' resources and Fmax beside the reference design's; `flow`: a line
    naming the placer's and router's options."""
    lines = [f"ECP5 LFE5U-85F CABGA381, default speed grade, out of context, "
             f"--freq {freq:g}; profile {profile}, W = {width_bytes} bytes",
             flow,
             "mte2, mte3, v: one pipe's controller and datapath (no UB, no CSR); "
             "ub: the UB alone; total: MteDmaFpga",
             _row("build", [name for name, _ in COLUMNS])]
    lines.append("-" * len(lines[-1]))
    for r in results:
        lines.append(_row(r.name, (r.lut4, r.comb, r.ff, r.carry, r.dp16kd, r.mult,
                                   f"{r.fmax:.1f}")))
    ref = AXI_CDMA
    lines.append(_row(ref.name, ("", ref.comb, ref.ff, "", "", "", f"{ref.fmax:.1f}")))
    total = next((r for r in results if r.name == "total"), None)
    if total is not None:
        verdict = "PASS" if total.fmax >= GOAL_MHZ else "MISS"
        lines += ["", f"critical path (total): {path_summary(total.critical_path)}",
                  f"goal: total Fmax >= {GOAL_MHZ} MHz: {total.fmax:.1f} MHz -> {verdict}"]
        lines += late_lines(total, freq)
    lines += ["", f"UB in block RAM (W = {width_bytes}):", *ub_fit_lines(width_bytes)]
    return "\n".join(lines)


LATE_SHOWN = 12


def late_lines(result, freq):
    """What keeps a build from `freq`: how many register inputs are too late for it
    (arrival plus setup), and the latest registers."""
    count = sum(r.inputs for r in result.late)
    lines = [f"register inputs needing more than {1000 / freq:.2f} ns, arrival + setup "
             f"({result.name}): {count} of {result.inputs}, in {len(result.late)} registers"]
    lines += [f"  {r.needed:6.2f} ns {r.inputs:5d} inputs  {r.name}"
              for r in result.late[:LATE_SHOWN]]
    return lines


# The cells a block's share counts, by Yosys's names after synth_ecp5. A PFUMX or
# L6MUX21 joins LUT4s in their slice and takes none of its own.
BLOCK_CELLS = ("LUT4", "CCU2C", "TRELLIS_DPR16X4", "TRELLIS_FF", "MULT18X18D", "DP16KD")
BLOCK_DEPTH = 2


def block_shares(stat, top, depth=BLOCK_DEPTH):
    """BLOCK_CELLS per block of a `stat -json` report of a hierarchy kept whole: each
    module counts in the block it lies in, `depth` levels below `top`, or in its own
    name if it lies less deep (the top's own cells in `top`)."""
    shares = {}
    for name, module in stat["modules"].items():
        path = name.lstrip("\\").split(".")
        if path[0] != top:
            raise ValueError(f"module {name} lies outside {top}")
        counts = shares.setdefault(".".join(path[1:depth + 1]) or top,
                                   dict.fromkeys(BLOCK_CELLS, 0))
        for cell in BLOCK_CELLS:
            counts[cell] += module["num_cells_by_type"].get(cell, 0)
    design = stat["design"]["num_cells_by_type"]
    summed = block_totals(shares)
    if summed != {cell: design.get(cell, 0) for cell in BLOCK_CELLS}:
        # a module instantiated more than once: its cells would count once here
        raise ValueError(f"blocks sum to {summed}, the design has {design}")
    return shares


def block_totals(shares):
    """BLOCK_CELLS summed over every block."""
    return {cell: sum(counts[cell] for counts in shares.values()) for cell in BLOCK_CELLS}


BLOCK_COLUMNS = (("LUT4", 6), ("LUT4 %", 6), ("CCU2C", 6), ("TRELLIS_DPR16X4", 15),
                 ("TRELLIS_FF", 10), ("MULT18X18D", 10), ("DP16KD", 6))


def blocks_table(name, shares):
    """A build's shares, most LUT4 first, and their sum."""
    total = block_totals(shares)

    def values(counts):
        share = f"{100 * counts['LUT4'] / total['LUT4']:.1f}" if total["LUT4"] else "-"
        return (counts["LUT4"], share, *(counts[cell] for cell in BLOCK_CELLS[1:]))

    lines = [f"{name}: synth_ecp5 -noflatten, cells per block",
             _row("block", [heading for heading, _ in BLOCK_COLUMNS], BLOCK_COLUMNS)]
    lines += [_row(block, values(counts), BLOCK_COLUMNS) for block, counts
              in sorted(shares.items(), key=lambda item: (-item[1]["LUT4"], item[0]))]
    lines.append(_row("all", values(total), BLOCK_COLUMNS))
    return "\n".join(lines)
