"""The RTL against the golden model in cocotb (tb/test_mte.py), launched from pytest.

One build and one simulator run: the seed examples, 50 random programs, one program per
error class, the corpus of tests/programs/, the bus fault test and the reset test, UB
loaded and read in place (the backdoor). The tests below each check their part of that
run's report; others run a few programs through the test port and check that port and
backdoor agree (tests/test_cocotb_parallel.py: processes sharing a checkout).
"""

import random
import sys

import pytest

from model.isa import ErrorCode
from tb import run as tb_run
from tb.programs import ERROR_CLASSES

RANDOM_PROGRAMS = 50


@pytest.fixture(scope="module")
def simulation():
    runner, build_dir = tb_run.build("verilator", "a5", 32, waves=False)
    args = tb_run.argument_parser().parse_args(
        ["--seed", "1", "--count", str(RANDOM_PROGRAMS), "--errors", "--profile", "a5",
         "--corpus"])
    result = tb_run.run(runner, build_dir, tb_run.ALL_TESTS, tb_run.environment(args),
                        waves=False)
    return result.records, result.failed


def _failures(records):
    return [f for r in records for f in r["failures"]] + \
        [f"re-run: {r['rerun']}" for r in records if r["failures"]]


def test_every_cocotb_test_passed(simulation):
    records, failed = simulation
    assert not failed, "\n".join([f"failed: {', '.join(failed)}"] + _failures(records))


def test_seed_examples(simulation):
    records = [r for r in simulation[0] if r["category"] == "example"]
    assert len(records) >= 6
    assert not _failures(records)


def test_random_programs(simulation):
    records = [r for r in simulation[0] if r["category"] == "random"]
    assert len(records) == RANDOM_PROGRAMS
    assert sum(r["commands"] for r in records) > 10 * RANDOM_PROGRAMS
    assert any(r["compares"] > 1 for r in records), "no program was compared at a wait point"
    assert not _failures(records)


def test_random_programs_ordered_by_tokens_alone(simulation):
    """Some of the random programs order their pipes with buffer-ID tokens and no flag
    between two of the engine's pipes; they too give the model's bytes."""
    from tb.programs import case_seed, generate, spec
    tokened = {f"random {spec(seed)}" for seed in map(lambda i: case_seed(1, i),
                                                        range(RANDOM_PROGRAMS))
               if "get_buf" in generate(seed).text and "set_flag[" not in generate(seed).text}
    records = [r for r in simulation[0] if r["case"] in tokened]
    assert len(records) >= 5
    assert not _failures(records)


@pytest.mark.parametrize("code", ERROR_CLASSES, ids=lambda c: c.name)
def test_error_class(simulation, code):
    records = [r for r in simulation[0] if r["category"] == "error"
               and r["case"].endswith(f"/{ErrorCode(code).name}")]
    assert records, f"no program ending in {code.name} ran"
    assert not _failures(records)


def test_corpus_programs(simulation):
    """Every program of tests/programs/ ran on the RTL with the model's memories at the
    end (tests/test_corpus.py holds the model to bytes worked out independently)."""
    from tb.corpus import programs
    records = [r for r in simulation[0] if r["category"] == "corpus"]
    assert sorted(r["case"] for r in records) == sorted(f"corpus {p.name}"
                                                         for p in programs())
    assert not _failures(records)


def test_bus_faults(simulation):
    records = [r for r in simulation[0] if r["category"] == "bus fault"]
    assert len(records) == 8
    assert not _failures(records)


def test_reset_mid_transfer(simulation):
    records = [r for r in simulation[0] if r["category"] == "reset"]
    assert len(records) == 3
    assert not _failures(records)


def test_mte_run_both_engines(tmp_path, capsys):
    """`mte run --engine both` runs a generated program on the model and the RTL and finds
    them equal; the same program with its last command breaking a rule exits 1 on both."""
    from cli import main
    from tb.programs import generate, write_case
    for case, status in ((generate(0x5EED, None), 0),
                         (generate(0x5EED, ErrorCode.UB_RANGE), 1)):
        line = write_case(case, tmp_path / f"case{status}")
        assert main(line.split()[1:] + ["--engine", "both"]) == status
        out, err = capsys.readouterr()
        assert "model and rtl agree" in out if status == 0 else err.startswith("UB_RANGE")


