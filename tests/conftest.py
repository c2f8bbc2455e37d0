"""The suite's run order and its Verilator builds.

pytest-xdist hands each worker a test file at a time (`--dist loadfile`). Files run in
the order of LONGEST_FIRST, then the rest in their usual order, so that the last file a
worker takes is a short one and both workers stay busy to the end (`--no-loadscope-reorder`
in pyproject.toml: xdist would otherwise order the files by their number of tests, and
the one-test files that simulate for minutes would come last).
"""

import os

# The files that take the most CPU (pytest -n 0, cold builds, on this 2-core machine), in
# `make test`: the engine's regression at W = 32 with its build (about 130 s), the fast
# formal subset (about 120 s), the whole engine's functions in the Amaranth simulator
# (about 100 s), the copy checker against the rules (about 90 s), the aligner at every W
# but its sample at 128 (about 50 s); in `make test-long`: the FPGA top's build and run
# (about 130 s), the regression at W = 8 with its build (about 120 s), the whole
# engine's timing and lints (about 210 s in test_hdl_top.py). Each Verilator model is
# built by the first worker to need it and found built by the other through the lock.
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
