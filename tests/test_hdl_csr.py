"""The AXI4-Lite CSR front end against the register map, in the Amaranth simulator."""

from pathlib import Path

import pytest
from amaranth.back import verilog

from hdl.soc import regmap
from hdl.soc.csr import CsrFrontEnd, status_port
from hdl.ub.ub import TEST_READ_LATENCY
from model.isa import WORD_BITS, ErrorCode, Pipe

from hdl_helpers import BLOCK_WIDTHS, first_word_route, idle, run_sim, synth_ecp5_module

UB_SIZE = 1 << 12
REG = {r.name: r.offset for r in regmap.REGISTERS}


async def axil_write(ctx, axil, offset, value, strb=0xF):
    ctx.set(axil.awaddr, offset)
    ctx.set(axil.wdata, value)
    ctx.set(axil.wstrb, strb)
    ctx.set(axil.awvalid, 1)
    ctx.set(axil.wvalid, 1)
    ctx.set(axil.bready, 1)
    await ctx.tick().until(axil.awready & axil.wready)
    ctx.set(axil.awvalid, 0)
    ctx.set(axil.wvalid, 0)
    resp, = await ctx.tick().sample(axil.bresp).until(axil.bvalid)
    ctx.set(axil.bready, 0)
    assert resp == 0


async def axil_read(ctx, axil, offset):
    ctx.set(axil.araddr, offset)
    ctx.set(axil.arvalid, 1)
    ctx.set(axil.rready, 1)
    await ctx.tick().until(axil.arready)
    ctx.set(axil.arvalid, 0)
    data, resp = await ctx.tick().sample(axil.rdata, axil.rresp).until(axil.rvalid)
    ctx.set(axil.rready, 0)
    assert resp == 0
    return data


def ub_model(dut, memory, width):
    """The UB's test port: synchronous read, byte-strobed write. As in the UB, a read's
    word is on `rdata` TEST_READ_LATENCY cycles later, for one cycle only; junk follows."""
    junk = int.from_bytes(b"\x5a" * width, "little")

    async def process(ctx):
        landing = [junk] * (TEST_READ_LATENCY - 1)
        async for *_, we, re, addr, wdata, wstrb in ctx.tick().sample(
                dut.ub.we, dut.ub.re, dut.ub.addr, dut.ub.wdata, dut.ub.wstrb):
            word = sum(memory[addr * width + i] << (8 * i) for i in range(width))
            if we:
                for i in range(width):
                    if wstrb >> i & 1:
                        memory[addr * width + i] = wdata >> (8 * i) & 0xFF
            landing.append(word if re else junk)
            ctx.set(dut.ub.rdata, landing.pop(0))
    return process


@pytest.mark.parametrize("width", BLOCK_WIDTHS)
def test_identity_and_ub_window(width):
    dut = CsrFrontEnd(width, UB_SIZE)
    memory = bytearray([0xAA]) * UB_SIZE

    async def bench(ctx):
        assert await axil_read(ctx, dut.axil, REG["ID"]) == regmap.ID_VALUE
        config = await axil_read(ctx, dut.axil, REG["CONFIG"])
        assert config & 0xFF == width and config >> 8 == UB_SIZE // 1024
        await axil_write(ctx, dut.axil, REG["UB_ADDR"], 0x100 - 8)
        words = [0x03020100 + 0x04040404 * i for i in range(12)]
        for word in words:
            await axil_write(ctx, dut.axil, REG["UB_DATA"], word)
        assert await axil_read(ctx, dut.axil, REG["UB_ADDR"]) == 0x100 - 8 + 48
        # A partial strobe changes only its bytes.
        await axil_write(ctx, dut.axil, REG["UB_ADDR"], 0x200)
        await axil_write(ctx, dut.axil, REG["UB_DATA"], 0x11223344, strb=0b0101)
        await axil_write(ctx, dut.axil, REG["UB_ADDR"], 0x100 - 8)
        for word in words:
            assert await axil_read(ctx, dut.axil, REG["UB_DATA"]) == word

    run_sim(dut, bench, processes=[ub_model(dut, memory, width)], timeout=5000)
    expected = bytearray([0xAA]) * UB_SIZE
    expected[0xF8:0xF8 + 48] = bytes(range(48))
    expected[0x200] = 0x44
    expected[0x202] = 0x22
    assert memory == expected


def test_command_fifo_free_space_and_backpressure():
    dut = CsrFrontEnd(32, UB_SIZE)
    taken = []
    # Opcodes 8 to 27: copies, both flags, unknown opcodes.
    words = list(range(0x1008, 0x1008 + regmap.CMD_FIFO_DEPTH + 4))

    async def bench(ctx):
        assert await axil_read(ctx, dut.axil, REG["CMD_FREE"]) == regmap.CMD_FIFO_DEPTH
        for word in words[:5]:
            await axil_write(ctx, dut.axil, REG["CMD"], word)
        assert await axil_read(ctx, dut.axil, REG["CMD_FREE"]) == regmap.CMD_FIFO_DEPTH - 5
        # The engine starts taking words only later: writes beyond the depth must wait.
        for word in words[5:]:
            await axil_write(ctx, dut.axil, REG["CMD"], word)
        assert len(taken) >= 4

    async def engine(ctx):
        await idle(ctx, 400)
        ctx.set(dut.cmd.ready, 1)
        async for *_, valid, payload in ctx.tick().sample(dut.cmd.valid, dut.cmd.payload):
            if valid:
                taken.append(payload)

    run_sim(dut, bench, background=[engine], timeout=5000)
    assert [entry.word for entry in taken] == words[:len(taken)]
    # Each word comes with its route as a command's first word.
    assert [(entry.flag, entry.pipe, entry.kind, entry.flag_to) for entry in taken] == [
        first_word_route(entry.word) for entry in taken]
    assert any(entry.flag for entry in taken) and not all(entry.flag for entry in taken)


