"""Hostile program text: each class of malformed input is a named ProgramError at the token
that is wrong (or a deferred FIELD_RANGE where the text is well formed), never a Python
exception of another kind, a hang or a huge allocation. Each class is a generated sweep."""

import os
import signal
import sys

import pytest

from cli.options import C_KEYWORDS
from model.assembler import encode_instr
from model.errors import MteError, ProgramError
from model.isa import DTYPE_BY_NAME, ErrorCode, Pipe
from model.parser import MAX_DIGITS, MAX_NESTING, parse

LOOP_SIZE = "pto.set_loop_size_outtoub %c1, %c1 : i64, i64"


def program_error(text, bindings=None):
    with pytest.raises(ProgramError) as info:
        parse(text, bindings)
    return info.value


def position(text, index):
    """(line, column) of text[index], as ProgramError reports it."""
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


# --- depth -----------------------------------------------------------------------------

NESTINGS = {
    "module": ("", "module {"),
    "func": ("", "func.func @f() {"),
    "scf.for": ("", "scf.for %i = %c0 to %c1 step %c1 {\n"),
    "scf.if": ("", "scf.if %true {\n"),
    "module attributes": ("module attributes ", "{a = "),
    "attribute dictionary": (LOOP_SIZE + " ", "{"),
    "brackets in attributes": (LOOP_SIZE + " {a = ", "["),
    "parentheses in attributes": (LOOP_SIZE + " {a = ", "("),
    "argument attributes": ("func.func @f(%a : i64 ", "{"),
    "dialect type": ("pto.set_loop_size_outtoub %c1, %c1 : !pto.tile", "<"),
}
DEPTHS = (MAX_NESTING + 1, 500, 5_000, 100_000)


def too_deep(text):
    """Index of the first bracket that opens level MAX_NESTING + 1."""
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch in "{([<") - (ch in "})]>")
        if depth > MAX_NESTING:
            return i
    return None


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("construct", NESTINGS)
def test_nesting_deeper_than_the_bound_is_refused_at_the_first_bracket_too_deep(
        construct, depth):
    prefix, opener = NESTINGS[construct]
    text = prefix + opener * depth
    err = program_error(text)
    assert "nesting deeper than" in err.message
    assert (err.line, err.column) == position(text, too_deep(text))


@pytest.mark.parametrize("construct", ["module", "func", "scf.for", "scf.if"])
def test_nesting_up_to_the_bound_parses(construct):
    _, opener = NESTINGS[construct]
    # a func's parentheses close at once, so its level is its brace; the copy's types
    # add none
    text = opener * MAX_NESTING + LOOP_SIZE + "}" * MAX_NESTING
    assert too_deep(text) is None
    assert [i.mnemonic for i in parse(text)] == ["set_loop_size_outtoub"]


# --- size of numbers -------------------------------------------------------------------

DIGIT_PLACES = {
    "decimal literal": "%x = arith.constant {d} : i64",
    "negative literal": "%x = arith.constant -{d} : i64",
    "hex literal": "%x = arith.constant 0x{d} : i64",
    "float literal": "%x = arith.constant 1.{d} : f32",
    "constant name": "pto.set_loop_size_outtoub %c{d}_i64, %c1 : i64, i64",
    "event id": "pto.set_flag[PIPE_MTE2, PIPE_V, EVENT_ID{d}]",
    "type repeat": "pto.set_loop_size_outtoub %c1, %c1 : i64 x{d}",
}


@pytest.mark.parametrize("digits", [MAX_DIGITS + 1, 4_301, 100_000])
@pytest.mark.parametrize("place", DIGIT_PLACES)
def test_digit_runs_longer_than_the_bound_are_refused(place, digits):
    text = DIGIT_PLACES[place].format(d="7" * digits)
    err = program_error(text)
    assert f"more than {MAX_DIGITS} digits" in err.message
    start = text.index("7" * 10)
    token_start = max(text.rfind(c, 0, start) for c in " [,") + 1
    assert (err.line, err.column) == position(text, token_start)


