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
BIN := $(VENV)/bin
APACE_ARGS ?=

.PHONY: run serve test test-fast lint venv models bench bench-batching bench-cluster echo-probe soak clean-venv

## make run — set up (first time: ~6 min, plus pulling the default LLM tier and the
## noisy-room ear once: 491 + 148 MB) and start the voice assistant. The defaults are the best-scoring tiers that keep client TTFA
## p50 <= 800 ms on a 2-core box (docs/quality.md); APACE_LLM=smollm2-135m serves the
## embedded model with nothing to download, APACE_LLM=qwen2.5-coder-1.5b answers best.
## APACE_NOISY_ASR is the noisy-room ear (docs/rooms.md; off: one ear). Once
## pulled, plain `apace serve` serves these defaults too (models/catalog.py, PREFERRED).
APACE_LLM ?= qwen2.5-coder-0.5b
APACE_ASR ?= whisper-tiny.en
APACE_NOISY_ASR ?= whisper-base
run: venv
	$(BIN)/apace models pull $(APACE_LLM)
	$(BIN)/apace models pull $(APACE_ASR)
	$(if $(filter-out off,$(APACE_NOISY_ASR)),$(BIN)/apace models pull $(APACE_NOISY_ASR))
	$(BIN)/apace serve --llm $(APACE_LLM) --asr $(APACE_ASR) --noisy-asr $(APACE_NOISY_ASR) $(APACE_ARGS)

serve: run

## make test — set up and run the whole test suite (unit, integration, browser).
test: venv
	bash .ci/install-system-deps
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
	@$(VENV_DIR)/bin/python -m pip install -q --no-deps --no-build-isolation -e . >/dev/null

$(VENV_DIR)/.complete:
	bash .ci/venv-recipe "$(PYTHON)" "$(VENV_DIR)"

clean-venv:
	rm -rf "$(VENV_DIR)" $(VENV)
