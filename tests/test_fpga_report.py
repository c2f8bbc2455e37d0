"""`make fpga`'s reading of nextpnr's report: the register inputs too late for the period
(arrival plus the input's setup), grouped by the register they belong to; and
`make fpga-blocks`'s reading of Yosys's cell counts, block by block."""

import pytest

from hdl.fpga.build import main
from hdl.fpga.report import (BLOCK_CELLS, LateRegister, Result, block_shares, blocks_table,
                             late_lines, late_registers, setup_ns)


def net(driver, *sinks):
    """A detailed_net_timings entry: sinks are (cell, port, latest arrival in ns)."""
    return {"driver": driver, "port": "Q", "net": f"{driver}_q", "event": "posedge clk",
            "sources": [], "endpoints": [
                {"cell": cell, "port": port, "event": "posedge clk", "delay": [0.1, arrival]}
                for cell, port, arrival in sinks]}


REPORT = {"detailed_net_timings": [
    net("a_TRELLIS_FF_Q", ("engine.pipe.count_TRELLIS_FF_Q", "DI", 8.4),
        ("engine.pipe.count_TRELLIS_FF_Q_1", "DI", 9.1),
        ("engine.pipe.ok_TRELLIS_FF_Q", "DI", 7.9)),
    # the same input reached by another net: its latest arrival counts once
    net("b_TRELLIS_FF_Q", ("engine.pipe.count_TRELLIS_FF_Q_1", "DI", 8.6),
        ("engine.pipe.count_TRELLIS_FF_Q_1", "CE", 8.2)),
    net("c_TRELLIS_FF_Q", ("engine.ub.memory0.block_0_3_DP16KD", "ADB5", 8.05),
        ("engine.ub.memory0.block_0_3_DP16KD", "ADB6", 7.7)),
    # in time by arrival, late by the set/reset input's setup
    net("d_LUT4_Z", ("engine.intake.first_TRELLIS_FF_Q", "LSR", 7.8)),
]}


def test_late_inputs_are_grouped_by_register_latest_first():
    late, inputs = late_registers(REPORT, 8.0)
    assert inputs == 7
    assert late == [LateRegister("engine.pipe.count", 3, 9.1),
                    LateRegister("engine.ub.memory0.block_0_3", 1, pytest.approx(8.255)),
                    LateRegister("engine.intake.first", 1, pytest.approx(8.224))]


def test_nothing_is_late_below_the_period():
    late, inputs = late_registers(REPORT, 9.1)
    assert (late, inputs) == ([], 7)


@pytest.mark.parametrize("port, setup", [
    ("DI", 0.0), ("M", 0.0), ("CE", 0.0), ("LSR", 0.424), ("WAD2", 0.0), ("WRE", 0.392),
    ("ADA13", 0.251), ("ADB0", 0.205), ("DIA7", 0.218), ("WEA", 0.139),
    ("A17", 0.084), ("B0", 0.084), ("CE0", 0.252)])
def test_setup_by_port(port, setup):
    assert setup_ns(port) == setup


def test_summary_lines():
    late, inputs = late_registers(REPORT, 8.0)
    result = Result("total", 0, 0, 0, 0, 0, 0, 108.0, [], late, inputs)
    assert late_lines(result, 125) == [
        "register inputs needing more than 8.00 ns, arrival + setup (total): 5 of 7, "
        "in 3 registers",
        "    9.10 ns     3 inputs  engine.pipe.count",
        "    8.26 ns     1 inputs  engine.ub.memory0.block_0_3",
        "    8.22 ns     1 inputs  engine.intake.first"]


def module(**cells):
    return {"num_cells": sum(cells.values()), "num_cells_by_type": cells}


def hierarchy_stat(design=None):
    """A `stat -json` report of a kept hierarchy under top `unit`."""
    modules = {
        "\\unit": module(LUT4=2, **{"unit.controller": 1, "unit.datapath": 1}),
        "\\unit.controller": module(LUT4=10, TRELLIS_FF=4),
        "\\unit.controller.checker": module(LUT4=30, CCU2C=5, MULT18X18D=2),
        "\\unit.controller.checker.load0": module(LUT4=1),
        "\\unit.datapath": module(TRELLIS_FF=7, **{"unit.datapath.aligner": 1}),
        "\\unit.datapath.aligner": module(LUT4=50, PFUMX=9, TRELLIS_FF=40),
        "\\unit.datapath.aligner.queue": module(LUT4=6, TRELLIS_DPR16X4=3),
    }
    if design is None:
        design = {"LUT4": 99, "CCU2C": 5, "MULT18X18D": 2, "TRELLIS_FF": 51,
                  "TRELLIS_DPR16X4": 3, "PFUMX": 9}
    return {"modules": modules, "design": {"num_cells_by_type": design}}


def counts(**cells):
    return {cell: cells.get(cell, 0) for cell in BLOCK_CELLS}


def test_each_module_counts_in_its_block():
    assert block_shares(hierarchy_stat(), "unit") == {
        "unit": counts(LUT4=2),
        "controller": counts(LUT4=10, TRELLIS_FF=4),
        "controller.checker": counts(LUT4=31, CCU2C=5, MULT18X18D=2),
        "datapath": counts(TRELLIS_FF=7),
        "datapath.aligner": counts(LUT4=56, TRELLIS_DPR16X4=3, TRELLIS_FF=40),
    }


def test_depth_one_folds_the_blocks_into_the_top_level_ones():
    assert block_shares(hierarchy_stat(), "unit", depth=1) == {
        "unit": counts(LUT4=2),
        "controller": counts(LUT4=41, CCU2C=5, TRELLIS_FF=4, MULT18X18D=2),
        "datapath": counts(LUT4=56, TRELLIS_DPR16X4=3, TRELLIS_FF=47),
    }


def test_blocks_that_do_not_sum_to_the_design_are_an_error():
    """A module instantiated twice counts once among the modules, twice in the design."""
    with pytest.raises(ValueError, match="blocks sum to"):
        block_shares(hierarchy_stat({"LUT4": 155, "CCU2C": 5, "MULT18X18D": 2,
                                     "TRELLIS_FF": 91, "TRELLIS_DPR16X4": 6}), "unit")
    with pytest.raises(ValueError, match="outside top"):
        block_shares(hierarchy_stat(), "top")


def test_blocks_table():
    shares = block_shares(hierarchy_stat(), "unit", depth=1)
    lines = blocks_table("mte2", shares).splitlines()
    assert lines[0] == "mte2: synth_ecp5 -noflatten, cells per block"
    assert lines[1].split() == ["block", "LUT4", "LUT4", "%", "CCU2C", "TRELLIS_DPR16X4",
                                "TRELLIS_FF", "MULT18X18D", "DP16KD"]
    assert [line.split() for line in lines[2:]] == [
        ["datapath", "56", "56.6", "0", "3", "47", "0", "0"],
        ["controller", "41", "41.4", "5", "0", "4", "2", "0"],
        ["unit", "2", "2.0", "0", "0", "0", "0", "0"],
        ["all", "99", "100.0", "5", "3", "51", "2", "0"]]


@pytest.mark.parametrize("depth", ["0", "-1", "two"])
def test_a_depth_below_one_is_a_usage_error(depth, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--blocks", "--depth", depth])
    assert stop.value.code == 2
    assert "is not a depth of 1 or more levels" in capsys.readouterr().err