def test_a_number_of_the_bound_s_digits_is_read():
    (instr,) = parse(f"%x = arith.constant {'9' * MAX_DIGITS} : i64\n"
                     "pto.set_loop_size_outtoub %x, %c1 : i64, i64")
    assert instr.values["loop1_count"] == int("9" * MAX_DIGITS)
    with pytest.raises(MteError) as info:
        encode_instr(instr)
    assert info.value.code == ErrorCode.FIELD_RANGE


PAD_TYPES = ["f16", "bf16", "f32", "f8e4m3", "f8e5m2", "i8", "u16", "i32", "u64"]
HUGE = {"2^128": str(1 << 128), "10^99": "1" + "0" * 99, "-2^1024": str(-(1 << 1024))[:101],
        "2^1024": str(1 << 1024)[:100], "hex 2^256-1": "0x" + "F" * 64}


def pad_program(value, pad_type, form):
    define = f"%v = arith.constant {value} : i64\n"
    if form == "set_mov_pad_val":
        return define + f"pto.set_mov_pad_val %v : {pad_type}"
    return define + ("pto.mte_gm_ub %g, %u, %c0, %c32 nburst(%c1, %c32, %c32) pad(%v) "
                     f": !pto.ptr<{pad_type}, gm>, !pto.ptr<{pad_type}, ub>, i64 x5, {pad_type}")


@pytest.mark.parametrize("form", ["set_mov_pad_val", "pad clause"])
@pytest.mark.parametrize("pad_type", PAD_TYPES)
@pytest.mark.parametrize("value", HUGE)
def test_a_pad_value_beyond_its_type_is_one_field_range_in_one_wording(value, pad_type, form):
    instrs = parse(pad_program(HUGE[value], pad_type, form), {"g": 0x1000, "u": 0})
    (pad,) = [i for i in instrs if i.mnemonic == "set_mov_pad_val"]
    with pytest.raises(MteError) as info:
        encode_instr(pad)
    assert info.value.code == ErrorCode.FIELD_RANGE
    assert info.value.message == f"pad value {pad.deferred[1].split()[2]} does not fit {pad_type}"
    assert pad.values["pad_val"] == 0


