"""A plain reference of the copy semantics for tests, written straight from the C loops of
seed 000 and the row layout of SPEC.md: one byte at a time, no numpy, no shared code with
the model beyond the ISA table's names and sizes.

It assumes legal commands (the rules are not its business) and reports a bus error like
the SPEC: the first row in loop order that touches unmapped GM raises, with the row's
lowest unmapped address, after every earlier row has been written.
"""

from model.isa import DTYPES, PROFILES

LINE = 32

RESET_REGISTERS = {"loop1_count": 1, "loop2_count": 1, "loop1_src_stride": 0,
                   "loop1_dst_stride": 0, "loop2_src_stride": 0, "loop2_dst_stride": 0}

_SIZE = {"loop1_count": "loop1_count", "loop2_count": "loop2_count"}


def _stride(level):
    return {f"{level}_src_stride": "src_stride", f"{level}_dst_stride": "dst_stride"}


# register-write mnemonic -> (register file, {register: command field})
REGISTER_WRITES = {
    "set_loop_size_outtoub": ("mte2", _SIZE),
    "set_loop1_stride_outtoub": ("mte2", _stride("loop1")),
    "set_loop2_stride_outtoub": ("mte2", _stride("loop2")),
    "set_loop_size_ubtoout": ("mte3", _SIZE),
    "set_loop1_stride_ubtoout": ("mte3", _stride("loop1")),
    "set_loop2_stride_ubtoout": ("mte3", _stride("loop2")),
    "set_mov_pad_val": ("mte2", {"pad_val": "pad_val"}),
}


class ReferenceBusError(Exception):
    def __init__(self, address):
        super().__init__(f"unmapped GM address {address:#x}")
        self.address = address


def align_up(x, a):
    return (x + a - 1) // a * a


class ReferenceMachine:
    """GM is a dict {address: byte} holding exactly the mapped bytes; UB is a bytearray."""

    def __init__(self, profile, regions, ub=None):
        self.profile = PROFILES[profile]
        self.gm = {}
        for base, data in regions:
            for i, byte in enumerate(bytes(data)):
                self.gm[base + i] = byte
        self.ub = bytearray(ub) if ub is not None else bytearray(self.profile.ub_size)
        self.regs = {"mte2": dict(RESET_REGISTERS, pad_val=0), "mte3": dict(RESET_REGISTERS)}

    def gm_bytes(self, base, n):
        return bytes(self.gm[base + i] for i in range(n))

    def run(self, instrs):
        for instr in instrs:
            self.execute(instr.mnemonic, instr.values)

    def execute(self, mnemonic, v):
        if mnemonic in REGISTER_WRITES:
            pipe, fields = REGISTER_WRITES[mnemonic]
            for register, name in fields.items():
                self.regs[pipe][register] = v[name]
        elif mnemonic == "copy_gm_to_ubuf":
            self.copy_gm_to_ubuf(v)
        elif mnemonic == "copy_ubuf_to_gm":
            self.copy_ubuf_to_gm(v)
        elif mnemonic == "copy_ubuf_to_ubuf":
            self.copy_ubuf_to_ubuf(v)

    def read_gm_row(self, addr, n):
        for a in range(addr, addr + n):
            if a not in self.gm:
                raise ReferenceBusError(a)
        return [self.gm[a] for a in range(addr, addr + n)]

    def copy_gm_to_ubuf(self, v):
        if v["len_burst"] == 0:
            return          # SPEC: a no-op, padding included
        regs = self.regs["mte2"]
        es = DTYPES[v["dtype"]].size
        length = v["len_burst"]
        left, right = v["left_padding"] * es, v["right_padding"] * es
        extent = align_up(max(v["dst_stride"], left + length + right), LINE)
        pad = regs["pad_val"].to_bytes(8, "little")[:es]
        for j in range(regs["loop2_count"]):
            gm1 = v["gm_src"] + j * regs["loop2_src_stride"]
            ub1 = v["ub_dst"] + j * regs["loop2_dst_stride"]
            for k in range(regs["loop1_count"]):
                gm2 = gm1 + k * regs["loop1_src_stride"]
                ub2 = ub1 + k * regs["loop1_dst_stride"]
                for r in range(v["n_burst"]):
                    data = self.read_gm_row(gm2 + r * v["src_stride"], length)
                    row = ub2 + r * v["dst_stride"]
                    if v["data_select_bit"]:
                        for o in range(extent):
                            self.ub[row + o] = pad[o % es]
                        for i, byte in enumerate(data):
                            self.ub[row + left + i] = byte
                    else:
                        for i, byte in enumerate(data):
                            self.ub[row + i] = byte

    def copy_ubuf_to_gm(self, v):
        regs = self.regs["mte3"]
        length = v["len_burst"]
        for j in range(regs["loop2_count"]):
            ub1 = v["ub_src"] + j * regs["loop2_src_stride"]
            gm1 = v["gm_dst"] + j * regs["loop2_dst_stride"]
            for k in range(regs["loop1_count"]):
                ub2 = ub1 + k * regs["loop1_src_stride"]
                gm2 = gm1 + k * regs["loop1_dst_stride"]
                for r in range(v["n_burst"]):
                    src = ub2 + r * v["src_stride"]
                    dst = gm2 + r * v["dst_stride"]
                    self.read_gm_row(dst, length)        # the whole row must be mapped
                    for i in range(length):
                        self.gm[dst + i] = self.ub[src + i]

    def copy_ubuf_to_ubuf(self, v):
        length = v["len_burst"] * LINE
        for r in range(v["n_burst"]):
            src = v["ub_src"] + r * (v["len_burst"] + v["src_gap"]) * LINE
            dst = v["ub_dst"] + r * (v["len_burst"] + v["dst_gap"]) * LINE
            for i in range(length):
                self.ub[dst + i] = self.ub[src + i]
