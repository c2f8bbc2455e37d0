"""The assembler: instructions <-> 32-bit command words."""

import random

import pytest

from model import seeds
from model.assembler import assemble, assemble_until_error, disassemble, encode_instr
from model.errors import MteError
from model.isa import OPS, WORD_BITS, ErrorCode
from model.parser import parse
from model.program import Instr


def field_values(op, pick):
    return {f.name: pick(f) for f in op.fields}


def value_sets(op, rng):
    yield field_values(op, lambda f: 0)
    yield field_values(op, lambda f: f.max)
    for _ in range(20):
        yield field_values(op, lambda f: rng.randrange(f.max + 1))


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.mnemonic)
def test_every_op_round_trips(op):
    rng = random.Random(op.mnemonic)
    for values in value_sets(op, rng):
        words = assemble([Instr(op, values, line=1)])
        assert len(words) == op.words
        assert all(0 <= w < 1 << WORD_BITS for w in words)
        assert disassemble(words) == [(op, values)]


def test_a_stream_of_every_op_round_trips():
    rng = random.Random(1)
    program = [(op, values) for op in OPS for values in value_sets(op, rng)]
    words = assemble([Instr(op, values, line=n) for n, (op, values) in enumerate(program)])
    assert disassemble(words) == program


def test_neighbouring_fields_do_not_leak():
    """A field at its maximum with every other field 0 decodes to exactly that."""
    for op in OPS:
        for f in op.fields:
            values = {g.name: (g.max if g is f else 0) for g in op.fields}
            assert disassemble(assemble([Instr(op, values, line=1)])) == [(op, values)]


@pytest.mark.parametrize("example", seeds.EXAMPLES, ids=lambda e: e.name)
def test_seed_programs_round_trip(example):
    instrs = parse(example.program, example.bindings)
    assert disassemble(assemble(instrs)) == [(i.op, i.values) for i in instrs]


def _copy(line, **changes):
    (instr,) = parse("pto.copy_ubuf_to_gm %u, %g, %c0, %c1, %c32, %c0, %c32, %c32\n"
                     " : !pto.ptr<f32, ub>, !pto.ptr<f32, gm>, i64 x6", {"u": 0, "g": 0})
    instr.values.update(changes)
    instr.line = line
    return instr


@pytest.mark.parametrize("changes, words", [
    ({"n_burst": -1}, "n_burst = -1 is negative"),
    ({"gm_dst": 1 << 40}, "gm_dst = 1099511627776 does not fit 40 bits"),
    ({"src_stride": 1 << 21}, "does not fit 21 bits"),
])
def test_unencodable_values_are_field_range(changes, words):
    with pytest.raises(MteError) as info:
        encode_instr(_copy(7, **changes))
    assert info.value.code == ErrorCode.FIELD_RANGE
    assert info.value.line == 7 and info.value.op == "copy_ubuf_to_gm"
    assert words in info.value.message
    assert str(info.value).startswith("FIELD_RANGE: line 7: ")


def test_deferred_errors_are_raised():
    instr = _copy(3)
    instr.deferred = (ErrorCode.TYPE_UNSUPPORTED, "sizes differ")
    with pytest.raises(MteError) as info:
        assemble([instr])
    assert (info.value.code, info.value.line, info.value.message) == (
        ErrorCode.TYPE_UNSUPPORTED, 3, "sizes differ")


def test_assemble_until_error_keeps_the_commands_before():
    good = [_copy(1), _copy(2)]
    words, lines, error = assemble_until_error(good + [_copy(5, len_burst=-32), _copy(6)])
    assert words == assemble(good)
    assert lines == [1, 2]
    assert error.code == ErrorCode.FIELD_RANGE and error.line == 5
    assert assemble_until_error(good) == (assemble(good), [1, 2], None)


def test_disassemble_rejects_bad_streams():
    words = assemble([_copy(1)])
    with pytest.raises(ValueError, match="truncated"):
        disassemble(words[:-1])
    with pytest.raises(ValueError, match="unknown opcode"):
        disassemble([0])
