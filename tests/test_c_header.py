"""The C header (`mte header`): compiled with gcc and g++, its constants must be the
register map's and the ISA table's, and its encoders must pack every command as
`isa.encode` does. (tb/test_fpga_top.py's c_firmware runs its push and wait on the RTL.)"""

import random
import subprocess
import textwrap
from pathlib import Path

import pytest

from hdl.soc import regmap
from hdl.soc.c_header import c_header
from model import isa

SENTINEL = 0xDEADBEEF      # what an encoder that rejects its values must leave in place


def run_c(tmp_path, body, compiler="gcc", flags=("-std=c99",)):
    """Compiles `body` (the statements of main) against the header and runs it."""
    (tmp_path / "mte_dma.h").write_text(c_header())
    source = tmp_path / "main.c"
    source.write_text('#include <inttypes.h>\n#include <stdio.h>\n#include "mte_dma.h"\n'
                      "int main(void)\n{\n" + body + "    return 0;\n}\n")
    binary = tmp_path / "main"
    subprocess.run([compiler, *flags, "-Wall", "-Wextra", "-pedantic", "-Werror",
                    "-x", "c" if compiler == "gcc" else "c++", str(source), "-o", str(binary)],
                   check=True, capture_output=True, text=True)
    return subprocess.run([binary], check=True, capture_output=True, text=True).stdout


def print_constants(names):
    return "".join(f'    printf("%s %lu\\n", "{n}", (unsigned long)MTE_DMA_{n});\n'
                   for n in names)


def read_constants(text):
    return {name: int(value) for name, value in (line.split() for line in text.splitlines())}


@pytest.mark.parametrize("compiler, flags", [("gcc", ("-std=c99",)), ("g++", ("-std=c++11",))])
def test_compiles_cleanly_as_c_and_cpp(tmp_path, compiler, flags):
    out = run_c(tmp_path, print_constants(["ID_VALUE"]), compiler, flags)
    assert read_constants(out) == {"ID_VALUE": regmap.ID_VALUE}


def test_csr_constants_are_the_register_map(tmp_path):
    expected = {"ID_VALUE": regmap.ID_VALUE, "CMD_FIFO_DEPTH": regmap.CMD_FIFO_DEPTH}
    for r in regmap.REGISTERS:
        expected[r.name] = r.offset
        for f in r.fields:
            expected[f"{r.name}_{f.name.upper()}_SHIFT"] = f.lsb
            expected[f"{r.name}_{f.name.upper()}_MASK"] = ((1 << f.width) - 1) << f.lsb
    assert read_constants(run_c(tmp_path, print_constants(expected))) == expected


def test_isa_constants_are_the_isa_table(tmp_path):
    expected = {"MAX_COMMAND_WORDS": isa.MAX_COMMAND_WORDS}
    expected |= {f"ERR_{e.name}": e.value for e in isa.ErrorCode}
    expected |= {f"PIPE_{p.name}": p.value for p in isa.Pipe}
    expected |= {f"DTYPE_{t.name.upper()}": t.code for t in isa.DTYPES}
    for op in isa.OPS:
        expected[f"OP_{op.mnemonic.upper()}"] = op.opcode.value
        expected[f"{op.mnemonic.upper()}_WORDS"] = op.words
    assert read_constants(run_c(tmp_path, print_constants(expected))) == expected


def encoder_cases(rng):
    """(op, values) to encode: zeros, maxima, random values, and each field one past its
    maximum (where a uint64_t can hold that)."""
    for op in isa.OPS:
        yield op, {f.name: 0 for f in op.fields}
        yield op, {f.name: f.max for f in op.fields}
        for _ in range(8):
            yield op, {f.name: rng.randint(0, f.max) for f in op.fields}
        for wide in op.fields:
            if wide.width < 64:
                values = {f.name: rng.randint(0, f.max) for f in op.fields}
                yield op, values | {wide.name: wide.max + 1 + rng.randint(0, 3)}


def expected_encoding(op, values):
    try:
        return 0, isa.encode(op, values)
    except isa.EncodingError:
        return isa.ErrorCode.FIELD_RANGE.value, [SENTINEL] * op.words


def call_encoder(op, values):
    args = "".join(f", UINT64_C({values[f.name]:#x})" for f in op.fields)
    return ("    {\n"
            f"        uint32_t w[{op.words}];\n"
            f"        int i, rc;\n"
            f"        for (i = 0; i < {op.words}; i++) w[i] = {SENTINEL:#x}u;\n"
            f"        rc = mte_dma_{op.mnemonic}(w{args});\n"
            '        printf("%d", rc);\n'
            f'        for (i = 0; i < {op.words}; i++) printf(" %" PRIu32, w[i]);\n'
            '        printf("\\n");\n'
            "    }\n")


def test_encoders_pack_every_command_as_the_isa_does(tmp_path):
    cases = list(encoder_cases(random.Random(5)))
    out = run_c(tmp_path, "".join(call_encoder(op, values) for op, values in cases))
    results = [[int(x) for x in line.split()] for line in out.splitlines()]
    assert len(results) == len(cases)
    rejected = 0
    for (op, values), (rc, *words) in zip(cases, results, strict=True):
        assert (rc, words) == expected_encoding(op, values), (op.mnemonic, values)
        rejected += rc != 0
    assert rejected == sum(f.width < 64 for op in isa.OPS for f in op.fields)


def test_cli_page_example_compiles(tmp_path):
    """docs/cli.md's C example, in a function with its free names as parameters."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    example = page.split("```c\n", 1)[1].split("```", 1)[0]
    (tmp_path / "mte_dma.h").write_text(c_header())
    (tmp_path / "example.c").write_text(
        '#include "mte_dma.h"\n'
        "uint32_t example(uintptr_t base, uint64_t gm_src, uint64_t ub_dst, uint64_t n_burst,\n"
        "                 uint64_t len_burst, uint64_t src_stride, uint64_t dst_stride);\n"
        "uint32_t example(uintptr_t base, uint64_t gm_src, uint64_t ub_dst, uint64_t n_burst,\n"
        "                 uint64_t len_burst, uint64_t src_stride, uint64_t dst_stride)\n"
        "{\n    uint32_t code = 0;\n" + textwrap.indent(example, "    ")
        + "    return code;\n}\n")
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-c",
                    str(tmp_path / "example.c"), "-o", str(tmp_path / "example.o")],
                   check=True, capture_output=True)
