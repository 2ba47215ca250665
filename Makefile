# repdist: one-command setup, tests and runs. `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
# The torch build to install. The default is the CPU wheel; GPU users pass their own, e.g.
#   make venv TORCH="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128"
TORCH ?= torch==2.13.0
CORES ?= $(shell nproc)
BIN := $(VENV)/bin
SNAKEMAKE := $(BIN)/snakemake

PROFILE ?= profiles/workstation

.PHONY: help venv test test-slurm quick run run-synthetic report report-quick lint bench clean-quick

help:
	@echo "make venv    - create $(VENV) with repdist, torch ($(TORCH)) and the workflow/test tools"
	@echo "make test    - run the test suite (sets up the venv first)"
	@echo "make test-slurm - the quick DAG through a real SLURM cluster on localhost vs a local run (root)"
	@echo "make quick   - the whole DAG at toy scale into results/quick (offline, a few minutes)"
	@echo "make run     - the whole DAG at paper scale into results/ (CORES=$(CORES))"
	@echo "make run-synthetic - only the experiments that need no CIFAR-10 (tables, synthetic)"
	@echo "make report  - results/report.html (snakemake --report) of the paper-scale run"
	@echo "make report-quick - results/quick/report.html of the toy-scale run"
	@echo "make lint    - snakemake --lint"
	@echo "make bench   - measures benchmark (benchmarks/measures.py)"

venv: $(VENV)/.installed

# torch first, from the pinned spec, so the package's `torch>=2.3` range is already met and
# pip never pulls the multi-GB CUDA build on a CPU machine.
$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install --quiet $(TORCH)
	$(BIN)/python -m pip install --quiet -e '.[workflow,test]'
	touch $@

test: venv
	$(BIN)/python -m pytest -q

test-slurm: venv
	$(BIN)/python tests/slurm/slurm_check.py

quick: venv
	$(SNAKEMAKE) --profile $(PROFILE) --cores $(CORES) --configfile config.quick.yaml

run: venv
	$(SNAKEMAKE) --profile $(PROFILE) --cores $(CORES)

run-synthetic: venv
	$(SNAKEMAKE) --profile $(PROFILE) --cores $(CORES) constructed_all synthetic_all

report: venv
	$(SNAKEMAKE) --cores 1 --report results/report.html

report-quick: venv
	$(SNAKEMAKE) --cores 1 --configfile config.quick.yaml --report results/quick/report.html

lint: venv
	$(SNAKEMAKE) --lint

bench: venv
	$(BIN)/python benchmarks/measures.py

clean-quick:
	rm -rf results/quick
