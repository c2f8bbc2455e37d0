"""The engine's programming interface as a C header, for software on the CPU that drives
the FPGA top: the CSR map (`hdl/soc/regmap.py`); from `model/isa.py`, the error codes,
pipes, element types and an encoder per command; and the two loops that push a program
and wait for it (`mte_dma_push`, `mte_dma_wait_done`). `mte header` writes it.

Each encoder `mte_dma_<op>(words, field...)` packs one command exactly as `isa.encode`
does: it fills `words` and returns 0, or returns MTE_DMA_ERR_FIELD_RANGE and leaves
`words` as it was when a value does not fit its field.
"""

import textwrap

from model import isa

from . import regmap

PREFIX = "MTE_DMA_"


def _define(name, value, comment="", as_hex=False):
    text = f"#define {PREFIX}{name} " + (f"{value:#x}u" if as_hex else f"{value}u")
    return f"{text:<56} /* {comment} */" if comment else text


def _csr_lines():
    lines = ["/* CSR map: byte offsets of the 32-bit registers from the AXI4-Lite base. A",
             " * field's _MASK is in place; (value & _MASK) >> _SHIFT reads it. */",
             _define("ID_VALUE", regmap.ID_VALUE, "what ID reads", as_hex=True),
             _define("CMD_FIFO_DEPTH", regmap.CMD_FIFO_DEPTH, "command words buffered")]
    for r in regmap.REGISTERS:
        lines.append(_define(r.name, r.offset, f"{r.access}: {r.doc}", as_hex=True))
        for f in r.fields:
            name = f"{r.name}_{f.name.upper()}"
            lines += [_define(f"{name}_SHIFT", f.lsb, f.doc),
                      _define(f"{name}_MASK", ((1 << f.width) - 1) << f.lsb, as_hex=True)]
    return lines


def _enum_lines(title, kind, members):
    return [f"/* {title} */"] + [_define(f"{kind}_{name.upper()}", value)
                                 for name, value in members]


def _encoder(op):
    name = op.mnemonic
    words = f"{PREFIX}{name.upper()}_WORDS"
    params = "".join(f",\n    uint64_t {f.name}" for f in op.fields)
    runs_on = f" (pipe {op.pipe.name})" if op.pipe is not None else ""
    summary = f"{name}{runs_on}: " + ", ".join(f"{f.name} ({f.unit})" for f in op.fields)
    body = textwrap.wrap(summary + ".", 84, initial_indent="/* ", subsequent_indent=" * ")
    body[-1] += " */"
    body += [f"static inline int mte_dma_{name}(\n    uint32_t words[{words}]{params})",
             "{",
             f"    uint32_t packed[{words}] = {{{PREFIX}OP_{name.upper()}}};",
             "    unsigned i;"]
    body += [f"    if (mte_dma_put_field(packed, {op.offset(f.name)}, {f.width}, {f.name}))\n"
             f"        return {PREFIX}ERR_FIELD_RANGE;" for f in op.fields]
    body += [f"    for (i = 0; i < {words}; i++)",
             "        words[i] = packed[i];",
             "    return 0;",
             "}"]
    return [_define(f"{name.upper()}_WORDS", op.words)] + body


# Writes `width` bits of `value` at bit `offset` of a zeroed little-endian word array.
_PUT_FIELD = r"""
static inline int mte_dma_put_field(uint32_t *words, unsigned offset, unsigned width,
                                    uint64_t value)
{
    unsigned done = 0;
    if (width < 64 && (value >> width) != 0)
        return MTE_DMA_ERR_FIELD_RANGE;
    while (done < width) {
        unsigned bit = (offset + done) % 32;
        unsigned n = width - done < 32 - bit ? width - done : 32 - bit;
        uint64_t chunk = (value >> done) & ((UINT64_C(1) << n) - 1);
        words[(offset + done) / 32] |= (uint32_t)(chunk << bit);
        done += n;
    }
    return 0;
}
""".strip("\n").splitlines()