V_COPY = ("pto.copy_ubuf_to_ubuf %u, %v, %c0, %c64, %c64, %c0, %c0 : "
          "!pto.ptr<u8, ub>, !pto.ptr<u8, ub>, i64, i64, i64, i64, i64")
RUN_ARGS = ["--gm", "0x100000:4096", "--bind", "u=0", "--bind", "v=0x20000"]


def test_a_pipe_runs_set_flags_far_ahead_of_their_waits(tmp_path, capsys):
    """MTE3 waits behind a long V copy while MTE2 sets one flag ten times, each set
    followed in program order by MTE3's wait: MTE2 runs ahead of the waits by more than
    the engine's 7 counted sets, and its eighth set waits for a place instead of being
    lost. Both engines agree."""
    from cli import main
    program = tmp_path / "run_ahead.pto"
    program.write_text("\n".join(
        [V_COPY, "pto.set_flag[PIPE_V, PIPE_MTE3, EVENT_ID1]",
         "pto.wait_flag[PIPE_V, PIPE_MTE3, EVENT_ID1]"]
        + ["pto.set_flag[PIPE_MTE2, PIPE_MTE3, EVENT_ID0]",
           "pto.wait_flag[PIPE_MTE2, PIPE_MTE3, EVENT_ID0]"] * 10))
    assert main(["run", str(program), "--engine", "both"] + RUN_ARGS) == 0
    assert "model and rtl agree" in capsys.readouterr().out


def test_mte_run_reports_an_rtl_hang(tmp_path, capsys, monkeypatch):
    """A program the RTL cannot finish ends `mte run --engine rtl` and `--engine both` with
    exit 1 and one line saying so. With the parser's limit of 7 outstanding set_flags per
    flag lifted, this one sets a flag 8 times while MTE3, which waits on it, is held
    behind a V copy, then fills MTE2's queue: MTE2 holds at its eighth set, the command
    stream behind MTE2's full queue, and MTE3's waits are never sent; the model runs it."""
    from model import parser
    from cli import main
    monkeypatch.setattr(parser, "FLAG_DEPTH", 8)
    program = tmp_path / "held_set.pto"
    program.write_text("\n".join(
        [V_COPY, "pto.set_flag[PIPE_V, PIPE_MTE3, EVENT_ID1]"]
        + ["pto.set_flag[PIPE_MTE2, PIPE_MTE3, EVENT_ID0]"] * 8
        + ["pto.set_loop1_stride_outtoub %c32, %c32 : i64, i64"] * 9
        + ["pto.wait_flag[PIPE_V, PIPE_MTE3, EVENT_ID1]"]
        + ["pto.wait_flag[PIPE_MTE2, PIPE_MTE3, EVENT_ID0]"] * 8))
    args = ["run", str(program)] + RUN_ARGS
    assert main(args) == 0
    capsys.readouterr()
    for engine in ("rtl", "both"):
        assert main(args + ["--engine", engine]) == 1
        err = capsys.readouterr().err
        assert "the RTL hung: command 17 not taken" in err
        assert "mte2: busy=1 completed=7" in err and "mte3: busy=0 completed=0" in err


