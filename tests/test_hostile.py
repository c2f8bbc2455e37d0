"""Hostile program text: each class of malformed input is a named ProgramError at the token
that is wrong (or a deferred FIELD_RANGE where the text is well formed), never a Python
exception of another kind, a hang or a huge allocation. Each class is a generated sweep."""

import time

import pytest

from model.assembler import encode_instr
from model.errors import MteError, ProgramError
from model.isa import DTYPE_BY_NAME, ErrorCode
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


@pytest.mark.parametrize("construct", ["module", "func"])
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
    text = LOOP_SIZE + "\n\n\n%% bad\n" + "set_flag [ ] , : " * 300_000   # 5 MB
    start = time.perf_counter()
    err = program_error(text)
    assert time.perf_counter() - start < 0.5
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
