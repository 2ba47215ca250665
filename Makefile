# repdist: one-command setup, tests and runs. `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
# The torch build to install: whatever pip's indexes give for this version (a CPU wheel where an
# index carries one; PyPI's own Linux wheel is the CUDA build); choose the build, e.g.
#   make venv TORCH="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128"
# TORCH_VERSION is also what `make lock` resolves torch's own dependencies for, and what
# envs/torch.yaml pins (tests/test_lock.py keeps the three in step).
TORCH_VERSION ?= 2.13.0
TORCH ?= torch==$(TORCH_VERSION)
# Everything else `make venv` installs, exact versions with hashes; `make lock` regenerates it
# with uv (a dev-time tool, installed into .uv/ by `make lock` only).
LOCK := requirements.lock
UV_VERSION := 0.13.9
PIP_VERSION := 26.3
CORES ?= $(shell nproc)
BIN := $(VENV)/bin
# Snakemake through the interpreter: found wherever its packages are (no script beside it needed)
SNAKEMAKE := $(BIN)/python -m snakemake

PROFILE ?= profiles/workstation
# The package's own modules compiled to bytecode before a run or the tests (under a second when
# nothing changed). pip compiles an installed package; the editable install's modules are
# compiled by the first process that imports them, and never saved where PYTHONDONTWRITEBYTECODE
# is set: every job of a run, every test process, would compile them anew (~0.4 s of CPU each).
BYTECODE = $(BIN)/python -m compileall -q src

.PHONY: help venv lock test test-slow test-kernels test-gpu test-slurm test-slurm-faults quick run run-synthetic run-logit-distance authors authors-cifar bound-beyond-m2 report report-quick lint bench floors bench-gpu gpu-check gpu-bundle gpu-check-rehearsal gpu-run-rehearsal timings clean-quick

help:
	@echo "make venv    - create $(VENV): exactly $(LOCK), torch ($(TORCH)) and repdist (editable)"
	@echo "make lock    - regenerate $(LOCK) from pyproject.toml and envs/*.yaml (needs PyPI;"
	@echo "               LOCK_ARGS=--upgrade takes the newest versions allowed)"
	@echo "make test    - run the test suite (sets up the venv first)"
	@echo "make test-slow - the slow-marked tests (fuzzing by the thousand, whole-DAG runs); CI runs them"
	@echo "make test-kernels - the tests that compare numbers under other CPUs' float kernels (OpenBLAS,"
	@echo "               numpy and torch held to older instruction sets); CI runs them"
	@echo "make test-gpu - the GPU paths on a CUDA GPU (the quick DAG on CUDA, stacking, extraction, ...)"
	@echo "make test-slurm - the quick DAG through a real SLURM cluster on localhost vs a local run (root)"
	@echo "make test-slurm-faults - requeue, time limit, SIGTERM/SIGINT, slurmd stopped on that cluster (root)"
	@echo "make quick   - the whole DAG at toy scale into results/quick (offline, a few minutes)"
	@echo "make run     - the whole DAG at paper scale into results/ with a GPU; without one, what the"
	@echo "               CPU finishes, naming what it left (ALL=1: everything anyway; CORES=$(CORES))"
	@echo "make run-synthetic - everything that needs neither CIFAR-10 nor a download (config.synthetic.yaml)"
	@echo "             (CONFIG=overlay.yaml adds an overlay to run and run-synthetic)"
	@echo "make run-logit-distance - the authors' follow-up (spirals: teachers, students, measures,"
	@echo "               bounds, figures) as config.yaml designs it (CONFIG=config.synthetic.yaml:"
	@echo "               one teacher and its students, for 2 CPU cores)"
	@echo "make authors - download the authors' checkpoints (then run-synthetic includes them)"
	@echo "make authors-cifar - the authors' CIFAR-10 models alone, drawn (no GPU, no training)"
	@echo "make bound-beyond-m2 - the bound at M = 3, 5 (beyond the paper; part of make run)"
	@echo "make report  - results/report.html of the last paper-scale run (run or run-synthetic)"
	@echo "make report-quick - results/quick/report.html of the toy-scale run"
	@echo "make lint    - snakemake --lint"
	@echo "make bench   - measures benchmark (benchmarks/measures.py)"
	@echo "make floors  - each benchmark beside its floor: the machine's peaks, work, fraction"
	@echo "make bench-gpu - paper-scale GPU timings into results/benchmarks/gpu_paper.json (needs a GPU)"
	@echo "make gpu-check - OUT=DIR: GPU tests, the speed candidates, the measures at GPT-2's size and"
	@echo "               the CIFAR step's profile in 8 min;"
	@echo "               the record into DIR and benchmarks/records/ (docs/gpu.md; toy on a CPU:"
	@echo "               REPDIST_GPU_TESTS_DEVICE=cpu)"
	@echo "make gpu-bundle - .gpu-bundle/: what an offline GPU machine needs to run make gpu-check"
	@echo "               and make run-synthetic (bash .gpu-bundle/run.sh check|run-synthetic)"
	@echo "make gpu-check-rehearsal - that machine's run of the check, rehearsed on this CPU"
	@echo "               (no git, no network, a Python without Snakemake; CI runs it)"
	@echo "make gpu-run-rehearsal - that machine's run.sh run-synthetic, rehearsed the same way at"
	@echo "               the quick size: the first call cut at 20 s, a second finishing the run"
	@echo "make timings - the README's timings in a fresh clone, one command at a time: a dated"
	@echo "               record in benchmarks/records/, the README's table rendered from it"
	@echo "               (TIMINGS_ARGS=\"--with run-synthetic,test-slurm,test-kernels\" adds those)"
	@echo "make clean-quick - delete results/quick (the toy-scale run)"

