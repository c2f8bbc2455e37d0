"""Builds and runs when several processes share a checkout: the Verilog generated again
only when its sources change, builds under a lock, a run directory per process, and the
regression sharded over processes (tb/run.py --shard, --jobs)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tb import run as tb_run


def _fake_generator(calls):
    def generate(command, **kwargs):
        calls.append(command)
        Path(command[-1]).write_text(f"// {len(calls)}\n")
        return subprocess.CompletedProcess(command, 0, "", "")
    return generate


def test_verilog_is_generated_again_only_when_its_sources_change(tmp_path, monkeypatch):
    """The key of the hdl and model sources (subpackages too), Amaranth's version and the
    options: the same key generates nothing; an edited source, or other options, generate
    again."""
    sources = tmp_path / "checkout"
    for package in ("hdl", "hdl/lib", "model"):
        (sources / package).mkdir(parents=True)
        (sources / package / "part.py").write_text(f"# {package}\n")
    calls = []
    monkeypatch.setattr(tb_run, "ROOT", sources)
    monkeypatch.setattr(tb_run.subprocess, "run", _fake_generator(calls))
    out = tb_run.generate_verilog("a5", 32, tmp_path / "build")
    assert tb_run.generate_verilog("a5", 32, tmp_path / "build") == out and len(calls) == 1
    for package in ("hdl", "hdl/lib", "model"):
        (sources / package / "part.py").write_text(f"# {package}, edited\n")
        tb_run.generate_verilog("a5", 32, tmp_path / "build")
    tb_run.generate_verilog("a5", 32, tmp_path / "build", gen_args=["--max-outstanding", "4"])
    assert len(calls) == 5 and out.read_text() == "// 5\n"



def test_quick_builds_compile_at_o0_in_directories_of_their_own(tmp_path, monkeypatch):
    """MTE_QUICK_BUILD=1, as the suite sets it: verilated.mk's optimisation levels are
    -O0, in a `_quick` build directory; without it, or for a build that asks for no quick
    one (the FPGA top's), its own -Os, in the usual one."""
    from cocotb_tools import runner as runners
    builds = []

    class Recorder:
        def build(self, build_dir, **kwargs):
            builds.append((build_dir.name, os.environ["MAKEFLAGS"]))

    def generate(profile, width, root, toplevel, gen_args):
        root.mkdir(parents=True, exist_ok=True)
        (root / "mte_dma.v").write_text("module mte_dma; endmodule\n")
        return root / "mte_dma.v"

    for name in ("MAKEFLAGS", "PATH", "VERILATOR_ROOT"):
        monkeypatch.setenv(name, os.environ.get(name, ""))     # restored after the test
    monkeypatch.setattr(runners, "get_runner", lambda sim: Recorder())
    monkeypatch.setattr(tb_run, "generate_verilog", generate)
    for variable, quick in (("1", None), ("0", None), ("1", False)):
        monkeypatch.setenv("MTE_QUICK_BUILD", variable)
        tb_run.build("verilator", "a5", 32, waves=False, root=tmp_path / variable,
                     quick=quick)
    full = ("verilator_a5_w32", "CFG_CXXFLAGS_PCH_I=-include")
    assert builds == [
        ("verilator_a5_w32_quick",
         "CFG_CXXFLAGS_PCH_I=-include OPT_FAST=-O0 OPT_SLOW=-O0 OPT_GLOBAL=-O0"), full, full]

def test_three_concurrent_runs_share_a_checkout(tmp_path):
    """Three `mte run --engine both` of seed example 1 at once in one checkout: one
    process generates and builds under the lock (if not built yet), the others wait for
    it; each simulates in a directory of its own. All three pass."""
    from tb.programs import example_cases
    line = write_case_line(example_cases("a5")[0], tmp_path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tb_run.ROOT)] + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    runs = [subprocess.Popen([sys.executable, "-m", "cli", *line, "--engine", "both"],
                             cwd=tb_run.ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for process in runs:
        out, err = process.communicate(timeout=1200)
        assert process.returncode == 0, err
        assert "model and rtl agree" in out


def write_case_line(case, directory):
    from tb.programs import write_case
    return write_case(case, directory).split()[1:]


def test_shards_partition_the_programs(monkeypatch):
    """Shards I of N run disjoint random programs that together are the whole run's; the
    examples and error programs run in shard 0 alone."""
    from tb import test_mte
    for name, value in tb_run.program_environment(1, 7, errors=True, examples=True).items():
        monkeypatch.setenv(name, value)
    whole = [(c, case.name) for c, case in test_mte.configured_cases()]
    shards = []
    for shard in range(3):
        monkeypatch.setenv("MTE_SHARD", f"{shard}/3")
        shards.append([(c, case.name) for c, case in test_mte.configured_cases()])
    assert sorted(sum(shards, [])) == sorted(whole) and len(set(whole)) == len(whole)
    assert [c for c, _ in shards[1] + shards[2]] == ["random"] * 4
    assert {c for c, _ in shards[0]} == {"example", "random", "error"}


def test_jobs_run_shards_and_merge_their_tables(capsys):
    """`--jobs 2`: two processes, a shard each; one table by kind of program and one by
    shard, with the same total."""
    assert tb_run.main(["--jobs", "2", "--seed", "5", "--count", "4", "--no-examples"]) == 0
    rows = {}
    for line in capsys.readouterr().out.splitlines():
        words = line.rsplit(maxsplit=5)
        if len(words) == 6 and words[1].isdigit():
            rows.setdefault(words[0], []).append([int(w) for w in words[1:]])
    assert [row[0] for row in rows["shard 0"] + rows["shard 1"]] == [2, 2]
    total = [a + b for a, b in zip(rows["shard 0"][0], rows["shard 1"][0])]
    assert rows["total"] == [total, total] and rows["random"] == [total]
    assert total[1] > 0 and total[3] == 0


@pytest.mark.parametrize("options", [["--shard", "2/2"], ["--shard", "1"], ["--jobs", "0"],
                                     ["--jobs", "2", "--waves"], ["--jobs", "3", "--count", "2"],
                                     ["--jobs", "2", "--tests", "all"],
                                     ["--sim", "icarus", "--ub-access", "backdoor"]])
def test_bad_shard_job_and_access_options_are_usage_errors(options, monkeypatch, capsys):
    monkeypatch.setattr(tb_run.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(tb_run, "build", lambda *args, **kwargs: pytest.fail("built"))
    with pytest.raises(SystemExit) as stop:
        tb_run.main(options + ["--no-examples"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip()
