"""The PTOAS grammar around the DMAs (issue 55): clause keywords in grouped type lists,
l2_cache_ctl and loop1/loop2 clauses, the si* types, scalar code (arith, scf.for, scf.if,
core queries) and compute ops skipped with --skip-compute."""

from collections import Counter

import pytest

from model import scalar
from cli import main
from model.engine import Engine
from model.errors import MteError, ProgramError
from model.isa import DTYPE_BY_NAME, ErrorCode
from model.parser import parse

GM_UB = ("pto.mte_gm_ub %g, %u, %c0, %c64 nburst(%c2, %c64, %c64) {clauses}\n"
         "    : !pto.ptr<f32, gm>, !pto.ptr<f32, ub>, i64 x5{types}")


def program_error(text, bindings=None, **kwargs):
    with pytest.raises(ProgramError) as info:
        parse(text, bindings or {"g": 0x1000, "u": 0}, **kwargs)
    return info.value


def values(text, bindings=None, **kwargs):
    return [(i.mnemonic, i.values) for i in parse(text, bindings or {"g": 0x1000, "u": 0},
                                                  **kwargs)]


# --- grouped type lists and clauses ------------------------------------------------------

LOOPS = "loop(%c3, %c256, %c128) loop(%c2, %c1024, %c512) pad(%v, %c1, %c1)"
PAD = "%v = arith.constant 1.5 : f32\n"


def test_clause_keywords_head_their_types_as_ptoas_prints_them():
    flat = values(PAD + GM_UB.format(clauses=LOOPS, types=", i64 x6, f32, i64, i64"))
    headed = values(PAD + GM_UB.format(
        clauses=LOOPS, types=", loop i64, i64, i64, loop2 i64, i64, i64, pad f32, i64, i64"))
    assert headed == flat
    assert flat[0] == ("set_loop_size_outtoub", {"loop1_count": 3, "loop2_count": 2})


@pytest.mark.parametrize("types, clause, wrong", [
    # the second loop's types not headed: they run on under the first loop's keyword
    (", loop i64, i64, i64, i64, i64, i64, pad f32, i64, i64", "loop(%c2",
     "i64, i64, i64, pad"),
    # pad's types headed by loop
    (", loop i64, i64, i64, loop i64, i64, i64, loop f32, i64, i64", "pad(", "loop f32"),
    # a keyword one type late
    (", i64, loop i64, i64, loop i64, i64, i64, pad f32, i64, i64", "loop(%c3",
     "i64, loop i64, i64, loop"),
])
def test_a_malformed_clause_type_list_names_the_clause_and_its_column(types, clause, wrong):
    """The error stands at the type where the clause's keyword should be (`wrong` starts
    there), and names the clause and its column."""
    text = PAD + GM_UB.format(clauses=LOOPS, types=types)
    error = program_error(text)
    line = text.splitlines()[error.line - 1]
    assert error.line == 3 and line[error.column - 1:].startswith(wrong)
    clause_line = text.splitlines()[1]
    assert f"{clause.split('(')[0]}(...) at column {clause_line.index(clause) + 1}" \
        in error.message


def test_l2_cache_ctl_clause_in_place_of_the_operand():
    clause = values("pto.mte_ub_gm %u, %g, %c64 nburst(%c1, %c64, %c64) l2_cache_ctl(%c5)\n"
                    "  loop(%c2, %c64, %c128) : !pto.ptr<f32, ub>, !pto.ptr<f32, gm>, i64,\n"
                    "  i64, i64, i64, i64, loop i64, i64, i64")
    positional = values("pto.mte_ub_gm %u, %g, %c5, %c64 nburst(%c1, %c64, %c64)\n"
                        "  loop(%c2, %c64, %c128) : !pto.ptr<f32, ub>, !pto.ptr<f32, gm>, "
                        "i64 x8")
    assert clause == positional and clause[-1][1]["l2_cache_ctl"] == 5
    gm_ub = values("pto.mte_gm_ub %g, %u, %c64 nburst(%c1, %c64, %c64) l2_cache_ctl(%c3)"
                   " : !pto.ptr<f32, gm>, !pto.ptr<f32, ub>, i64 x5")
    assert gm_ub[-1][1]["l2_cache_ctl"] == 3
    twice = program_error("pto.mte_ub_gm %u, %g, %c5, %c64 nburst(%c1, %c64, %c64) "
                          "l2_cache_ctl(%c5) : !pto.ptr<f32, ub>, !pto.ptr<f32, gm>, i64 x6")
    assert "l2_cache_ctl twice" in twice.message and twice.column == 57
    missing = program_error("pto.mte_gm_ub %g, %u, %c64 nburst(%c1, %c64, %c64) : "
                            "!pto.ptr<f32, gm>, !pto.ptr<f32, ub>, i64 x4")
    assert "takes 4 operands before its clauses, found 3" in missing.message