venv: $(VENV)/.installed

# The lock first (every pin hash-checked; it holds torch's own dependencies such as sympy and
# networkx, but not torch), with no dependencies (the lock is the whole resolution: a locked
# package that needs torch, the test dependency calibrated-similarity, must not pull it here),
# then torch from $(TORCH), unless an importable torch is already there (a GPU build installed
# by hand is kept), then repdist itself with no dependencies and no build isolation (its build
# backend, setuptools, is in the lock). pip never resolves a range here, so it never pulls the
# multi-GB CUDA build of torch for the package's `torch>=2.3` range. `pip check` then confirms
# that the lock and torch (whichever build) satisfy what each package requires.
$(VENV)/.installed: pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -c 'import sys; sys.version_info[:2] == (3, 11) or print("warning: $(LOCK) is resolved for Python 3.11, $(BIN)/python is", sys.version.split()[0])'
	$(BIN)/python -m pip install --quiet pip==$(PIP_VERSION)
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r $(LOCK)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install --quiet $(TORCH)
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/python -m pip check
	touch $@

lock:
	test -x .uv/bin/python || $(PYTHON) -m venv .uv
	.uv/bin/python -m pip install --quiet uv==$(UV_VERSION)
	PYTHONPATH=src $(PYTHON) -m repdist_dev.lock --uv .uv/bin/uv --torch-version $(TORCH_VERSION) $(LOCK_ARGS)

# The tests on every core (pytest-xdist), the quick DAG beside them (tests/conftest.py)
test: venv
	@$(BYTECODE)
	$(BIN)/python -m pytest -q -n $(CORES)

test-slow: venv
	@$(BYTECODE)
	$(BIN)/python -m pytest -q -m slow -n $(CORES)

# The numerics-marked tests once per configuration of the float kernels (repdist_dev.kernels)
test-kernels: venv
	@$(BYTECODE)
	$(BIN)/python -m repdist_dev.kernels $(KERNELS_ARGS) -- -n $(CORES)

# Without a GPU the gpu tests would only skip: refuse instead of reporting a pass.
test-gpu: venv
	@$(BIN)/python -c "import torch, sys; sys.exit(not torch.cuda.is_available())" || { \
	    echo "make test-gpu: torch sees no CUDA GPU here"; exit 1; }
	$(BIN)/python -m pytest -q -m gpu

# SLURM_ARGS: --faults (then the faults on the same cluster), --keep-runs DIR (see .ci/run)
test-slurm: venv
	$(BIN)/python tests/slurm/slurm_check.py $(SLURM_ARGS)

