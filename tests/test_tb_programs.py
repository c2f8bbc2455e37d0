"""The random program generator of the testbench (tb/programs.py), on the model alone."""

from dataclasses import replace

import numpy as np
import pytest

from model import isa
from model.engine import COPY_OPCODES
from model.errors import MteError
from model.isa import ErrorCode, Opcode, Pipe
from model.parser import parse
from tb.programs import (AUTO, ERROR_CLASSES, GUARD, PAGE, case_seed, example_cases, generate,
                         parse_spec, spec)
from race_reference import conflicts, unordered
from tb.scoreboard import compare, copy_rows, expect, load_engine, untouched_ub

SEEDS = [case_seed(1, i) for i in range(40)]


def _run(case):
    """(instructions, the model's error or None, index of the failing instruction)."""
    instrs = parse(case.text, case.bindings)
    engine = load_engine(case)
    for index, instr in enumerate(instrs):
        try:
            engine.execute(instr)
        except MteError as error:
            return instrs, error, index
    return instrs, None, None


@pytest.mark.parametrize("seed", SEEDS[:10])
def test_same_seed_same_case(seed):
    first, second = generate(seed), generate(seed)
    assert first == second
    assert generate(seed + 1).text != first.text


def test_spec_round_trip():
    assert parse_spec(spec(0x1234)) == (0x1234, AUTO)
    assert parse_spec(spec(7, ErrorCode.UB_RANGE)) == (7, ErrorCode.UB_RANGE)
    case = generate(0x1234, ErrorCode.GM_RANGE)
    assert case.rerun == "python -m tb.run --case 0x1234/GM_RANGE"


def test_spec_names_the_case_it_came_from():
    """A random case's re-run line, legal or ending in an error, runs the same program."""
    cases = [generate(case_seed(3, index)) for index in range(60)]
    assert {c.error is None for c in cases} == {True, False}
    for case in cases:
        rerun = case.rerun.split("--case ")[1]
        assert rerun == case.name.split()[1]
        assert generate(*parse_spec(rerun)) == case, case.name


@pytest.mark.parametrize("seed", SEEDS)
def test_legal_programs_run_without_error(seed):
    case = generate(seed, None)
    instrs, error, _ = _run(case)
    assert error is None, f"{case.rerun}: {error}"
    assert any(i.op.opcode in COPY_OPCODES for i in instrs)


@pytest.mark.parametrize("profile", ["a2a3", "kirin9030"])
@pytest.mark.parametrize("seed", SEEDS[:8])
def test_profiles_without_packed_rows_get_legal_programs(seed, profile):
    """Only a5 packs rows: elsewhere the generator keeps UB strides on lines, and a
    UB_MISALIGNED program still fails at its last command."""
    _, error, _ = _run(generate(seed, None, profile))
    assert error is None, error
    instrs, error, index = _run(generate(seed, ErrorCode.UB_MISALIGNED, profile))
    assert (error.code, index) == (ErrorCode.UB_MISALIGNED, len(instrs) - 1), error


@pytest.mark.parametrize("code", ERROR_CLASSES, ids=lambda c: c.name)
@pytest.mark.parametrize("seed", SEEDS[:12])
def test_error_programs_fail_at_their_last_command(seed, code):
    case = generate(seed, code)
    instrs, error, index = _run(case)
    assert error is not None and error.code == code, f"{case.rerun}: {error}"
    assert index == len(instrs) - 1, f"{case.rerun}: failed at {index} of {len(instrs)}"


def test_auto_picks_errors_sometimes():
    kinds = {generate(case_seed(1, index)).error for index in range(200)}
    assert None in kinds and len(kinds) > 2


def test_windows_are_whole_pages_and_guarded():
    for seed in SEEDS[:10]:
        case = generate(seed)
        for base, data in case.gm:
            assert base % PAGE == 0 and len(data) % PAGE == 0
        assert case.ub.count(GUARD) > len(case.ub) // 2


def test_examples_are_cases():
    cases = example_cases()
    assert len(cases) >= 6
    for case in cases:
        assert expect(case).error is None, case.name
        for base, data in case.gm:
            assert base % PAGE == 0 and len(data) % PAGE == 0


@pytest.mark.parametrize("profile", sorted(isa.PROFILES))
def test_examples_run_on_every_profile(profile):
    """The examples in a UB of the profile's size: legal wherever that UB holds them; a
    128 KiB UB ends the UB->UB example, whose destination starts at 128 KiB, in
    UB_RANGE."""
    ub_size = isa.PROFILES[profile].ub_size
    for case in example_cases(profile):
        assert (case.profile, len(case.ub)) == (profile, ub_size)
        error = expect(case).error
        if case.name.endswith("001 mte_ub_ub i16") and ub_size <= 0x20000:
            assert error is not None and error.code == ErrorCode.UB_RANGE, case.name
        else:
            assert error is None, case.name


