"""Every SPEC error code: the model raises it with its code, op and line, and a rejected
command moves nothing (whole UB, every GM region and the registers are unchanged). A bus
error completes exactly the rows before the faulting row."""

import numpy as np
import pytest

from harness import assert_same_run, run_both, snapshot
from model.engine import Engine
from model.errors import MteError
from model.isa import GM_ADDR_BITS, ErrorCode, Pipe
from strategies import command

GM = 0x2000
GM_TOP = 1 << GM_ADDR_BITS
UB_SIZE = Engine().profile.ub_size
RNG = np.random.default_rng(7)


def engine_with_memory(profile="a5"):
    """An engine with random UB contents and a random 8 KiB GM region at GM."""
    engine = Engine(profile)
    engine.ub[:] = RNG.integers(0, 256, engine.ub.size, dtype=np.uint8)
    engine.gm.map(GM, RNG.integers(0, 256, 8192, dtype=np.uint8))
    return engine


def expect_rejected(code, *instrs, engine=None):
    """Run the commands; the last must fail with `code` and leave everything untouched."""
    engine = engine or engine_with_memory()
    for line, instr in enumerate(instrs, 1):
        instr.line = line
    *setup, failing = instrs
    engine.run(setup)
    before = snapshot(engine)
    with pytest.raises(MteError) as caught:
        engine.execute(failing)
    error = caught.value
    assert (error.code, error.line, error.op) == (code, len(instrs), failing.mnemonic)
    assert snapshot(engine) == before
    return error


def load(**values):
    """copy_gm_to_ubuf from GM to UB 0: one 64-byte u8 row unless told otherwise."""
    return command("copy_gm_to_ubuf", **({"gm_src": GM, "n_burst": 1, "len_burst": 64} | values))


def store(**values):
    """copy_ubuf_to_gm from UB 0 to GM: one 64-byte u8 row unless told otherwise."""
    return command("copy_ubuf_to_gm", **({"gm_dst": GM, "n_burst": 1, "len_burst": 64} | values))


def ub_copy(**values):
    return command("copy_ubuf_to_ubuf", **({"ub_dst": 0x1000, "n_burst": 1, "len_burst": 1}
                                           | values))


# --- FIELD_RANGE ------------------------------------------------------------------------

@pytest.mark.parametrize("instr, field, value", [
    (load(n_burst=-1), "n_burst", -1),
    (load(len_burst=1 << 21), "len_burst", 1 << 21),
    (store(gm_dst=GM_TOP), "gm_dst", GM_TOP),
    (ub_copy(src_gap=1 << 16), "src_gap", 1 << 16),
    (command("set_loop_size_outtoub", loop1_count=1 << 21, loop2_count=1), "loop1_count",
     1 << 21),
    (command("set_loop2_stride_ubtoout", src_stride=1 << 21, dst_stride=0), "src_stride",
     1 << 21),
    (command("set_mov_pad_val", pad_val=1 << 64), "pad_val", 1 << 64),
    (command("set_flag", src_pipe=4, dst_pipe=0, event_id=0), "src_pipe", 4),
])
def test_field_range_names_the_field_and_value(instr, field, value):
    error = expect_rejected(ErrorCode.FIELD_RANGE, instr)
    assert f"{field} = {value}" in error.message


def test_field_range_of_a_register_write_leaves_the_registers():
    engine = engine_with_memory()
    expect_rejected(ErrorCode.FIELD_RANGE,
                    command("set_loop1_stride_outtoub", src_stride=64, dst_stride=32),
                    command("set_loop1_stride_outtoub", src_stride=-64, dst_stride=32),
                    engine=engine)
    assert engine.regs[Pipe.MTE2]["loop1_src_stride"] == 64


def test_a_deferred_parser_error_takes_its_place_in_the_rule_order():
    """A mixed-size TYPE_UNSUPPORTED the parser found comes after a field out of range and
    before every rule the engine checks (docs/semantics.md, "Rule order")."""
    mixed = (ErrorCode.TYPE_UNSUPPORTED, "pointers of different element sizes")
    negative = load(len_burst=-1)
    negative.deferred = mixed
    expect_rejected(ErrorCode.FIELD_RANGE, negative)
    misaligned = load(ub_dst=16)            # UB_MISALIGNED on its own
    misaligned.deferred = mixed
    error = expect_rejected(ErrorCode.TYPE_UNSUPPORTED, misaligned)
    assert "different element sizes" in error.message


