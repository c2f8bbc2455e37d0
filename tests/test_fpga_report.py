"""`make fpga`'s reading of nextpnr's report: the register inputs that arrive after the
period, grouped by the register they belong to."""

from hdl.fpga_build import LateRegister, Result, late_lines, late_registers


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
        ("engine.ub.memory0.block_0_3_DP16KD", "ADB6", 8.0)),
]}


def test_late_inputs_are_grouped_by_register_latest_first():
    late, inputs = late_registers(REPORT, 8.0)
    assert inputs == 6
    assert late == [LateRegister("engine.pipe.count", 3, 9.1),
                    LateRegister("engine.ub.memory0.block_0_3", 1, 8.05)]


def test_nothing_is_late_below_the_period():
    late, inputs = late_registers(REPORT, 9.1)
    assert (late, inputs) == ([], 6)


def test_summary_lines():
    late, inputs = late_registers(REPORT, 8.0)
    result = Result("total", 0, 0, 0, 0, 0, 0, 108.0, [], late, inputs)
    assert late_lines(result, 125) == [
        "register inputs later than 8.00 ns (total): 4 of 6, in 2 registers",
        "    9.10 ns     3 inputs  engine.pipe.count",
        "    8.05 ns     1 inputs  engine.ub.memory0.block_0_3"]
