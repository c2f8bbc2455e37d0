"""`python -m tb.bench` (`make bench`): copy efficiency of the RTL engine.

`suite` builds the programs, `metrics` does the arithmetic, `sim` is the cocotb test that
times them on the generated Verilog, `__main__` builds, runs and reports.
"""