def test_loop1_and_loop2_clauses_set_their_named_loops():
    (size, loop1, loop2, _) = values(
        GM_UB.format(clauses="loop2(%c3, %c4096, %c2048)", types=", loop2 i64, i64, i64"))
    assert size[1] == {"loop1_count": 1, "loop2_count": 3}
    assert loop1[1] == {"src_stride": 0, "dst_stride": 0}
    assert loop2[1] == {"src_stride": 4096, "dst_stride": 2048}
    swapped = values(GM_UB.format(clauses="loop2(%c3, %c4096, %c2048) loop1(%c2, %c64, %c64)",
                                  types=", i64 x6"))
    assert swapped[0][1] == {"loop1_count": 2, "loop2_count": 3}
    mixed = program_error(GM_UB.format(clauses="loop1(%c2, %c64, %c64) loop(%c3, %c1, %c1)",
                                       types=", i64 x6"))
    assert "mixes loop(...) with loop1(...)" in mixed.message
    twice = program_error(GM_UB.format(clauses="loop1(%c2, %c64, %c64) loop1(%c3, %c1, %c1)",
                                       types=", i64 x6"))
    assert "two loop1(...) clauses" in twice.message


# --- si types ----------------------------------------------------------------------------

@pytest.mark.parametrize("signed, plain", [("si8", "i8"), ("si16", "i16"), ("si32", "i32"),
                                            ("si64", "i64")])
def test_signed_spellings_are_their_integer_types(signed, plain):
    assert DTYPE_BY_NAME[signed] == DTYPE_BY_NAME[plain]
    size = DTYPE_BY_NAME[plain].size
    (pad, copy) = values(f"%v = arith.constant -1 : {signed}\npto.set_mov_pad_val %v : {signed}\n"
                         f"pto.copy_gm_to_ubuf %g, %u, %c0, %c1, %c{size}, %c1, %c0, %true, %c0,"
                         f" %c{size}, %c32 : !pto.ptr<{signed}, gm>, !pto.ptr<{signed}, ub>, "
                         "i64 x5, i1, i64 x3")
    assert pad[1]["pad_val"] == (1 << 8 * size) - 1
    assert copy[1]["dtype"] == DTYPE_BY_NAME[plain].code


def test_a_signed_pad_value_out_of_range_is_field_range():
    (instr,) = parse("%v = arith.constant 300 : i64\npto.set_mov_pad_val %v : si8")
    assert instr.deferred[0] == ErrorCode.FIELD_RANGE


# --- scalar code -------------------------------------------------------------------------

def scalar_values(text, bindings=None):
    """The lengths of the set_loop_size writes the program's values end in."""
    return [i.values["loop1_count"] for i in parse(text, bindings)]


def use(name):
    return f"pto.set_loop_size_outtoub %{name}, %c1 : i64, i64\n"


@pytest.mark.parametrize("op, a, b, result", [
    ("addi", 7, 5, 12), ("subi", 7, 9, -2), ("muli", -3, 5, -15),
    ("divsi", -7, 2, -3), ("remsi", -7, 2, -1), ("divui", 7, 2, 3), ("remui", 7, 2, 1),
    ("minsi", -4, 3, -4), ("maxsi", -4, 3, 3),
])
def test_arith_integer_ops(op, a, b, result):
    text = (f"%a = arith.constant {a} : i64\n%b = arith.constant {b} : i64\n"
            f"%r = arith.{op} %a, %b : i64\n" + use("r"))
    assert scalar_values(text) == [result]


def test_values_stay_exact_and_a_field_overflow_is_field_range_at_its_op():
    text = ("%a = arith.constant 0x7fff : i16\n%b = arith.muli %a, %a : i16\n"
            "%i = arith.index_cast %b : i16 to index\n" + use("i"))
    (instr,) = parse(text)
    assert instr.values["loop1_count"] == 0x7fff * 0x7fff
    with pytest.raises(MteError) as error:
        Engine("a5").run([instr])
    assert error.value.code == ErrorCode.FIELD_RANGE and error.value.line == 4


def test_division_by_zero_and_unsigned_of_a_negative_are_program_errors():
    zero = program_error("%a = arith.constant 1 : i64\n%r = arith.divsi %a, %c0 : i64")
    assert "division by zero" in zero.message and (zero.line, zero.column) == (2, 6)
    negative = program_error("%r = arith.remui %c-1, %c2 : i64")
    assert "negative" in negative.message


def test_cmpi_select_and_casts():
    text = ("%lt = arith.cmpi slt, %c-1, %c0 : index\n%ult = arith.cmpi ugt, %c5, %c3 : i64\n"
            "%s = arith.select %lt, %c7, %c9 : index\n%x = arith.extsi %s : i32 to i64\n"
            "%y = arith.select %ult, %x, %c1 : i64\n" + use("s") + use("y"))
    assert scalar_values(text) == [7, 7]
    bad = program_error("%p = arith.cmpi less, %c1, %c2 : i64")
    assert "unknown cmpi predicate 'less'" in bad.message


def test_scf_for_unrolls_with_its_induction_variable():
    text = ("scf.for %i = %c2 to %c11 step %c3 {\n  %x = arith.muli %i, %c10 : index\n"
            "  " + use("x") + "} {attr}\n")
    assert scalar_values(text) == [20, 50, 80]
    assert scalar_values("scf.for %i = %c5 to %c5 step %c1 { " + use("i") + "}") == []


