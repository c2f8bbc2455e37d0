"""Writes the engine as Verilog: `python -m hdl.gen --profile a5 --width 32 -o FILE`.

`--top fpga` writes the FPGA top instead (`MteDmaFpga`, module `mte_dma_fpga`)."""

import argparse
from pathlib import Path

from amaranth.back import verilog

from model.isa import DEFAULT_PROFILE, PROFILES

from .layouts import BUS_WIDTHS
from .top import MteDma
from .soc.fpga_top import MteDmaFpga

MODULE_NAME = "mte_dma"
TOPS = {"sim": (MteDma, MODULE_NAME), "fpga": (MteDmaFpga, "mte_dma_fpga")}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m hdl.gen", description=__doc__)
    parser.add_argument("--profile", choices=sorted(PROFILES), default=DEFAULT_PROFILE)
    parser.add_argument("--width", type=int, choices=BUS_WIDTHS, default=32,
                        help="bus and UB word bytes")
    parser.add_argument("--max-outstanding", type=int, default=8,
                        help="AXI bursts in flight per direction")
    parser.add_argument("--top", choices=sorted(TOPS), default="sim",
                        help="sim: the engine with its test ports; fpga: behind the CSR")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    component, name = TOPS[args.top]
    top = component(args.profile, args.width, args.max_outstanding)
    text = verilog.convert(top, name=name, emit_src=False)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)


if __name__ == "__main__":
    main()
