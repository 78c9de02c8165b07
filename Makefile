# apace — set-up, run and test. Every target creates or refreshes the virtual environment
# first, so each works on a fresh machine.
#
# The environment lives outside the checkout, keyed on a hash of pyproject.toml and this
# Makefile's install recipe, so a fresh clone (CI) reuses a still-valid one instead of
# recompiling llama-cpp-python (~5-6 min on 2 cores). `.venv` links to it.

PYTHON ?= python3
CACHE_DIR ?= $(if $(XDG_CACHE_HOME),$(XDG_CACHE_HOME),$(HOME)/.cache)/apace
# The CPU's flags are part of the key: llama.cpp is compiled for the CPU it is built on.
# Only pyproject's packaging part counts: editing [tool.*] settings must not rebuild.
SPEC_HASH := $(shell (sed '/^\[tool\./,$$d' pyproject.toml; cat .ci/venv-recipe .ci/llama-flags; $(PYTHON) --version; grep -m1 '^flags' /proc/cpuinfo) | sha256sum | cut -c1-16)
VENV_DIR := $(CACHE_DIR)/venv-$(SPEC_HASH)
VENV := .venv
# The CUDA environment (`make gpu`, docs/gpu.md): keyed like the CPU one, plus its own recipe
# (the CUDA package pins) and the GPU architectures compiled for.
APACE_CUDA_ARCHS ?= 80;86;89;90
export APACE_CUDA_ARCHS
GPU_HASH := $(shell (echo $(SPEC_HASH); cat .ci/gpu-recipe; echo '$(APACE_CUDA_ARCHS)') | sha256sum | cut -c1-16)
GPU_VENV_DIR := $(CACHE_DIR)/gpu-venv-$(GPU_HASH)
GPU_VENV := .venv-gpu
# APACE_DEVICE=cuda: `make run` serves from the CUDA environment, the GPU tiers by default;
# auto (the default): the CPU environment, on a GPU where its build allows (it says why not).
APACE_DEVICE ?= auto
ENV_TARGET := $(if $(filter cuda,$(APACE_DEVICE)),gpu,venv)
BIN := $(if $(filter cuda,$(APACE_DEVICE)),$(GPU_VENV),$(VENV))/bin
APACE_ARGS ?=

# One line, as `make -n run` prints it: tools read the served flags from there.
SERVE_FLAGS = --device $(APACE_DEVICE) --llm $(APACE_LLM) --asr $(APACE_ASR) --noisy-asr $(APACE_NOISY_ASR)

.PHONY: gpu gpu-check clean-gpu run serve test test-fast lint venv models bench bench-batching bench-cluster echo-probe soak clean-venv

## make run — set up (first time: ~6 min, plus pulling the default LLM tier and the
## noisy-room ear once: 491 + 148 MB) and start the voice assistant. The defaults are the best-scoring tiers that keep client TTFA
## p50 <= 800 ms on a 2-core box (docs/quality.md); APACE_LLM=smollm2-135m serves the
## embedded model with nothing to download, APACE_LLM=qwen2.5-coder-1.5b answers best.
## APACE_NOISY_ASR is the noisy-room ear (docs/rooms.md; off: one ear). Once
## pulled, plain `apace serve` serves these defaults too (models/catalog.py, PREFERRED).
ifneq ($(APACE_DEVICE),cuda)
APACE_LLM ?= qwen2.5-coder-0.5b
APACE_ASR ?= whisper-tiny.en
else
# The GPU tiers (models.catalog.PREFERRED_GPU; docs/gpu.md).
APACE_LLM ?= qwen2.5-coder-1.5b
APACE_ASR ?= whisper-large-v3-turbo
endif
APACE_NOISY_ASR ?= whisper-base
run: $(ENV_TARGET)
	$(BIN)/apace models pull $(APACE_LLM)
	$(BIN)/apace models pull $(APACE_ASR)
	$(if $(filter-out off,$(APACE_NOISY_ASR)),$(BIN)/apace models pull $(APACE_NOISY_ASR))
	$(BIN)/apace serve $(SERVE_FLAGS) $(APACE_ARGS)

serve: run

## make test — set up and run the whole test suite (unit, integration, browser), with the
## default LLM tier pulled (491 MB, once) so its integration tests run, not skip.
test: venv
	bash .ci/install-system-deps
	$(BIN)/apace models pull qwen2.5-coder-0.5b
	$(BIN)/python -m pytest -ra $(PYTEST_ARGS)

