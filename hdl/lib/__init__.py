"""Generic building blocks that know nothing of the engine: the bypass queue, registered
stream stages (skid stage, two-entry output queue), registers and LUTs that synthesis
keeps apart, the registered multiplier, block RAM, carry-save sums, mux trees, AXI4
signatures and the ECP5 elaboration target.

Imports only `amaranth` and other modules of `hdl.lib`.
"""
