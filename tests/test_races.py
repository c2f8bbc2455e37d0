"""Race detection (model/races.py): happens-before, byte-exact footprints, and the
mutation test against tests/race_reference.py."""

import re
from collections import Counter, defaultdict

import pytest

from model import races as races_module
from model.bench import disjoint_copies, interleaved_rows
from model.isa import OP_BY_MNEMONIC, Opcode, Pipe
from model.parser import parse
from model.program import Instr
from model.races import MAX_RACES, ROW_LIMIT, Rows, analyse, first_shared
from model.seeds import EXAMPLES
from race_reference import conflicts, flag_key, footprints, unordered
from test_cli import mte
from tb import corpus
from tb.programs import case_seed, generate

U8 = {"gm": "!pto.ptr<u8, gm>", "ub": "!pto.ptr<u8, ub>"}


def _loops(loops):
    return "".join(f" loop(%c{c}, %c{s}, %c{d})" for c, s, d in loops), ", i64" * 3 * len(loops)


def load(gm, ub, length, rows=1, gm_stride=0, ub_stride=0, loops=(), pad=False):
    """mte_gm_ub of u8 rows; `pad`: data_select_bit 1, pad value 0, no left/right pad."""
    loop_text, loop_types = _loops(loops)
    pad_text, pad_types = (" pad(%c0)", ", u8") if pad else ("", "")
    return (f"pto.mte_gm_ub %c{gm}, %c{ub}, %c0, %c{length} "
            f"nburst(%c{rows}, %c{gm_stride}, %c{ub_stride}){loop_text}{pad_text} "
            f": {U8['gm']}, {U8['ub']}, i64, i64, i64, i64, i64{loop_types}{pad_types}")


def store(ub, gm, length, rows=1, ub_stride=0, gm_stride=0, loops=()):
    loop_text, loop_types = _loops(loops)
    return (f"pto.mte_ub_gm %c{ub}, %c{gm}, %c{length} "
            f"nburst(%c{rows}, %c{ub_stride}, %c{gm_stride}){loop_text} "
            f": {U8['ub']}, {U8['gm']}, i64, i64, i64, i64{loop_types}")


def move(src, dst, lines, rows=1, src_gap=0, dst_gap=0):
    """mte_ub_ub (PIPE_V): `lines` 32-byte lines per row."""
    return (f"pto.mte_ub_ub %c{src}, %c{dst}, %c{lines} nburst(%c{rows}, %c{src_gap}, "
            f"%c{dst_gap}) : {U8['ub']}, {U8['ub']}, i64, i64, i64, i64")


def flag(kind, src, dst, event=0):
    return f"pto.{kind}[PIPE_{src}, PIPE_{dst}, EVENT_ID{event}]"


def sync(src, dst, event=0):
    return [flag("set_flag", src, dst, event), flag("wait_flag", src, dst, event)]


def found(*statements):
    """(kind, memory, earlier line, later line, first, end) of every race; a statement
    may be a list of statements (one per line)."""
    lines = []
    for s in statements:
        lines += s if isinstance(s, list) else [s]
    analysis = analyse(parse("\n".join(lines) + "\n"))
    assert analysis.error is None, analysis.error
    return [(r.kind, r.space, r.earlier.line, r.later.line, r.shared.lo, r.shared.hi)
            for r in analysis.races]


RAW, WAR, WAW = "read after write", "write after read", "write after write"


# --- happens-before ----------------------------------------------------------------------

def test_an_unordered_load_and_store_of_the_same_ub_race():
    assert found(load(0x1000, 0, 64), store(0, 0x2000, 64)) == [(RAW, "ub", 1, 2, 0, 64)]
    assert found(load(0x1000, 0, 64), sync("MTE2", "MTE3"), store(0, 0x2000, 64)) == []


def test_a_chain_through_v_orders_mte2_before_mte3():
    chain = [load(0x1000, 0, 64), *sync("MTE2", "V"), move(1024, 2048, 1),
             *sync("V", "MTE3"), store(0, 0x2000, 64)]
    assert found(chain) == []
    # the V side's set issued before V waited for MTE2: it carries nothing of MTE2's
    early = [load(0x1000, 0, 64), flag("set_flag", "V", "MTE3"), *sync("MTE2", "V"),
             move(1024, 2048, 1), flag("wait_flag", "V", "MTE3"), store(0, 0x2000, 64)]
    assert found(early) == [(RAW, "ub", 1, 7, 0, 64)]


