# Measuring tools (the package glimpse_tools = tools/, installed into .venv by the venv stamp) and the
# UCI conformance suite (tools/README.md, uci-tests/README.md).
#
#   make match     ENGINE_A_OPTS='WeightsFile=weights/x.onnx' OPPONENT='stockfish:Skill Level=0' \
#                  TC=10+0.1 GAMES=20 CONCURRENCY=1 BOOK=../shared/data/openings/noob_3moves.epd OUT=reports/match
#   make gauntlet  LEVELS='0 3 6' (Skill Level) or ELOS='1350 1500 1700' (UCI_Elo), GAMES per level
#   make puzzles   PUZZLES=../shared/data/puzzles/lichess_puzzles.csv LIMIT=0 NODES=1 OUT=reports/puzzles
#   make suites    SUITES='wac_arasan_wacnew bk_senjo STS1-STS15_LAN_v3' LIMIT=0 MOVETIME=0.1
#   make endgames  ENGINE_A_OPTS=SearchMode=mcts POSITIONS=20 TC=10+0.1 (KQK/KRK vs full Stockfish)
#   make scaling   PLAYOUTS='25 100 400 1600' GAMES=20 (SearchMode=mcts at go nodes N vs searchless)
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
MEASURE_STAMP := $(shell date +%Y%m%d-%H%M%S)
OUT ?= reports/$@-$(MEASURE_STAMP)
MATCH_ARGS ?=

.PHONY: test-uci test-tools match gauntlet puzzles suites endgames scaling

match: build $(VENV_STAMP)
	$(if $(BOOK),$(call need-path,$(BOOK),the opening book))
	$(PY) -m glimpse_tools.match --a '$(ENGINE_A)' --a-options '$(ENGINE_A_OPTS)' --b '$(OPPONENT)' \
	  --tc '$(TC)' --games $(GAMES) --concurrency $(CONCURRENCY) --book '$(BOOK)' --seed $(SEED) \
	  --pgn '$(OUT).pgn' --json '$(OUT).json' $(MATCH_ARGS)

# Gauntlet: LEVELS (Stockfish Skill Level) and ELOS (UCI_LimitStrength+UCI_Elo) rungs, GAMES per rung.
LEVELS ?= 0 3 6
ELOS ?= 1350 1500
GAUNTLET_CONCURRENCY ?= $(shell nproc 2>/dev/null || echo 1)
GAUNTLET_ARGS ?=
gauntlet: build $(VENV_STAMP)
	$(if $(BOOK),$(call need-path,$(BOOK),the opening book))
	$(PY) -m glimpse_tools.gauntlet --a '$(ENGINE_A)' --a-options '$(ENGINE_A_OPTS)' --levels $(LEVELS) --elos $(ELOS) \
	  --tc '$(TC)' --games $(GAMES) --concurrency $(GAUNTLET_CONCURRENCY) --book '$(BOOK)' --seed $(SEED) \
	  --out '$(OUT)' $(GAUNTLET_ARGS)

# Puzzles: LIMIT puzzles (0 = all 2,893), per-move limit MOVETIME seconds (or PUZZLE_ARGS='--nodes N').
PUZZLES ?= ../shared/data/puzzles/lichess_puzzles.csv
LIMIT ?= 0
MOVETIME ?= 0.1
PUZZLE_ARGS ?=
puzzles: build $(VENV_STAMP)
	$(call need-path,$(PUZZLES),the puzzle file)
	$(PY) -m glimpse_tools.puzzles --engine '$(ENGINE_A)' --options '$(ENGINE_A_OPTS)' --puzzles '$(PUZZLES)' \
	  --limit $(LIMIT) --movetime $(MOVETIME) --json '$(OUT).json' --png '$(OUT).png' $(PUZZLE_ARGS)

# EPD suites in ../shared/data/epd (names without .epd, or 'all').
SUITES ?= wac_arasan_wacnew bk_senjo STS1-STS15_LAN_v3 arasan2024
SUITE_ARGS ?=
suites: build $(VENV_STAMP)
	$(call need-path,$(abspath $(SHARED))/data/epd,the EPD suites)
	$(PY) -m glimpse_tools.suites --engine '$(ENGINE_A)' --options '$(ENGINE_A_OPTS)' --suites $(SUITES) \
	  --limit $(LIMIT) --movetime $(MOVETIME) --json '$(OUT).json' $(SUITE_ARGS)

# Endgames: POSITIONS random KQK and KRK positions each (seeded by SEED), ENGINE_A as the strong
# side against ENDGAME_OPPONENT (full-strength Stockfish) at TC. ENDGAME_ARGS for more flags, e.g.
# ENDGAME_ARGS='--tc none --nodes 400 --b-tc 10+0.1' (A at go nodes 400, Stockfish on a clock).
POSITIONS ?= 20
ENDGAME_OPPONENT ?= stockfish
ENDGAME_ARGS ?=
endgames: build $(VENV_STAMP)
	$(PY) -m glimpse_tools.endgames --a '$(ENGINE_A)' --a-options '$(ENGINE_A_OPTS)' --b '$(ENDGAME_OPPONENT)' \
	  --tc '$(TC)' --positions $(POSITIONS) --concurrency $(CONCURRENCY) --seed $(SEED) --out '$(OUT)' \
	  $(ENDGAME_ARGS)

# Scaling: ENGINE_A with SearchMode=mcts at go nodes N for each N in PLAYOUTS against SCALING_B
# (searchless Glimpse), GAMES per N from BOOK. BOTH_OPTS go to both engines (comma-separated);
# SCALING_ARGS for more flags, e.g. SCALING_ARGS='--b-tc 10+0.1'.
PLAYOUTS ?= 25 100 400 1600
SCALING_B ?= glimpse
BOTH_OPTS ?=
SCALING_ARGS ?=
scaling: build $(VENV_STAMP)
	$(if $(BOOK),$(call need-path,$(BOOK),the opening book))
	$(PY) -m glimpse_tools.scaling --a '$(ENGINE_A)' --a-options '$(ENGINE_A_OPTS)' --b '$(SCALING_B)' \
	  --both-options '$(BOTH_OPTS)' --playouts $(PLAYOUTS) --games $(GAMES) --concurrency $(CONCURRENCY) \
	  --book '$(BOOK)' --seed $(SEED) --out '$(OUT)' $(SCALING_ARGS)

# Conformance suite against the built engine (incl. 10 games vs Stockfish 15.1 at 10+0.1, about
# 3-5 minutes), then the tools' own tests (about 1-2 minutes). Needs Stockfish (apt) and, when the
# binary has no embedded net, target/test-models/tiny_av.onnx (make test-models).
UCI_TESTS ?= test_protocol test_bad_input test_games
test-uci: build $(VENV_STAMP)
	cd uci-tests && GLIMPSE_SHARED=$(ABS_TEST_SHARED) $(MEASURE_PY) -m unittest -v $(UCI_TESTS)
	$(MAKE) --no-print-directory test-tools

test-tools: $(VENV_STAMP)
	GLIMPSE_SHARED=$(ABS_TEST_SHARED) $(PY) -m unittest discover -s tools/tests -t tools/tests -v
