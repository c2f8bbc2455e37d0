"""The whole engine at W = 8 in cocotb, launched from pytest: a file of its own, so that
under pytest-xdist (`--dist loadfile`) its build and runs go beside tests/test_cocotb.py's
rather than after them, and only this file's worker builds it. Long: `make test-long`
runs it, `make test` the engine at W = 32 alone."""

import pytest
from test_cocotb import _failures, backdoor_matches_port

from tb import run as tb_run

pytestmark = pytest.mark.long


def test_a_narrow_bus_runs_long_copies_behind_a_full_queue():
    """W = 8, the narrowest bus: a copy of this program takes more than the harness's
    5000-cycle watchdog while the next command waits for the pipe's full queue, which is
    no hang while the bus moves. With the seed examples (on kirin9030's UB the UB->UB one
    ends in UB_RANGE) and a few random programs."""
    runner, build_dir = tb_run.build("verilator", "kirin9030", 8, waves=False)
    args = tb_run.argument_parser().parse_args(
        ["--case", "0x6facf821/UB_OVERLAP", "--seed", "8", "--count", "6",
         "--profile", "kirin9030", "--width", "8"])
    args.examples = True
    result = tb_run.run(runner, build_dir, ["regression"], tb_run.environment(args),
                        waves=False)
    records = result.records
    assert not result.failed, "\n".join(_failures(records))
    assert [r["category"] for r in records].count("example") == 8
    assert len(records) == 8 + 1 + 6


def test_ub_backdoor_matches_the_port_at_the_narrowest_ub_word():
    backdoor_matches_port("kirin9030", 8)