def test_a_set_issued_before_the_write_it_should_cover_orders_nothing():
    program = [flag("set_flag", "MTE2", "MTE3"), load(0x1000, 0, 64),
               flag("wait_flag", "MTE2", "MTE3"), store(0, 0x2000, 64)]
    assert found(program) == [(RAW, "ub", 2, 4, 0, 64)]


def test_the_second_wait_consumes_the_second_set():
    program = [load(0x1000, 0, 64), flag("set_flag", "MTE2", "MTE3"),
               load(0x1000, 1024, 64), flag("set_flag", "MTE2", "MTE3"),
               flag("wait_flag", "MTE2", "MTE3"), store(0, 0x2000, 64),
               store(1024, 0x3000, 64), flag("wait_flag", "MTE2", "MTE3"),
               store(1024, 0x4000, 64)]
    assert found(program) == [(RAW, "ub", 3, 7, 1024, 1088)]


def test_barriers():
    assert found(load(0x1000, 0, 64), "pto.barrier <PIPE_ALL>", store(0, 0x2000, 64)) == []
    # a barrier of one pipe orders that pipe only
    assert found(load(0x1000, 0, 64), "pto.barrier <PIPE_MTE2>", store(0, 0x2000, 64)) == [
        (RAW, "ub", 1, 3, 0, 64)]


def token(kind, pipe, buf_id=0):
    return f'pto.{kind} "PIPE_{pipe}", {buf_id}, 0'


def test_a_released_token_orders_the_next_get_buf_of_its_id():
    hand_on = [token("get_buf", "MTE2"), load(0x1000, 0, 64), token("rls_buf", "MTE2"),
               token("get_buf", "MTE3"), store(0, 0x2000, 64), token("rls_buf", "MTE3")]
    assert found(hand_on) == []
    # another id, or the release before the write, orders nothing
    other = [token("get_buf", "MTE2", 1), load(0x1000, 0, 64), token("rls_buf", "MTE2", 1),
             token("get_buf", "MTE3", 2), store(0, 0x2000, 64), token("rls_buf", "MTE3", 2)]
    assert found(other) == [(RAW, "ub", 2, 5, 0, 64)]
    early = [token("get_buf", "MTE2"), token("rls_buf", "MTE2"), load(0x1000, 0, 64),
             token("get_buf", "MTE3"), store(0, 0x2000, 64), token("rls_buf", "MTE3")]
    assert found(early) == [(RAW, "ub", 3, 5, 0, 64)]
    # a chain: MTE2 -> V by a token, V -> MTE3 by a flag
    chain = [token("get_buf", "MTE2"), load(0x1000, 0, 64), token("rls_buf", "MTE2"),
             token("get_buf", "V"), move(1024, 2048, 1), token("rls_buf", "V"),
             *sync("V", "MTE3"), store(0, 0x2000, 64)]
    assert found(chain) == []


def test_tokens_of_a_pipe_the_engine_lacks_order_nothing():
    program = [token("get_buf", "MTE2"), load(0x1000, 0, 64), token("rls_buf", "MTE2"),
               token("get_buf", "S"), token("get_buf", "MTE3"), store(0, 0x2000, 64),
               token("rls_buf", "MTE3")]
    assert found(program) == []
    program = [load(0x1000, 0, 64), token("get_buf", "S"), token("rls_buf", "S"),
               token("get_buf", "MTE3"), store(0, 0x2000, 64), token("rls_buf", "MTE3")]
    assert found(program) == [(RAW, "ub", 1, 5, 0, 64)]


def test_flags_with_a_pipe_the_engine_lacks_order_nothing():
    program = [load(0x1000, 0, 64), flag("set_flag", "MTE2", "S"), flag("wait_flag", "S", "MTE3"),
               store(0, 0x2000, 64)]
    assert found(program) == [(RAW, "ub", 1, 4, 0, 64)]


def test_the_three_kinds_and_gm_read_after_write_through_mte3_then_mte2():
    assert found(store(0, 0x2000, 64), load(0x2010, 1024, 16)) == [
        (RAW, "gm", 1, 2, 0x2010, 0x2020)]
    assert found(store(0, 0x2000, 64), sync("MTE3", "MTE2"), load(0x2010, 1024, 16)) == []
    assert found(store(0, 0x2000, 64), load(0x1000, 32, 32)) == [(WAR, "ub", 1, 2, 32, 64)]
    assert found(move(0, 4096, 2), load(0x1000, 4096 + 32, 64)) == [
        (WAW, "ub", 1, 2, 4096 + 32, 4096 + 64)]
    # a V copy reading what MTE2 writes and writing what MTE3 reads: one line per way
    assert found(load(0x1000, 0, 64), store(4096, 0x2000, 64), move(0, 4096, 2)) == [
        (RAW, "ub", 1, 3, 0, 64), (WAR, "ub", 2, 3, 4096, 4096 + 64)]


