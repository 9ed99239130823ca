# The strength campaign (issue 13): label -> label store -> train -> export -> evaluate -> gate -> record,
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
	cd training && RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO=0 PYTHONUNBUFFERED=1 $(CAMPAIGN_NICE) ../$(PY) -m glimpse_train.campaign \
	  --shared $(ABS_SHARED) --store ../data/labels --out-dir campaign --run $(CAMPAIGN_RUN) $(CAMPAIGN_ARGS)

# Label format, store, dedup, two-tier merge, Ray retry of a lost worker, resume from ONNX, gate, curve.
.PHONY: test-campaign
test-campaign: $(VENV_STAMP)
	cd training && GLIMPSE_SHARED=$(ABS_SHARED) RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO=0 ../$(PY) -m pytest -q tests/test_campaign.py tests/test_canon.py

test-training: test-campaign
