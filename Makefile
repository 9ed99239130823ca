# Glimpse — see README.md. `make` builds the engine and fetches the ONNX Runtime library.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
ORT_VERSION := 1.31.1
ORT_LIB := lib/libonnxruntime.so.$(ORT_VERSION)
BIN := target/release/glimpse

.PHONY: all build ort run test bench clean

all: build

ort: $(ORT_LIB) target/release/libonnxruntime.so.$(ORT_VERSION)

$(ORT_LIB):
	mkdir -p lib .cache/wheels
	$(PYTHON) -m pip download --quiet --no-deps --only-binary=:all: \
	  --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
	  --python-version 3.11 -d .cache/wheels onnxruntime==$(ORT_VERSION)
	$(PYTHON) -c "import zipfile,glob,shutil; w=glob.glob('.cache/wheels/onnxruntime-$(ORT_VERSION)-*.whl')[0]; z=zipfile.ZipFile(w); n='onnxruntime/capi/libonnxruntime.so.$(ORT_VERSION)'; open('$(ORT_LIB)','wb').write(z.read(n))"

target/release/libonnxruntime.so.$(ORT_VERSION): $(ORT_LIB) $(BIN)
	cp $(ORT_LIB) $@

$(BIN): FORCE
	cargo build --release

build: $(BIN) ort

run: build
	$(BIN)

FORCE:

# One virtualenv serves training, measuring and the Python test tooling (`make train-setup`): the pinned
# requirements, and the measuring tools as the editable package `glimpse_tools` (tools/pyproject.toml).
# An existing .venv (or a link to one, as in a git worktree) is reused.
VENV_STAMP := $(VENV)/.installed
$(VENV_STAMP): training/requirements.txt tools/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r training/requirements.txt
	$(VENV)/bin/pip install --quiet -e tools
	touch $@

.PHONY: train-setup
train-setup: $(VENV_STAMP)

# Data: `make test` reads only what the repository holds: the slice of the shared data folder in
# tests/data/shared/ (golden vectors and tiny models, perft, a few puzzles, openings, labels; see its
# SOURCES.md), so a clone tests on its own. `make test TEST_SHARED=../shared` runs the same tests on the
# full folder. Targets that need the big data (label, train, match, puzzles, suites, test-convert, ...)
# read SHARED (default ../shared, the folder beside the repository) and say so when it is missing.
TEST_SHARED ?= tests/data/shared
ABS_TEST_SHARED = $(abspath $(TEST_SHARED))
SHARED ?= ../shared
# $(call need-path,PATH,WHAT): stop with a clear message when PATH (a file or folder) is missing.
need-path = @test -e '$(1)' || { echo "make $@: $(2) not found at $(1): it lives in the shared data folder (../shared beside the repository; SHARED=/path/to/shared, see README 'Data'), or pass another path" >&2; exit 2; }

# Each concern keeps its targets in its own file:
#   mk/engine.mk    test-rust, bench                      (Rust engine)
#   mk/training.mk  train-setup ($(VENV)), test-models, label, train, export, evaluate, test-training
#   mk/measure.mk   test-uci, match, gauntlet, puzzles, suites
#   mk/convert.mk   convert, test-convert (not part of `make test`: it needs ../shared/golden's checkpoints)
#   mk/docs.mk      test-docs (README options and make targets against the binary and the Makefiles)
include $(wildcard mk/*.mk)

# The whole suite (README: `make test`). It reads only the repository (TEST_SHARED); the Python suites
# run in a random order (pytest-randomly: each run's header prints `Using --randomly-seed=N`;
# `PYTEST_ADDOPTS=--randomly-seed=N make test` replays that order, `PYTEST_ADDOPTS='-p no:randomly'` keeps
# the file order).
test: build test-models test-rust test-training test-uci test-docs test-soak

# What a new user gets: a clone of the committed HEAD in a temporary folder with nothing beside it (no
# ../shared), then `make test` there. The folder is removed when the suite passes and kept (its path
# printed) when it fails.
.PHONY: test-fresh
test-fresh:
	@tmp=$$(mktemp -d) && echo "make test-fresh: cloning HEAD into $$tmp/glimpse (nothing beside it)" && \
	  git clone --quiet "$(CURDIR)" "$$tmp/glimpse" && \
	  if env -u MAKEFLAGS -u MAKELEVEL -u SHARED -u TEST_SHARED $(MAKE) -C "$$tmp/glimpse" test; then \
	    rm -rf "$$tmp"; echo "make test-fresh: passed"; \
	  else echo "make test-fresh: FAILED; the clone is kept in $$tmp/glimpse" >&2; exit 1; fi

clean:
	cargo clean
	rm -rf lib .cache
