"""The Unified Buffer: one memory of W-byte words with arbitrated requester ports and a
test port.

Imports from `hdl.lib` and `hdl.layouts` (and `model.isa`).
"""
