"""Sums as carry-save levels and one carry chain.

An add of three or more operands in Yosys's ECP5 mapping is a chain of carry chains, and
each chain and the routing between them is a nanosecond or two. A 3:2 carry-save level is
one LUT per bit with no carry, so a sum of any few terms is a LUT level or two in front of
a single chain.
"""

from amaranth.hdl import C, Value


def compress(vectors, width):
    """One carry-save level: each three vectors to their bitwise sum and carry (a 3:2
    compressor, one LUT per bit and no carry chain), the rest passed on. The total is
    unchanged mod 2^width."""
    whole = len(vectors) - len(vectors) % 3
    out = vectors[whole:]
    for k in range(0, whole, 3):
        a, b, c = vectors[k:k + 3]
        out += [(a ^ b ^ c)[:width], (((a & b) | (a & c) | (b & c)) << 1)[:width]]
    return out


def sum_mod(terms, width):
    """(sum of `terms`) mod 2^width, for Values and int constants (taken mod 2^width, so a
    negative constant subtracts): carry-save levels down to two vectors, then one carry
    chain. The constants are folded into one vector first."""
    constant = sum(t for t in terms if isinstance(t, int)) % (1 << width)
    vectors = [Value.cast(t) for t in terms if not isinstance(t, int)]
    if constant:
        vectors.append(C(constant, width))
    while len(vectors) > 2:
        vectors = compress(vectors, width)
    total = vectors[0] + vectors[1] if len(vectors) == 2 else Value.cast(vectors[0])
    return total[:width]
