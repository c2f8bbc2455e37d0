"""The PTO program parser: seed texts, PTOAS kernels, grouped forms, values, errors."""

import math
import random
from pathlib import Path

import numpy as np
import pytest

from model import seeds
from model.assembler import assemble, disassemble
from model.errors import ProgramError
from model.isa import DTYPE_BY_NAME, FLAG_DEPTH, ErrorCode, Opcode, Pipe
from model.floats import decode_float, encode_float
from model.parser import MAX_SOFTWARE_COPIES, parse

F16, F32, I16, I8 = (DTYPE_BY_NAME[n].code for n in ("f16", "f32", "i16", "i8"))
SEED_DIR = Path(__file__).resolve().parents[1] / "docs" / "spec" / "seeds"


def ops(instrs):
    return [i.mnemonic for i in instrs]


def gm_to_ub(gm, ub, n, length, src_stride, dst_stride, dtype, *, left=0, right=0,
             select=0, cache=0):
    return {"gm_src": gm, "ub_dst": ub, "sid": 0, "n_burst": n, "len_burst": length,
            "left_padding": left, "right_padding": right, "data_select_bit": select,
            "l2_cache_ctl": cache, "src_stride": src_stride, "dst_stride": dst_stride,
            "dtype": dtype}


def ub_to_gm(ub, gm, n, length, dst_stride, src_stride, dtype, cache=0):
    return {"ub_src": ub, "gm_dst": gm, "sid": 0, "n_burst": n, "len_burst": length,
            "l2_cache_ctl": cache, "dst_stride": dst_stride, "src_stride": src_stride,
            "dtype": dtype}


def program_error(text, bindings=None):
    with pytest.raises(ProgramError) as info:
        parse(text, bindings)
    return info.value


# --- the seed examples ---------------------------------------------------------------

SEED_EXPECTED = {
    seeds.TILE_LOAD_F32: (
        ["set_loop_size_outtoub", "copy_gm_to_ubuf"],
        gm_to_ub(0x1000, 0, 32, 128, 128, 128, F32)),
    seeds.MATRIX_TILE_LOAD_F16: (
        ["set_loop_size_outtoub", "set_loop1_stride_outtoub", "set_loop2_stride_outtoub",
         "copy_gm_to_ubuf"],
        gm_to_ub(seeds.matrix_at(256, 128), 0x8000, 64, 256, 1024, 256, F16)),
    seeds.PADDED_LOAD_F16: (
        ["set_loop_size_outtoub", "set_loop1_stride_outtoub", "set_loop2_stride_outtoub",
         "copy_gm_to_ubuf"],
        gm_to_ub(0x2000, 0x100, 64, 200, 200, 256, F16, select=1)),
    seeds.TILE_STORE_F32: (
        ["set_loop_size_ubtoout", "copy_ubuf_to_gm"],
        ub_to_gm(0x4000, 0x3000, 32, 128, 128, 128, F32)),
    seeds.MATRIX_TILE_STORE_F16: (
        ["set_loop_size_ubtoout", "set_loop1_stride_ubtoout", "set_loop2_stride_ubtoout",
         "copy_ubuf_to_gm"],
        ub_to_gm(0, seeds.matrix_at(512, 256), 64, 256, 1024, 256, F16)),
    seeds.BATCH_LOAD_LOOP1: (
        ["set_loop_size_outtoub", "set_loop1_stride_outtoub", "set_loop2_stride_outtoub",
         "copy_gm_to_ubuf"],
        gm_to_ub(0x6000, 0x10000, 8, 256, 256, 256, F16)),
}


@pytest.mark.parametrize("example", seeds.EXAMPLES[:6], ids=lambda e: e.name)
def test_seed_000_examples_parse_to_their_commands(example):
    instrs = parse(example.program, example.bindings)
    mnemonics, copy_values = SEED_EXPECTED[example.program]
    assert ops(instrs) == mnemonics
    assert instrs[-1].values == copy_values
    assert all(i.deferred is None for i in instrs)


def test_seed_register_writes_and_lines():
    instrs = parse(seeds.BATCH_LOAD_LOOP1, {"gm_ptr": 0, "ub_ptr": 0})
    assert [i.values for i in instrs[:3]] == [
        {"loop1_count": 4, "loop2_count": 1},
        {"src_stride": 2048, "dst_stride": 2048},
        {"src_stride": 0, "dst_stride": 0}]
    # comments on lines 1 and 4, blank lines 3 and 7; the multi-line copy starts on line 8
    assert [(i.line, i.column) for i in instrs] == [(2, 1), (5, 1), (6, 1), (8, 1)]
    assert instrs[-1].text.startswith("pto.copy_gm_to_ubuf %gm_ptr, %ub_ptr, %c0_i64, %c8_i64")
    assert "//" not in instrs[-1].text


def test_seed_texts_are_verbatim():
    texts = {path.name[:3]: path.read_text() for path in SEED_DIR.glob("00*.txt")}
    for program in SEED_EXPECTED:
        assert program in texts["000"]
    assert seeds.UB_TO_UB_I16.strip() in texts["001"]
    assert seeds.LOOP_SIZE_UBTOOUT in texts["003"]


def test_seed_001_mte_ub_ub():
    instrs = parse(seeds.UB_TO_UB_I16, {"ub_src": 64, "ub_dst": 4096, "len32b": 2,
                                        "rows": 8, "src_gap": 1, "dst_gap": 3})
    assert ops(instrs) == ["copy_ubuf_to_ubuf"]
    assert instrs[0].values == {"ub_src": 64, "ub_dst": 4096, "sid": 0, "n_burst": 8,
                                "len_burst": 2, "src_gap": 1, "dst_gap": 3, "dtype": I16}


