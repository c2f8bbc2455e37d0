"""One pipe's command sequencer and what it is made of: the configuration registers, the
copy rule checker, the address generator that turns a checked copy into rows, the record
of the copies in flight and of what completes; and the event flags between pipes.

Imports from `hdl.lib`, `hdl.layouts`, `hdl.ub`, `hdl.datapath` and `hdl.intake` (and
`model`).
"""
