"""Fuzzing the text and option interfaces: programs drawn from the grammar (copies,
grouped forms, tile ops, scalar code) and then damaged, arbitrary bytes, arbitrary option values. Whatever comes in, the parser raises
ProgramError or gives instructions, the engine MteError or a result, and `mte` exits 0,
1 or 2 with no other exception.

`make test` runs a bounded number of examples (MTE_FUZZ_EXAMPLES, 60 each by default,
tens of seconds in all); `make fuzz` runs many more.
"""

import os

from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from model.assembler import encode_instr
from cli import main
from model.engine import Engine
from model.errors import MteError, ProgramError
from model.isa import OP_BY_MNEMONIC
from model.parser import parse

EXAMPLES = int(os.environ.get("MTE_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

OPS = sorted(OP_BY_MNEMONIC) + ["mte_gm_ub", "mte_ub_gm", "mte_ub_ub", "castptr", "addptr",
                                "barrier", "get_buf", "rls_buf", "tassign", "tload",
                                "tstore", "make_tensor_view", "partition_view"]
OPERANDS = ["%c0", "%c1", "%c2", "%c32", "%c64", "%c128", "%c1_i64", "%c-1", "%c0_i64_0",
            "%true", "%false", "%arg0", "%ub", "%x", "%p", "%c4294967296", "0", "7"]
TYPES = ["i64", "i1", "i32", "index", "f16", "f32", "bf16", "!pto.ptr<f32, gm>",
         "!pto.ptr<f16, ub>", "<u8, gm>", "!pto.ptr<i4, ub>", "i64 x3", "i64 x11",
         "!pto.tile<loc=ub, dtype=f32, rows=8, cols=8>", "!pto.tensor_view<8x8xf32>"]
FLAGS = ["[PIPE_MTE2, PIPE_MTE3, EVENT_ID0]", '["PIPE_MTE3", "PIPE_MTE2", "EVENT_ID1"]',
         "[<PIPE_V>, <PIPE_S>, <EVENT_ID15>]", "#pto.pipe<PIPE_ALL>", '"PIPE_MTE2"',
         "[PIPE_MTE2, PIPE_MTE22, EVENT_ID0]", "[PIPE_MTE2, PIPE_V, EVENT_ID99]"]
DAMAGE = list("{}()[]<>%@#!:,=\"x-.0 \n") + ["٣", "\ufeff", "\x00", "//", "->", "0x",
                                              "1e400", "module {", "}" * 3]


def lists(elements, low=0, high=4):
    return st.lists(elements, min_size=low, max_size=high)


SMALL = st.sampled_from(["%c0", "%c1", "%c2", "%c32", "%c64", "%c128", "%x"])
ELEMENTS = st.sampled_from(["f32", "f16", "u8", "i16", "f8e4m3", "i4"])


@st.composite
def legacy_statements(draw):
    """A register write or copy with its operands and types, as the ISA table gives them."""
    op = OP_BY_MNEMONIC[draw(st.sampled_from(sorted(OP_BY_MNEMONIC)))]
    if op.mnemonic in ("set_flag", "wait_flag"):
        return f"pto.{op.mnemonic}{draw(st.sampled_from(FLAGS))}"
    elem = draw(ELEMENTS)
    operands, types = [], []
    for f in op.fields:
        if f.name == "dtype":
            continue
        pointer = f.space and f.name.startswith(f.space + "_")
        operands.append(draw(st.sampled_from(["%arg0" if f.space == "gm" else "%ub"]))
                        if pointer else draw(SMALL))
        types.append(f"!pto.ptr<{elem}, {f.space}>" if pointer else "i64")
    return f"pto.{op.mnemonic} {', '.join(operands)} : {', '.join(types)}"


@st.composite
def grouped_statements(draw):
    """mte_gm_ub / mte_ub_gm with their clauses and a type list that matches."""
    elem, loops = draw(ELEMENTS), draw(st.integers(0, 3))
    clauses = "nburst(%s, %s, %s)" % tuple(draw(SMALL) for _ in range(3))
    clauses += "".join(" loop(%s, %s, %s)" % tuple(draw(SMALL) for _ in range(3))
                       for _ in range(loops))
    if draw(st.booleans()):
        return (f"pto.mte_ub_gm %ub, %arg0, {draw(SMALL)} {clauses} : !pto.ptr<{elem}, ub>, "
                f"!pto.ptr<{elem}, gm>, i64 x{4 + 3 * loops}")
    pad = draw(st.booleans())
    return (f"pto.mte_gm_ub %arg0, %ub, %c0, {draw(SMALL)} {clauses}{' pad(%x)' * pad} : "
            f"!pto.ptr<{elem}, gm>, !pto.ptr<{elem}, ub>, i64 x{5 + 3 * loops}"
            f"{', ' + elem if pad else ''}")


@st.composite
def loose_statements(draw):
    """Any op with any operands, clauses and types: mostly shape errors."""
    op = draw(st.sampled_from(OPS))
    parts = [draw(st.sampled_from(["", "pto."])) + op]
    if op in ("castptr", "addptr") or draw(st.integers(0, 5)) == 0:
        parts.insert(0, draw(st.sampled_from(["%p =", "%x =", "%ub ="])))
    if op in ("set_flag", "wait_flag", "barrier", "get_buf", "rls_buf"):
        parts.append(draw(st.sampled_from(FLAGS)))
    parts.append(", ".join(draw(lists(st.sampled_from(OPERANDS), 0, 12))))
    for clause in draw(lists(st.sampled_from(["nburst", "loop", "pad"]), 0, 4)):
        parts.append(f"{clause}({', '.join(draw(lists(st.sampled_from(OPERANDS), 0, 4)))})")
    if draw(st.booleans()):
        parts.append("{sync}")
    if draw(st.integers(0, 4)):
        parts.append(": " + ", ".join(draw(lists(st.sampled_from(TYPES), 0, 12))))
        if draw(st.integers(0, 4)) == 0:
            parts.append("-> " + draw(st.sampled_from(TYPES)))
    return " ".join(parts)


TILE_FIELDS = st.sampled_from(["8x8xf32", "8x8xf32, valid=8x8", "16x16xf16, pad=zero",
                               "8x8xf32, pad=1", "8xabcxf32", "8x8xf32, valid=?x8",
                               "rows=8, cols=8, dtype=f32", "rows=x, cols=8, dtype=f32",
                               "0x0xf32", "8x8xf32, fractal=0x1", "8x8xf32, blayout=col_major",
                               "99999999999x99999999999xf32", "8x8xi4", ""])
VIEW = st.sampled_from(["8x8xf32", "16x16xf16", "?x8xf32", "8xf32", "x", "8x8x8x8x8xf32"])


@st.composite
def tile_statements(draw):
    """pto.tassign / tload / tstore and views, with tile and view types in and out of
    what the model takes."""
    tile = f"!pto.tile_buf<vec, {draw(TILE_FIELDS)}>"
    part = f"!pto.partition_tensor_view<{draw(VIEW)}>"
    full = f"!pto.tensor_view<{draw(VIEW)}>"
    dims = ", ".join(draw(lists(SMALL, 0, 3)))
    return draw(st.sampled_from([
        f"pto.tassign ins(%t, {draw(SMALL)} : {tile}, index)",
        f"%v = pto.make_tensor_view %arg0, shape = [{dims}], strides = [{dims}] : {full}",
        f"%p = pto.partition_view %v, offsets = [{dims}], sizes = [{dims}] : {full} -> {part}",
        f"pto.tload ins(%p : {part}) outs(%t : {tile})",
        f"pto.tstore ins(%t : {tile}) outs(%p : {part})"]))


SCALAR_OPS = st.sampled_from(["addi", "subi", "muli", "divsi", "remsi", "divui", "remui",
                              "maxsi", "minui", "index_cast", "cmpi slt,", "select"])


@st.composite
def scalar_statements(draw):
    """arith ops, scf.for and scf.if regions (their bodies drawn too), scf.yield."""
    kind = draw(st.sampled_from(["arith", "for", "if", "yield"]))
    if kind == "arith":
        op = draw(SCALAR_OPS)
        operands = ", ".join(draw(lists(SMALL, 1, 3)))
        to = " to i64" if op == "index_cast" else ""
        return f"%x = arith.{op} {operands} : index{to}"
    if kind == "yield":
        return f"scf.yield {draw(SMALL)} : index"
    body = "\n".join(draw(lists(st.one_of(legacy_statements(), grouped_statements()), 0, 2)))
    if kind == "if":
        return f"scf.if {draw(st.sampled_from(['%true', '%false', '%x']))} {{\n{body}\n}}"
    carried = draw(st.sampled_from(["", " iter_args(%a = %c0) -> (index)"]))
    return (f"scf.for %i = {draw(SMALL)} to {draw(SMALL)} step {draw(SMALL)}{carried} "
            f"{{\n{body}\n{'scf.yield %i : index' if carried else ''}\n}}")


def statements():
    return st.one_of(legacy_statements(), grouped_statements(), loose_statements(),
                     tile_statements(), scalar_statements())


@st.composite
def constants(draw):
    value = draw(st.sampled_from(["0", "1", "-1", "64", "0x7C00", "1.5", "1e400", "true",
                                  "0x" + "F" * 20, "9" * 30, "nan"]))
    return f"%x = arith.constant {value} : {draw(st.sampled_from(['i64', 'f16'] + TYPES))}"


@st.composite
def programs(draw):
    lines = draw(lists(st.one_of(statements(), constants()), 1, 8))
    if draw(st.booleans()):     # a tile program's usual order: assign, view, part, move
        lines = [draw(tile_statements()) for _ in range(4)] + lines
    if draw(st.booleans()):     # %x defined first, so that later lines can read it
        lines.insert(0, "%x = arith.constant 64 : i64")
    text = "\n".join(lines)
    for _ in range(draw(st.integers(0, 2))):
        wrapper = draw(st.sampled_from(["module {{\n{}\n}}", "func.func @k(%arg0: "
                                        "!pto.ptr<f32, gm>, %ub: i64) {{\n{}\nreturn\n}}",
                                        "module attributes {{a = [1, {{b}}]}} {{\n{}\n}}"]))
        text = wrapper.format(text)
    for _ in range(draw(st.integers(0, 3))):    # damage: a piece cut out, or put in
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:at] + text[at + draw(st.integers(1, 8)):]
        else:
            text = text[:at] + draw(st.sampled_from(DAMAGE)) + text[at:]
    return text


def parsed_or_error(text):
    try:
        return parse(text, {"arg0": 0x1000, "ub": 0x100, "x": 64})
    except ProgramError as error:
        assert error.line >= 1 and error.column >= 1 and error.message
        return None


@FUZZ
@given(programs())
def test_grammar_programs_parse_run_and_encode_or_fail_by_name(text):
    instrs = parsed_or_error(text)
    if instrs is None:
        return
    engine = Engine("a5")
    engine.gm.map(0x1000, 0x1000)
    for instr in instrs[:64]:
        try:
            encode_instr(instr)
        except MteError:
            pass
        try:
            engine.execute(instr)
        except MteError:
            break


@FUZZ
@given(st.sampled_from(["asm", "check", "run"]),
       st.binary(max_size=400) | st.text(max_size=400).map(str.encode))
def test_any_bytes_are_a_program_or_a_usage_error(tmp_path_factory, command, data):
    path = tmp_path_factory.mktemp("fuzz") / "p.pto"
    path.write_bytes(data)
    assert cli(command, path) in (0, 1, 2)


OPTION_TEXT = st.text(st.sampled_from("0123456789xXabcdefg_:=% ,-+.٣４\ufeff/"), max_size=24)


@FUZZ
@given(st.sampled_from(["--gm", "--ub", "--bind", "--dump-gm", "--dump-ub", "--profile",
                        "--engine"]), OPTION_TEXT)
def test_any_option_value_is_a_run_or_a_usage_error(tmp_path_factory, option, value):
    if option == "--engine" and value in ("rtl", "both"):
        return                  # those build the RTL: not for a fuzz loop
    here = tmp_path_factory.mktemp("fuzz")
    (here / "p.pto").write_text("pto.set_loop_size_outtoub %c1, %c1 : i64, i64\n")
    cwd = os.getcwd()
    os.chdir(here)              # where a drawn --dump-ub writes its file
    try:
        assert cli("run", "p.pto", option, value) in (0, 1, 2)
    finally:
        os.chdir(cwd)


def cli(*argv):
    try:
        return main([str(a) for a in argv])
    except SystemExit as exit_:
        return exit_.code


def test_the_grammar_strategy_reaches_programs_that_parse():
    """A fuzz whose programs all fail at their first tokens would test only the tokenizer:
    the strategy must also draw programs that parse into commands, copies among them."""
    copy = find(programs(), lambda text: any(
        instr.mnemonic.startswith("copy_") for instr in parsed_or_error(text) or []),
        settings=settings(max_examples=500, database=None))
    assert "copy" in copy or "mte_" in copy