# --- footprints: rows, not spans ----------------------------------------------------------

def test_loop_iterations_that_do_and_do_not_touch():
    # rows of 64 bytes at 0, 256, 512, 768
    rows = load(0x1000, 0, 64, loops=[(4, 64, 256)])
    assert found(rows, store(128, 0x8000, 64)) == []
    assert found(rows, store(544, 0x8000, 64)) == [(RAW, "ub", 1, 2, 544, 576)]


def test_interleaved_rows_race_only_when_they_share_a_byte():
    even = load(0x1000, 0, 32, rows=16, gm_stride=32, ub_stride=64)
    assert found(even, store(32, 0x8000, 32, rows=16, ub_stride=64, gm_stride=32)) == []
    assert found(even, store(32, 0x8000, 33, rows=16, ub_stride=64, gm_stride=33)) == [
        (RAW, "ub", 1, 2, 64, 65)]


def test_the_padding_an_mte2_row_writes_is_part_of_its_footprint():
    # 40 data bytes, row extent 96 (the row stride): pad bytes 40..95 are written too
    assert found(load(0x1000, 0, 40, ub_stride=96, pad=True), store(64, 0x8000, 16)) == [
        (RAW, "ub", 1, 2, 64, 80)]
    assert found(load(0x1000, 0, 40, ub_stride=96), store(64, 0x8000, 16)) == []


def test_rows_merge_where_they_touch_and_loops_that_continue_each_other_join():
    assert Rows.of(0, [(4, 32)], 32) == Rows(0, (), 128)
    assert Rows.of(0, [(2, 256), (4, 64)], 32) == Rows(0, ((8, 64),), 32)
    assert Rows.of(7, [(5, 0), (1, 99), (3, 100)], 10) == Rows(7, ((3, 100),), 10)


def test_row_starts_of_loops_that_interleave_are_sorted_once_each():
    assert Rows.of(0, [(3, 100), (2, 150)], 10).starts().tolist() == [0, 100, 150, 200, 250,
                                                                      350]
    assert Rows.of(0, [(3, 100), (2, 200)], 10).starts().tolist() == [0, 100, 200, 300, 400]
    assert Rows.of(5, [(2, 1000), (3, 100)], 10).starts().tolist() == [5, 105, 205, 1005,
                                                                       1105, 1205]


def test_first_shared_is_the_lowest_shared_byte_of_the_rows():
    a = Rows.of(0, [(100, 64)], 32)
    assert first_shared(a, Rows.of(32, [(100, 64)], 32)) is None
    assert first_shared(a, Rows.of(32, [(100, 64)], 33)) == (64, 65, True)
    assert first_shared(a, Rows.of(6360, [], 8)) == (6360, 6368, True)
    assert first_shared(a, Rows.of(6330, [], 8)) == (6336, 6338, True)
    assert first_shared(a, Rows.of(6368, [], 8)) is None


def test_a_million_interleaved_rows_are_compared_row_by_row():
    # `make bench-model` times this check (goal: well under a second)
    assert found(interleaved_rows(32)) == []
    assert found(interleaved_rows(48)) == [(WAR, "gm", 1, 2, 64, 80)]


def test_footprints_too_large_to_list_are_compared_by_span_and_say_so(monkeypatch):
    monkeypatch.setattr(races_module, "ROW_LIMIT", 1000)
    statements = interleaved_rows(32)
    analysis = analyse(parse("\n".join(statements) + "\n"))
    (race,) = analysis.races
    assert not race.shared.exact and "conservative" in str(race)
    assert ROW_LIMIT >= 1 << 20


def test_thousands_of_unordered_copies_that_share_no_byte_are_no_race():
    # `make bench-model` times this check
    copies = 3000
    analysis = analyse(parse("\n".join(disjoint_copies(copies)) + "\n"))
    assert analysis.races == [] and analysis.commands == 6 + 2 * copies


