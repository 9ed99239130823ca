# Measuring tools and the UCI conformance suite (tools/README.md, uci-tests/README.md).
#
#   make match     ENGINE_A_OPTS='WeightsFile=weights/x.onnx' OPPONENT='stockfish:Skill Level=0' \
#                  TC=10+0.1 GAMES=20 CONCURRENCY=1 BOOK=../shared/data/openings/noob_3moves.epd OUT=reports/match
#   make gauntlet  LEVELS='0 3 6' (Skill Level) or ELOS='1350 1500 1700' (UCI_Elo), GAMES per level
#   make puzzles   PUZZLES=../shared/data/puzzles/lichess_puzzles.csv LIMIT=0 NODES=1 OUT=reports/puzzles
#   make suites    SUITES='wac_arasan_wacnew bk_senjo STS1-STS15_LAN_v3' LIMIT=0 MOVETIME=0.1
#   make test-uci  conformance suite against target/release/glimpse, full games vs Stockfish, tool tests
#
# Stockfish 15.1 comes from apt (`apt-get install -y stockfish`, /usr/games/stockfish).

MEASURE_PY := $(abspath $(PY))
STOCKFISH ?= $(shell command -v stockfish 2>/dev/null || echo /usr/games/stockfish)

ENGINE_A ?= glimpse
ENGINE_A_OPTS ?=
OPPONENT ?= stockfish:Skill Level=0
TC ?= 10+0.1
GAMES ?= 20
CONCURRENCY ?= 1
BOOK ?= ../shared/data/openings/noob_3moves.epd
SEED ?= 1
OUT ?= reports/$@-$(shell date +%Y%m%d-%H%M%S)
MATCH_ARGS ?=

.PHONY: test-uci test-tools match gauntlet puzzles suites

match: build $(VENV_STAMP)
	$(PY) tools/match.py --a '$(ENGINE_A)' --a-options '$(ENGINE_A_OPTS)' --b '$(OPPONENT)' \
	  --tc '$(TC)' --games $(GAMES) --concurrency $(CONCURRENCY) --book '$(BOOK)' --seed $(SEED) \
	  --pgn '$(OUT).pgn' --json '$(OUT).json' $(MATCH_ARGS)
