"""The engine's memories: a sparse global memory (GM) and the dense Unified Buffer (UB).

GM spans 40-bit byte addresses but only mapped regions exist; touching any other byte is
an `UnmappedAddressError` (the engine reports it as BUS_ERROR). The UB is a plain zeroed
numpy uint8 array of the profile's size.
"""

from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

from .isa import GM_ADDR_BITS

GM_SIZE = 1 << GM_ADDR_BITS


class UnmappedAddressError(LookupError):
    """A GM access touched a byte no region maps; `address` is the lowest such byte."""

    def __init__(self, address):
        super().__init__(f"GM address {address:#x} is not mapped")
        self.address = address


@dataclass(frozen=True)
class Region:
    """A mapped GM window: `data[i]` is the byte at GM address `base + i`."""
    base: int
    data: np.ndarray

    @property
    def end(self):
        return self.base + len(self.data)


def new_ub(profile):
    """A zeroed Unified Buffer for an `isa.Profile`."""
    return np.zeros(profile.ub_size, dtype=np.uint8)


def as_byte_array(data):
    """Bytes-like or numpy data (of any dtype) as a flat uint8 array of its raw bytes."""
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).view(np.uint8).reshape(-1)
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(data, dtype=np.uint8)
    raise TypeError(f"GM data must be bytes-like or a numpy array, not {type(data).__name__}")


def _check_span(addr, n):
    if addr < 0 or n < 0:
        raise ValueError(f"negative GM address or length: {addr}, {n}")


class GlobalMemory:
    """Sparse GM made of non-overlapping mapped regions, kept sorted by base address."""

    def __init__(self):
        self._regions = []
        self._bases = []

    @property
    def regions(self):
        """The mapped regions in address order."""
        return tuple(self._regions)

    def map(self, addr, data_or_length):
        """Map a region at `addr`: the given bytes (copied), or that many zero bytes.

        Returns the region's own array, which later accesses read and write.
        """
        if isinstance(data_or_length, int):
            if data_or_length <= 0:
                raise ValueError(f"GM region length must be positive, not {data_or_length}")
            data, end = None, addr + data_or_length
        else:
            data = as_byte_array(data_or_length).copy()
            if not len(data):
                raise ValueError("GM region data is empty")
            end = addr + len(data)
        if addr < 0 or end > GM_SIZE:          # before the zeros of a window are made
            raise ValueError(f"GM region [{addr:#x}, {end:#x}) lies outside 40-bit GM")
        if data is None:
            data = np.zeros(end - addr, dtype=np.uint8)
        region = Region(addr, data)
        i = bisect_right(self._bases, addr)
        neighbours = self._regions[max(i - 1, 0):i + 1]
        clash = next((r for r in neighbours if r.base < region.end and addr < r.end), None)
        if clash is not None:
            raise ValueError(f"GM region [{addr:#x}, {region.end:#x}) overlaps the region "
                             f"[{clash.base:#x}, {clash.end:#x})")
        self._regions.insert(i, region)
        self._bases.insert(i, addr)
        return data

    def region_at(self, addr):
        """The region holding byte `addr`, or None."""
        i = bisect_right(self._bases, addr) - 1
        if i >= 0 and addr < self._regions[i].end:
            return self._regions[i]
        return None

    def view(self, addr, n):
        """A writable 1-D view of [addr, addr+n) when one region holds all of it, else None."""
        region = self.region_at(addr)
        if region is None or addr + n > region.end:
            return None
        offset = addr - region.base
        return region.data[offset:offset + n]

    def first_unmapped(self, addr, n):
        """The lowest unmapped address in [addr, addr+n), or None when all are mapped."""
        _check_span(addr, n)
        end = addr + n
        while addr < end:
            region = self.region_at(addr)
            if region is None:
                return addr
            addr = region.end      # adjacent regions continue the mapped run
        return None

    def _pieces(self, addr, n):
        """(offset into the access, region view) pairs covering [addr, addr+n), in order."""
        bad = self.first_unmapped(addr, n)
        if bad is not None:
            raise UnmappedAddressError(bad)
        done = 0
        while done < n:
            region = self.region_at(addr + done)
            start = addr + done - region.base
            take = min(n - done, len(region.data) - start)
            yield done, region.data[start:start + take]
            done += take

    def read(self, addr, n):
        """A copy of the n bytes at `addr` (they may span adjacent regions)."""
        out = np.empty(n, dtype=np.uint8)
        for offset, piece in self._pieces(addr, n):
            out[offset:offset + len(piece)] = piece
        return out

    def write(self, addr, data):
        """Store bytes at `addr`; nothing is written unless every target byte is mapped."""
        data = as_byte_array(data)
        for offset, piece in self._pieces(addr, len(data)):
            piece[:] = data[offset:offset + len(piece)]
