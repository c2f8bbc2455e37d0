"""The suite's run order and its Verilator builds.

pytest-xdist hands each worker a test file at a time (`--dist loadfile`). Files run in
the order of LONGEST_FIRST, then the rest in their usual order, so that the last file a
worker takes is a short one and both workers stay busy to the end (`--no-loadscope-reorder`
in pyproject.toml: xdist would otherwise order the files by their number of tests, and
the one-test files that simulate for minutes would come last).
"""

import os

# CPU seconds each file took alone (pytest -n 0, cold builds), measured when this list was
# last ordered; the files that build a Verilator model come first, one build each, so
# that no worker waits on another's build lock.
LONGEST_FIRST = [
    "test_cocotb_fpga.py",
    "test_cocotb.py",
    "test_cocotb_narrow.py",
]

# Runs of a few programs: the Verilator models compile at -O0 (tb/run.py's quick_build).
os.environ.setdefault("MTE_QUICK_BUILD", "1")


def _rank(item):
    name = item.path.name
    return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(items):
    items.sort(key=_rank)         # stable: each file's tests keep their order