test-fast: venv
	$(BIN)/python -m pytest -ra -m "not integration and not browser" $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check app pipeline models tests
	$(BIN)/mypy app pipeline models

models: venv
	$(BIN)/apace models

bench: venv
	$(BIN)/apace bench $(APACE_ARGS)

## make bench-batching — what batching buys the shared LLM on this box (tokens/s for 1, 2
## and 4 replies at once; LLM=qwen2.5-coder-0.5b to choose the model) and Whisper (2 and 3
## utterances due together, one batch against one at a time; ASR=whisper-base to choose).
bench-batching: venv
	$(BIN)/python -m app.bench.batching $(LLM)
	$(BIN)/python -m app.bench.asr_batching $(ASR)

## make echo-probe — the echo guard offline: how soon a user talking over a session's first
## reply is heard (its echo 10 dB down, plain or reverberant, with and without background
## talk), and whether the echo alone ever is; and a client that cancels its own echo, talked
## over in the first second, saying so or not; and how much of a listener's "mm-hm" over a
## reply is confirmed, against both barge-in limits (~2 min; app/bench/echo_probe.py).
echo-probe: venv
	$(BIN)/python -m app.bench.echo_probe

## make bench-cluster — what a cluster's ingress adds to connection set-up (a one-machine
## Ray cluster against a single box; docs/cluster.md).
bench-cluster: venv
	$(BIN)/python -m app.bench.cluster

## make soak — 10 minutes of calls, abandoned and malformed offers against a server (scripted
## models; SOAK_ARGS=--real for the real ones): RSS slope and fd delta, fails on a leak.
soak: venv
	$(BIN)/python -m tests.integration.soak --minutes 10 $(SOAK_ARGS)

venv: $(VENV_DIR)/.complete
	@ln -sfn "$(VENV_DIR)" $(VENV)
	@# The editable re-install is quiet: setuptools warns at every one that an editable
	@# install has a top-level web/ folder (the page, app.web by design). Errors still show.
	@PYTHONWARNINGS="ignore::UserWarning" $(VENV_DIR)/bin/python -m pip install -q --no-deps --no-build-isolation -e . >/dev/null

$(VENV_DIR)/.complete:
	bash .ci/venv-recipe "$(PYTHON)" "$(VENV_DIR)"

## make gpu — the CUDA environment (.venv-gpu): llama-cpp-python built with CUDA from the
## package index's CUDA 13 toolkit, no system CUDA, no GPU needed to build (first time: long,
## see docs/gpu.md; APACE_CUDA_ARCHS="90" builds for one architecture, faster).
## `APACE_DEVICE=cuda make run` serves from it.
gpu: $(GPU_VENV_DIR)/.gpu-complete
	@ln -sfn "$(GPU_VENV_DIR)" $(GPU_VENV)
	@$(GPU_VENV_DIR)/bin/python -m pip install -q --no-deps --no-build-isolation -e . >/dev/null

$(GPU_VENV_DIR)/.gpu-complete:
	nice -n 10 bash .ci/gpu-recipe "$(PYTHON)" "$(GPU_VENV_DIR)"

## make gpu-check — on a box with an NVIDIA GPU, unattended (< 10 min with a cached build):
## the CUDA environment, the GPU tiers pulled, the held-out quality bench and the latency bench,
## one table; non-zero exit if anything failed. DRY_RUN=1: the plan and every check that needs
## no GPU and no download (CI runs it: tests/unit/test_gpu_check.py).
ifeq ($(DRY_RUN),1)
gpu-check: venv
	$(VENV)/bin/python -m app.bench.gpu_check --dry-run $(if $(CI),,--resolve)
else
# Built for this box's GPU alone (a quarter of the 4-architecture build), unless
# APACE_CUDA_ARCHS is given.
THIS_GPU_ARCH = $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '. ')
CHECK_ARCHS = $(if $(filter command line environment,$(origin APACE_CUDA_ARCHS)),$(APACE_CUDA_ARCHS),$(or $(THIS_GPU_ARCH),$(APACE_CUDA_ARCHS)))
gpu-check:
	$(MAKE) gpu APACE_CUDA_ARCHS="$(CHECK_ARCHS)"
	$(GPU_VENV)/bin/python -m app.bench.gpu_check
endif

clean-venv:
	rm -rf "$(VENV_DIR)" $(VENV)

clean-gpu:
	rm -rf "$(GPU_VENV_DIR)" $(GPU_VENV)