# --- TYPE_UNSUPPORTED -------------------------------------------------------------------

@pytest.mark.parametrize("profile", ["a2a3", "kirin9030", "kirinx90"])
def test_f8_types_exist_only_on_a5(profile):
    expect_rejected(ErrorCode.TYPE_UNSUPPORTED, load(dtype="f8e5m2"),
                    engine=engine_with_memory(profile))
    engine_with_memory("a5").execute(load(dtype="f8e5m2"))


@pytest.mark.parametrize("instr", [load(dtype="i4"), store(dtype="f4e2m1"),
                                   ub_copy(dtype="u4")])
def test_sub_byte_types_are_unsupported(instr):
    expect_rejected(ErrorCode.TYPE_UNSUPPORTED, instr)


def test_a_dtype_code_beyond_the_table_is_unsupported():
    instr = load()
    instr.values["dtype"] = 31
    assert "#31" in expect_rejected(ErrorCode.TYPE_UNSUPPORTED, instr).message


# --- field rules ------------------------------------------------------------------------

@pytest.mark.parametrize("instr", [load(len_burst=6, dtype="f32"),
                                   store(len_burst=12, dtype="i64")])
def test_len_not_element_multiple(instr):
    expect_rejected(ErrorCode.LEN_NOT_ELEMENT_MULTIPLE, instr)


@pytest.mark.parametrize("pads", [dict(left_padding=1), dict(right_padding=2)])
def test_pad_without_select(pads):
    expect_rejected(ErrorCode.PAD_WITHOUT_SELECT, load(**pads))


@pytest.mark.parametrize("dtype, pads", [("f32", dict(left_padding=9)),
                                         ("u8", dict(right_padding=33)),
                                         ("i64", dict(right_padding=5))])
def test_pad_too_large(dtype, pads):
    expect_rejected(ErrorCode.PAD_TOO_LARGE, load(data_select_bit=1, dtype=dtype, **pads))


# --- UB_MISALIGNED ----------------------------------------------------------------------

@pytest.mark.parametrize("setup, instr", [
    ([], load(ub_dst=16)),
    ([], store(ub_src=8)),
    ([], ub_copy(ub_src=0x20, ub_dst=0x1010)),
    ([], load(n_burst=2, src_stride=64, dst_stride=80)),
    ([], store(n_burst=2, dst_stride=64, src_stride=72)),
    ([command("set_loop_size_outtoub", loop1_count=2, loop2_count=1),
      command("set_loop1_stride_outtoub", src_stride=64, dst_stride=48)], load()),
    ([command("set_loop_size_ubtoout", loop1_count=1, loop2_count=3),
      command("set_loop2_stride_ubtoout", src_stride=100, dst_stride=64)], store()),
])
def test_ub_misaligned(setup, instr):
    expect_rejected(ErrorCode.UB_MISALIGNED, *setup, instr)