def test_the_check_stops_at_max_races_and_says_so():
    # one MTE3 read, then 1200 MTE2 copies (a software loop) each writing what it reads
    copies = MAX_RACES + 200
    program = [store(0, 0x8000, 64),
               load(0x100000, 0, 64, loops=[(1, 0, 0), (1, 0, 0), (copies, 64, 0)])]
    analysis = analyse(parse("\n".join(program) + "\n"))
    assert analysis.cut and len(analysis.races) == MAX_RACES
    assert analysis.commands == 4 + 3 + MAX_RACES        # loop registers, then copies
    lines = analysis.lines()
    assert len(lines) == MAX_RACES + 1 and lines[0] == str(analysis.races[0])
    assert lines[-1] == (f"RACE: the check stopped at {MAX_RACES} races, after command "
                         f"{4 + 3 + MAX_RACES}: later commands may race too")
    assert not analyse(parse(program[1] + "\n")).cut


# --- programs that are synchronised, and their mutants ------------------------------------

def test_no_race_in_the_seed_examples():
    for example in EXAMPLES:
        analysis = analyse(parse(example.program, example.bindings))
        assert analysis.error is None and analysis.races == [], example.name


def test_no_race_in_the_corpus():
    programs = corpus.programs()
    assert len(programs) >= 20
    for program in programs:
        skipped = Counter() if program.skip_compute else None
        instrs = parse(program.text, program.bindings, program.profile, skipped=skipped)
        analysis = analyse(instrs, program.profile)
        assert analysis.error is None and analysis.races == [], program.name


RANDOM_PROGRAMS = 2000


def test_no_race_in_thousands_of_generated_programs():
    """Synchronised by construction (tb/programs.py), whichever error they end in."""
    for index in range(RANDOM_PROGRAMS):
        case = generate(case_seed(57, index))
        analysis = analyse(parse(case.text, case.bindings), case.profile)
        assert analysis.races == [], f"{case.rerun}: {analysis.races[0]}"


def _orderings(instrs):
    """(kind, index set) of each ordering a mutant may drop: a set_flag between two engine
    pipes and the wait_flag that consumes it ("flag pair"); a barrier's flag pairs
    together, as they share a statement ("barrier"); a get_buf and the rls_buf of its
    holder ("token pair")."""
    sets, waits, held = defaultdict(list), defaultdict(list), {}
    units = defaultdict(set)
    for index, instr in enumerate(instrs):
        opcode = instr.op.opcode
        if opcode in (Opcode.SET_FLAG, Opcode.WAIT_FLAG) and \
                Pipe.EXTERNAL not in flag_key(instr)[:2]:
            (sets if opcode == Opcode.SET_FLAG else waits)[flag_key(instr)].append(index)
        elif opcode == Opcode.GET_BUF and instr.values["pipe"] != Pipe.EXTERNAL:
            held[instr.values["buf_id"]] = index
        elif opcode == Opcode.RLS_BUF and instr.values["pipe"] != Pipe.EXTERNAL:
            units["token", index] = {held.pop(instr.values["buf_id"]), index}
    for key, indices in sets.items():
        for set_index, wait_index in zip(indices, waits[key]):
            statement = (instrs[set_index].line, instrs[set_index].column)
            units[statement] |= {set_index, wait_index}
    kinds = {2: "flag pair", 12: "barrier"}
    return [("token pair" if key[0] == "token" else kinds[len(unit)], unit)
            for key, unit in units.items()]


def _token(instr, mnemonic, pipe, buf_id):
    return Instr(OP_BY_MNEMONIC[mnemonic], {"pipe": pipe, "buf_id": buf_id, "mode": 0},
                 instr.line, instr.column, instr.text)


def _with_tokens(instrs):
    """Every other flag pair between two pipes whose wait follows its set directly, written
    as a token handed from the set's pipe to the wait's instead: get_buf and rls_buf on
    the one, then get_buf and rls_buf on the other (token id: the event id mod 4)."""
    out, convert, skip = [], False, False
    for instr, after in zip(instrs, instrs[1:] + [None]):
        if skip:
            skip = False
            continue
        key = flag_key(instr) if instr.op.opcode == Opcode.SET_FLAG else None
        if key and key[0] != key[1] and Pipe.EXTERNAL not in key[:2] and after is not None \
                and after.op.opcode == Opcode.WAIT_FLAG and flag_key(after) == key:
            convert = not convert
            if convert:
                buf_id = key[2] % 4
                out += [_token(instr, name, pipe, buf_id) for pipe in key[:2]
                        for name in ("get_buf", "rls_buf")]
                skip = True
                continue
        out.append(instr)
    return out