def test_copy_ubuf_to_ubuf_legacy_equals_mte_ub_ub():
    legacy = parse("pto.copy_ubuf_to_ubuf %a, %b, %c0_i64, %c8, %c2, %c1, %c3\n"
                   "  : !pto.ptr<i16, ub>, !pto.ptr<i16, ub>, i64 x5", {"a": 0, "b": 4096})
    grouped = parse("pto.mte_ub_ub %a, %b, %c2 nburst(%c8, %c1, %c3)\n"
                    "  : !pto.ptr<i16, ub>, !pto.ptr<i16, ub>, i64, i64, i64, i64",
                    {"a": 0, "b": 4096})
    assert [(i.op, i.values) for i in legacy] == [(i.op, i.values) for i in grouped]


@pytest.mark.parametrize("spelling", ["set_loop_size_ubtoout", "pto.set_loop_size_ubtoout"])
def test_seed_003_with_and_without_prefix(spelling):
    (instr,) = parse(f"{spelling} %loop1_count, %loop2_count : i64, i64",
                     {"loop1_count": 2, "loop2_count": 3})
    assert instr.mnemonic == "set_loop_size_ubtoout"
    assert instr.values == {"loop1_count": 2, "loop2_count": 3}


# --- PTOAS kernels, flags, attributes ----------------------------------------------------

PTOAS_KERNEL = """\
module attributes {pto.target_arch = "a5", pto.kernel_kind = #pto.kernel_kind<vector>} {
  func.func @kernel(%src_gm: !pto.ptr<f32, gm>,
                    %dst_gm: !pto.ptr<f32, gm>, %n: i32) attributes {pto.kernel} {
    %c0_i64 = arith.constant 0 : i64
    %c1_i64 = arith.constant 1 : i64
    %c128_i64 = arith.constant 128 : i64
    %base = arith.constant 0x400 : i64
    %ub = pto.castptr %base : i64 -> !pto.ptr<f32, ub>
    %ub2 = pto.addptr %ub, %c128_i64 : <f32, ub> -> <f32, ub>
    %src = pto.addptr %src_gm, %c1_i64 : !pto.ptr<f32, gm> -> !pto.ptr<f32, gm>
    pto.mte_gm_ub %src, %ub2, %c0_i64, %c128_i64
      nburst(%c1_i64, %c128_i64, %c128_i64)
      {pto.note = "attribute dictionary"}
      : !pto.ptr<f32, gm>, !pto.ptr<f32, ub>, i64, i64, i64, i64, i64
    pto.set_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]
    pto.wait_flag["PIPE_MTE2", "PIPE_MTE3", "EVENT_ID0"] {sync}
    pto.mte_ub_gm %ub2, %dst_gm, %c128_i64
      nburst(%c1_i64, %c128_i64, %c128_i64)
      : !pto.ptr<f32, ub>, !pto.ptr<f32, gm>, i64, i64, i64, i64
    return
  }
}
"""


def test_ptoas_kernel():
    instrs = parse(PTOAS_KERNEL, {"src_gm": 0x1000, "dst_gm": 0x2000})
    assert ops(instrs) == [
        "set_loop_size_outtoub", "set_loop1_stride_outtoub", "set_loop2_stride_outtoub",
        "copy_gm_to_ubuf", "set_flag", "wait_flag",
        "set_loop_size_ubtoout", "set_loop1_stride_ubtoout", "set_loop2_stride_ubtoout",
        "copy_ubuf_to_gm"]
    ub = 0x400 + 128 * 4                    # addptr counts f32 elements
    assert instrs[3].values == gm_to_ub(0x1000 + 4, ub, 1, 128, 128, 128, F32)
    assert instrs[9].values == ub_to_gm(ub, 0x2000, 1, 128, 128, 128, F32)
    assert instrs[4].values == instrs[5].values == {
        "src_pipe": Pipe.MTE2, "dst_pipe": Pipe.MTE3, "event_id": 0}
    assert instrs[3].line == 11 and instrs[4].line == 15


def test_function_scopes_are_separate():
    text = """
    func.func @a() { %c = arith.constant 32 : i64
      pto.set_loop_size_outtoub %c, %c : i64, i64 return }
    func.func @b() { %c = arith.constant 64 : i64
      pto.set_loop_size_outtoub %c, %c : i64, i64 return }
    """
    assert [i.values["loop1_count"] for i in parse(text)] == [32, 64]


def test_addptr_of_a_free_name_needs_a_known_element_type():
    err = program_error("%p = pto.addptr %arg0, %c1")
    assert (err.line, err.column) == (1, 17)
    (instr,) = parse("func.func @k(%arg0: !pto.ptr<i16, gm>) {\n"
                     "%p = pto.addptr %arg0, %c3\n"
                     "pto.copy_gm_to_ubuf %p, %c0, %c0, %c1, %c2, %c0, %c0, %false, %c0,\n"
                     "  %c2, %c32\n"
                     " : !pto.ptr<i16, gm>, !pto.ptr<i16, ub>, i64 x5, i1, i64 x3\n}",
                     {"arg0": 100})
    assert instr.values["gm_src"] == 106


@pytest.mark.parametrize("name, pipe", [("PIPE_MTE2", Pipe.MTE2), ("PIPE_MTE3", Pipe.MTE3),
                                        ("PIPE_V", Pipe.V), ("PIPE_S", Pipe.EXTERNAL),
                                        ("PIPE_FIX", Pipe.EXTERNAL),
                                        ("PIPE_MTE5", Pipe.EXTERNAL)])
