"""The ECP5 build flow: out-of-context synthesis, place and route of each pipe and of the
FPGA top (`python -m hdl.fpga.build`), and its reports.

Imports from every hdl layer (and `model`); nothing in hdl imports it.
"""
