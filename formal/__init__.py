"""Formal proofs of the engine's bus and byte contracts (`make formal`).

Each proof is a harness: a block of `hdl/` with free inputs, assumptions on what its
neighbours may do, and the properties it must keep, all as Amaranth Assume/Assert.
`formal.runner` turns a harness into RTLIL and proves it with SymbiYosys (yowasp-sby,
engine smtbmc with yices, or Bitwuzla through `formal.bitwuzla_smt2`). This package
imports `hdl` and `model.isa`; neither imports it.

Each group's module holds its harness and the mutations it must catch (deliberately
broken variants of the block); `formal.proofs` lists the groups with their depths.
"""