def test_flag_pipes(name, pipe):
    instrs = parse(f'set_flag["{name}", <PIPE_V>, <EVENT_ID7>]\n'
                   f'wait_flag["{name}", <PIPE_V>, <EVENT_ID7>]')
    assert [i.mnemonic for i in instrs] == ["set_flag", "wait_flag"]
    for instr in instrs:
        assert instr.values == {"src_pipe": pipe, "dst_pipe": Pipe.V, "event_id": 7}


def test_flag_errors():
    err = program_error("pto.set_flag[<PIPE_MTE2>, <MTE3>, <EVENT_ID0>]")
    assert (err.line, err.column, "unknown pipe" in err.message) == (1, 28, True)
    err = program_error("pto.set_flag[<PIPE_MTE2>, <PIPE_MTE33>, <EVENT_ID0>]")
    assert (err.line, err.column, "unknown pipe 'PIPE_MTE33'" in err.message) == (1, 28, True)
    err = program_error('pto.set_flag["PIPE_MTE2", "PIPE_V", "EVENT_X"]')
    assert (err.line, err.column) == (1, 37)
    err = program_error("\n  pto.set_flag[<PIPE_MTE2>, <PIPE_V>]")
    assert (err.line, err.column) == (2, 15)
    err = program_error("pto.wait_flag %c0 : i64")
    assert (err.line, err.column) == (1, 1)


@pytest.mark.parametrize("flag", [
    "pto.set_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]",
    'pto.wait_flag["PIPE_MTE2", "PIPE_MTE3", "EVENT_ID0"]',
    "set_flag[#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_MTE3>, #pto.event<EVENT_ID0>]",
    "wait_flag[PIPE_MTE2, PIPE_MTE3, EVENT_ID0] {sync}",
    "pto.barrier #pto.pipe<PIPE_MTE3>",
    'pto.barrier "PIPE_ALL"',
])
def test_a_result_after_a_statement_without_operands_starts_the_next_statement(flag):
    instrs = parse(f"set_flag[PIPE_MTE2, PIPE_MTE3, EVENT_ID0]\n{flag}\n"
                   "%x = arith.constant 64 : i64\n"
                   "%u = pto.castptr %c32 : i64 -> !pto.ptr<f32, ub>\n"
                   "pto.set_loop_size_outtoub %x, %u : i64, i64")
    assert {i.mnemonic for i in instrs[:-1]} <= {"set_flag", "wait_flag"}
    assert instrs[-1].values == {"loop1_count": 64, "loop2_count": 32}
    assert instrs[-1].line == 5


def test_a_wait_flag_needs_an_earlier_set_flag():
    """The model runs a program in program order, the result of a correctly synchronised
    program (SPEC.md): a wait_flag with no set_flag before it left to consume would, on
    the engine, hold its pipe for a later set_flag, or forever, so the parser rejects it."""
    err = program_error("pto.set_flag[PIPE_MTE2, PIPE_MTE3, EVENT_ID1]\n"
                        "  pto.wait_flag[PIPE_MTE2, PIPE_MTE3, EVENT_ID0]\n"
                        "pto.set_flag[PIPE_MTE2, PIPE_MTE3, EVENT_ID0]")
    assert (err.line, err.column) == (2, 3)
    assert "wait_flag[PIPE_MTE2, PIPE_MTE3, EVENT_ID0] has no earlier set_flag" in err.message
    err = program_error("set_flag[PIPE_V, PIPE_MTE2, EVENT_ID3]\n"
                        "wait_flag[PIPE_V, PIPE_MTE2, EVENT_ID3]\n"
                        "wait_flag[PIPE_V, PIPE_MTE2, EVENT_ID3]")
    assert err.line == 3 and "the engine would hold PIPE_MTE2" in err.message
    granted = ("set_flag[PIPE_MTE3, PIPE_MTE3, EVENT_ID2]\nset_flag[PIPE_MTE3, PIPE_MTE3, "
               "EVENT_ID2]\nwait_flag[PIPE_MTE3, PIPE_MTE3, EVENT_ID2]\n"
               "wait_flag[PIPE_MTE3, PIPE_MTE3, EVENT_ID2]\n"
               "wait_flag[PIPE_S, PIPE_MTE2, EVENT_ID0]")       # another unit's: granted
    assert len(parse(granted)) == 5


def test_a_flag_has_at_most_seven_set_flags_outstanding():
    """The engine counts FLAG_DEPTH set_flags per flag and holds a pipe at a set beyond
    them until a wait_flag frees a place; one that program order only reaches later can
    sit behind that pipe's commands and never come, so the parser refuses an eighth."""
    sets = ["set_flag[PIPE_MTE2, PIPE_V, EVENT_ID5]"] * FLAG_DEPTH
    err = program_error("\n".join(sets + ["  set_flag[PIPE_MTE2, PIPE_V, EVENT_ID5]"]))
    assert (err.line, err.column) == (FLAG_DEPTH + 1, 3)
    assert ("set_flag[PIPE_MTE2, PIPE_V, EVENT_ID5] would be the 8th that no wait_flag has "
            "consumed" in err.message and "holds PIPE_MTE2" in err.message)
    # Other flags count apart, a wait_flag frees a place, and a barrier takes a free event.
    others = ["set_flag[PIPE_MTE2, PIPE_V, EVENT_ID6]", "set_flag[PIPE_MTE3, PIPE_V, EVENT_ID5]",
              "set_flag[PIPE_MTE2, PIPE_MTE3, EVENT_ID5]", "set_flag[PIPE_MTE2, PIPE_S, EVENT_ID5]"]
    freed = ["wait_flag[PIPE_MTE2, PIPE_V, EVENT_ID5]", "set_flag[PIPE_MTE2, PIPE_V, EVENT_ID5]"]
    barrier = ["set_flag[PIPE_MTE2, PIPE_V, EVENT_ID0]"] * FLAG_DEPTH + ["pto.barrier <PIPE_V>"]
    assert len(parse("\n".join(sets + others + freed + barrier))) == 2 * FLAG_DEPTH + 8


