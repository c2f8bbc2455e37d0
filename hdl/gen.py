"""Writes the engine as Verilog: `python -m hdl.gen --profile a5 --width 32 -o FILE`."""

import argparse
from pathlib import Path

from amaranth.back import verilog

from model.isa import DEFAULT_PROFILE, PROFILES

from .top import MteDma

MODULE_NAME = "mte_dma"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m hdl.gen", description=__doc__)
    parser.add_argument("--profile", choices=sorted(PROFILES), default=DEFAULT_PROFILE)
    parser.add_argument("--width", type=int, default=32, help="bus and UB word bytes")
    parser.add_argument("--max-outstanding", type=int, default=8,
                        help="AXI bursts in flight per direction")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    top = MteDma(args.profile, args.width, args.max_outstanding)
    text = verilog.convert(top, name=MODULE_NAME, emit_src=False)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)


if __name__ == "__main__":
    main()