def test_icarus_missing_is_a_usage_error(tmp_path, monkeypatch, capsys):
    """`--sim icarus` with no iverilog on PATH stops before anything is built, and says
    how to install it."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(tb_run, "build", lambda *args, **kwargs: pytest.fail("built"))
    with pytest.raises(SystemExit) as stop:
        tb_run.main(["--sim", "icarus", "--count", "0"])
    assert stop.value.code == 2
    assert "apt-get install iverilog" in capsys.readouterr().err


def test_all_names_every_cocotb_test(monkeypatch):
    """`--tests all` runs every cocotb test of tb/test_mte.py but `cli_program` (`mte run
    --engine rtl`'s, which runs a job file): `make sim-icarus` asks for all, so a test added
    there and to ALL_TESTS runs under Icarus with no other list to update."""
    import ast
    from pathlib import Path
    module = ast.parse((Path(tb_run.__file__).parent / "test_mte.py").read_text())
    defined = {node.name for node in module.body if isinstance(node, ast.AsyncFunctionDef)
               and any("cocotb.test" in ast.unparse(d) for d in node.decorator_list)}
    assert set(tb_run.ALL_TESTS) == defined - {"cli_program"}
    ran = []
    monkeypatch.setattr(tb_run, "build", lambda *args, **kwargs: (None, None))
    monkeypatch.setattr(tb_run, "run", lambda runner, build_dir, tests, *args: ran.append(tests)
                        or pytest.fail("ran"))
    with pytest.raises(pytest.fail.Exception):
        tb_run.main(["--tests", "all", "--count", "0"])
    assert ran == [list(tb_run.ALL_TESTS)]


@pytest.mark.parametrize("names", ["regression,resets", "", "all,regression"])
def test_unknown_tests_are_a_usage_error(names, monkeypatch, capsys):
    """A name that is no cocotb test stops before anything is built, and lists the names."""
    monkeypatch.setattr(tb_run, "build", lambda *args, **kwargs: pytest.fail("built"))
    with pytest.raises(SystemExit) as stop:
        tb_run.main(["--tests", names, "--count", "0"])
    assert stop.value.code == 2
    assert ", ".join(tb_run.ALL_TESTS) + ", or all" in capsys.readouterr().err


def test_icarus_builds_are_verilog_2005(tmp_path):
    """Under any SystemVerilog generation Icarus gives the generated Verilog's declaration
    initializers no time-zero event, and much of the engine stays X (tb/run.py,
    ICARUS_ARGS): an Icarus build's last -g option is -g2005, and a traced build's
    waveform module is Verilog-2005, which Yosys reads without -sv."""
    from hdl.fpga.build import yosys
    for waves in (False, True):
        args = tb_run.build_args("icarus", waves, tmp_path)
        assert [arg for arg in args if arg.startswith("-g")][-1] == "-g2005"
    tb_run.write_build_files("icarus", True, tmp_path, tb_run.TOPLEVEL)
    dump = tmp_path / f"{tb_run.ICARUS_DUMP}.v"
    assert str(dump) in args and f"$dumpvars(0, {tb_run.TOPLEVEL})" in dump.read_text()
    yosys(f"read_verilog {dump.name}", tmp_path)


def test_unknown_corpus_program_is_a_usage_error(monkeypatch, capsys):
    """`--corpus NAME` with no such program in tests/programs/ stops before anything is
    built; a known name runs that program alone (no examples, no random programs)."""
    monkeypatch.setattr(tb_run, "build", lambda *args, **kwargs: pytest.fail("built"))
    with pytest.raises(SystemExit) as stop:
        tb_run.main(["--corpus", "no_such_program"])
    assert stop.value.code == 2
    assert "no corpus program no_such_program" in capsys.readouterr().err
    seen = {}
    monkeypatch.setattr(tb_run, "build", lambda *a, **k: (None, None))
    monkeypatch.setattr(tb_run, "run", lambda runner, build_dir, tests, env, *a:
                        seen.update(env) or pytest.fail("ran"))
    with pytest.raises(pytest.fail.Exception):
        tb_run.main(["--corpus", "software_loops"])
    assert (seen["MTE_CORPUS"], seen["MTE_COUNT"], seen["MTE_EXAMPLES"]) == \
        ("software_loops", "0", "0")


@pytest.mark.long
def test_the_port_runs_the_regression_too():
    """`--ub-access port`: the test port, part of the design, loads and reads UB."""
    runner, build_dir = tb_run.build("verilator", "a5", 32, waves=False)
    args = tb_run.argument_parser().parse_args(
        ["--seed", "3", "--count", "3", "--no-examples", "--ub-access", "port"])
    result = tb_run.run(runner, build_dir, ["regression"], tb_run.environment(args),
                        waves=False)
    assert not result.failed, "\n".join(_failures(result.records))
    assert len(result.records) == 3


def backdoor_matches_port(profile, width):
    """tb/test_ub_access.py: whole images in place read through the port, and through the
    port read in place."""
    runner, build_dir = tb_run.build("verilator", profile, width, waves=False)
    result = tb_run.run(runner, build_dir, ["backdoor_matches_port"],
                        {"MTE_PROFILE": profile}, waves=False, test_module="tb.test_ub_access")
    assert result.ran == ["backdoor_matches_port"] and not result.failed


@pytest.mark.long
def test_ub_backdoor_matches_the_port():
    """At the widest UB word of the suite (the narrowest: tests/test_cocotb_narrow.py)."""
    backdoor_matches_port("a5", 32)


def test_build_progress_goes_after_the_error_line(tmp_path, capsys, monkeypatch):
    """`mte run --engine rtl` that builds first: its progress line is on stdout, and
    stderr's first line starts with the SPEC error code."""
    from cli import main
    from tb.programs import generate, write_case
    real_build = tb_run.build

    def building(*args, progress=sys.stderr, **kwargs):
        print("building (as a cold build says)", file=progress)
        return real_build(*args, progress=progress, **kwargs)

    monkeypatch.setattr(tb_run, "build", building)
    line = write_case(generate(0x5EED, ErrorCode.UB_RANGE), tmp_path).split()[1:]
    assert main(line + ["--engine", "rtl"]) == 1
    out, err = capsys.readouterr()
    assert err.startswith("UB_RANGE") and out.startswith("building")


# Token 0 passes MTE2 -> MTE3 -> MTE2 -> V: each pipe reaches its get_buf long before its
# turn (MTE2 its second one before MTE3 has taken the token), so only handing the token
# to the get_buf next in program order gives the model's bytes.
TOKEN_RELAY = """
pto.get_buf "PIPE_MTE2", 0, 0
pto.mte_gm_ub %g, %u, %c0, %c96 nburst(%c4, %c100, %c96) : !pto.ptr<u8, gm>, !pto.ptr<u8, ub>, i64 x5
pto.rls_buf "PIPE_MTE2", 0, 0
pto.get_buf "PIPE_MTE3", 0, 1
pto.mte_ub_gm %u, %h, %c96 nburst(%c4, %c96, %c128) : !pto.ptr<u8, ub>, !pto.ptr<u8, gm>, i64 x4
pto.rls_buf "PIPE_MTE3", 0, 1
pto.get_buf #pto.pipe<PIPE_MTE2>, %c0_i64, %c0_i64 : i64, i64
pto.mte_gm_ub %g2, %u, %c0, %c96 nburst(%c4, %c100, %c96) : !pto.ptr<u8, gm>, !pto.ptr<u8, ub>, i64 x5
pto.rls_buf <PIPE_MTE2>, 0, 0
pto.get_buf "PIPE_V", 0, 0
pto.mte_ub_ub %u, %v, %c12 nburst(%c1, %c0, %c0) : !pto.ptr<u8, ub>, !pto.ptr<u8, ub>, i64 x4
pto.rls_buf "PIPE_V", 0, 0
"""


def token_args(tmp_path):
    """GM of random bytes, so a copy run out of its turn shows."""
    (tmp_path / "gm.bin").write_bytes(random.Random(55).randbytes(8192))
    return ["--gm", f"0x100000={tmp_path / 'gm.bin'}", "--bind", "g=0x100000",
            "--bind", "g2=0x100400", "--bind", "h=0x101000", "--bind", "u=0",
            "--bind", "v=0x2000"]


def test_mte_run_both_engines_agree_on_a_token_relay(tmp_path, capsys):
    from cli import main
    program = tmp_path / "relay.pto"
    program.write_text(TOKEN_RELAY)
    assert main(["run", str(program), "--engine", "both"] + token_args(tmp_path)) == 0
    assert "model and rtl agree" in capsys.readouterr().out


def test_a_token_order_the_parser_refuses_hangs_the_rtl(tmp_path, capsys, monkeypatch):
    """What the token rule guards against: with it lifted, MTE2 takes token 0 twice with
    no release between, and waits for itself; the model runs the program, the RTL hangs."""
    from model import parser
    from cli import main
    monkeypatch.setattr(parser, "_token_misuse", lambda *args: None)
    program = tmp_path / "twice.pto"
    program.write_text(TOKEN_RELAY.replace('pto.rls_buf "PIPE_MTE2", 0, 0\n', "", 1))
    args = ["run", str(program)] + token_args(tmp_path)
    assert main(args) == 0
    capsys.readouterr()
    assert main(args + ["--engine", "rtl"]) == 1
    assert "the RTL hung" in capsys.readouterr().err