# --- pto.barrier ---------------------------------------------------------------------

ENGINE_PIPES = (Pipe.MTE2, Pipe.MTE3, Pipe.V)


def flags(instrs):
    return [(i.mnemonic, i.values["src_pipe"], i.values["dst_pipe"], i.values["event_id"])
            for i in instrs]


def copies_before(instrs):
    """For each copy (by index), the copies that must have finished before it starts under
    the flag semantics: program order within a pipe; a wait_flag is granted by the oldest
    set_flag of its (src, dst, event) not yet taken, and then follows everything that
    set's pipe did before the set."""
    done = {pipe: frozenset() for pipe in ENGINE_PIPES}     # what each pipe has finished
    sets, before = {}, {}
    for index, instr in enumerate(instrs):
        op = instr.op
        if op.opcode == Opcode.SET_FLAG:
            key = (instr.values["src_pipe"], instr.values["dst_pipe"], instr.values["event_id"])
            sets.setdefault(key, []).append(done[key[0]])
        elif op.opcode == Opcode.WAIT_FLAG:
            key = (instr.values["src_pipe"], instr.values["dst_pipe"], instr.values["event_id"])
            done[key[1]] |= sets[key].pop(0)
        else:
            before[index] = done[op.pipe]
            done[op.pipe] |= {index}
    return before


COPY_ON = {
    Pipe.MTE2: "pto.copy_gm_to_ubuf %c0, %c0, %c0, %c1, %c32, %c0, %c0, %false, %c0, %c32, %c32"
               " : !pto.ptr<u8, gm>, !pto.ptr<u8, ub>, i64 x5, i1, i64 x3",
    Pipe.MTE3: "pto.copy_ubuf_to_gm %c0, %c0, %c0, %c1, %c32, %c0, %c32, %c32"
               " : !pto.ptr<u8, ub>, !pto.ptr<u8, gm>, i64 x6",
    Pipe.V: "pto.copy_ubuf_to_ubuf %c0, %c64, %c0, %c1, %c1, %c0, %c0"
            " : !pto.ptr<u8, ub>, !pto.ptr<u8, ub>, i64 x5",
}
ALL_COPIES = "\n".join(COPY_ON.values())


@pytest.mark.parametrize("spelling", ["pto.barrier #pto.pipe<PIPE_ALL>",
                                      "barrier <PIPE_ALL>", 'pto.barrier "PIPE_ALL"',
                                      "pto.barrier PIPE_ALL {note}"])
def test_barrier_all_is_a_flag_pair_between_each_two_pipes(spelling):
    instrs = parse(f"\n  {spelling}")
    pairs = [(a, b) for a in ENGINE_PIPES for b in ENGINE_PIPES if a != b]
    assert flags(instrs) == ([("set_flag", a, b, 0) for a, b in pairs]
                             + [("wait_flag", a, b, 0) for a, b in pairs])
    assert {(i.line, i.column) for i in instrs} == {(2, 3)}
    assert disassemble(assemble(instrs)) == [(i.op, i.values) for i in instrs]


def test_barrier_all_orders_every_earlier_copy_before_every_later_one():
    instrs = parse(f"{ALL_COPIES}\npto.barrier <PIPE_ALL>\n{ALL_COPIES}")
    before = copies_before(instrs)
    first, later = sorted(before)[:3], sorted(before)[3:]
    assert all(set(first) <= before[index] for index in later)
    assert not before[first[2]] & set(first)     # nothing orders the copies before it


@pytest.mark.parametrize("pipe", ENGINE_PIPES)
def test_barrier_on_one_pipe_drains_that_pipe(pipe):
    (set_flag, wait_flag) = parse(f"pto.barrier <PIPE_{pipe.name}>")
    assert flags([set_flag, wait_flag]) == [("set_flag", pipe, pipe, 0),
                                            ("wait_flag", pipe, pipe, 0)]


@pytest.mark.parametrize("name", ["PIPE_S", "PIPE_M", "PIPE_MTE1", "PIPE_FIX"])
def test_barrier_on_a_pipe_the_engine_lacks_is_nothing(name):
    assert parse(f"{COPY_ON[Pipe.V]}\npto.barrier <{name}>") == parse(COPY_ON[Pipe.V])


def test_barrier_takes_an_event_no_set_flag_holds():
    instrs = parse(f"""
        pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]
        pto.set_flag[<PIPE_MTE3>, <PIPE_MTE3>, <EVENT_ID1>]
        pto.set_flag[<PIPE_MTE2>, <PIPE_S>, <EVENT_ID2>]
        {COPY_ON[Pipe.MTE2]}
        pto.barrier #pto.pipe<PIPE_ALL>
        pto.barrier #pto.pipe<PIPE_MTE3>
        pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]
        {COPY_ON[Pipe.V]}
        pto.barrier #pto.pipe<PIPE_V>""")
    events = [i.values["event_id"] for i in instrs if i.line in (6, 7, 10)]
    # EVENT_ID0 MTE2->V is taken, EVENT_ID1 only on MTE3->MTE3, EVENT_ID2 only with PIPE_S
    assert events == [1] * 12 + [0, 0] + [0, 0]
    before = copies_before(instrs)
    assert before[max(before)] == {3}           # the V copy waits for the MTE2 copy