@pytest.mark.parametrize("seed", SEEDS[:20])
def test_untouched_ub_is_neither_read_nor_written(seed):
    """Changing every UB byte `untouched_ub` names changes nothing else the program
    leaves in UB or GM, and the program leaves those bytes as they were."""
    case = generate(seed)
    before = expect(case)
    free = untouched_ub(before.instrs, before.wrote, len(case.ub))
    mask = np.zeros(len(case.ub), dtype=bool)
    for start, end in free:
        assert start % 4 == 0 and end % 4 == 0
        mask[start:end] = True
    ub = np.frombuffer(case.ub, dtype=np.uint8).copy()
    ub[mask] ^= np.random.default_rng(seed).integers(1, 256, mask.sum(), dtype=np.uint8)
    after = expect(replace(case, ub=ub.tobytes()))
    want, got = before.checkpoints[-1], after.checkpoints[-1]
    assert np.array_equal(got.ub[mask], ub[mask])
    assert np.array_equal(got.ub[~mask], want.ub[~mask])
    assert want.gm.keys() == got.gm.keys()
    assert all(np.array_equal(want.gm[base], got.gm[base]) for base in want.gm)


# --- cross-pipe ordering, checked independently of the generator's bookkeeping ----------

def _hazards(case):
    """(cross-pipe pairs of copies touching the same bytes, those of them left unordered)."""
    instrs = parse(case.text, case.bindings)
    pairs = conflicts(instrs)
    unordered_pairs = [f"line {a.line} ({a.op.pipe.name}) and line {b.line} ({b.op.pipe.name})"
                       for a, b in unordered(instrs, pairs)]
    return len(pairs), unordered_pairs


@pytest.mark.parametrize("seed", SEEDS[:25])
def test_flags_order_every_cross_pipe_hazard(seed):
    case = generate(seed, None)
    _, left = _hazards(case)
    assert not left, f"{case.rerun}: unordered accesses to the same bytes: {left}"


def test_cross_pipe_hazards_are_common():
    """The ordering test above is not vacuous: programs do share bytes across pipes."""
    pairs = sum(_hazards(generate(seed, None))[0] for seed in SEEDS[:25])
    assert pairs >= 25


def test_some_programs_are_ordered_by_tokens_alone():
    """A share of the programs orders its cross-pipe hazards with buffer-ID tokens and no
    flag between two of the engine's pipes (the test above checks that they order every
    hazard), and their tokens hand on between pipes."""
    token_cases = 0
    for seed in SEEDS[:25]:
        case = generate(seed, None)
        instrs = parse(case.text, case.bindings)
        ops = {i.op.opcode for i in instrs}
        engine_flags = [i for i in instrs if i.op.opcode in (Opcode.SET_FLAG, Opcode.WAIT_FLAG)
                        and Pipe.EXTERNAL not in (i.values["src_pipe"], i.values["dst_pipe"])]
        if Opcode.GET_BUF in ops and _hazards(case)[0]:
            token_cases += 1
            assert not engine_flags, case.rerun
            holders = {i.values["pipe"] for i in instrs if i.op.opcode == Opcode.GET_BUF}
            assert len(holders - {Pipe.EXTERNAL}) > 1, case.rerun
    assert token_cases >= 3


