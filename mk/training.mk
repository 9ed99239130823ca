# Training pipeline targets (owner: training). Uses the shared venv from the main Makefile.
# Variables: SHARED (the big data folder, ../shared beside the repo), TEST_SHARED (what the tests read: tests/data/shared), CONFIG (model/training preset),
# RUN (run name under training/runs/), STEPS, PUZZLES, LABEL_POSITIONS, LABEL_DEPTH, ...
SHARED ?= ../shared
ABS_SHARED = $(abspath $(SHARED))
TRAIN_PY = cd training && PYTHONUNBUFFERED=1 ../$(PY)
CONFIG ?= smoke
RUN ?= $(CONFIG)
STEPS ?=
TRAIN_ARGS ?=
# PUZZLES is also `make puzzles`' CSV path (mk/measure.mk, read first): a path there means the default count.
EVAL_PUZZLES = $(if $(filter %.csv,$(PUZZLES)),1000,$(or $(PUZZLES),1000))
LABEL_POSITIONS ?= 200
LABEL_DEPTH ?= 8
LABEL_NODES ?=
LABEL_WORKERS ?= 2
LABEL_OUT ?= training/data/labels/sf15-d$(LABEL_DEPTH)
EXPORT_OUT ?= training/runs/$(RUN)/model.onnx
NICE ?= nice -n 5

.PHONY: test-models label train export evaluate test-training ship-weights torch-setup

## Test models for the engine, one per kind (glimpse_train/test_models.py): golden tiny reference checkpoints ->
## target/test-models/tiny_{av,sv,bc}.onnx (verified against golden outputs), and tiny_mav.onnx + tiny_mav_reference.json
test-models: $(VENV_STAMP)
	$(TRAIN_PY) -m glimpse_train.test_models --shared $(ABS_TEST_SHARED) --out ../target/test-models

## Stockfish MultiPV labelling of positions into training/data/labels/ (resumable)
label: $(VENV_STAMP)
	$(call need-path,$(ABS_SHARED)/data/positions,the position sources)
	$(TRAIN_PY) -m glimpse_train.label --shared $(ABS_SHARED) --out ../$(LABEL_OUT) \
	  --positions $(LABEL_POSITIONS) --depth $(LABEL_DEPTH) $(if $(LABEL_NODES),--nodes $(LABEL_NODES)) \
	  --workers $(LABEL_WORKERS)

## Train (resumes automatically from training/runs/$(RUN)/)
train: $(VENV_STAMP)
	$(call need-path,$(ABS_SHARED)/data/labels,the labelled positions)
	$(TRAIN_PY) -m glimpse_train.train --shared $(ABS_SHARED) --config $(CONFIG) --run $(RUN) \
	  $(if $(STEPS),--steps $(STEPS)) $(TRAIN_ARGS)

## PyTorch for the CPU train step (training/glimpse_train/torch_step.py: bfloat16 on AMX or AVX-512 BF16), about 5 GB with the
## CUDA libraries of PyPI's one Linux build: `make train TRAIN_ARGS='--backend torch'`, the campaign's
## --train-backend. CI installs it; without it the step's tests (tests/test_torch_step.py) are skipped.
TORCH_STAMP := $(VENV)/.torch-installed
torch-setup: $(TORCH_STAMP)
$(TORCH_STAMP): $(VENV_STAMP) training/requirements-torch.txt
	$(VENV)/bin/pip install --quiet -r training/requirements-torch.txt
	touch $@

## EMA weights of training/runs/$(RUN) -> ONNX (verified against JAX on held-out rows)
export: $(VENV_STAMP)
	$(call need-path,$(ABS_SHARED)/data/labels,the labelled positions (held-out check))
	$(TRAIN_PY) -m glimpse_train.export --shared $(ABS_SHARED) --run $(RUN) --out ../$(EXPORT_OUT)

