"""The datapaths that move a copy's bytes, row by row: the AXI4 reader and writer with
the burst legalizer in front of them, the byte aligner, the pad stage, the UB reader, the
line writer, the row fork and the completion counter; `mte2.py` (GM -> UB), `mte3.py`
(UB -> GM) and `ubcopy.py` (UB -> UB) wire them into the three datapaths.

Imports from `hdl.lib`, `hdl.layouts` and `hdl.ub` (and `model.isa`).
"""
