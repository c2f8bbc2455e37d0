"""The SoC front end: the FPGA top (the engine behind an AXI4-Lite CSR front end), the
CSR register map and the C header printed from it.

Imports from every hdl layer below it, up to `hdl.top` (and `model`).
"""
