"""The UB read and written in place under Verilator, at no simulated cycle.

Every Verilator build of tb/run.py compiles tb/ub_backdoor.cpp into the simulator and
makes the UB's memories public: part k (`mte_dma.ub.memoryK`, hdl/ub/ub.py) holds bytes
4k to 4k + 3 of every W-byte word, one 32-bit element per word. `UbBackdoor` maps each
part's elements as a numpy array over the simulator's own storage, so a whole UB image
goes in or out in a few numpy copies. Only while the engine is idle, as the test port.
"""

import ctypes
import re

import numpy as np

from hdl.ub.ub import PART_BYTES

SCOPE_BYTES = 512
UB_ACCESS = ("backdoor", "port")     # tb.run --ub-access, MTE_UB_ACCESS


class BackdoorUnavailable(RuntimeError):
    """The simulator has no UB backdoor (not a tb/run.py Verilator build)."""


def _public_memories():
    """{part index: (address, bytes)} of the simulator's public `memory` variables."""
    try:
        find = ctypes.CDLL(None).mte_public_variable
    except AttributeError as missing:
        raise BackdoorUnavailable("the simulator has no mte_public_variable") from missing
    find.restype = ctypes.c_void_p
    find.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_size_t),
                     ctypes.c_char_p, ctypes.c_size_t]
    found, size, scope = {}, ctypes.c_size_t(), ctypes.create_string_buffer(SCOPE_BYTES)
    while address := find(b"memory", len(found), ctypes.byref(size), scope, SCOPE_BYTES):
        part = re.fullmatch(r".*\.ub\.memory(\d+)", scope.value.decode())
        if part is None:
            raise BackdoorUnavailable(f"a public memory outside the UB: {scope.value!r}")
        found[int(part.group(1))] = address, size.value
    return found


class UbBackdoor:
    """The UB of `ub_words` words of `width` bytes, as the simulator stores it."""

    def __init__(self, ub_words, width):
        memories = _public_memories()
        parts = width // PART_BYTES
        if sorted(memories) != list(range(parts)):
            raise BackdoorUnavailable(f"UB memories {sorted(memories)}, expected {parts}")
        self.shape = (ub_words, parts)
        self.parts = []
        for k in range(parts):
            address, size = memories[k]
            if size != ub_words * PART_BYTES:
                raise BackdoorUnavailable(f"UB memory {k} holds {size} bytes, expected "
                                          f"{ub_words * PART_BYTES}")
            storage = (ctypes.c_uint32 * ub_words).from_address(address)
            self.parts.append(np.ctypeslib.as_array(storage))

    def write(self, image):
        """Make UB hold `image` (bytes of the whole UB)."""
        words = np.frombuffer(image, dtype="<u4").reshape(self.shape)
        for k, part in enumerate(self.parts):
            part[:] = words[:, k]

    def read(self):
        """The whole UB, as bytes."""
        return np.stack(self.parts, axis=1).astype("<u4").tobytes()