## Metrics of the exported model through onnxruntime -> training/runs/$(RUN)/eval/
evaluate: $(VENV_STAMP)
	$(call need-path,$(ABS_SHARED)/data/puzzles/lichess_puzzles.csv,the puzzles)
	$(TRAIN_PY) -m glimpse_train.evaluate --shared $(ABS_SHARED) --run $(RUN) --model ../$(EXPORT_OUT) \
	  --puzzles $(EVAL_PUZZLES)

## Fast checks of the Python pipeline under pytest (training/tests/): tokenizer, actions, labels, the kind registry,
## per kind numpy vs JAX and a smoke train + resume + export + evaluate. Other files add theirs as prerequisites
## (mk/campaign.mk: test-campaign); `make test-training PYTEST_ARGS='-k mav -x'` passes flags on.
TRAINING_TESTS ?= tests/test_chessdata.py tests/test_kinds.py tests/test_action_value.py tests/test_multi_action_value.py tests/test_skeleton.py \
  tests/test_grow.py tests/test_smolgen.py tests/test_fit_gap.py tests/test_successor.py tests/test_heldout.py \
  tests/test_heldout_pair.py tests/test_torch_step.py
PYTEST_ARGS ?=
test-training: $(VENV_STAMP)
	cd training && GLIMPSE_SHARED=$(ABS_TEST_SHARED) ../$(PY) -m pytest $(TRAINING_TESTS) $(PYTEST_ARGS)

## Import contracts of the Python side (.importlinter at the repository root): glimpse_tools above glimpse_train;
## inside glimpse_train entry points > campaign phases > measures > kinds > core > chessdata; no import cycles.
.PHONY: test-imports
test-imports: $(VENV_STAMP)
	PYTHONPATH=training $(VENV)/bin/lint-imports --config .importlinter

test-training: test-imports

## Held-out metrics of one net -> tools/results/heldout/<file>.json (the model card's tables: make docs).
## The campaign gate's measure: action accuracy, Kendall τ and loss on the fixed held-out split of
## ../shared/data/labels, policy-head and blend accuracy, HELDOUT_PUZZLES Lichess puzzles. NET defaults to
## the shipped net (weights/DEFAULT); about 10 minutes on 2 cores.
HELDOUT_NET = $(or $(NET),weights/$(shell cat weights/DEFAULT))
HELDOUT_PUZZLES ?= 300
.PHONY: heldout
heldout: $(VENV_STAMP)
	$(call need-path,$(ABS_SHARED)/data/labels,the labelled positions (held-out split))
	cd training && GLIMPSE_COMMAND='make heldout$(if $(NET), NET=$(NET))' PYTHONUNBUFFERED=1 ../$(PY) -m glimpse_train.heldout --net '$(abspath $(HELDOUT_NET))' --shared $(ABS_SHARED) \
	  --puzzles $(HELDOUT_PUZZLES) --json '$(abspath tools/results/heldout)/$(notdir $(HELDOUT_NET:.onnx=)).json'

## Two nets on the same held-out positions -> tools/results/heldout/pair-<NET>-vs-<BASE>.json: for each gate measure
## both values, the paired difference NET - BASE with its 95 % interval, McNemar's exact p for the accuracies
## (training/glimpse_train/heldout_pair.py). BASE defaults to the shipped net; a few minutes a float net.
PAIR_BASE = $(or $(BASE),weights/$(shell cat weights/DEFAULT))
.PHONY: heldout-pair
heldout-pair: $(VENV_STAMP)
	$(call need-path,$(ABS_SHARED)/data/labels,the labelled positions (held-out split))
	$(if $(NET),,$(error heldout-pair needs NET=candidate.onnx))
	cd training && GLIMPSE_COMMAND='make heldout-pair NET=$(NET)$(if $(BASE), BASE=$(BASE))' PYTHONUNBUFFERED=1 ../$(PY) -m glimpse_train.heldout_pair \
	  --a '$(abspath $(NET))' --b '$(abspath $(PAIR_BASE))' --shared $(ABS_SHARED) \
	  --json '$(abspath tools/results/heldout)/pair-$(notdir $(NET:.onnx=))-vs-$(notdir $(PAIR_BASE:.onnx=)).json'