def test_status_irq_and_error_clear():
    dut = CsrFrontEnd(32, UB_SIZE)
    clears = []

    async def bench(ctx):
        mte3 = getattr(dut, status_port(Pipe.MTE3))
        ctx.set(mte3.busy, 1)
        ctx.set(mte3.completed, 1234)
        ctx.set(mte3.error, ErrorCode.BUS_ERROR)
        ctx.set(mte3.error_index, 77)
        ctx.set(mte3.error_addr, 0xAB_1234_5678)
        ctx.set(dut.engine_idle, 0)
        assert await axil_read(ctx, dut.axil, REG["MTE3_STATUS"]) == 1
        assert await axil_read(ctx, dut.axil, REG["MTE3_COMPLETED"]) == 1234
        assert await axil_read(ctx, dut.axil, REG["MTE3_ERROR"]) == ErrorCode.BUS_ERROR
        assert await axil_read(ctx, dut.axil, REG["MTE3_ERROR_INDEX"]) == 77
        assert await axil_read(ctx, dut.axil, REG["MTE3_ERROR_ADDR_LO"]) == 0x1234_5678
        assert await axil_read(ctx, dut.axil, REG["MTE3_ERROR_ADDR_HI"]) == 0xAB
        assert await axil_read(ctx, dut.axil, REG["MTE2_ERROR"]) == 0
        assert ctx.get(dut.irq) == 0                      # nothing enabled yet
        await axil_write(ctx, dut.axil, REG["IRQ_ENABLE"], 0b10)
        assert ctx.get(dut.irq) == 1                      # the error is enabled
        assert await axil_read(ctx, dut.axil, REG["IRQ_STATUS"]) == 0b110
        await axil_write(ctx, dut.axil, REG["IRQ_STATUS"], 0b10)
        await idle(ctx, 1)                                # the pulse is registered
        assert clears == [1]
        ctx.set(mte3.error, ErrorCode.NONE)
        await axil_write(ctx, dut.axil, REG["IRQ_ENABLE"], 0b01)
        assert ctx.get(dut.irq) == 0                      # busy: not done
        ctx.set(dut.engine_idle, 1)
        await idle(ctx, 1)
        assert ctx.get(dut.irq) == 1
        assert await axil_read(ctx, dut.axil, REG["IRQ_STATUS"]) == 0b101

    async def watch_clear(ctx):
        async for *_, clear in ctx.tick().sample(dut.clear_errors):
            if clear:
                clears.append(1)

    run_sim(dut, bench, background=[watch_clear], timeout=5000)


def test_writes_that_name_no_writable_register_change_nothing():
    """An offset no register uses reads 0; a write there, or to a read-only register,
    pushes no command, clears nothing and touches no UB byte; every response is OKAY."""
    dut = CsrFrontEnd(32, UB_SIZE)
    writable = {"CMD", "IRQ_ENABLE", "IRQ_STATUS", "UB_ADDR", "UB_DATA"}
    assert writable == {r.name for r in regmap.REGISTERS if r.access != "RO"}
    unused = sorted(set(range(0, 1 << regmap.ADDR_BITS, 4)) - set(REG.values()))
    read_only = [r.offset for r in regmap.REGISTERS if r.name not in writable]
    side_effects = []

    async def bench(ctx):
        await axil_write(ctx, dut.axil, REG["UB_ADDR"], 0x40)
        before = {offset: await axil_read(ctx, dut.axil, offset) for offset in read_only}
        for offset in unused + read_only:
            await axil_write(ctx, dut.axil, offset, 0xFFFF_FFFF)
        for offset in unused + [REG["CMD"]]:
            assert await axil_read(ctx, dut.axil, offset) == 0
        assert {offset: await axil_read(ctx, dut.axil, offset)
                for offset in read_only} == before
        assert await axil_read(ctx, dut.axil, REG["IRQ_ENABLE"]) == 0
        assert await axil_read(ctx, dut.axil, REG["UB_ADDR"]) == 0x40

    async def watch(ctx):
        async for *_, valid, clear, we in ctx.tick().sample(dut.cmd.valid, dut.clear_errors,
                                                             dut.ub.we):
            if valid or clear or we:
                side_effects.append((valid, clear, we))

    run_sim(dut, bench, background=[watch], timeout=20000)
    assert unused and side_effects == []


def test_architecture_page_shows_the_register_map():
    page = (Path(__file__).parent.parent / "docs" / "architecture.md").read_text()
    assert regmap.markdown_table() in page


def test_converts_to_verilog():
    assert "module csr" in verilog.convert(CsrFrontEnd(32, UB_SIZE), name="csr")


def test_command_fifo_output_loads_by_byte_and_by_route(tmp_path):
    """After synth_ecp5, each enable of the command FIFO's output register loads one
    byte of the word or the route fields alone, so its cell can sit among those bits."""
    module = synth_ecp5_module(CsrFrontEnd(32, UB_SIZE), "csr", tmp_path)
    payload = module["ports"]["cmd__payload"]["bits"]
    enabled = {}
    for cell in module["cells"].values():
        if cell["type"] == "TRELLIS_FF" and cell["connections"]["Q"][0] in payload:
            bit = payload.index(cell["connections"]["Q"][0])
            enabled.setdefault(tuple(cell["connections"]["CE"]), set()).add(bit)
    assert sum(map(len, enabled.values())) == len(payload)
    groups = {frozenset(min(bit // 8, WORD_BITS // 8) for bit in bits)
              for bits in enabled.values()}
    assert all(len(group) == 1 for group in groups)
    assert len(groups) == WORD_BITS // 8 + 1
