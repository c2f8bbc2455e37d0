"""Wide multiplexers as balanced trees of 2:1 muxes.

Yosys maps a tree of 2:1 muxes on the bits of an index onto ECP5 slices as LUT4s and the
slices' PFUMX / L6MUX21 muxes (an 8:1 mux per bit in one LUT level); an indexed `Array`
or a variable shift becomes a $shiftx, which it maps to about twice the LUTs.
"""

from amaranth.hdl import Mux


def mux_tree(choices, index):
    """choices[index]: a tree of 2:1 muxes on the bits of `index`. Up to 2 ** len(index)
    choices; an index past the last picks the last."""
    if not 1 <= len(choices) <= 1 << len(index):
        raise ValueError(f"{len(choices)} choices for a {len(index)}-bit index")
    choices = list(choices) + [choices[-1]] * ((1 << len(index)) - len(choices))
    for bit in index:
        choices = [Mux(bit, hi, lo) for lo, hi in zip(choices[::2], choices[1::2])]
    return choices[0]
