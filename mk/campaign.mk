# The strength campaign: label -> label store -> train -> export -> evaluate -> gate -> record,
# in cycles until killed; `make campaign` again resumes. See training/glimpse_train/campaign.py.
#
#   make campaign                      runs under nice -n 10; log: training/runs/$(CAMPAIGN_RUN)/campaign.log
#   make campaign CAMPAIGN_ARGS='--label-minutes 5 --train-minutes 25 --workers 2'
#   RAY_ADDRESS=host:6379 make campaign   labels on a Ray cluster instead of this machine
# Outputs that are committed: data/labels/ (shards + MANIFEST.json), training/campaign/ (the resumable
# ONNX checkpoint, the curve CSV/PNG). Checkpoints with optimiser state stay in training/runs/ (ignored).

CAMPAIGN_RUN ?= campaign-l6d128
CAMPAIGN_ARGS ?=
CAMPAIGN_NICE ?= nice -n 10

.PHONY: campaign
campaign: $(VENV_STAMP)
	$(call need-path,$(ABS_SHARED)/data/positions,the position sources)
	@[ -f .cache/stockfish/build.json ] || $(CAMPAIGN_NICE) $(MAKE) --no-print-directory stockfish-native || \
	  echo "campaign: labelling with the package's Stockfish"
	cd training && RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO=0 PYTHONUNBUFFERED=1 $(CAMPAIGN_NICE) ../$(PY) -m glimpse_train.campaign \
	  --shared $(ABS_SHARED) --store ../data/labels --out-dir campaign --run $(CAMPAIGN_RUN) $(CAMPAIGN_ARGS)

# Stockfish 15.1 from the vendored source (training/stockfish/), compiled for this CPU around the package's network
# and installed in .cache/stockfish/ only if its bench counts the package's nodes: the same labels for less CPU.
# `make campaign` builds it when it is missing (about a minute); matches keep the package's binary.
.PHONY: stockfish-native
stockfish-native: $(VENV_STAMP)
	PYTHONPATH=training $(PY) -m glimpse_train.native_stockfish --out .cache/stockfish

# A net trained elsewhere (a GPU machine's snapshot, training/CAMPAIGN.md) becomes the campaign's start if it beats the
# gate: make campaign-adopt ADOPT_NET=x.onnx [ADOPT_ARGS='--adopt-hours 0.25 --adopt-passes N --adopt-force']. Stop the
# campaign first; exit status 2 when the gate refuses the net.
ADOPT_ARGS ?=
.PHONY: campaign-adopt
campaign-adopt: $(VENV_STAMP)
	$(if $(ADOPT_NET),,$(error give ADOPT_NET=<net.onnx>))
	cd training && PYTHONUNBUFFERED=1 ../$(PY) -m glimpse_train.campaign --shared $(ABS_SHARED) --store ../data/labels \
	  --out-dir campaign --run $(CAMPAIGN_RUN) --adopt $(abspath $(ADOPT_NET)) $(ADOPT_ARGS)

# Label format, store, dedup, two-tier merge, Ray retry of a lost worker, resume from ONNX, gate, curve.
.PHONY: test-campaign
test-campaign: $(VENV_STAMP) stockfish-native
	cd training && GLIMPSE_SHARED=$(ABS_TEST_SHARED) RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO=0 ../$(PY) -m pytest tests/test_campaign.py tests/test_campaign_config.py tests/test_labelling.py tests/test_canon.py tests/test_remote.py \
	  tests/test_native_stockfish.py tests/test_label_order.py

# Labelling on a real three-node Ray cluster on this machine, a worker node killed mid-phase: every position
# labelled once, the store consistent; and local labelling beside a running cluster starts its own Ray
# (training/tests/test_ray_cluster.py; about a minute).
.PHONY: test-ray-cluster
test-ray-cluster: $(VENV_STAMP)
	cd training && GLIMPSE_SHARED=$(ABS_TEST_SHARED) RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO=0 ../$(PY) -m pytest tests/test_ray_cluster.py

test-training: test-campaign test-ray-cluster

# Ship by SPRT: the campaign's best net (or CANDIDATE=file.onnx) against the current embedded
# default, both searchless at equal time, until the SPRT (elo0 0, elo1 10, alpha = beta = 0.05) decides.
# Only an accepted H1 lets the candidate replace the default (copy it to weights/ under its own name and
# record the result in weights/README.md). SPRT_MODE=mcts plays both sides with MCTS instead (for
# example an int8 twin against its float32 net at equal time).
CANDIDATE ?= training/runs/$(CAMPAIGN_RUN)/best.onnx
SPRT_TC ?= 5+0.05
SPRT_GAMES ?= 2000
SPRT_MODE ?= searchless
sprt-candidate: build $(VENV_STAMP)
	$(PY) tools/match.py --a glimpse --a-option WeightsFile=$(abspath $(CANDIDATE)) --a-option SearchMode=$(SPRT_MODE) \
	  --a-name candidate --b glimpse --b-option SearchMode=$(SPRT_MODE) --b-name default --tc '$(SPRT_TC)' --games $(SPRT_GAMES) --concurrency 2 --sprt 0 10 \
	  --book '$(BOOK)' --seed $(SEED) --pgn '$(OUT).pgn' --json '$(OUT).json'
.PHONY: sprt-candidate
