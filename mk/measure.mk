# Measuring tools (the package glimpse_tools = tools/, installed into .venv by the venv stamp) and the
# UCI conformance suite (tools/README.md, uci-tests/README.md).
#
#   make match     ENGINE_A_OPTS='WeightsFile=weights/x.onnx' OPPONENT='stockfish:Skill Level=0' \
#                  TC=10+0.1 GAMES=20 CONCURRENCY=1 BOOK=../shared/data/openings/noob_3moves.epd OUT=reports/match
#   make gauntlet  LEVELS='0 3 6' (Skill Level) or ELOS='1350 1500 1700' (UCI_Elo), GAMES per level
#   make puzzles   PUZZLES=../shared/data/puzzles/lichess_puzzles.csv LIMIT=0 NODES=1 OUT=reports/puzzles
#   make suites    SUITES='wac_arasan_wacnew bk_senjo STS1-STS15_LAN_v3' LIMIT=0 MOVETIME=0.1
#   make endgames  ENGINE_A_OPTS=SearchMode=mcts POSITIONS=20 TC=10+0.1 SYZYGY=dir (KQK/KRK/KBNK/KPK vs full Stockfish)
#   make scaling   PLAYOUTS='25 100 400 1600' GAMES=20 (SearchMode=mcts at go nodes N vs searchless)
#   make soak      GAMES=1000 (Glimpse vs weak Stockfish and itself; crashes, forfeits, RSS; test-soak: 20)
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

# Ladder: the net (NET=file.onnx, default the embedded one) searchless and with MCTS against Stockfish 15.1 at
# UCI_Elo 1500/1700/1900/2100 and Skill Level 0, 10+0.1, Threads 1, paired openings, concurrency 2; one
# maximum-likelihood Elo per mode on the UCI_Elo scale with its 95 % interval, and MCTS - searchless, in
# $(LADDER_OUT)/ladder.json (each mode's table and PNG beside it). LADDER_GAMES per opponent (40; 4 for a
# quick gate); LADDER_ARGS for more flags (--modes searchless, --elos 1700 1900, --tc 5+0.05).
NET ?=
LADDER_GAMES ?= 40
LADDER_OUT ?= tools/results/ladder
LADDER_ARGS ?=
.PHONY: ladder
ladder: build $(VENV_STAMP)
	$(call need-path,$(abspath $(SHARED))/data/openings/noob_3moves.epd,the opening book)
	$(PY) -m glimpse_tools.ladder --games $(LADDER_GAMES) --out '$(LADDER_OUT)' \
	  --book '$(abspath $(SHARED))/data/openings/noob_3moves.epd' $(if $(NET),--net '$(abspath $(NET))') $(LADDER_ARGS)

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

# Endgames: POSITIONS random KQK, KRK, KBNK and KPK (winning) positions each (seeded by SEED), ENGINE_A as the strong
# side against ENDGAME_OPPONENT (full-strength Stockfish) at TC. ENDGAME_ARGS for more flags, e.g.
# ENDGAME_ARGS='--tc none --nodes 400 --b-tc 10+0.1' (A at go nodes 400, Stockfish on a clock).
# SYZYGY=../shared/data/syzygy gives Glimpse the tables (SyzygyPath); ENDGAME_ARGS=--compare then
# plays every position without and with them and prints both.
POSITIONS ?= 20
ENDGAME_OPPONENT ?= stockfish
ENDGAME_ARGS ?=
SYZYGY ?=
endgames: build $(VENV_STAMP)
	$(PY) -m glimpse_tools.endgames --a '$(ENGINE_A)' --a-options '$(ENGINE_A_OPTS)' --b '$(ENDGAME_OPPONENT)' \
	  --tc '$(TC)' --positions $(POSITIONS) --concurrency $(CONCURRENCY) --seed $(SEED) --out '$(OUT)' \
	  $(if $(SYZYGY),--syzygy '$(SYZYGY)') $(ENDGAME_ARGS)

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
UCI_TESTS ?= test_protocol test_bad_input test_reliability test_fuzz test_games
test-uci: build $(VENV_STAMP)
	cd uci-tests && GLIMPSE_SHARED=$(ABS_TEST_SHARED) $(MEASURE_PY) -m pytest -rs $(addsuffix .py,$(UCI_TESTS))
	$(MAKE) --no-print-directory test-tools

test-tools: $(VENV_STAMP)
	GLIMPSE_SHARED=$(ABS_TEST_SHARED) $(PY) -m pytest -rs tools/tests

# Soak (tools/soak.py): GAMES games (default 1,000 here) of Glimpse, searchless and MCTS, against
# SOAK_OPPONENT and itself at SOAK_TC and fixed SOAK_NODES, CONCURRENCY 2, engine RSS sampled
# through each game; report $(SOAK_OUT).json/.png/.pgn; fails on any crash, illegal move, time
# forfeit, stall or protocol warning of Glimpse's, or RSS growth over 10 % (first vs last 10 %).
# About 4 s a game on 2 busy cores (1,000 games: 70 minutes). `make test-soak` is a 20-game run.
SOAK_GAMES = $(if $(filter command line environment,$(origin GAMES)),$(GAMES),1000)
SOAK_CONCURRENCY = $(if $(filter command line environment,$(origin CONCURRENCY)),$(CONCURRENCY),2)
SOAK_TC ?= 1+0.1
SOAK_NODES ?= 8
SOAK_OPPONENT ?= stockfish:Skill Level=0
SOAK_OUT ?= reports/soak-$(MEASURE_STAMP)
# Glimpse's options in the soak: Move Overhead (ms kept back for lag) sized for a shared 2-core
# machine whose load reaches 10-16 (engine processes then stall for hundreds of ms).
SOAK_GLIMPSE_OPTS ?= Move Overhead=300
SOAK_ARGS ?=
.PHONY: soak test-soak
soak: build $(VENV_STAMP)
	$(PY) tools/soak.py --engine $(BIN) --glimpse-options '$(SOAK_GLIMPSE_OPTS)' \
	  --stockfish '$(SOAK_OPPONENT)' --games $(SOAK_GAMES) \
	  --concurrency $(SOAK_CONCURRENCY) --tc '$(SOAK_TC)' --nodes $(SOAK_NODES) --seed $(SEED) \
	  --book '$(BOOK)' --out '$(SOAK_OUT)' $(SOAK_ARGS)

# The short soak of `make test` (1-2 minutes; openings from the in-repo test data, so a clone without
# ../shared runs it): 20 games, a smoke test for crashes, illegal moves
# and protocol warnings. Its clock is 2+0.2 with a 200 ms margin, so that a loaded CI machine does
# not flag a forfeit, and RSS compares the mean peak of the first and last third of a configuration's
# games (about 3 each; one game's peak varies by 2x with its positions) within 50 % (the first 8 games,
# caches filling, left out); the 10 % limit is the long soak's.
test-soak: build $(VENV_STAMP)
	$(PY) tools/soak.py --engine $(BIN) --glimpse-options '$(SOAK_GLIMPSE_OPTS)' --games 20 --warmup 8 \
	  --concurrency 2 --tc 2+0.2 --timemargin 200 --max-rss-growth 0.5 --rss-window 0.34 --quiet \
	  --book '$(ABS_TEST_SHARED)/data/openings/noob_3moves.epd' --out target/soak-short/soak $(SOAK_ARGS)
