"""The suite's run order and its Verilator builds.

pytest-xdist hands each worker a test file at a time (`--dist loadfile`). Files run in
the order of LONGEST_FIRST, then the rest in their usual order, so that the last file a
worker takes is a short one and both workers stay busy to the end (`--no-loadscope-reorder`
in pyproject.toml: xdist would otherwise order the files by their number of tests, and
the one-test files that simulate for minutes would come last).
"""

import os

# The files that take the most time (pytest's durations summed per file, from a fresh
# clone on this 2-core machine, two workers), in `make test`: the fast formal subset
# (172 s and 115 s), the engine's regression at W = 32 with its build (149 s), the
# aligner (100 s), the whole engine's functions in the Amaranth simulator (87 s), the
# copy checker against the rules (77 s); in `make test-long`: the whole engine's timing
# and lints (215 s in test_hdl_top.py), the FPGA top's build and run (209 s), the
# regression at W = 8 with its build (112 s), the aligner's samples (85 s). The W = 32
# regression goes first, as other files run on its model. Each Verilator model is built
# by the first worker to need it and found built by the other through the lock.
LONGEST_FIRST = [
    "test_cocotb.py",
    "test_formal.py",
    "test_hdl_top.py",
    "test_cocotb_fpga.py",
    "test_cocotb_narrow.py",
    "test_hdl_checker.py",
    "test_hdl_aligner.py",
    "test_formal_mutations.py",
]

# Runs of a few programs: the Verilator models compile at -O0 (tb/run.py's quick_build).
os.environ.setdefault("MTE_QUICK_BUILD", "1")


def _rank(item):
    name = item.path.name
    return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(items):
    items.sort(key=_rank)         # stable: each file's tests keep their order