# Each rule's message names the one operand or stride that breaks it, with its value.
@pytest.mark.parametrize("code, setup, instr, message", [
    (ErrorCode.UB_MISALIGNED, [], load(ub_dst=0x1010), "ub_dst = 0x1010 is not a multiple of 32"),
    (ErrorCode.UB_MISALIGNED, [], ub_copy(ub_src=0x20, ub_dst=0x1010), "ub_dst = 0x1010"),
    (ErrorCode.UB_MISALIGNED, [], ub_copy(ub_src=0x28, ub_dst=0x1010), "ub_src = 0x28"),
    (ErrorCode.UB_MISALIGNED, [], store(n_burst=2, dst_stride=64, src_stride=72),
     "src_stride 72 is not a multiple of 32, nor len_burst 64 (packed rows) with n_burst 2"),
    (ErrorCode.UB_MISALIGNED, [command("set_loop_size_outtoub", loop1_count=2, loop2_count=1),
                               command("set_loop1_stride_outtoub", src_stride=64,
                                       dst_stride=48)], load(),
     "loop1 dst stride 48 is not a multiple of 32 with loop1 count 2"),
    (ErrorCode.UB_MISALIGNED, [command("set_loop_size_ubtoout", loop1_count=1, loop2_count=3),
                               command("set_loop2_stride_ubtoout", src_stride=100,
                                       dst_stride=64)], store(),
     "loop2 src stride 100 is not a multiple of 32 with loop2 count 3"),
    (ErrorCode.STRIDE_OVERLAP, [], load(n_burst=2, src_stride=63, dst_stride=64),
     "src_stride 63 is smaller than len_burst 64"),
    (ErrorCode.STRIDE_OVERLAP, [], load(n_burst=2, src_stride=64, dst_stride=64,
                                        data_select_bit=1, left_padding=1),
     "dst_stride 64 is smaller than the row's footprint 65"),
    (ErrorCode.STRIDE_OVERLAP, [], store(n_burst=2, len_burst=96, dst_stride=96, src_stride=64),
     "src_stride 64 is smaller than len_burst 96"),
    (ErrorCode.UB_RANGE, [], load(ub_dst=UB_SIZE - 32),
     f"ub_dst = {UB_SIZE - 32:#x}: the copy reaches UB byte {UB_SIZE + 31:#x}, beyond the "
     f"{UB_SIZE}-byte UB"),
    (ErrorCode.UB_RANGE, [], ub_copy(ub_src=UB_SIZE - 32, ub_dst=0, len_burst=2),
     f"ub_src = {UB_SIZE - 32:#x}"),
    (ErrorCode.GM_RANGE, [], store(gm_dst=GM_TOP - 10),
     f"gm_dst = {GM_TOP - 10:#x}: the copy reaches GM byte {GM_TOP + 53:#x}, beyond "
     f"{GM_TOP - 1:#x}"),
    (ErrorCode.GM_RANGE, [], load(gm_src=GM_TOP - 300, n_burst=3, src_stride=120,
                                  dst_stride=64), f"gm_src = {GM_TOP - 300:#x}"),
])
def test_a_rule_message_names_the_operand_and_its_value(code, setup, instr, message):
    assert message in expect_rejected(code, *setup, instr).message


def test_unaligned_strides_are_fine_where_unused():
    """One row: dst_stride is free; count 1: its loop stride is never applied."""
    engine = engine_with_memory()
    engine.run([command("set_loop1_stride_outtoub", src_stride=3, dst_stride=7),
                load(n_burst=1, dst_stride=80), store(n_burst=1, src_stride=40)])


# --- STRIDE_OVERLAP ---------------------------------------------------------------------

@pytest.mark.parametrize("instr", [
    load(n_burst=2, src_stride=63, dst_stride=64),                           # GM side
    load(n_burst=2, src_stride=64, dst_stride=64, data_select_bit=1,
         left_padding=1),                                                    # UB footprint
    store(n_burst=3, dst_stride=10, src_stride=64),                          # GM side
    store(n_burst=2, len_burst=96, dst_stride=96, src_stride=64),            # UB side
])
def test_stride_overlap(instr):
    expect_rejected(ErrorCode.STRIDE_OVERLAP, instr)


# --- UB_RANGE / GM_RANGE / UB_OVERLAP ---------------------------------------------------

@pytest.mark.parametrize("instr", [
    load(ub_dst=UB_SIZE - 32),                                              # data
    load(ub_dst=UB_SIZE - 64, data_select_bit=1, dst_stride=65),           # padded extent
    load(ub_dst=UB_SIZE - 32, n_burst=1, len_burst=32, data_select_bit=1,
         right_padding=8, dtype="i32"),                                     # right padding
    store(ub_src=UB_SIZE - 32),
    ub_copy(ub_src=0, ub_dst=UB_SIZE - 64, n_burst=3, len_burst=1, dst_gap=0),
])
def test_ub_range(instr):
    expect_rejected(ErrorCode.UB_RANGE, instr)


