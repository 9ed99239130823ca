# Searchless-chess checkpoint converter (owner: convert). Uses the shared venv from the main Makefile.
#
#   make convert CHECKPOINT=checkpoints/270M OUT=weights/270M.onnx [PARAMS=params|params_ema]
#                [PRECISION=fp32|fp16] [KIND=av|sv|bc] [HEADS=8] [STEP=6400000] [CONVERT_CONFIG=file.json]
#   make test-convert      golden faithfulness tests (needs ../shared/golden's checkpoints and pip-installs
#                          tensorstore + orbax, so it is not part of `make test`; .ci/run runs it when
#                          ../shared is there)
#   make random-checkpoints  9M/136M/270M random-weight checkpoints + ONNX in training/runs/random/
#   make convert-bench     speed of those nets (glimpse bench; a few moves for 136M/270M)
# See training/CONVERT.md.
SHARED ?= ../shared
PARAMS ?= params
PRECISION ?= fp32
KIND ?=
HEADS ?=
STEP ?=
CONVERT_CONFIG ?=
RANDOM_DIR ?= training/runs/random
RANDOM_SIZES ?= 9M 136M 270M
CONVERT_NICE ?= nice -n 10

CONVERT_STAMP := $(VENV)/.convert-installed
$(CONVERT_STAMP): $(VENV_STAMP) training/requirements-convert.txt
	$(VENV)/bin/pip install --quiet -r training/requirements-convert.txt
	touch $@

.PHONY: convert-setup convert test-convert random-checkpoints convert-bench

## tensorstore + orbax-checkpoint into .venv
convert-setup: $(CONVERT_STAMP)

## Orbax checkpoint (model, step or params dir) -> ONNX with the engine contract
convert: $(CONVERT_STAMP)
	@if [ -z "$(CHECKPOINT)" ] || [ "$(origin OUT)" != "command line" ]; then \
	  echo "usage: make convert CHECKPOINT=<model|step|params dir> OUT=<file.onnx> [PARAMS=params|params_ema] [PRECISION=fp32|fp16] [KIND=av|sv|bc] [HEADS=n] [STEP=n]"; exit 2; fi
	cd training && ../$(PY) -m glimpse_train.convert '$(abspath $(CHECKPOINT))' '$(abspath $(OUT))' \
	  --params $(PARAMS) --precision $(PRECISION) $(if $(KIND),--kind $(KIND)) $(if $(HEADS),--heads $(HEADS)) \
	  $(if $(STEP),--step $(STEP)) $(if $(CONVERT_CONFIG),--config '$(abspath $(CONVERT_CONFIG))')

## Golden tiny AV/SV/BC checkpoints: bytes, log-probs (1e-4, BC 2e-4), params_ema, fp16, refusals, engine moves
test-convert: $(CONVERT_STAMP) build
	$(call need-path,$(abspath $(SHARED))/golden/tiny_av_checkpoint,the golden Orbax checkpoints)
	cd training && ../$(PY) -m glimpse_train.test_convert --shared '$(abspath $(SHARED))' \
	  --out ../target/test-models/convert --repo .. --require-engine

## Random-weight checkpoints of the released sizes in the released layout, converted (big files, ignored folder)
random-checkpoints: $(CONVERT_STAMP)
	for s in $(RANDOM_SIZES); do \
	  (cd training && $(CONVERT_NICE) ../$(PY) -m glimpse_train.random_checkpoint --size $$s --out '$(abspath $(RANDOM_DIR))/ckpt') && \
	  (cd training && $(CONVERT_NICE) ../$(PY) -m glimpse_train.convert '$(abspath $(RANDOM_DIR))/ckpt/'$$s '$(abspath $(RANDOM_DIR))/'$$s.onnx) || exit 1; \
	done
	cd training && $(CONVERT_NICE) ../$(PY) -m glimpse_train.convert '$(abspath $(RANDOM_DIR))/ckpt/9M' \
	  '$(abspath $(RANDOM_DIR))/9M_plain.onnx' --no-last-layer-opt
	cd training && $(CONVERT_NICE) ../$(PY) -m glimpse_train.convert '$(abspath $(RANDOM_DIR))/ckpt/9M' \
	  '$(abspath $(RANDOM_DIR))/9M_fp16.onnx' --precision fp16

## Speed of the random-weight nets: glimpse bench (9M), UCI self-play moves (all), ORT last-layer on/off (9M)
convert-bench: build $(CONVERT_STAMP)
	set -o pipefail; mm=$$($(CONVERT_NICE) $(BIN) bench --weights $(RANDOM_DIR)/9M.onnx --reps 1 | tee /dev/stderr \
	  | awk '/^MatMul GFLOP/{print $$4}'); \
	cd training && $(CONVERT_NICE) ../$(PY) -m glimpse_train.engine_bench --engine ../$(BIN) --matmul $${mm:-0} \
	  '$(abspath $(RANDOM_DIR))/9M.onnx:20' '$(abspath $(RANDOM_DIR))/136M.onnx:6' '$(abspath $(RANDOM_DIR))/270M.onnx:4'
	cd training && $(CONVERT_NICE) ../$(PY) -m glimpse_train.ort_bench --reps 60 --matmul 256 \
	  '$(abspath $(RANDOM_DIR))/9M.onnx' '$(abspath $(RANDOM_DIR))/9M_plain.onnx'