def _mutants(count):
    """{kind: [mutants tried, those the reference finds unordered, those the detector
    reports]}, asserting for each mutant that the detector reports exactly the reference's
    unordered pairs. Every other program hands every other flag pair's ordering on by a
    token instead."""
    tally = defaultdict(lambda: [0, 0, 0])
    for index in range(count):
        case = generate(case_seed(5757, index), None)
        instrs = parse(case.text, case.bindings)
        if index % 2:
            instrs = _with_tokens(instrs)
        pairs = conflicts(instrs, footprints(instrs))
        for kind, unit in _orderings(instrs):
            mutant = [instr for k, instr in enumerate(instrs) if k not in unit]
            want = [(id(a), id(b)) for a, b in unordered(mutant, pairs)]
            got = sorted({(id(r.earlier), id(r.later)) for r in analyse(mutant).races})
            assert sorted(want) == got, case.rerun
            counts = tally[kind]
            counts[0] += 1
            counts[1] += bool(want)
            counts[2] += bool(got)
    return tally


def test_every_mutant_that_loses_an_ordering_reports_a_race(capsys):
    tally = _mutants(150)
    with capsys.disabled():
        for kind, (tried, unordered_mutants, reported) in sorted(tally.items()):
            print(f"\nrace mutants, {kind}: {tried} tried, {unordered_mutants} leave a "
                  f"conflict unordered, races reported for {reported}", end="")
        print()
    for kind in ("flag pair", "barrier", "token pair"):
        tried, unordered_mutants, reported = tally[kind]
        assert unordered_mutants >= 10 and reported == unordered_mutants, kind


def test_the_mutation_test_catches_a_detector_without_transitivity(monkeypatch):
    def flag_without_chains(self, instr):
        """A set_flag that passes on its own pipe's commands only, not what it waited for."""
        src, dst = Pipe(instr.values["src_pipe"]), Pipe(instr.values["dst_pipe"])
        if Pipe.EXTERNAL in (src, dst):
            return
        key = (src, dst, instr.values["event_id"])
        if instr.op.opcode == Opcode.SET_FLAG:
            own = [0] * len(self.clock[src])
            own[src] = self.clock[src][src]
            self.flags[key].append(own)
        elif self.flags[key]:
            self.join(dst, self.flags[key].popleft())
    monkeypatch.setattr(races_module.Clocks, "flag", flag_without_chains)
    with pytest.raises(AssertionError):
        _mutants(150)


def test_the_mutation_test_catches_a_detector_that_compares_spans(monkeypatch):
    def spans(a, b):
        lo, hi = max(a.base, b.base), min(a.end, b.end)
        return races_module.Shared(lo, hi) if lo < hi else None
    monkeypatch.setattr(races_module, "first_shared", spans)
    with pytest.raises(AssertionError):
        _mutants(150)


# --- the commands ---------------------------------------------------------------------------

RACY = [load(0x10000, 0, 128, rows=32, gm_stride=128, ub_stride=128),
        store(0, 0x20000, 128, rows=32, ub_stride=128, gm_stride=128)]
RACE_LINE = ("RACE: read after write on UB [0x0, 0x1000): line 1 copy_gm_to_ubuf (PIPE_MTE2) "
             "writes, line 2 copy_ubuf_to_gm (PIPE_MTE3) reads, and no flag, barrier or token "
             "orders them")


@pytest.fixture
def racy(tmp_path):
    (tmp_path / "racy.pto").write_text("\n".join(RACY) + "\n")
    (tmp_path / "fixed.pto").write_text("\n".join([RACY[0], *sync("MTE2", "MTE3"), RACY[1]]))
    (tmp_path / "bad.pto").write_text(RACY[0] + "\n" + store(16, 0x20000, 128) + "\n")
    (tmp_path / "gm.bin").write_bytes(bytes(range(256)) * 16)
    return tmp_path


def test_check_prints_one_line_per_race_and_exits_1(racy):
    run = mte("check", "racy.pto", cwd=racy)
    assert (run.returncode, run.stdout, run.stderr) == (1, RACE_LINE + "\n", "")
    run = mte("check", "fixed.pto", "--profile", "a2a3", cwd=racy)
    assert (run.returncode, run.stdout, run.stderr) == (0, "no race: 10 commands checked\n", "")


def test_check_reports_a_rule_violation_with_its_code(racy):
    run = mte("check", "bad.pto", cwd=racy)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.startswith("UB_MISALIGNED: line 2: copy_ubuf_to_gm")


@pytest.mark.parametrize("args", [("missing.pto",), ("racy.pto", "--profile", "a9"),
                                  ("racy.pto", "--bind", "x")])
