"""`make fpga`'s reading of nextpnr's report: the register inputs too late for the period
(arrival plus the input's setup), grouped by the register they belong to."""

import pytest

from hdl.fpga_build import LateRegister, Result, late_lines, late_registers, setup_ns


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
