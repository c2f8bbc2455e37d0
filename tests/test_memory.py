"""The sparse GM: mapping, reads and writes across adjacent regions, unmapped addresses."""

import numpy as np
import pytest

from model.isa import PROFILES
from model.memory import GM_SIZE, GlobalMemory, UnmappedAddressError, new_ub


def gm_with(*regions):
    gm = GlobalMemory()
    for base, data in regions:
        gm.map(base, data)
    return gm


def test_map_copies_bytes_or_zero_fills_and_keeps_regions_sorted():
    source = bytearray(b"abc")
    gm = gm_with((0x100, 4), (0x10, source), (0x20, np.array([1, 2], dtype=np.uint16)))
    source[0] = ord("z")
    assert [(r.base, r.end) for r in gm.regions] == [(0x10, 0x13), (0x20, 0x24), (0x100, 0x104)]
    assert gm.read(0x10, 3).tobytes() == b"abc"
    assert gm.read(0x20, 4).tobytes() == b"\x01\x00\x02\x00"
    assert gm.read(0x100, 4).tobytes() == bytes(4)


@pytest.mark.parametrize("base, data", [(0x0FF, 2), (0x103, 1), (0x0F0, 0x100), (0x100, 4)])
def test_overlapping_maps_are_refused(base, data):
    gm = gm_with((0x100, 4))
    with pytest.raises(ValueError, match="overlaps"):
        gm.map(base, data)


@pytest.mark.parametrize("base, data, message", [
    (-1, 4, "outside"), (GM_SIZE - 2, 4, "outside"), (0, 0, "positive"), (0, b"", "empty")])
def test_bad_maps_are_named(base, data, message):
    with pytest.raises(ValueError, match=message):
        GlobalMemory().map(base, data)


def test_map_refuses_other_data():
    with pytest.raises(TypeError, match="bytes-like or a numpy array"):
        GlobalMemory().map(0, [1, 2, 3])


def test_reads_and_writes_cross_adjacent_regions():
    gm = gm_with((0x100, b"\x01" * 16), (0x110, b"\x02" * 16), (0x120, b"\x03" * 16))
    assert gm.read(0x10E, 20).tobytes() == b"\x01" * 2 + b"\x02" * 16 + b"\x03" * 2
    gm.write(0x10F, bytes(range(18)))
    assert gm.read(0x100, 48).tobytes() == b"\x01" * 15 + bytes(range(18)) + b"\x03" * 15
    assert gm.view(0x104, 8) is not None and gm.view(0x10E, 4) is None


def test_view_writes_through():
    gm = gm_with((0x100, 16))
    gm.view(0x104, 4)[:] = 7
    assert gm.read(0x100, 8).tobytes() == bytes(4) + b"\x07" * 4


@pytest.mark.parametrize("addr, n, first", [(0x0F0, 32, 0x0F0), (0x108, 16, 0x110),
                                            (0x124, 20, 0x130), (0x118, 40, 0x118),
                                            (0x200, 1, 0x200)])
def test_unmapped_access_names_the_first_unmapped_byte(addr, n, first):
    gm = gm_with((0x100, 16), (0x120, 16))
    assert gm.first_unmapped(addr, n) == first
    with pytest.raises(UnmappedAddressError) as caught:
        gm.read(addr, n)
    assert caught.value.address == first


def test_a_write_touching_unmapped_bytes_writes_nothing():
    gm = gm_with((0x100, 16))
    with pytest.raises(UnmappedAddressError):
        gm.write(0x108, b"\xff" * 16)
    assert gm.read(0x100, 16).tobytes() == bytes(16)


def test_ub_is_zeroed_at_the_profile_size():
    ub = new_ub(PROFILES["kirin9030"])
    assert ub.dtype == np.uint8 and ub.size == 131072 and not ub.any()