def test_barrier_errors():
    err = program_error("pto.barrier\n")
    assert (err.line, err.column, "needs a pipe" in err.message) == (1, 1, True)
    err = program_error("pto.barrier <MTE2>")
    assert (err.line, err.column, "unknown pipe" in err.message) == (1, 14, True)
    err = program_error("pto.barrier <PIPE_ALL> %c0 : i64")
    assert (err.line, err.column, "takes 0 operands" in err.message) == (1, 24, True)
    err = program_error("%b = pto.barrier <PIPE_ALL>")
    assert (err.line, err.column, "has no result" in err.message) == (1, 1, True)
    pending = "".join(f"pto.set_flag[PIPE_V, PIPE_MTE2, EVENT_ID{e}]\n" for e in range(16))
    err = program_error(pending + "pto.barrier <PIPE_ALL>")
    assert (err.line, err.column, "no event id is free" in err.message) == (17, 1, True)


# --- grouped v0.6 forms ------------------------------------------------------------------

GM_UB_TYPES = "!pto.ptr<f16, gm>, !pto.ptr<f16, ub>"


def grouped(clauses, types, bindings=None, op="mte_gm_ub %gm, %ub, %c2, %c64"):
    text = f"pto.{op}\n  {clauses}\n  : {types}"
    return parse(text, {"gm": 0x10000, "ub": 0x400, **(bindings or {})})


def test_mte_gm_ub_without_loops_is_the_legacy_sequence():
    instrs = grouped("nburst(%c4, %c128, %c96)", GM_UB_TYPES + ", i64 x5")
    legacy = parse(f"""
        pto.set_loop_size_outtoub %c1, %c1 : i64, i64
        pto.set_loop1_stride_outtoub %c0, %c0 : i64, i64
        pto.set_loop2_stride_outtoub %c0, %c0 : i64, i64
        pto.copy_gm_to_ubuf %gm, %ub, %c0, %c4, %c64, %c0, %c0, %false, %c2, %c128, %c96
          : {GM_UB_TYPES}, i64 x5, i1, i64 x3""", {"gm": 0x10000, "ub": 0x400})
    assert [(i.op, i.values) for i in instrs] == [(i.op, i.values) for i in legacy]
    assert {i.line for i in instrs} == {1}


def test_mte_gm_ub_two_loops_and_pad():
    instrs = grouped("nburst(%c4, %c128, %c96) loop(%c3, %c512, %c384) loop(%c2, %c4096, %c2048)"
                     " pad(%v, %c1, %c2)", GM_UB_TYPES + ", i64 x11, f16, i64, i64",
                     {"v": -2})
    assert ops(instrs) == ["set_loop_size_outtoub", "set_loop1_stride_outtoub",
                           "set_loop2_stride_outtoub", "set_mov_pad_val", "copy_gm_to_ubuf"]
    assert instrs[0].values == {"loop1_count": 3, "loop2_count": 2}
    assert instrs[1].values == {"src_stride": 512, "dst_stride": 384}
    assert instrs[2].values == {"src_stride": 4096, "dst_stride": 2048}
    assert instrs[3].values == {"pad_val": 0xC000}       # -2.0 in f16
    assert instrs[4].values == gm_to_ub(0x10000, 0x400, 4, 64, 128, 96, F16, left=1,
                                        right=2, select=1, cache=2)


def test_pad_value_only_and_its_own_type():
    instrs = grouped("nburst(%c4, %c128, %c96) pad(%c1)", GM_UB_TYPES + ", i64 x5, f32")
    assert instrs[3].values == {"pad_val": 0x3F800000}   # 1.0 typed by its entry: f32
    assert instrs[4].values["data_select_bit"] == 1
    assert (instrs[4].values["left_padding"], instrs[4].values["right_padding"]) == (0, 0)


def test_software_loops_clause_three_innermost():
    instrs = grouped("nburst(%c1, %c64, %c64) loop(%c2, %c64, %c64) loop(%c1, %c0, %c0)"
                     " loop(%c3, %c1000, %c32) loop(%c2, %c100000, %c4096)",
                     GM_UB_TYPES + ", i64 x17")
    assert ops(instrs)[:3] == ["set_loop_size_outtoub", "set_loop1_stride_outtoub",
                               "set_loop2_stride_outtoub"]
    copies = instrs[3:]
    assert len(copies) == 6 and ops(copies) == ["copy_gm_to_ubuf"] * 6
    assert [(c.values["gm_src"] - 0x10000, c.values["ub_dst"] - 0x400) for c in copies] == [
        (0, 0), (1000, 32), (2000, 64), (100000, 4096), (101000, 4128), (102000, 4160)]
    assert instrs[0].values == {"loop1_count": 2, "loop2_count": 1}


def test_software_loop_count_out_of_range_is_deferred():
    instrs = grouped("nburst(%c1, %c64, %c64) loop(%c1, %c0, %c0) loop(%c1, %c0, %c0)"
                     " loop(%c-1, %c0, %c0)", GM_UB_TYPES + ", i64 x14")
    assert ops(instrs)[-1] == "copy_gm_to_ubuf" and len(instrs) == 4
    assert instrs[-1].deferred[0] == ErrorCode.FIELD_RANGE


def test_software_loops_too_many_copies():
    err = program_error(
        f"pto.mte_gm_ub %gm, %ub, %c0, %c64 nburst(%c1, %c64, %c64) loop(%c1, %c0, %c0)\n"
        f"  loop(%c1, %c0, %c0) loop(%c{MAX_SOFTWARE_COPIES + 1}, %c0, %c0)"
        f" : {GM_UB_TYPES}, i64 x14", {"gm": 0, "ub": 0})
    assert (err.line, err.column) == (2, 23)


