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
SIM     ?= verilator
WAVES   ?= 0
export SIM WAVES

.PHONY: all venv test sim bench-model verilog lint bench fpga clean

all: test

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -e '.[fpga,bench]'
	touch $@

venv: $(STAMP)

test: $(STAMP)
	$(VPY) -m pytest -q

sim: $(STAMP)
	$(VPY) -m model.seeds

bench-model: $(STAMP)
	$(VPY) -m model.bench

clean:
	rm -rf $(BUILD) .pytest_cache