test-slurm-faults: venv
	$(BIN)/python tests/slurm/slurm_faults.py

quick: venv
	@$(BYTECODE)
	$(SNAKEMAKE) --profile $(PROFILE) --cores $(CORES) --configfile config.quick.yaml

# Each run target records its config overlays, so that `make report` describes that run.
RUN_RECORD := results/.run-configfiles
record = mkdir -p results && echo "$(1)" > $(RUN_RECORD)

# Everything where a GPU is at hand (or ALL=1); else what this machine's CPUs finish, saying what
# it left for a GPU (src/repdist/pipeline/fit_run.py).
run: venv
	@$(BYTECODE)
	$(BIN)/python -m repdist.pipeline.fit_run --profile $(PROFILE) --cores $(CORES) \
	    $(if $(CONFIG),--config $(CONFIG)) $(if $(filter 1,$(ALL)),--all)

run-synthetic: venv
	@$(BYTECODE)
	@$(call record,--configfile config.synthetic.yaml $(CONFIG))
	$(SNAKEMAKE) --profile $(PROFILE) --cores $(CORES) --configfile config.synthetic.yaml $(CONFIG)

run-logit-distance: venv
	@$(BYTECODE)
	$(SNAKEMAKE) logit_distance_all --profile $(PROFILE) --cores $(CORES) $(if $(CONFIG),--configfile $(CONFIG))

authors: venv
	$(SNAKEMAKE) --profile $(PROFILE) --cores $(CORES) authors_download

authors-cifar: venv
	$(SNAKEMAKE) authors_cifar_theirs --profile $(PROFILE) --cores $(CORES) $(if $(CONFIG),--configfile $(CONFIG))

bound-beyond-m2: venv
	$(SNAKEMAKE) bound_beyond_m2 --profile $(PROFILE) --cores $(CORES) $(if $(CONFIG),--configfile $(CONFIG))

report: venv
	$(SNAKEMAKE) --cores 1 $$(cat $(RUN_RECORD) 2>/dev/null) --report results/report.html

report-quick: venv
	@$(BYTECODE)
	$(SNAKEMAKE) --cores 1 --configfile config.quick.yaml --report results/quick/report.html

lint: venv
	$(SNAKEMAKE) --lint

bench: venv
	$(BIN)/python benchmarks/measures.py

# FLOORS_ARGS: --original DIR (the authors' code, timed on the bar workload), --json FILE
floors: venv
	$(BIN)/python benchmarks/floors.py $(FLOORS_ARGS)

bench-gpu: venv
	$(BIN)/python benchmarks/gpu_paper.py --json results/benchmarks/gpu_paper.json $(BENCH_ARGS)

# One command, one record: repdist_gpucheck (CHECK_ARGS: e.g. --parts compile, --only, --budget).
OUT ?= results/gpu-check
gpu-check: venv
	$(BIN)/python -m repdist_gpucheck --out $(OUT) $(CHECK_ARGS)

gpu-bundle: venv
	$(BIN)/python -m repdist_dev.gpu_bundle --out .gpu-bundle $(BUNDLE_ARGS)

# make gpu-check as an offline GPU machine runs it, on this CPU (repdist_dev.gpu_rehearsal; CI)
gpu-check-rehearsal: venv
	$(BIN)/python -m repdist_dev.gpu_rehearsal $(REHEARSAL_ARGS)

# run.sh run-synthetic the same way, at the quick size: its first call cut by its time limit, the
# second resuming and finishing the run, the record checked (repdist_dev.gpu_rehearsal; CI)
gpu-run-rehearsal: venv
	$(BIN)/python -m repdist_dev.gpu_rehearsal --what run-synthetic --cut 20 $(REHEARSAL_ARGS)

# The commands the README times, in a fresh clone of HEAD (its own .venv), one at a time; the
# record into benchmarks/records/ and README.md's and docs/speed.md's tables from it
timings: venv
	$(BIN)/python -m repdist_dev.timings $(TIMINGS_ARGS)

clean-quick:
	rm -rf results/quick
