"""Buffer-ID tokens, `pto.get_buf` / `pto.rls_buf` (SPEC.md, "Buffer-ID tokens (A5)"): the
statement, its command word, the rule that refuses a token order that could wait forever,
and the golden model, which runs a program in program order."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from model import isa
from model.assembler import assemble, disassemble
from model.engine import Engine
from model.errors import MteError, ProgramError
from model.isa import BUF_ID_BITS, ErrorCode, Opcode, Pipe
from model.parser import parse

ROOT = Path(__file__).resolve().parents[1]


def program_error(text):
    with pytest.raises(ProgramError) as info:
        parse(text)
    return info.value


def tokens(instrs):
    return [(i.mnemonic, i.values["pipe"], i.values["buf_id"], i.values["mode"])
            for i in instrs]


# --- the statement and its command word ---------------------------------------------------

def test_literal_and_typed_operands_and_every_pipe_spelling():
    instrs = parse('pto.get_buf "PIPE_MTE2", 0, 0\n'
                   'pto.rls_buf "PIPE_MTE2", 0x0, 1\n'
                   "pto.get_buf #pto.pipe<PIPE_V>, %c31_i64, %true : i64, i1\n"
                   "rls_buf <PIPE_V>, %id, %mode : i64, i64 {note}\n"
                   "get_buf PIPE_MTE3, 7, 0\n"
                   'pto.get_buf "PIPE_S", 7, 0\n'
                   "rls_buf PIPE_MTE3, 7, 0", {"id": 31, "mode": 0})
    assert tokens(instrs) == [("get_buf", Pipe.MTE2, 0, 0), ("rls_buf", Pipe.MTE2, 0, 1),
                              ("get_buf", Pipe.V, 31, 1), ("rls_buf", Pipe.V, 31, 0),
                              ("get_buf", Pipe.MTE3, 7, 0), ("get_buf", Pipe.EXTERNAL, 7, 0),
                              ("rls_buf", Pipe.MTE3, 7, 0)]
    assert [i.line for i in instrs] == [1, 2, 3, 4, 5, 6, 7]


def test_the_command_word_is_the_isa_tables():
    get_buf, rls_buf = isa.OP_BY_MNEMONIC["get_buf"], isa.OP_BY_MNEMONIC["rls_buf"]
    assert (get_buf.opcode, rls_buf.opcode) == (Opcode.GET_BUF, Opcode.RLS_BUF) == (13, 14)
    assert [(f.name, f.width) for f in get_buf.fields] == [("pipe", 2), ("buf_id", BUF_ID_BITS),
                                                            ("mode", 1)]
    assert get_buf.fields == rls_buf.fields and get_buf.words == 1
    words = assemble(parse("get_buf PIPE_MTE3, 21, 1\nrls_buf PIPE_MTE3, 21, 0"))
    assert words == [13 | 1 << 5 | 21 << 7 | 1 << 12, 14 | 1 << 5 | 21 << 7]
    assert [(op.mnemonic, values) for op, values in disassemble(words)] == [
        ("get_buf", {"pipe": 1, "buf_id": 21, "mode": 1}),
        ("rls_buf", {"pipe": 1, "buf_id": 21, "mode": 0})]


@pytest.mark.parametrize("pipe", list(Pipe))
def test_a_token_runs_on_its_own_pipe(pipe):
    for op in (isa.OP_BY_MNEMONIC["get_buf"], isa.OP_BY_MNEMONIC["rls_buf"]):
        assert isa.op_pipe(op, {"pipe": pipe, "buf_id": 3, "mode": 0}) == pipe


@pytest.mark.parametrize("text, column, words", [
    ('get_buf "PIPE_MTE2", 0', 1, "get_buf takes 2 operands, found 1"),
    ('get_buf "PIPE_MTE2", 0, 0, 0', 28, "get_buf takes 2 operands, found 3"),
    ('get_buf "PIPE_MTE2", 0, 1.5', 25, "1.5 is not an integer"),
    ('get_buf "PIPE_MTE2", 0, [', 25, "expected an operand such as %x or 0, found '['"),
    ("get_buf 0, 0", 9, "expected a pipe or event name, found '0'"),
    ('get_buf "PIPE_MTE2", %c0, %c0 : i64', 31, "get_buf has 2 operands but 1 types"),
    ('get_buf "PIPE_MTE2", %c0, %c0 : f32, i64', 33, "%c0 needs an integer type, found f32"),
    ('rls_buf "PIPE_MTE2", %nowhere, 0', 22, "unbound name %nowhere"),
    ('get_buf "PIPE_MTE2", 0, 0 nburst(%c1)', 27, "get_buf takes no clauses"),
])
def test_statement_errors(text, column, words):
    err = program_error(text)
    assert (err.line, err.column) == (1, column) and words in err.message


# --- the rule: tokens taken in program order never wait forever ---------------------------

def test_a_get_buf_must_find_its_token_free():
    """The engine hands a token on in program order: a get_buf while another get_buf
    holds the token would wait for an rls_buf later in program order (on its own pipe:
    forever)."""
    err = program_error('get_buf "PIPE_MTE2", 4, 0\n  get_buf "PIPE_V", 4, 0')
    assert (err.line, err.column) == (2, 3)
    assert ("get_buf PIPE_V takes token 4, which PIPE_MTE2 took at line 1 and has not "
            "released" in err.message)
    err = program_error('get_buf "PIPE_V", 4, 0\nget_buf "PIPE_V", 4, 1')
    assert err.line == 2 and "which PIPE_V took at line 1" in err.message


def test_an_rls_buf_releases_a_token_its_pipe_holds():
    err = program_error('get_buf "PIPE_MTE2", 4, 0\nrls_buf "PIPE_MTE2", 4, 0\n'
                        'rls_buf "PIPE_MTE2", 4, 0')
    assert err.line == 3 and "releases token 4, which no get_buf holds" in err.message
    err = program_error('get_buf "PIPE_MTE2", 9, 0\nrls_buf "PIPE_MTE3", 9, 0')
    assert err.line == 2 and ("releases token 9, which PIPE_MTE2 holds (get_buf at line 1)"
                              in err.message)


def test_a_program_releases_every_token_it_takes():
    """The engine keeps a token held after the program: the next program's get_buf of it
    would wait forever. The first get_buf whose token is never released is named."""
    err = program_error('get_buf "PIPE_MTE2", 1, 0\nget_buf "PIPE_V", 2, 0\n'
                        '  get_buf "PIPE_MTE3", 3, 0\nrls_buf "PIPE_MTE3", 3, 0\n'
                        'rls_buf "PIPE_MTE2", 1, 0\nget_buf "PIPE_MTE3", 1, 0')
    assert (err.line, err.column) == (2, 1)
    assert ("get_buf PIPE_V takes token 2, which no rls_buf releases: the engine keeps a "
            "token held after the program" in err.message)


def test_accepted_orders():
    """Each id alternates get_buf, rls_buf (its holder's) in program order, handed from
    pipe to pipe; ids count apart; tokens of a pipe the engine does not have take no
    part."""
    text = "\n".join([
        'get_buf "PIPE_MTE2", 0, 0', 'get_buf "PIPE_MTE2", 1, 0', 'rls_buf "PIPE_MTE2", 0, 0',
        'get_buf "PIPE_V", 0, 0', 'rls_buf "PIPE_V", 0, 0', 'get_buf "PIPE_MTE3", 0, 0',
        'rls_buf "PIPE_MTE3", 0, 0', 'get_buf "PIPE_MTE2", 0, 0', 'rls_buf "PIPE_MTE2", 1, 0',
        'get_buf "PIPE_S", 5, 0', 'get_buf "PIPE_FIX", 5, 0', 'rls_buf "PIPE_M", 6, 0',
        'get_buf "PIPE_V", 5, 0', 'rls_buf "PIPE_V", 5, 0', 'rls_buf "PIPE_MTE2", 0, 0'])
    assert len(parse(text)) == 15


# --- the model ----------------------------------------------------------------------------

LOAD = ("pto.copy_gm_to_ubuf %c4096, %c0, %c0, %c1, %c64, %c0, %c0, %false, %c0, %c64, %c64"
        " : !pto.ptr<u8, gm>, !pto.ptr<u8, ub>, i64 x5, i1, i64 x3")
STORE = ("pto.copy_ubuf_to_gm %c0, %c8192, %c0, %c1, %c64, %c0, %c64, %c64"
         " : !pto.ptr<u8, ub>, !pto.ptr<u8, gm>, i64 x6")
HANDED_ON = "\n".join(['get_buf "PIPE_MTE2", 3, 0', LOAD, 'rls_buf "PIPE_MTE2", 3, 0',
                       'get_buf "PIPE_MTE3", 3, 0', STORE, 'rls_buf "PIPE_MTE3", 3, 0'])


def run_model(instrs):
    engine = Engine()
    engine.gm.map(4096, bytes(range(64)))
    engine.gm.map(8192, bytes([0xA5]) * 128)
    engine.run(instrs)
    return engine


def test_the_model_runs_tokens_in_program_order_and_moves_no_byte():
    engine = run_model(parse(HANDED_ON))
    assert engine.stats.ops == 6
    assert bytes(engine.gm.read(8192, 128)) == bytes(range(64)) + bytes([0xA5]) * 64
    untokened = run_model([i for i in parse(HANDED_ON) if i.op.pipe is not None])
    assert bytes(untokened.gm.read(8192, 128)) == bytes(engine.gm.read(8192, 128))
    assert (untokened.ub == engine.ub).all()


@pytest.mark.parametrize("operands, message", [
    ("32, 0", "buf_id = 32 does not fit 5 bits"),
    ("-1, 0", "buf_id = -1 is negative"),
    ("0, 2", "mode = 2 does not fit 1 bits"),
])
def test_an_operand_out_of_its_field_is_field_range(operands, message):
    instrs = parse(f"{LOAD}\nget_buf PIPE_MTE3, {operands}\n{STORE}\n"
                   f"rls_buf PIPE_MTE3, {operands}")
    engine = Engine()
    engine.gm.map(4096, bytes(range(64)))
    engine.gm.map(8192, bytes(128))
    with pytest.raises(MteError) as info:
        engine.run(instrs)
    assert (info.value.code, info.value.line, info.value.op) == (
        ErrorCode.FIELD_RANGE, 2, "get_buf")
    assert message in str(info.value)
    assert engine.stats.ops == 1 and bytes(engine.gm.read(8192, 128)) == bytes(128)


def mte(*args, cwd):
    return subprocess.run([sys.executable, "-m", "cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_mte_run_exit_status(tmp_path):
    (tmp_path / "ok.pto").write_text(HANDED_ON)
    (tmp_path / "src.bin").write_bytes(bytes(range(64)))
    run = mte("run", "ok.pto", "--gm", "4096=src.bin", "--gm", "8192:64",
              "--dump-gm", "8192:64=out.bin", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "out.bin").read_bytes() == bytes(range(64))
    (tmp_path / "order.pto").write_text(HANDED_ON.replace('rls_buf "PIPE_MTE2", 3, 0\n', ""))
    order = mte("run", "order.pto", cwd=tmp_path)
    assert order.returncode == 2 and "order.pto:3:1: get_buf PIPE_MTE3 takes token 3" in order.stderr
    (tmp_path / "wide.pto").write_text('get_buf "PIPE_V", 40, 0\nrls_buf "PIPE_V", 40, 0')
    wide = mte("run", "wide.pto", cwd=tmp_path)
    assert wide.returncode == 1 and "FIELD_RANGE" in wide.stderr


def test_the_c_header_has_the_token_opcodes_and_encoders():
    from hdl.soc.c_header import c_header
    header = c_header()
    for mnemonic, opcode in (("GET_BUF", 13), ("RLS_BUF", 14)):
        assert f"#define MTE_DMA_OP_{mnemonic} {opcode}u" in header
        assert f"static inline int mte_dma_{mnemonic.lower()}(" in header
        assert "uint64_t buf_id" in header.split(f"mte_dma_{mnemonic.lower()}(")[1][:200]