def test_mte_ub_gm_with_and_without_cache_operand():
    types = "!pto.ptr<f32, ub>, !pto.ptr<f32, gm>, i64 x"
    plain = grouped("nburst(%c8, %c64, %c256) loop(%c2, %c512, %c4096)", types + "7",
                    op="mte_ub_gm %ub, %gm, %c64")
    cached = grouped("nburst(%c8, %c64, %c256) loop(%c2, %c512, %c4096)", types + "8",
                     op="mte_ub_gm %ub, %gm, %c3, %c64")
    assert ops(plain) == ["set_loop_size_ubtoout", "set_loop1_stride_ubtoout",
                          "set_loop2_stride_ubtoout", "copy_ubuf_to_gm"]
    assert plain[1].values == {"src_stride": 512, "dst_stride": 4096}
    assert plain[3].values == ub_to_gm(0x400, 0x10000, 8, 64, 256, 64, F32)
    assert cached[3].values == ub_to_gm(0x400, 0x10000, 8, 64, 256, 64, F32, cache=3)


@pytest.mark.parametrize("clauses, types, where, words", [
    ("loop(%c2, %c0, %c0)", GM_UB_TYPES + ", i64 x5", (2, 3), "nburst"),
    ("", GM_UB_TYPES + ", i64 x2", (1, 1), "nburst"),
    ("nburst(%c1, %c64, %c64) pad(%c0) loop(%c2, %c0, %c0)", GM_UB_TYPES + ", i64 x9", (2, 27),
     "out of place"),
    ("nburst(%c1, %c64, %c64) nburst(%c1, %c64, %c64)", GM_UB_TYPES + ", i64 x8", (2, 27),
     "out of place"),
    ("nburst(%c1, %c64)", GM_UB_TYPES + ", i64 x4", (2, 3), "takes 3"),
    ("nburst(%c1, %c64, %c64) pad(%c0, %c1)", GM_UB_TYPES + ", i64 x7", (2, 27), "1 or 3"),
    ("nburst(%c1, %c64, %c64) stride(%c1)", GM_UB_TYPES + ", i64 x6", (2, 27), "no stride"),
])
def test_grouped_clause_errors(clauses, types, where, words):
    err = program_error(f"pto.mte_gm_ub %gm, %ub, %c2, %c64\n  {clauses}\n  : {types}",
                        {"gm": 0, "ub": 0})
    assert (err.line, err.column) == where
    assert words in err.message


def test_clauses_an_op_does_not_take():
    err = program_error("pto.mte_ub_ub %a, %b, %c1 nburst(%c1, %c0, %c0) loop(%c1, %c0, %c0)\n"
                        " : !pto.ptr<i8, ub>, !pto.ptr<i8, ub>, i64 x7", {"a": 0, "b": 64})
    assert (err.line, err.column, "no loop" in err.message) == (1, 49, True)
    err = program_error("pto.mte_ub_gm %a, %b, %c1 nburst(%c1, %c0, %c0) pad(%c0)\n"
                        " : !pto.ptr<i8, ub>, !pto.ptr<i8, gm>, i64 x5", {"a": 0, "b": 64})
    assert (err.line, err.column) == (1, 49)
    err = program_error("pto.set_loop_size_outtoub %c1, %c1 loop(%c1, %c0, %c0) : i64 x5")
    assert (err.line, err.column) == (1, 36)


# --- values ------------------------------------------------------------------------

def test_constants_by_name():
    text = "pto.set_loop1_stride_outtoub %NAME, %c7_i32 : i64, i64"
    for name, value in [("c128", 128), ("c128_i64", 128), ("c-1_i64", -1), ("c0_i64_0", 0),
                        ("c5_index", 5), ("true", 1), ("false", 0)]:
        (instr,) = parse(text.replace("NAME", name))
        assert instr.values == {"src_stride": value, "dst_stride": 7}


@pytest.mark.parametrize("definition, value", [
    ("arith.constant true : i1", 1), ("arith.constant false : i1", 0),
    ("arith.constant true", 1), ("arith.constant false {tag}", 0),
    ("arith.constant 1 : i1", 1), ("arith.constant 0 : i1", 0),
])
def test_i1_constants(definition, value):
    """An i1 constant is 1 or 0 wherever a constant goes: a scalar field, data_select_bit."""
    instrs = parse(f"%b = {definition}\n"
                   "pto.set_loop_size_outtoub %b, %c7 : i64, i64\n"
                   "pto.copy_gm_to_ubuf %c0, %c0, %c0, %c1, %c32, %c0, %c0, %b, %c0, %c32, %c32\n"
                   "  : !pto.ptr<u8, gm>, !pto.ptr<u8, ub>, i64 x5, i1, i64 x3")
    assert instrs[0].values == {"loop1_count": value, "loop2_count": 7}
    assert instrs[1].values["data_select_bit"] == value


def test_uniquified_boolean_names():
    (instr,) = parse("pto.set_loop_size_outtoub %true_0, %false_12 : i64, i64")
    assert instr.values == {"loop1_count": 1, "loop2_count": 0}


def test_a_boolean_constant_has_type_i1():
    err = program_error("%b = arith.constant true : i64")
    assert (err.line, err.column) == (1, 28)
    assert "i1" in err.message


def test_definitions_come_before_constant_names_and_bindings():
    (instr,) = parse("%c1 = arith.constant 9 : i64\n%x = arith.constant -0x10 : i64\n"
                     "pto.set_loop_size_outtoub %c1, %x : i64, i64", {"c1": 5, "x": 6})
    assert instr.values == {"loop1_count": 9, "loop2_count": -16}