@pytest.mark.parametrize("float_type", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("literal", ["1e400", "-1e400", "1e309", "2e308", "1.7977e309"])
def test_a_decimal_literal_beyond_every_float_range_is_refused_not_infinity(literal,
                                                                            float_type):
    text = f"%x = arith.constant {literal} : {float_type}"
    err = program_error(text)
    assert (err.line, err.column) == (1, 21)
    assert "beyond the range" in err.message or "does not fit" in err.message


def test_infinity_is_written_as_its_bits():
    instrs = parse("%x = arith.constant 0x7C00 : f16\npto.set_mov_pad_val %x : f16")
    assert instrs[0].values["pad_val"] == 0x7C00 and instrs[0].deferred is None


# --- other scripts' digits -------------------------------------------------------------

SCRIPT_DIGITS = {"arabic-indic": "٣٢", "extended arabic": "۳۲", "devanagari": "३२",
                 "fullwidth": "３２", "bengali": "৩২", "thai": "๓๒"}
DIGIT_CONTEXTS = {
    "literal": "%x = arith.constant {d} : i64",
    "constant name": "pto.set_loop_size_outtoub %c{d}, %c1 : i64, i64",
    "event id": "pto.set_flag[PIPE_MTE2, PIPE_V, EVENT_ID{d}]",
    "type repeat": "pto.set_loop_size_outtoub %c1, %c1 : i64 x{d}",
    "integer type": "pto.set_loop_size_outtoub %c1, %c1 : i{d}, i64",
}


@pytest.mark.parametrize("context", DIGIT_CONTEXTS)
@pytest.mark.parametrize("script", SCRIPT_DIGITS)
def test_digits_of_other_scripts_are_not_numbers(script, context):
    digits = SCRIPT_DIGITS[script]
    text = DIGIT_CONTEXTS[context].format(d=digits)
    err = program_error(text)
    assert (err.line, err.column) == position(text, text.index(digits))
    assert err.message == f"unexpected character {digits[0]!r}"


# --- misspelt pipes --------------------------------------------------------------------

MISSPELT_PIPES = ["PIPE_MTE22", "PIPE_mte2", "PIPE_VV", "PIPE_", "PIPE_ALLL", "PIPE_MTE",
                  "PIPE_SOMETHING_NEW"]


@pytest.mark.parametrize("where", ["source", "destination", "barrier"])
@pytest.mark.parametrize("pipe", MISSPELT_PIPES)
def test_a_misspelt_pipe_is_an_error_not_a_dropped_synchronisation(pipe, where):
    text = {"source": f'pto.set_flag["{pipe}", "PIPE_V", "EVENT_ID0"]',
            "destination": f"pto.wait_flag[<PIPE_MTE2>, <{pipe}>, <EVENT_ID0>]",
            "barrier": f"pto.barrier #pto.pipe<{pipe}>"}[where]
    err = program_error(text)
    assert err.message.startswith(f"unknown pipe {pipe!r}")
    at = text.index(pipe) - 1 if where == "source" else text.rindex(pipe)
    assert (err.line, err.column) == position(text, at)


# --- size of text ----------------------------------------------------------------------

@pytest.mark.parametrize("count", ["99999999999", "10000000000000000000000000000000000"])
def test_a_type_repeat_beyond_the_text_is_refused_before_it_is_built(count):
    text = f"{LOOP_SIZE[:LOOP_SIZE.index(':')]}: i64 x{count}"
    err = program_error(text)
    assert (err.line, err.column) == position(text, text.index("x" + count))
    assert "repeats a type" in err.message


def test_the_error_comes_as_soon_as_the_bad_token_is_read():
    # the 5 MB tail ends in a character no token may hold: read ahead, it would be the error
    text = LOOP_SIZE + "\n\n\n%% bad\n" + "set_flag [ ] , : " * 300_000 + "\u0663"
    err = program_error(text)
    assert (err.line, err.column) == (4, 1)


def test_sub_byte_types_are_supported_on_no_profile():
    from model.engine import Engine
    instrs = parse("pto.copy_ubuf_to_ubuf %c0, %c64, %c0, %c1, %c32, %c0, %c0 "
                   ": !pto.ptr<i4, ub>, !pto.ptr<i4, ub>, i64 x5")
    with pytest.raises(MteError) as info:
        Engine("a5").run(instrs)
    assert info.value.code == ErrorCode.TYPE_UNSUPPORTED
    assert info.value.message == "element type i4 is not supported on any profile " \
                                 "(it is sub-byte)"
    assert DTYPE_BY_NAME["i4"].size == 0


# --- the command line, in-process ------------------------------------------------------

def mte(capsys, *argv):
    """(exit status, stdout, stderr) of `mte ARGV`, run in this process."""
    from cli import main
    try:
        status = main([str(a) for a in argv])
    except SystemExit as exit_:
        status = exit_.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return status, out, err


@pytest.fixture
def work(tmp_path):
    from model import seeds
    (tmp_path / "load.pto").write_text(seeds.TILE_LOAD_F32)
    (tmp_path / "tile.bin").write_bytes(seeds.TILE_32X32_F32.tobytes())
    return tmp_path


def load_run(work, *options):
    return ("run", work / "load.pto", "--gm", f"0x1000={work / 'tile.bin'}",
            "--bind", "arg0=0x1000", "--bind", "ub_in=0x40", *options)


def test_the_load_program_runs(work, capsys):
    status, out, _ = mte(capsys, *load_run(work, "--dump-ub", f"0x40:16={work / 'ub.bin'}"))
    assert status == 0 and "ops run: 2" in out
    assert (work / "ub.bin").read_bytes() == (work / "tile.bin").read_bytes()[:16]


HOSTILE_TEXTS = {
    **{f"nesting {name}": prefix + opener * 500 for name, (prefix, opener) in NESTINGS.items()},
    **{f"digits {name}": text.format(d="7" * 4_301) for name, text in DIGIT_PLACES.items()},
    **{f"script {name}": text.format(d="４０")
       for name, text in DIGIT_CONTEXTS.items()},
    **{f"pipe {pipe}": f"pto.set_flag[<{pipe}>, <PIPE_V>, <EVENT_ID0>]"
       for pipe in MISSPELT_PIPES},
}


@pytest.mark.parametrize("command", ["run", "asm", "check"])
@pytest.mark.parametrize("case", HOSTILE_TEXTS)
def test_hostile_text_is_a_usage_error_at_its_place(case, command, tmp_path, capsys):
    program = tmp_path / "p.pto"
    program.write_text(HOSTILE_TEXTS[case])
    err = program_error(HOSTILE_TEXTS[case])
    status, out, stderr = mte(capsys, command, program)
    assert (status, out) == (2, "")
    assert stderr == f"mte: error: {program}:{err.line}:{err.column}: {err.message}\n"


BAD_NUMBERS = ["٤٠٩٦", "４０９６", "१०", "1_000", " 12", "12 ", "0x", "1e3", "0x1g", "+-1",
               "9" * (MAX_DIGITS + 1), "0b101", "١٠", "0x" + "f" * (MAX_DIGITS + 1)]
NUMBER_PLACES = {
    "--gm address": ("--gm", "{n}:16"),
    "--gm length": ("--gm", "0x8000:{n}"),
    "--ub address": ("--ub", "{n}={tile}"),
    "--bind value": ("--bind", "extra={n}"),
    "--dump-gm length": ("--dump-gm", "0x1000:{n}={out}"),
    "--dump-ub address": ("--dump-ub", "{n}:16={out}"),
}


@pytest.mark.parametrize("place", NUMBER_PLACES)
@pytest.mark.parametrize("bad", BAD_NUMBERS)
def test_an_option_number_is_ascii_decimal_or_hex(bad, place, work, capsys):
    option, form = NUMBER_PLACES[place]
    value = form.format(n=bad, tile=work / "tile.bin", out=work / "out.bin")
    status, out, err = mte(capsys, *load_run(work, option, value))
    assert (status, out) == (2, "")
    assert f"argument {option}: {bad!r} is not a decimal or 0x hex number" in err
    assert not (work / "out.bin").exists()


def test_a_gm_window_with_a_length_and_a_file_says_so(work, capsys):
    status, _, err = mte(capsys, *load_run(work, "--gm", "0x8000:16=x"))
    assert status == 2
    assert "gives both a length and a file: a window is ADDR=FILE" in err


C_NOT_NAMES = sorted(C_KEYWORDS) + [
    "_Foo", "__x", "uint32_t", "int8_t", "uint_least16_t", "intptr_t", "9lives", "a-b",
    "naïve", "a b", ""]


@pytest.mark.parametrize("name", C_NOT_NAMES)
def test_the_c_array_name_is_an_identifier_c_does_not_reserve(name, work, capsys):
    status, out, err = mte(capsys, "asm", work / "load.pto", "--bind", "arg0=0x1000",
                           "--bind", "ub_in=0x40", "--format", "c", "--name", name)
    assert (status, out) == (2, "")
    assert f"argument --name: {name!r} is not a C identifier" in err or \
        f"argument --name: {name!r} is a C keyword or reserved name" in err


def test_a_c_array_name_c_allows_is_written(work, capsys):
    status, out, _ = mte(capsys, "asm", work / "load.pto", "--bind", "arg0=0x1000",
                         "--bind", "ub_in=0x40", "--format", "c", "--name", "integer_8")
    assert status == 0 and "static const uint32_t integer_8[" in out


DEFINES_X = "%x = arith.constant 3 : i64\npto.set_loop_size_outtoub %x, %c1 : i64, i64\n"
BAD_BINDINGS = {
    "unused": ([("nope", "1")], LOOP_SIZE, "--bind nope: the program never uses %nope"),
    "twice": ([("x", "1"), ("x", "2")], LOOP_SIZE.replace("%c1,", "%x,"),
              "--bind x is given twice"),
    "twice with %": ([("x", "1"), ("%x", "2")], LOOP_SIZE.replace("%c1,", "%x,"),
                     "--bind x is given twice"),
    "hidden by a definition": ([("x", "1")], DEFINES_X,
                               ":1:1: --bind x: the program defines %x here"),
    **{f"constant {name}": ([(name, "5")], LOOP_SIZE,
                            f"--bind {name}: %{name} is a constant by name")
       for name in ("c1", "c128_i64", "c-1_i64", "c0_i64_0", "true", "false_1")},
    **{f"name {name!r}": ([(name, "5")], LOOP_SIZE, "is not a name program text can write")
       for name in ("a b", "a\tb", "ä", "x;y", "%")},
}


@pytest.mark.parametrize("case", BAD_BINDINGS)
def test_a_binding_the_program_does_not_read_is_a_usage_error(case, tmp_path, capsys):
    pairs, text, words = BAD_BINDINGS[case]
    program = tmp_path / "p.pto"
    program.write_text(text)
    binds = [arg for name, value in pairs for arg in ("--bind", f"{name}={value}")]
    status, out, err = mte(capsys, "asm", program, *binds)
    assert (status, out) == (2, "")
    assert words in err


def test_a_utf8_bom_at_the_start_is_skipped_and_nowhere_else(tmp_path, capsys):
    program = tmp_path / "p.pto"
    program.write_bytes(LOOP_SIZE.encode())
    plain = mte(capsys, "asm", program)
    program.write_bytes(b"\xef\xbb\xbf" + LOOP_SIZE.encode())
    assert mte(capsys, "asm", program) == plain
    assert plain[0] == 0 and plain[1].startswith("// line 1: set_loop_size_outtoub\n")
    program.write_bytes(LOOP_SIZE.encode() + b"\n\xef\xbb\xbf")
    status, _, err = mte(capsys, "asm", program)
    assert status == 2 and err.endswith(":2:1: unexpected character '\\ufeff'\n")


def file_roles(work):
    """role -> the options that read FILE in that role."""
    return {"program": lambda f: ("run", f),
            "--gm": lambda f: load_run(work, "--gm", f"0x8000={f}"),
            "--ub": lambda f: load_run(work, "--ub", f"0x100={f}")}


def endless_or_blocking(work, kind):
    if kind == "fifo":
        os.mkfifo(work / "fifo")
        return work / "fifo"
    return {"/dev/zero": "/dev/zero", "/dev/urandom": "/dev/urandom",
            "directory": work, "/dev/null": "/dev/null"}[kind]


@pytest.mark.parametrize("kind", ["/dev/zero", "/dev/urandom", "fifo", "directory",
                                  "/dev/null"])
@pytest.mark.parametrize("role", ["program", "--gm", "--ub"])
def test_a_file_that_is_not_regular_is_refused_unread(role, kind, work, capsys):
    path = endless_or_blocking(work, kind)
    signal.alarm(20)             # a FIFO's open would wait for a writer forever
    try:
        status, out, err = mte(capsys, *file_roles(work)[role](path))
    finally:
        signal.alarm(0)
    assert (status, out) == (2, "")
    assert f"{path} is not a regular file" in err


@pytest.mark.parametrize("role, size", [("program", (16 << 20) + 1),
                                        ("--ub", 262144 - 0x100 + 1)])
def test_a_file_larger_than_where_it_goes_is_refused(role, size, work, capsys):
    big = work / "big"
    with open(big, "wb") as f:
        f.truncate(size)        # sparse: nothing is written
    status, _, err = mte(capsys, *file_roles(work)[role](big))
    assert status == 2 and f"{big} holds {size} bytes" in err


def test_a_gm_file_beyond_40_bit_gm_is_refused(work, capsys):
    status, _, err = mte(capsys, *load_run(work, "--gm", f"0xFFFFFFFF00={work / 'tile.bin'}"))
    assert status == 2 and "holds 4096 bytes; 40-bit GM holds 256 from 0xffffffff00" in err


def test_a_dump_into_a_fifo_without_a_reader_is_refused(work, capsys):
    os.mkfifo(work / "fifo")
    signal.alarm(20)
    try:
        status, _, err = mte(capsys, *load_run(work, "--dump-ub", f"0:16={work / 'fifo'}"))
    finally:
        signal.alarm(0)
    assert status == 2 and f"cannot write dump {work / 'fifo'}" in err


# --- model time and progress -----------------------------------------------------------

def straddling_load(loop2, loop2_src):
    """A GM -> UB load whose 64-byte rows straddle GM address 0x1800, loop2 rewriting
    its one UB row."""
    return parse(f"pto.mte_gm_ub %g, %u, %c0, %c64 nburst(%c1, %c64, %c64) "
                 f"loop(%c1, %c0, %c0) loop(%c{loop2}, %c{loop2_src}, %c0)"
                 " : !pto.ptr<u8, gm>, !pto.ptr<u8, ub>, i64 x11", {"g": 0x17E0, "u": 0})


def gm_bytes():
    return bytes((i * 7 + 3) % 251 for i in range(0x1000))


@pytest.mark.parametrize("windows", [[(0x1000, 0x1000)], [(0x1000, 0x800), (0x1800, 0x800)],
                                     [(0x1000, 0x7F0), (0x17F0, 0x20), (0x1810, 0x7F0)]])
def test_the_time_of_a_copy_depends_on_its_rows_not_on_how_gm_is_mapped(windows):
    from model.engine import Engine
    from model.memory import GlobalMemory
    data, gm = gm_bytes(), GlobalMemory()
    for base, length in windows:
        gm.map(base, data[base - 0x1000:base - 0x1000 + length])
    engine = Engine("a5", gm)
    nests = []
    run_nest = engine._run_nest
    engine._run_nest = lambda t, nest: (nests.append(nest.rows), run_nest(t, nest))
    engine.run(straddling_load((1 << 21) - 1, 0))
    # the rows loop2 rewrites are skipped: a handful of nests, where the split path
    # halved its way down to each of the 2^21 rows
    assert len(nests) <= 8 and sum(nests) <= 8 + (1 << 21), nests
    expected = bytes(64) + data[0x7E0:0x820]
    assert engine.ub[:128].tobytes() == expected[64:] + bytes(64)
    assert not engine.ub[64:].any()
    assert engine.gm.read(0x1000, 0x1000).tobytes() == data
    assert engine.stats.bytes_moved[Pipe.MTE2] == ((1 << 21) - 1) * 64


def test_rows_that_fault_are_still_found_in_loop_order_when_gm_has_a_hole():
    from model.engine import Engine
    from model.memory import GlobalMemory
    data, gm = gm_bytes(), GlobalMemory()
    gm.map(0x1000, data[:0x800])
    gm.map(0x1800, data[0x800:0x900])           # the loop reads past 0x1900: a hole
    engine = Engine("a5", gm)
    with pytest.raises(MteError) as info:
        engine.run(straddling_load(16, 32))      # row k reads 0x17E0 + 32k
    assert (info.value.code, info.value.address) == (ErrorCode.BUS_ERROR, 0x1900)
    # rows before the faulting one (k = 3 reads 0x1840..0x187F, k = 4 0x1860..) completed
    last_good = 0x17E0 + 32 * 8 - 0x1000      # k = 8 reads 0x18E0..0x191F: faults
    assert engine.ub[:64].tobytes() == data[last_good - 32:last_good + 32]


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_progress_shows_after_a_second_at_most_twice_a_second():
    import io

    from model.run import Progress
    clock, stream = FakeClock(), io.StringIO()
    progress = Progress(stream, clock)
    (instr,) = [i for i in straddling_load(4, 0) if i.mnemonic == "copy_gm_to_ubuf"]
    for step in range(40):                      # 0.25 s apart: 10 s
        progress(instr, step, 40)
        clock.now += 0.25
    progress.close()
    lines = stream.getvalue().split("\r")[1:]
    assert lines[0] == "mte: 1 s: line 1 copy_gm_to_ubuf: 4 of 40 rows"
    assert len(lines) == 18 and lines[-1] == "mte: 10 s: line 1 copy_gm_to_ubuf: 38 of 40 rows\n"
    quiet = io.StringIO()
    Progress(quiet, FakeClock()).close()
    assert quiet.getvalue() == ""


def test_a_long_copy_reports_its_rows_in_order_up_to_all():
    from model.engine import Engine
    reports = []
    engine = Engine("a5", progress=lambda instr, done, rows: reports.append((done, rows)))
    engine.gm.map(0x1000, 4096)
    # 64-byte rows 32 and 16 bytes apart overlap, so the loops run an iteration at a time
    engine.run(parse("pto.mte_ub_gm %c0, %g, %c64 nburst(%c1, %c0, %c0) loop(%c8, %c0, %c32)"
                     " loop(%c100, %c0, %c16) : !pto.ptr<u8, ub>, !pto.ptr<u8, gm>, i64 x10",
                     {"g": 0x1000}))
    done = [d for d, rows in reports if rows == 800]
    assert done == sorted(done) and done[-1] == 800 and len(done) >= 100


def test_run_help_says_how_to_bound_a_run(capsys):
    status, out, _ = mte(capsys, "run", "--help")
    assert status == 0
    assert "timeout 60 mte run" in out and "progress on stderr" in out


def test_an_rtl_bus_error_difference_says_the_rtl_maps_pages():
    from model.memory import GlobalMemory
    from tb.rtl_engine import _page_note
    gm = GlobalMemory()
    gm.map(0x1000, 16)
    inside = MteError(ErrorCode.BUS_ERROR, "bus error", address=0x1010)
    assert "whole 4096-byte pages, so 0x1010" in _page_note(inside, gm)
    assert _page_note(MteError(ErrorCode.BUS_ERROR, "x", address=0x2000), gm) == ""
    assert _page_note(None, gm) == ""


@pytest.mark.parametrize("field, value", [("rows", "abc"), ("rows", "0x10"), ("rows", "-8"),
                                          ("cols", ""), ("fractal", "x"), ("pad", "zero")])
def test_a_tile_type_field_that_is_not_a_number_is_named(field, value):
    fields = {"loc": "vec", "dtype": "f32", "rows": "8", "cols": "8", field: value}
    body = ", ".join(f"{k}={v}" for k, v in fields.items())
    err = program_error(f"pto.tassign ins(%t, %a : !pto.tile_buf<{body}>, index)", {"a": 0})
    assert err.message == f"{field} {value!r} is not a number"


def test_an_interrupt_is_a_line_not_a_traceback(work, capsys, monkeypatch):
    from cli import run

    def interrupted(*_):
        raise KeyboardInterrupt
    monkeypatch.setitem(run.ENGINES, "model", interrupted)
    status, out, err = mte(capsys, *load_run(work))
    assert (status, out, err) == (130, "", "\nmte: interrupted\n")


def test_a_reader_that_goes_away_ends_asm_quietly(work, capsys, monkeypatch):
    import cli
    from cli import asm

    def closed_pipe(*_):
        raise BrokenPipeError
    monkeypatch.setattr(asm, "write_output", closed_pipe)
    with open(work / "stdout", "w") as stdout:      # what the closed pipe becomes
        monkeypatch.setattr(sys, "stdout", stdout)
        status = cli.main(["asm", str(work / "load.pto"), "--bind", "arg0=0x1000",
                           "--bind", "ub_in=0x40"])
    assert status == 141
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("text", ["pto." + "a" * 1_000_000,
                                  LOOP_SIZE.replace("%c1,", "%" + "b" * 1_000_000 + ","),
                                  '%x = arith.constant "' + "c" * 1_000_000 + '" : i64'])
def test_a_message_quoting_a_huge_token_is_cut(text):
    err = program_error(text)
    assert (err.line, len(err.message) < 450) == (1, True)
    assert err.message.endswith(" characters)")


@pytest.mark.parametrize("op, iterations", [("muli", 40), ("muli", 60_000), ("addi", 1000)])
def test_scalar_values_that_grow_without_bound_are_refused(op, iterations):
    from model.parser import MAX_VALUE_BITS
    start = "%c3" if op == "muli" else "%big"
    text = ("%big = arith.constant 0x" + "F" * 100 + " : index\n"
            f"%n = arith.constant {iterations} : index\n"
            f"%last = scf.for %t = %c0 to %n step %c1 iter_args(%x = {start}) -> (index) {{\n"
            f"  %y = arith.{op} %x, %x : index\n"
            "  scf.yield %y : index\n}\n")
    err = program_error(text)
    assert (err.line, err.column) == (4, 8)
    assert f"more than {MAX_VALUE_BITS}" in err.message


def test_a_scalar_value_of_the_bound_s_bits_is_kept():
    from model.parser import MAX_VALUE_BITS
    (instr,) = parse("%a = arith.constant 0x" + "F" * 100 + " : index\n"
                     "%b = arith.addi %a, %a : index\n%c = arith.addi %b, %b : index\n"
                     "%d = arith.addi %c, %c : index\n"
                     "pto.set_loop_size_outtoub %d, %c1 : i64, i64")
    assert instr.values["loop1_count"] == (16 ** 100 - 1) * 8
    assert instr.values["loop1_count"].bit_length() == 403 < MAX_VALUE_BITS