def test_ub_range_counts_the_hardware_loops():
    expect_rejected(ErrorCode.UB_RANGE,
                    command("set_loop_size_outtoub", loop1_count=1, loop2_count=5),
                    command("set_loop2_stride_outtoub", src_stride=0, dst_stride=UB_SIZE // 4),
                    load())


def test_ub_range_depends_on_the_profile():
    expect_rejected(ErrorCode.UB_RANGE, load(ub_dst=131072), engine=engine_with_memory("kirinx90"))


@pytest.mark.parametrize("instr", [load(gm_src=GM_TOP - 63), store(gm_dst=GM_TOP - 10),
                                   load(gm_src=GM_TOP - 300, n_burst=3, src_stride=120,
                                        dst_stride=64)])
def test_gm_range(instr):
    expect_rejected(ErrorCode.GM_RANGE, instr)


def test_gm_range_allows_the_last_byte():
    engine = engine_with_memory()
    engine.gm.map(GM_TOP - 64, 64)
    engine.execute(store(gm_dst=GM_TOP - 64))


@pytest.mark.parametrize("src, dst, n, length, src_gap, dst_gap", [
    (0x1000, 0x1000, 1, 1, 0, 0),
    (0x1000, 0x1020, 1, 2, 0, 0),
    (0x1000, 0x1020, 2, 1, 1, 1),       # interleaved bursts: the spans intersect
    (0x10A0, 0x1000, 3, 2, 0, 0),
])
def test_ub_overlap(src, dst, n, length, src_gap, dst_gap):
    expect_rejected(ErrorCode.UB_OVERLAP, ub_copy(ub_src=src, ub_dst=dst, n_burst=n,
                                                  len_burst=length, src_gap=src_gap,
                                                  dst_gap=dst_gap))


def test_the_lowest_error_code_wins():
    # misaligned, overlapping strides, out of range and a bad length all at once
    error = expect_rejected(ErrorCode.LEN_NOT_ELEMENT_MULTIPLE,
                            load(ub_dst=UB_SIZE - 16, n_burst=2, src_stride=1, dst_stride=1,
                                 len_burst=6, dtype="f32"))
    assert "len_burst 6" in error.message


# --- BUS_ERROR --------------------------------------------------------------------------

ROW, LENGTH = 128, 64
HOLE = 0x10000 + 4 * ROW + 40


def bus_error_program(mnemonic):
    """Nine rows in loop order (loop1 3 x n_burst 3), GM rows ROW apart from 0x10000 and UB
    rows LENGTH apart from 0. GM is mapped except [HOLE, row 5): row 4 faults."""
    regions = [(0x10000, RNG.integers(0, 256, 4 * ROW + 40, dtype=np.uint8).tobytes()),
               (0x10000 + 5 * ROW, RNG.integers(0, 256, 4 * ROW, dtype=np.uint8).tobytes())]
    if mnemonic == "copy_gm_to_ubuf":
        program = [command("set_loop_size_outtoub", loop1_count=3, loop2_count=1),
                   command("set_loop1_stride_outtoub", src_stride=3 * ROW, dst_stride=3 * LENGTH),
                   load(gm_src=0x10000, ub_dst=0, n_burst=3, len_burst=LENGTH, src_stride=ROW,
                        dst_stride=LENGTH)]
    else:
        program = [command("set_loop_size_ubtoout", loop1_count=3, loop2_count=1),
                   command("set_loop1_stride_ubtoout", src_stride=3 * LENGTH, dst_stride=3 * ROW),
                   store(ub_src=0, gm_dst=0x10000, n_burst=3, len_burst=LENGTH, dst_stride=ROW,
                         src_stride=LENGTH)]
    for line, instr in enumerate(program, 1):
        instr.line = line
    return regions, program


@pytest.mark.parametrize("mnemonic, pipe", [("copy_gm_to_ubuf", Pipe.MTE2),
                                            ("copy_ubuf_to_gm", Pipe.MTE3)])
def test_bus_error_completes_the_rows_before_the_faulting_row(mnemonic, pipe):
    regions, program = bus_error_program(mnemonic)
    ub = RNG.integers(0, 256, UB_SIZE, dtype=np.uint8).tobytes()
    outcome = run_both("a5", regions, program, ub)
    error = outcome.error
    assert (error.code, error.line, error.op, error.address) == (
        ErrorCode.BUS_ERROR, 3, mnemonic, HOLE)
    assert_same_run(outcome, regions)
    engine = outcome.engine
    gm_rows = engine.gm.read(0x10000, 4 * ROW + 40)
    gm_before = np.frombuffer(regions[0][1], dtype=np.uint8)
    ub_before = np.frombuffer(ub, dtype=np.uint8)
    for i in range(4):
        gm_row = gm_rows[i * ROW:i * ROW + LENGTH]
        assert (engine.ub[i * LENGTH:(i + 1) * LENGTH] == gm_row).all()
    if pipe == Pipe.MTE2:
        assert (engine.ub[4 * LENGTH:] == ub_before[4 * LENGTH:]).all()
    else:
        assert (gm_rows[4 * ROW:] == gm_before[4 * ROW:]).all()
        assert engine.gm.read(0x10000 + 5 * ROW, 4 * ROW).tobytes() == regions[1][1]
    assert engine.stats.bytes_moved[pipe] == 4 * LENGTH


def test_bus_error_in_a_pass_a_later_pass_would_overwrite():
    """loop1 re-targets the same UB rows (dst stride 0): the early passes' data never
    survives, but their reads still happen, so an unmapped source in pass 1 faults."""
    regions = [(0x10000, RNG.integers(0, 256, 256, dtype=np.uint8).tobytes()),
               (0x10000 + 2 * 4096, RNG.integers(0, 256, 256, dtype=np.uint8).tobytes())]
    program = [command("set_loop_size_outtoub", loop1_count=3, loop2_count=1, line=1),
               command("set_loop1_stride_outtoub", src_stride=4096, dst_stride=0, line=2),
               load(gm_src=0x10000, n_burst=2, len_burst=100, src_stride=128, dst_stride=128,
                    line=3)]
    outcome = run_both("a5", regions, program)
    assert (outcome.error.code, outcome.error.address) == (ErrorCode.BUS_ERROR, 0x11000)
    assert_same_run(outcome, regions)
    assert outcome.engine.ub[:100].tobytes() == regions[0][1][:100]


def test_bus_error_deep_in_a_long_copy():
    rows = 4000
    regions = [(0x10000, RNG.integers(0, 256, 64 * (rows - 1) + 10, dtype=np.uint8).tobytes())]
    engine = Engine()
    engine.gm.map(*regions[0])
    with pytest.raises(MteError) as caught:
        engine.execute(load(gm_src=0x10000, n_burst=rows, len_burst=64, src_stride=64,
                            dst_stride=64))
    assert caught.value.address == 0x10000 + 64 * (rows - 1) + 10
    assert engine.ub[:64 * (rows - 1)].tobytes() == regions[0][1][:64 * (rows - 1)]
    assert not engine.ub[64 * (rows - 1):].any()


def test_bus_error_leaves_later_rows_and_the_engine_usable():
    engine = Engine()
    engine.gm.map(0x1000, 64)
    program = [store(ub_src=0, gm_dst=0x1000, n_burst=2, len_burst=64, dst_stride=64,
                     src_stride=64)]
    engine.ub[:128] = 9
    with pytest.raises(MteError) as caught:
        engine.run(program)
    assert caught.value.code == ErrorCode.BUS_ERROR and caught.value.address == 0x1040
    assert (engine.gm.read(0x1000, 64) == 9).all()
    engine.gm.map(0x1040, 64)
    engine.run(program)
    assert (engine.gm.read(0x1000, 128) == 9).all()


def test_bus_error_on_the_first_row_moves_nothing():
    error = expect_rejected(ErrorCode.BUS_ERROR, load(gm_src=GM + 8192 - 10))
    assert error.address == GM + 8192


def test_run_stops_at_the_first_error():
    engine = engine_with_memory()
    program = [command("set_loop_size_outtoub", loop1_count=2, loop2_count=1, line=1),
               load(ub_dst=4, line=2),
               command("set_loop_size_outtoub", loop1_count=3, loop2_count=1, line=3)]
    with pytest.raises(MteError) as caught:
        engine.run(program)
    assert caught.value.line == 2
    assert engine.regs[Pipe.MTE2]["loop1_count"] == 2 and engine.stats.ops == 1


def test_an_rtl_rule_error_is_worded_as_the_model_words_it():
    """`mte run --engine rtl` reports the RTL's code with the model's words for it, under
    the registers the commands before it leave; a code the model does not find there
    keeps the plain wording."""
    from types import SimpleNamespace
    from tb.rtl_engine import _rtl_error
    encoded = [command("set_loop_size_outtoub", loop1_count=2, loop2_count=1),
               command("set_loop1_stride_outtoub", src_stride=64, dst_stride=48), load()]
    for line, instr in enumerate(encoded, 1):
        instr.line = line

    def reported(code):
        status = {"mte2": {"error": code, "error_index": 2, "error_addr": 0},
                  "mte3": {"error": 0, "error_index": 0, "error_addr": 0}}
        return _rtl_error(SimpleNamespace(status=status), encoded, None, "a5")

    error = reported(ErrorCode.UB_MISALIGNED)
    assert (error.code, error.line, error.op) == (ErrorCode.UB_MISALIGNED, 3, "copy_gm_to_ubuf")
    assert error.message == ("loop1 dst stride 48 is not a multiple of 32 with loop1 count 2 "
                             "(reported by the RTL)")
    assert reported(ErrorCode.UB_RANGE).message == "reported by the RTL"
