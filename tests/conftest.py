"""The suite's run order and its Verilator builds.

pytest-xdist hands each worker a test file at a time (`--dist loadfile`). Files run in
the order of LONGEST_FIRST, then the rest in their usual order, so that the last file a
worker takes is a short one and both workers stay busy to the end (`--no-loadscope-reorder`
in pyproject.toml: xdist would otherwise order the files by their number of tests, and
the one-test files that simulate for minutes would come last).
"""

import os

# The files that take the most CPU alone (pytest -n 0, cold builds, on this 2-core
# machine): the engine's regression at W = 32 with its build (about 140 s), the whole
# engine in the Amaranth simulator with the two lints (about 120 s), the FPGA top's build
# and run (about 100 s), the aligner at every W (about 100 s) and the regression at W = 8
# with its build (about 80 s). A worker takes a file while it has at most two tests
# waiting, so the first worker runs the first and third files, the second the second,
# fourth and fifth: each Verilator model is built by one worker, before any other file
# needs it.
LONGEST_FIRST = [
    "test_cocotb.py",
    "test_hdl_top.py",
    "test_cocotb_fpga.py",
    "test_hdl_aligner.py",
    "test_cocotb_narrow.py",
]

# Runs of a few programs: the Verilator models compile at -O0 (tb/run.py's quick_build).
os.environ.setdefault("MTE_QUICK_BUILD", "1")


def _rank(item):
    name = item.path.name
    return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(items):
    items.sort(key=_rank)         # stable: each file's tests keep their order