def test_programs_cover_the_features():
    """Across a few dozen programs: both surfaces, padding at every element size, rows
    under 32 bytes, rows crossing a 4 KiB page, unaligned GM, multi-loop copies, packed
    UB rows (starting mid-line) in both directions."""
    seen = set()
    for seed in SEEDS:
        case = generate(seed, None)
        text = case.text
        seen |= {name for name in ("mte_gm_ub", "mte_ub_gm", "mte_ub_ub", "copy_gm_to_ubuf",
                                   "copy_ubuf_to_gm", "copy_ubuf_to_ubuf", "pad(", "loop(",
                                   "castptr", "addptr", "set_mov_pad_val") if name in text}
        instrs = parse(text, case.bindings)
        regs = {pipe: isa.reset_registers(pipe) for pipe in (Pipe.MTE2, Pipe.MTE3)}
        for instr in instrs:
            op, v = instr.op, instr.values
            if op.opcode in isa.REGISTER_WRITES:
                isa.apply_register_write(regs[isa.REGISTER_WRITES[op.opcode][0]], op, v)
                continue
            if op.opcode not in COPY_OPCODES:
                continue
            rows = copy_rows(op, v, regs.get(op.pipe))
            if op.opcode == Opcode.COPY_GM_TO_UBUF and v["data_select_bit"]:
                seen.add(f"pad es={isa.DTYPES[v['dtype']].size}")
            if op.opcode != Opcode.COPY_UBUF_TO_UBUF:
                gm = [s if op.opcode == Opcode.COPY_GM_TO_UBUF else d for s, d, _, _ in rows]
                ub = [d if op.opcode == Opcode.COPY_GM_TO_UBUF else s for s, d, _, _ in rows]
                if any(a % 32 for a in ub):
                    seen.add(f"packed {op.pipe.name}")
                seen |= {"short row"} if 0 < v["len_burst"] < 32 else set()
                seen |= {"unaligned gm"} if any(a % 32 for a in gm) else set()
                if any(a // PAGE != (a + v["len_burst"] - 1) // PAGE for a in gm):
                    seen.add("page crossing")
                if regs[op.pipe]["loop1_count"] > 1 and regs[op.pipe]["loop2_count"] > 1:
                    seen.add("two loops")
    wanted = {"mte_gm_ub", "mte_ub_gm", "mte_ub_ub", "copy_gm_to_ubuf", "copy_ubuf_to_gm",
              "copy_ubuf_to_ubuf", "pad(", "loop(", "castptr", "addptr", "set_mov_pad_val",
              "pad es=1", "pad es=2", "pad es=4", "pad es=8", "short row", "unaligned gm",
              "page crossing", "two loops", "packed MTE2", "packed MTE3"}
    assert wanted <= seen, f"never generated: {sorted(wanted - seen)}"


def test_bus_error_programs_keep_the_fault_inside_the_bus():
    """BUS_ERROR programs fault in an unmapped (or SLVERR) page right after a window."""
    for seed in SEEDS[:12]:
        case = generate(seed, ErrorCode.BUS_ERROR)
        error = expect(case).error
        assert error.code == ErrorCode.BUS_ERROR
        ends = {base + len(data) for base, data in case.gm}
        assert error.address // PAGE * PAGE in ends
        for page in case.fault_pages:
            assert page in ends


@pytest.mark.parametrize("seed", SEEDS[:6])
def test_compare_leaves_out_only_a_bus_errors_destination(seed):
    """The failing copy's destination is not compared, also against a changed copy of
    the final checkpoint (as the FPGA test makes one); a byte changed elsewhere is."""
    e = expect(generate(seed, ErrorCode.BUS_ERROR))
    final = replace(e.checkpoints[-1], ub=e.checkpoints[-1].ub.copy())
    ub, gm = final.ub.copy(), {base: data.copy() for base, data in final.gm.items()}
    images = {"ub": {0: ub}, "gm": gm}
    changed = 0
    for space, ranges in e.unspecified.items():
        for start, end in ranges:
            for base, data in images[space].items():
                lo, hi = max(start, base), min(end, base + len(data))
                if lo < hi:
                    data[lo - base:hi - base] ^= 0xFF
                    changed += hi - lo
    assert changed
    assert compare(e, final, ub, gm, 0, "bus error") == []
    ub[untouched_ub(e.instrs, e.wrote, len(ub))[0][0]] ^= 0xFF
    assert [m.space for m in compare(e, final, ub, gm, 0, "bus error")] == ["ub"]


def test_ptoas_spellings_never_change_the_commands(monkeypatch):
    """The siN types, the l2_cache_ctl(...) clause and keyword-headed type lists are
    drawn apart from the program: with them and without them (SPELLING_SHARE 0) a seed
    gives the same commands, and some programs use each."""
    from tb import programs
    seeds = [case_seed(55, index) for index in range(150)]
    spelled = [generate(seed) for seed in seeds]
    monkeypatch.setattr(programs, "SPELLING_SHARE", 0)
    plain = [generate(seed) for seed in seeds]
    for a, b in zip(spelled, plain):
        assert [(i.mnemonic, i.values) for i in a.instrs()] == \
            [(i.mnemonic, i.values) for i in b.instrs()], a.rerun
    texts = "\n".join(c.text for c in spelled)
    for spelling in ("!pto.ptr<si", "l2_cache_ctl(", "loop i64", "pad "):
        assert spelling in texts
        assert spelling not in "\n".join(c.text for c in plain)