def test_values_are_not_range_checked():
    (instr,) = parse("pto.set_loop1_stride_outtoub %big, %c-32 : i64, i64", {"big": 1 << 50})
    assert instr.values == {"src_stride": 1 << 50, "dst_stride": -32}


def test_castptr_and_addptr():
    (instr,) = parse("""
        %a = arith.constant 4096 : i64
        %g = pto.castptr %a : i64 -> !pto.ptr<f16, gm>
        %g2 = pto.addptr %g, %c10 : !pto.ptr<f16, gm> -> !pto.ptr<f16, gm>
        %u = pto.castptr %c64 : i64 -> !pto.ptr<i8, ub>
        %u2 = pto.addptr %u, %c64
        pto.copy_gm_to_ubuf %g2, %u2, %c0, %c1, %c2, %c0, %c0, %false, %c0, %c2, %c32
          : !pto.ptr<f16, gm>, !pto.ptr<f16, ub>, i64 x5, i1, i64 x3""")
    assert (instr.values["gm_src"], instr.values["ub_dst"]) == (4096 + 20, 128)


def test_element_types():
    text = "pto.copy_ubuf_to_gm %u, %g, %c0, %c1, %c32, %c0, %c32, %c32 : {}, {}, i64 x6"
    f8e4m3 = DTYPE_BY_NAME["f8e4m3"].code      # of two types of one size, the f8 one
    cases = [("f16", "i16", F16, None), ("i16", "f16", I16, None), ("i8", "u8", I8, None),
             ("i8", "f8e4m3", f8e4m3, None), ("f8e4m3", "i8", f8e4m3, None),
             ("i4", "i4", DTYPE_BY_NAME["i4"].code, None),
             ("f32", "f16", F32, ErrorCode.TYPE_UNSUPPORTED)]
    for ub, gm, dtype, deferred in cases:
        (instr,) = parse(text.format(f"!pto.ptr<{ub}, ub>", f"!pto.ptr<{gm}, gm>"),
                         {"u": 0, "g": 0})
        assert instr.values["dtype"] == dtype
        assert (instr.deferred and instr.deferred[0]) == deferred


# --- pad values --------------------------------------------------------------------------

@pytest.mark.parametrize("definition, pad_type, bits", [
    ("arith.constant 1.0 : f16", "f16", 0x3C00),
    ("arith.constant -1.5 : f32", "bf16", 0xBFC0),
    ("arith.constant 0.1 : f32", "f32", 0x3DCCCCCD),
    ("arith.constant 0x7E00 : f16", "f16", 0x7E00),          # hex = bit pattern
    ("arith.constant 0x7F800000 : f32", "f16", 0x7C00),      # +inf converts
    ("arith.constant -1 : i64", "i16", 0xFFFF),
    ("arith.constant -128 : i64", "i8", 0x80),
    ("arith.constant 255 : i64", "i8", 0xFF),
    ("arith.constant -1 : i64", "i64", (1 << 64) - 1),
    ("arith.constant 2 : i64", "f32", 0x40000000),           # integers convert numerically
    ("arith.constant 448.0 : f32", "f8e4m3", 0x7E),
    ("arith.constant 464.0 : f32", "f8e4m3", 0x7E),          # tie rounds to even: 448
    ("arith.constant -2.0 : f32", "f8e5m2", 0xC0),
    ("arith.constant 0.0 : f32", "hifloat8", 0),
    ("arith.constant 0x4A : hifloat8", "hifloat8", 0x4A),
    ("arith.constant true", "u8", 1),
])
def test_pad_bit_patterns(definition, pad_type, bits):
    (instr,) = parse(f"%v = {definition}\npto.set_mov_pad_val %v : {pad_type}")
    assert instr.values == {"pad_val": bits} and instr.deferred is None


@pytest.mark.parametrize("definition, pad_type, code", [
    ("arith.constant 300 : i64", "i8", ErrorCode.FIELD_RANGE),
    ("arith.constant -1 : i64", "u8", ErrorCode.FIELD_RANGE),
    ("arith.constant 65536 : i64", "ui16", ErrorCode.FIELD_RANGE),
    ("arith.constant 1.5 : f32", "i32", ErrorCode.FIELD_RANGE),
    ("arith.constant 70000.0 : f32", "f16", ErrorCode.FIELD_RANGE),
    ("arith.constant 480.0 : f32", "f8e4m3", ErrorCode.FIELD_RANGE),
    ("arith.constant 0x7F800000 : f32", "f8e4m3", ErrorCode.FIELD_RANGE),
    ("arith.constant 1 : i64", "i4", ErrorCode.TYPE_UNSUPPORTED),
])
def test_pad_values_that_do_not_fit_are_deferred(definition, pad_type, code):
    (instr,) = parse(f"%v = {definition}\npto.set_mov_pad_val %v : {pad_type}")
    assert instr.deferred[0] == code


def test_pad_type_errors():
    err = program_error("pto.set_mov_pad_val %c1 : f64")
    assert (err.line, err.column) == (1, 27)
    err = program_error("%v = arith.constant 1.0 : f32\npto.set_mov_pad_val %v : hifloat8")
    assert (err.line, err.column) == (2, 21)


