# One-pass multi-action-value model (issue 5): test fixture and checks, hooked into the shared targets.
# Training, export and evaluation use the ordinary targets: `make train CONFIG=mav-small`,
# `make export RUN=mav-small`, `make evaluate RUN=mav-small` (train.py/export.py dispatch `mav-*`
# presets and one-pass runs to glimpse_train.onepass_*; evaluate.py picks the policy by the ONNX kind).

.PHONY: test-models-mav test-training-mav

# `make test-models` also writes target/test-models/tiny_mav.onnx + tiny_mav_reference.json (JAX outputs).
test-models: test-models-mav
test-models-mav: $(VENV_STAMP)
	$(TRAIN_PY) -m glimpse_train.onepass_test_models --out ../target/test-models

# `make test-training` also runs the one-pass checks (tables, forward, smoke train + resume + export + eval).
test-training: test-training-mav
test-training-mav: $(VENV_STAMP)
	$(TRAIN_PY) -m glimpse_train.onepass_selftest --shared $(ABS_SHARED)
