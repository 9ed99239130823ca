# int8 twins: ONNX Runtime's dynamic quantisation of a float32 net
# (training/glimpse_train/quantize.py; the choice of settings and the measurements: weights/README.md).
#
#   make quantize                          the default's float32 source -> <stem>-int8-new.onnx beside it
#                                          (FORCE=1: -> <stem>-int8.onnx, overwriting the shipped twin)
#   make quantize NET=a.onnx [OUT=b.onnx]  another net (OUT defaults to a-int8.onnx beside it)
#   make quantize QUANTIZE_ARGS='--heldout'            also the held-out action accuracy of both
#   make bench-int8 [NET=a.onnx] [MCTS=400]            glimpse bench of NET and its twin, back to back
#   make profile [NET=a.onnx] [ROWS='1 32']            ORT operator profile of NET, MatMul at its shapes
#
# OUT is read only from the command line (mk/measure.mk gives OUT a default of its own).
# The float32 source of the default net: weights/DEFAULT names the embedded file, which may be an int8 twin.
DEFAULT_NET := weights/$(strip $(file < weights/DEFAULT))
# (NET itself is empty unless given: mk/measure.mk declares it for `make ladder`.)
QUANTIZE_NET = $(or $(NET),$(DEFAULT_NET:-int8.onnx=.onnx))
# Without NET the shipped twin is kept unless FORCE=1: the new twin goes to <stem>-int8-new.onnx.
QUANTIZE_OUT = $(if $(filter command line,$(origin OUT)),$(OUT),$(QUANTIZE_NET:.onnx=-int8$(if $(NET)$(FORCE),,-new).onnx))
QUANTIZE_ARGS ?=

.PHONY: quantize bench-int8 profile test-models-int8 test-quantize

ROWS ?= 1 32

quantize: $(VENV_STAMP)
	cd training && PYTHONUNBUFFERED=1 ../$(PY) -m glimpse_train.quantize --net $(abspath $(QUANTIZE_NET)) \
	  --out $(abspath $(QUANTIZE_OUT)) --shared $(ABS_SHARED) $(QUANTIZE_ARGS)

profile: $(VENV_STAMP)
	cd training && ../$(PY) -m glimpse_train.ort_profile $(abspath $(QUANTIZE_NET)) --rows $(ROWS)

bench-int8: build
	$(ORT_ENV) $(BIN) bench --weights $(QUANTIZE_NET) --compare $(if $(filter command line,$(origin OUT)),$(OUT),$(QUANTIZE_NET:.onnx=-int8.onnx)) $(if $(THREADS),--threads $(THREADS)) \
	  $(if $(MCTS),--mcts --nodes $(MCTS))

# The int8 twin of the tiny one-pass test model, for tests/int8_model.rs (after make test-models). Unsigned
# weights: the tiny net's random weights make ORT's signed-weight kernel saturate on CPUs without VNNI
# (weights/README.md, "int8 twin"), which would test the CPU rather than the engine.
test-models-int8: test-models
	cd training && ../$(PY) -m glimpse_train.quantize --net ../target/test-models/tiny_mavp.onnx \
	  --out ../target/test-models/tiny_mavp_int8.onnx --weight-type quint8 --check 0

test-rust: test-models-int8

# quantize.py: metadata, refusals, the shipped twin's source hash (training/tests/test_quantize.py); ort_profile.py (make profile).
test-quantize: $(VENV_STAMP)
	cd training && GLIMPSE_SHARED=$(ABS_TEST_SHARED) ../$(PY) -m pytest tests/test_quantize.py tests/test_ort_profile.py

test-training: test-quantize