def test_float_encoding_matches_numpy():
    rng = random.Random(7)
    samples = [rng.uniform(-70000, 70000) for _ in range(300)]
    samples += [rng.uniform(-1e-6, 1e-6) for _ in range(100)]        # f16 subnormals
    samples += [2.0 ** -24 * 1.5, 65504.0, 65519.0, -0.0, math.inf, 1 / 3]
    for x in samples:
        half = encode_float(x, (5, 10, False))
        too_big = math.isfinite(x) and abs(x) >= 65520      # rounds beyond the f16 maximum
        expected = None if too_big else int(np.array(x, dtype=np.float16).view(np.uint16))
        assert half == expected, x
        single = encode_float(x, (8, 23, False))
        assert single == int(np.array(x, dtype=np.float32).view(np.uint32)), x
        assert decode_float(single, (8, 23, False)) == float(np.float32(x)) or math.isnan(x)


# --- malformed programs ----------------------------------------------------------------

@pytest.mark.parametrize("text, where, words", [
    ("pto.set_loop_size_outtoub %c1, : i64, i64", (1, 32), "expected an operand"),
    ("pto.set_loop_size_outtoub %c1 %c1 : i64, i64", (1, 31), "expected ','"),
    ("\n  pto.set_loop_size_outtoub %c1, %c1 ; i64", (2, 38), "unexpected character"),
    ('pto.set_flag["PIPE_V", "PIPE_MTE2", "EVENT_ID0]', (1, 37), "unterminated string"),
    # the first error in reading order, though a later line holds a bad character
    ('pto.set_flag["PIPE_V, "PIPE_MTE2", "EVENT_ID0"]\n;', (1, 24), "expected ']'"),
    ("module {\n pto.set_loop_size_outtoub %c1, %c1 : i64, i64\n", (3, 1), "expected '}'"),
    ("}", (1, 1), "unmatched"),
    ("pto.set_loop_size_outtoub %c1, %c1 {a = 1 : i64, i64", (1, 36), "unclosed"),
    ("pto.set_loop_size_outtoub %c1, %c1 : i64, !pto.ptr<f32 gm>", (1, 56), "expected ','"),
    ("%x = arith.constant 1.5 : i64", (1, 21), "not an integer"),
    ("%x = arith.constant 3", (1, 22), "expected ':'"),
    ("%x = arith.constant 1 : i64\n%x = arith.constant 2 : i64", (2, 1), "already defined"),
    ("%x = pto.set_loop_size_outtoub %c1, %c1 : i64, i64", (1, 1), "has no result"),
    ("pto.castptr %c1 : i64 -> !pto.ptr<f32, gm>", (1, 1), "needs a result"),
    ("%f = arith.constant 1.0 : f32\npto.set_loop_size_outtoub %f, %c1 : i64, i64", (2, 27),
     "float"),
])
def test_syntax_errors(text, where, words):
    err = program_error(text)
    assert (err.line, err.column) == where
    assert words in err.message
    assert str(err).startswith(f"line {where[0]}, column {where[1]}: ")


def test_unknown_op():
    err = program_error("pto.set_loop_size_outtoub %c1, %c1 : i64, i64\n"
                        "    pto.copy_gm_to_l1 %a, %b : i64, i64")
    assert (err.line, err.column) == (2, 5)
    assert "pto.copy_gm_to_l1" in err.message


def test_unbound_name():
    err = program_error("pto.copy_ubuf_to_gm %u, %gm,\n   %c0, %c1, %c32, %c0, %c32, %nope\n"
                        " : !pto.ptr<f32, ub>, !pto.ptr<f32, gm>, i64 x6", {"u": 0, "gm": 0})
    assert (err.line, err.column) == (2, 31)
    assert "%nope" in err.message


def test_operand_count():
    too_few = program_error("pto.set_loop_size_outtoub %c1 : i64")
    assert (too_few.line, too_few.column) == (1, 1)
    too_many = program_error("pto.set_loop_size_outtoub %c1, %c1, %c2 : i64, i64, i64")
    assert (too_many.line, too_many.column) == (1, 37)
    grouped_count = program_error("pto.mte_gm_ub %a, %b, %c1 nburst(%c1, %c1, %c1) : i64 x6")
    assert (grouped_count.line, grouped_count.column) == (1, 1)


def test_type_count():
    err = program_error("pto.set_loop_size_outtoub %c1, %c1\n   : i64")
    assert (err.line, err.column) == (2, 4)
    assert "2 operands but 1 types" in err.message
    missing = program_error("pto.set_loop_size_outtoub %c1, %c1")
    assert (missing.line, missing.column) == (1, 1)


@pytest.mark.parametrize("types, where, words", [
    ("!pto.ptr<f33, gm>, !pto.ptr<f32, ub>", (1, 90), "unknown element type"),
    ("!pto.ptr<f32, l1>, !pto.ptr<f32, ub>", (1, 95), "unknown memory space"),
    ("!pto.ptr<f32, ub>, !pto.ptr<f32, ub>", (1, 81), "!pto.ptr<T, gm>"),
    ("i64, !pto.ptr<f32, ub>", (1, 81), "!pto.ptr<T, gm>"),
    ("!pto.tile<32x32xf32>, !pto.ptr<f32, ub>", (1, 81), "!pto.ptr<T, gm>"),
    ("!pto.ptr<f32, gm>, !pto.ptr<f32, ub>, foo", (1, 119), "unknown type"),
])
def test_type_errors(types, where, words):
    text = ("pto.copy_gm_to_ubuf %g, %u, %c0, %c1, %c32, %c0, %c0, %false, %c0, %c32, %c32"
            " : {}")
    rest = ", i64 x5, i1, i64 x3" if "foo" not in types else ", i64 x4, i1, i64 x3"
    err = program_error(text.format(types + rest), {"g": 0, "u": 0})
    assert (err.line, err.column) == where
    assert words in err.message