def test_check_usage_errors_exit_2(racy, args):
    run = mte("check", *args, cwd=racy)
    assert run.returncode == 2 and run.stdout == "" and "error" in run.stderr


def test_check_program_text_errors_exit_2(racy):
    (racy / "typo.pto").write_text("pto.copy_gm_to_ubf %a, %b\n")
    run = mte("check", "typo.pto", cwd=racy)
    assert run.returncode == 2 and "typo.pto:1:" in run.stderr and "Traceback" not in run.stderr


RUN = ("run", "racy.pto", "--gm", "0x10000=gm.bin", "--gm", "0x20000:4096",
       "--dump-gm", "0x20000:4096=out.bin")


def test_run_warns_of_races_and_goes_on(racy):
    run = mte(*RUN, cwd=racy)
    assert run.returncode == 0 and run.stderr == RACE_LINE + "\n"
    assert run.stdout.startswith("ops run: 8")
    assert (racy / "out.bin").read_bytes() == (racy / "gm.bin").read_bytes()


def test_run_races_error_exits_1_before_anything_moves(racy):
    run = mte(*RUN, "--races", "error", cwd=racy)
    assert (run.returncode, run.stdout, run.stderr) == (1, "", RACE_LINE + "\n")
    assert not (racy / "out.bin").exists()


def test_run_races_off_does_not_look(racy):
    run = mte(*RUN, "--races", "off", cwd=racy)
    assert run.returncode == 0 and run.stderr == ""


def test_shake_needs_the_rtl_and_a_count(racy):
    for args, words in ((("--shake", "3"), "give --engine rtl"),
                        (("--shake", "0", "--engine", "rtl"), "from 1 to"),
                        (("--shake", "many", "--engine", "rtl"), "not a decimal")):
        run = mte(*RUN, *args, cwd=racy)
        assert run.returncode == 2 and words in run.stderr, run.stderr
        assert not (racy / "out.bin").exists()


# --- on the RTL --------------------------------------------------------------------------

SHAKES = 3
# 64 KiB of GM reads (4 KiB, 16 times) that keep MTE2 busy ahead of the racy load
BUSY = load(0x10000, 0x8000, 128, rows=32, gm_stride=128, ub_stride=128,
            loops=[(16, 0, 4096)])


def test_shaken_rtl_runs_of_a_racy_program_diverge_and_of_its_fix_do_not(racy, capsys,
                                                                        monkeypatch):
    """MTE3 stores UB while MTE2, still busy with an earlier load, has not filled it: under
    seeded random GM latency and backpressure the runs leave other GM bytes than the
    model's. With the flag pair every run leaves the model's bytes."""
    from cli import main
    monkeypatch.chdir(racy)
    (racy / "slow_racy.pto").write_text("\n".join([BUSY, *RACY]) + "\n")
    (racy / "slow_fixed.pto").write_text("\n".join([BUSY, RACY[0], *sync("MTE2", "MTE3"),
                                                    RACY[1]]) + "\n")
    args = list(RUN[2:]) + ["--engine", "rtl", "--shake", str(SHAKES)]
    assert main(["run", "slow_racy.pto"] + args) == 1
    out, err = capsys.readouterr()
    assert re.search(r"\n  seeds? [\d, ]+: GM 0x2\w+: model 0x\w+, rtl 0x\w+ \(\d+ bytes "
                     r"differ\)\n", out), out
    assert "RACE: read after write on UB [0x0, 0x1000): line 2 copy_gm_to_ubuf" in err
    assert "shaken runs differ from the model" in err
    assert main(["run", "slow_fixed.pto"] + args) == 0
    out, err = capsys.readouterr()
    assert f"shake: {SHAKES} runs" in out and "1 distinct final memories" in out, out
    assert f"seeds {', '.join(map(str, range(1, SHAKES + 1)))}: the model's bytes" in out
    assert err == ""


def test_check_skips_compute_ops_when_asked():
    program = corpus.CORPUS / "ptoas_vadd_skip_compute.pto"
    binds = ["--bind", "arg0=0x10000", "--bind", "arg1=0x11000", "--bind", "arg2=0x20000"]
    run = mte("check", program, *binds, cwd=program.parent)
    assert run.returncode == 2 and "--skip-compute" in run.stderr
    run = mte("check", program, *binds, "--skip-compute", cwd=program.parent)
    assert run.returncode == 0 and run.stdout.startswith("no race: "), run.stderr
