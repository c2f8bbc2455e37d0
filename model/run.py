"""A program run on the golden model, as `mte run` and the RTL runners (tb/rtl_engine.py)
report it: a `RunResult` holds the error, the summary lines and readers of the final
memories; `run_on_model` is the model's runner, with `Progress` on a terminal."""

import sys
import time
from dataclasses import dataclass

import numpy as np

from .engine import Engine
from .errors import MteError
from .isa import Pipe


@dataclass
class RunResult:
    error: MteError | None
    summary: list          # lines printed on success
    read_gm: object        # (addr, n) -> bytes
    read_ub: object        # (addr, n) -> bytes


class Progress:
    """The progress of long model work, as one line on a terminal rewritten at most twice
    a second, from the first second of the run on."""

    def __init__(self, stream, clock=time.monotonic):
        self.stream, self.clock = stream, clock
        self.start, self.shown = clock(), None

    def __call__(self, instr, done, rows):
        now = self.clock()
        if now - self.start < 1 or (self.shown is not None and now - self.shown < 0.5):
            return
        self.shown = now
        self.stream.write(f"\rmte: {now - self.start:.0f} s: line {instr.line} "
                          f"{instr.mnemonic}: {done} of {rows} rows")
        self.stream.flush()

    def close(self):
        if self.shown is not None:
            self.stream.write("\n")


def run_on_model(instrs, profile, gm, ub_preloads):
    """The program on the golden model from GM `gm` and UB preloads [(addr, bytes)]."""
    progress = Progress(sys.stderr) if sys.stderr.isatty() else None
    engine = Engine(profile, gm, progress)
    for addr, data in ub_preloads:
        engine.ub[addr:addr + len(data)] = np.frombuffer(data, dtype=np.uint8)
    try:
        engine.run(instrs)
        error = None
    except MteError as e:
        error = e
    if progress is not None:
        progress.close()
    moved = engine.stats.bytes_moved
    summary = [f"ops run: {engine.stats.ops}",
               "bytes moved: " + ", ".join(f"{pipe.name} {moved[pipe]}"
                                           for pipe in (Pipe.MTE2, Pipe.MTE3, Pipe.V))]
    return RunResult(error, summary,
                     read_gm=lambda addr, n: engine.gm.read(addr, n).tobytes(),
                     read_ub=lambda addr, n: engine.ub[addr:addr + n].tobytes())