# A CPU's two loops around the engine: the only code here that touches the registers.
_DRIVER = r"""
/* Register access: by default a volatile 32-bit load or store at base + offset, base the
 * address of the CSR block. Define MTE_DMA_READ and MTE_DMA_WRITE before including this
 * file to reach the registers another way. */
#ifndef MTE_DMA_READ
#define MTE_DMA_READ(base, offset) (*(volatile uint32_t *)((base) + (offset)))
#endif
#ifndef MTE_DMA_WRITE
#define MTE_DMA_WRITE(base, offset, value) \
    (*(volatile uint32_t *)((base) + (offset)) = (value))
#endif

/* Pushes n command words to CMD in order, never more at a time than CMD_FREE has room
 * for, so no write waits on a full FIFO. */
static inline void mte_dma_push(uintptr_t base, const uint32_t *words, uint32_t n)
{
    while (n != 0) {
        uint32_t room = MTE_DMA_READ(base, MTE_DMA_CMD_FREE);
        for (; room != 0 && n != 0; room--, n--)
            MTE_DMA_WRITE(base, MTE_DMA_CMD, *words++);
    }
}

/* Polls IRQ_STATUS until the engine is idle with its command FIFO empty, every command
 * pushed before finished (a rejected one moves no byte and its pipe goes on), and
 * returns IRQ_STATUS then: its ERROR bit says whether a pipe reports an error
 * (<pipe>_ERROR says which). Call it once the whole program is pushed: between two
 * pushes the engine may be idle. AXI does not order a read after a write, so the last
 * CMD write must have its response before the first IRQ_STATUS read: device memory
 * that does not post writes gives this; elsewhere, put a barrier between the two. */
static inline uint32_t mte_dma_wait_done(uintptr_t base)
{
    uint32_t status;
    do
        status = MTE_DMA_READ(base, MTE_DMA_IRQ_STATUS);
    while ((status & MTE_DMA_IRQ_STATUS_DONE_MASK) == 0);
    return status;
}
""".strip("\n").splitlines()


def c_header():
    lines = ["/* mte_dma.h: the MTE DMA engine's programming interface, written by",
             " * `mte header` from hdl/soc/regmap.py and model/isa.py. */",
             "#ifndef MTE_DMA_H", "#define MTE_DMA_H", "", "#include <stdint.h>", ""]
    lines += _csr_lines() + [""]
    lines += _enum_lines("Error codes: the code field of <pipe>_ERROR; a lower value wins "
                         "when several rules fail.", "ERR",
                         ((e.name, e.value) for e in isa.ErrorCode)) + [""]
    lines += _enum_lines("Pipes: src_pipe and dst_pipe of set_flag and wait_flag, the pipe of "
                         "get_buf and rls_buf (EXTERNAL: "
                         "any pipe outside this engine).", "PIPE",
                         ((p.name, p.value) for p in isa.Pipe)) + [""]
    lines += _enum_lines("Element types: the dtype field.", "DTYPE",
                         ((t.name, t.code) for t in isa.DTYPES)) + [""]
    lines += _enum_lines(f"Opcodes: bits {isa.OPCODE_BITS - 1}:0 of a command's first word.",
                         "OP",
                         ((op.mnemonic, op.opcode.value) for op in isa.OPS)) + [""]
    lines += ["/* Commands: little-endian 32-bit words pushed to CMD in order. Each encoder",
              " * returns 0, or MTE_DMA_ERR_FIELD_RANGE with words unchanged. */",
              _define("MAX_COMMAND_WORDS", isa.MAX_COMMAND_WORDS), ""]
    lines += _PUT_FIELD
    for op in isa.OPS:
        lines += [""] + _encoder(op)
    lines += [""] + _DRIVER + ["", "#endif /* MTE_DMA_H */"]
    return "\n".join(lines) + "\n"
