"""formal/native_yosys.py, the `yosys-native` a split proof prepares its harness with:
the script's commands run in order on one design, a failing command ends it with exit 1,
usage exits 2."""

import subprocess
import sys

COUNTER = """module \\top
  wire width 4 output 1 \\q
  wire width 4 \\next
  wire width 1 input 2 \\clk
  cell $add $1
    parameter \\A_SIGNED 0
    parameter \\B_SIGNED 0
    parameter \\A_WIDTH 4
    parameter \\B_WIDTH 1
    parameter \\Y_WIDTH 4
    connect \\A \\q
    connect \\B 1'1
    connect \\Y \\next
  end
  cell $dff $2
    parameter \\WIDTH 4
    parameter \\CLK_POLARITY 1
    connect \\CLK \\clk
    connect \\D \\next
    connect \\Q \\q
  end
end
"""


def _yosys(cwd, *argv):
    return subprocess.run([sys.executable, "-m", "formal.native_yosys", *argv], cwd=cwd,
                          capture_output=True, text=True)


def test_runs_the_commands_in_order_on_one_design(tmp_path):
    (tmp_path / "in.il").write_text(COUNTER)
    done = _yosys(tmp_path, "read_rtlil in.il; prep -top top; "
                  "select -assert-count 1 t:$dff; write_rtlil out.il")
    assert done.returncode == 0, done.stdout + done.stderr
    written = (tmp_path / "out.il").read_text()
    assert "module \\top" in written and "$add" in written


def test_a_failing_command_ends_the_script_with_exit_1(tmp_path):
    (tmp_path / "in.il").write_text(COUNTER)
    done = _yosys(tmp_path, "read_rtlil in.il; select -assert-count 2 t:$dff; "
                  "write_rtlil out.il")
    assert done.returncode == 1
    assert "ERROR" in done.stdout + done.stderr
    assert not (tmp_path / "out.il").exists()


def test_usage_exits_2(tmp_path):
    for argv in ([], ["-p", "help"], ["help", "help"]):
        done = _yosys(tmp_path, *argv)
        assert done.returncode == 2 and "usage" in done.stderr
