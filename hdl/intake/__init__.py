"""Command intake and dispatch: 32-bit command words into whole commands (`commands.py`
holds their layouts, derived from `model.isa`), routed to the pipe that runs each; the
buffer-ID token table and the dispatcher's tickets.

Imports from `hdl.lib`, `hdl.layouts`, `hdl.ub` and `hdl.datapath` (and `model`).
"""