def test_scf_for_iter_args_carry_values_and_give_the_result():
    text = ("%r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %c1) -> (i64) {\n"
            "  %n = arith.muli %acc, %c3 : i64\n  " + use("n") + "  scf.yield %n : i64\n}\n"
            + use("r"))
    assert scalar_values(text) == [3, 9, 27, 81, 81]


def test_unrolling_is_bounded(monkeypatch):
    monkeypatch.setattr(scalar, "MAX_UNROLLED", 100)
    text = ("scf.for %i = %c0 to %c10 step %c1 {\n  scf.for %j = %c0 to %c11 step %c1 {\n"
            "  }\n}")
    error = program_error(text)
    assert "more than 100 iterations" in error.message and error.line == 2
    step = program_error("scf.for %i = %c0 to %c10 step %c0 { }")
    assert "step 0 is not positive" in step.message


def test_scf_if_takes_the_branch_its_condition_names():
    text = ("%t = arith.cmpi eq, %n, %c4 : index\n"
            "%r = scf.if %t -> (index) {\n  scf.yield %c10 : index\n} else {\n"
            "  pto.not_an_op_in_a_branch_not_taken\n}\n" + use("r"))
    assert scalar_values(text, {"n": 4}) == [10]
    assert "unknown op" in program_error(text, {"n": 5}).message
    assert scalar_values("scf.if %false { " + use("c3") + "}\n" + use("c4")) == [4]


def test_core_queries_take_their_values_from_the_bindings(tmp_path, capsys):
    text = "%b = pto.get_block_idx\n%n = pto.get_subblock_num : index\n" + use("b") + use("n")
    assert scalar_values(text, {"block_idx": 3, "subblock_num": 2}) == [3, 2]
    error = program_error(text, {"subblock_num": 2})
    assert "--bind block_idx=N" in error.message and error.line == 1
    program = tmp_path / "k.pto"
    program.write_text(text)
    assert main(["run", str(program), "--bind", "block_idx=1", "--bind",
                 "subblock_num=1"]) == 0


# --- compute ops -------------------------------------------------------------------------

KERNEL = """\
pto.set_flag[PIPE_MTE2, PIPE_V, EVENT_ID0]
pto.wait_flag[PIPE_MTE2, PIPE_V, EVENT_ID0]
pto.vecscope {
  %m = pto.pset_b32 "PAT_ALL" : !pto.mask<b32>
  scf.for %i = %c0 to %c16 step %c1 : i16 {
    %v = pto.vlds %u[%i] : !pto.ptr<f32, ub> -> !pto.vreg<64xf32>
    pto.vsts %v, %u[%i], %m : !pto.vreg<64xf32>, !pto.ptr<f32, ub>, !pto.mask<b32>
  } {pto.tilelib.candidate = "x", pto.vmi.fusion.principal_loop}
}
%w = pto.vlds %u[%c0] : !pto.ptr<f32, ub> -> !pto.vreg<64xf32>
pto.copy_ubuf_to_gm %u, %g, %c0, %c1, %c64, %c0, %c64, %c64
    : !pto.ptr<f32, ub>, !pto.ptr<f32, gm>, i64 x6
"""


def test_a_compute_op_is_an_error_naming_it_unless_skipped():
    error = program_error(KERNEL)
    assert (error.line, error.column) == (3, 1)
    assert "pto.vecscope is a compute op" in error.message
    assert "--skip-compute" in error.message
    skipped = Counter()
    instrs = parse(KERNEL, {"g": 0x1000, "u": 0}, skipped=skipped)
    assert [i.mnemonic for i in instrs] == ["set_flag", "wait_flag", "copy_ubuf_to_gm"]
    assert skipped == {"pto.vecscope": 1, "pto.pset_b32": 1,
                       "scf.for": 1, "pto.vlds": 2, "pto.vsts": 1}


def test_a_skipped_compute_op_ends_where_the_next_op_starts():
    """An op written without its `pto.` prefix after a skipped one still runs."""
    skipped = Counter()
    instrs = parse("pto.vsts %v, %u[%c0], %m : !pto.vreg<64xf32>, !pto.ptr<f32, ub>\n"
                   "set_flag[PIPE_MTE2, PIPE_V, EVENT_ID0]", {"u": 0}, skipped=skipped)
    assert [i.mnemonic for i in instrs] == ["set_flag"] and skipped == {"pto.vsts": 1}


def test_mte_run_skip_compute_prints_what_it_skipped(tmp_path, capsys):
    program = tmp_path / "kernel.pto"
    program.write_text(KERNEL)
    args = ["run", str(program), "--bind", "g=0x1000", "--bind", "u=0", "--gm", "0x1000:4096"]
    assert main(args) == 2
    assert "pto.vecscope is a compute op" in capsys.readouterr().err
    assert main(args + ["--skip-compute"]) == 0
    out = capsys.readouterr().out
    assert "compute ops skipped: pto.pset_b32 1, pto.vecscope 1, " \
           "pto.vlds 2, pto.vsts 1, scf.for 1" in out
