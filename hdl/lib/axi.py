"""AXI4 port signatures and codes, as seen from the master.

Members carry the AXI spec's own names (`awaddr`, `rready`, ...), so a top-level port
`m_axi` becomes Verilog ports `m_axi__awaddr` etc., which cocotbext-axi binds with
`AxiBus.from_prefix(dut, "m_axi_")` (cocotb-bus joins prefix, "_" and the name).
Every member is Out from the master except the slave's handshakes and responses.
"""

from amaranth.hdl import Module
from amaranth.lib import enum, wiring
from amaranth.lib.wiring import In, Out

LEN_WIDTH = 8          # AxLEN: beats - 1
SIZE_WIDTH = 3         # AxSIZE: log2(bytes per beat)
BURST_WIDTH = 2
LOCK_WIDTH = 1         # AXI4 has no locked transfers, only the exclusive bit
CACHE_WIDTH = 4
PROT_WIDTH = 3
QOS_WIDTH = 4
RESP_WIDTH = 2


class Resp(enum.Enum, shape=RESP_WIDTH):
    OKAY = 0
    EXOKAY = 1
    SLVERR = 2
    DECERR = 3


class BurstType(enum.Enum, shape=BURST_WIDTH):
    FIXED = 0
    INCR = 1
    WRAP = 2


def resp_is_error(resp):
    """SLVERR and DECERR are the two codes with the high bit set."""
    return resp[1]


class AXI4AddressSignature(wiring.Signature):
    """One address channel (AR or AW) without its prefix, as the master drives it."""
    def __init__(self, addr_width, id_width):
        self.addr_width = addr_width
        self.id_width = id_width
        super().__init__(_address_members("", addr_width, id_width))

    def __eq__(self, other):
        return (type(self) is type(other) and self.addr_width == other.addr_width
                and self.id_width == other.id_width)

    def __repr__(self):
        return f"AXI4AddressSignature({self.addr_width}, {self.id_width})"


def _address_members(prefix, addr_width, id_width):
    return {
        f"{prefix}id": Out(id_width),
        f"{prefix}addr": Out(addr_width),
        f"{prefix}len": Out(LEN_WIDTH),
        f"{prefix}size": Out(SIZE_WIDTH),
        f"{prefix}burst": Out(BURST_WIDTH),
        f"{prefix}lock": Out(LOCK_WIDTH),
        f"{prefix}cache": Out(CACHE_WIDTH),
        f"{prefix}prot": Out(PROT_WIDTH),
        f"{prefix}qos": Out(QOS_WIDTH),
        f"{prefix}valid": Out(1),
        f"{prefix}ready": In(1),
    }


def _read_members(addr_width, data_width, id_width):
    return {
        **_address_members("ar", addr_width, id_width),
        "rid": In(id_width),
        "rdata": In(data_width),
        "rresp": In(RESP_WIDTH),
        "rlast": In(1),
        "rvalid": In(1),
        "rready": Out(1),
    }


def _write_members(addr_width, data_width, id_width):
    return {
        **_address_members("aw", addr_width, id_width),
        "wdata": Out(data_width),
        "wstrb": Out(data_width // 8),
        "wlast": Out(1),
        "wvalid": Out(1),
        "wready": In(1),
        "bid": In(id_width),
        "bresp": In(RESP_WIDTH),
        "bvalid": In(1),
        "bready": Out(1),
    }


class _AXI4SignatureBase(wiring.Signature):
    """`data_width` is in bits, as in the AXI spec (a multiple of 8)."""
    def __init__(self, addr_width, data_width, id_width):
        if data_width % 8:
            raise ValueError(f"AXI data width must be whole bytes, not {data_width} bits")
        self.addr_width = addr_width
        self.data_width = data_width
        self.id_width = id_width
        super().__init__(self._members(addr_width, data_width, id_width))

    def __eq__(self, other):
        return (type(self) is type(other) and self.addr_width == other.addr_width
                and self.data_width == other.data_width and self.id_width == other.id_width)

    def __repr__(self):
        return (f"{type(self).__name__}({self.addr_width}, {self.data_width}, "
                f"{self.id_width})")


class AXI4ReadSignature(_AXI4SignatureBase):
    """AR and R channels."""
    @staticmethod
    def _members(addr_width, data_width, id_width):
        return _read_members(addr_width, data_width, id_width)


class AXI4WriteSignature(_AXI4SignatureBase):
    """AW, W and B channels."""
    @staticmethod
    def _members(addr_width, data_width, id_width):
        return _write_members(addr_width, data_width, id_width)


class AXI4Signature(_AXI4SignatureBase):
    """All five channels."""
    @staticmethod
    def _members(addr_width, data_width, id_width):
        return {**_write_members(addr_width, data_width, id_width),
                **_read_members(addr_width, data_width, id_width)}


def connect_address(m: Module, channel, axi, prefix):
    """Drives the `prefix` ("ar" or "aw") address members of the master port `axi` from an
    AXI4AddressSignature interface `channel` of the same component."""
    for name, member in channel.signature.members.items():
        ours, theirs = getattr(channel, name), getattr(axi, prefix + name)
        if member.flow == Out:
            m.d.comb += theirs.eq(ours)
        else:
            m.d.comb += ours.eq(theirs)
