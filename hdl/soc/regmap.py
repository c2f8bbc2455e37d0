"""The CSR register map: the one description the AXI4-Lite front end, its tests and the
register table of docs/architecture.md are all made from.

Every register is 32 bits wide at a 4-byte aligned offset.
"""

from dataclasses import dataclass

from model.isa import Pipe

ID_VALUE = 0x4D544531          # "MTE1"
CMD_FIFO_DEPTH = 16            # command words the front end buffers ahead of the engine


@dataclass(frozen=True)
class BitField:
    name: str
    lsb: int
    width: int
    doc: str


@dataclass(frozen=True)
class Register:
    name: str
    offset: int
    access: str                  # RO, WO, RW, or RW1C (read; a 1 written to a field clears it)
    doc: str
    fields: tuple = ()

    def field(self, name):
        return next(f for f in self.fields if f.name == name)


PIPE_BLOCK_BASE = 0x20
PIPE_BLOCK_STRIDE = 0x20
PIPES = (Pipe.MTE2, Pipe.MTE3, Pipe.V)


def _pipe_registers(pipe):
    base = PIPE_BLOCK_BASE + PIPE_BLOCK_STRIDE * PIPES.index(pipe)
    p = pipe.name
    return (
        Register(f"{p}_STATUS", base + 0x00, "RO", f"{p} pipe state",
                 (BitField("busy", 0, 1, "a command is buffered or running"),)),
        Register(f"{p}_COMPLETED", base + 0x04, "RO", f"{p} commands finished since reset"),
        Register(f"{p}_ERROR", base + 0x08, "RO", f"{p} first error since the last clear",
                 (BitField("code", 0, 4, "ErrorCode, 0 = none"),)),
        Register(f"{p}_ERROR_INDEX", base + 0x0C, "RO",
                 f"{p} failing command's position in the command stream"),
        Register(f"{p}_ERROR_ADDR_LO", base + 0x10, "RO", f"{p} BUS_ERROR address, bits 31:0"),
        Register(f"{p}_ERROR_ADDR_HI", base + 0x14, "RO", f"{p} BUS_ERROR address, bits 39:32"),
    )


REGISTERS = (
    Register("ID", 0x00, "RO", f"reads {ID_VALUE:#010x}"),
    Register("CONFIG", 0x04, "RO", "build parameters",
             (BitField("width_bytes", 0, 8, "AXI / UB data width W in bytes"),
              BitField("ub_kib", 8, 16, "UB size in KiB"))),
    Register("CMD", 0x08, "WO", "pushes one command word; waits while the FIFO is full"),
    Register("CMD_FREE", 0x0C, "RO", f"free words in the {CMD_FIFO_DEPTH}-word command FIFO"),
    Register("IRQ_ENABLE", 0x10, "RW", "interrupt enables",
             (BitField("done", 0, 1, "interrupt while the engine is idle"),
              BitField("error", 1, 1, "interrupt while any pipe reports an error"))),
    Register("IRQ_STATUS", 0x14, "RW1C", "interrupt causes",
             (BitField("done", 0, 1, "engine idle, command FIFO empty"),
              BitField("error", 1, 1, "some pipe reports an error; write 1 to clear them all"),
              BitField("irq", 2, 1, "the interrupt line"))),
    Register("UB_ADDR", 0x18, "RW", "UB byte address for UB_DATA (bits 1:0 read as 0)"),
    Register("UB_DATA", 0x1C, "RW", "32 bits of UB at UB_ADDR; each access adds 4 to UB_ADDR"),
) + tuple(r for pipe in PIPES for r in _pipe_registers(pipe))

BY_NAME = {r.name: r for r in REGISTERS}
ADDR_BITS = 8
assert max(r.offset for r in REGISTERS) < 1 << ADDR_BITS


def markdown_table():
    """The register map as docs/architecture.md shows it."""
    lines = ["| offset | name | access | meaning |", "|---|---|---|---|"]
    for r in REGISTERS:
        meaning = r.doc
        if r.fields:
            meaning += ": " + "; ".join(
                f"[{f.lsb + f.width - 1}:{f.lsb}] {f.name}, {f.doc}" if f.width > 1
                else f"[{f.lsb}] {f.name}, {f.doc}" for f in r.fields)
        lines.append(f"| `{r.offset:#04x}` | `{r.name}` | {r.access} | {meaning} |")
    return "\n".join(lines) + "\n"
