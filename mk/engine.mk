# Engine targets (see README.md): Rust unit and integration tests, and the bench.
# The ONNX Runtime library from `make ort` is passed explicitly so tests find it from any directory.

ORT_ENV := ORT_DYLIB_PATH=$(abspath $(ORT_LIB))

.PHONY: test-rust bench

# Unit tests, golden tests and the tests/uci_*.rs pipe tests (these need target/test-models/).
test-rust: ort test-models
	$(ORT_ENV) GLIMPSE_SHARED=$(ABS_TEST_SHARED) cargo test --release

# Fixed positions: median ms per move, evaluations/s, GFLOP/s against ORT's MatMul rate, signature.
# `make bench WEIGHTS=net.onnx THREADS=2` benches another net or thread count;
# `make bench MCTS=400` benches MCTS with 400 playouts per position instead.
bench: build
	$(ORT_ENV) $(BIN) bench $(if $(WEIGHTS),--weights $(WEIGHTS)) $(if $(THREADS),--threads $(THREADS)) $(if $(MCTS),--mcts --nodes $(MCTS))

# The same two benches (searchless and MCTS 400) of one net as JSON in the results folder
# (tools/results/bench/<file>.json), from which `make docs` builds the speed tables. NET defaults to the
# shipped net (weights/DEFAULT). Timings need an idle machine: stop background work first.
BENCH_NET = $(or $(NET),weights/$(shell cat weights/DEFAULT))
.PHONY: bench-results
bench-results: build $(VENV_STAMP)
	$(ORT_ENV) $(PY) -m glimpse_tools.bench_results --engine $(BIN) --weights '$(BENCH_NET)' \
	  --json 'tools/results/bench/$(notdir $(BENCH_NET:.onnx=)).json' \
	  --command 'make bench-results$(if $(NET), NET=$(NET))'

# Valgrind memcheck (tools/README.md, "Valgrind"): the library's unit tests, the property tests (fewer
# cases) and a scripted UCI dialogue (tools/valgrind/script.uci: both searches, a bad net file,
# garbage, quit) on the release build. Reports from inside ONNX Runtime and the dynamic loader are
# suppressed (tools/valgrind/onnxruntime.supp); any other error or definite leak fails the target.
# Installs valgrind with apt when it is missing. Takes about 10-20 minutes on 2 busy cores.
VALGRIND_FLAGS := --tool=memcheck --error-exitcode=99 --num-callers=40 --leak-check=full \
  --show-leak-kinds=definite --errors-for-leak-kinds=definite \
  --suppressions=$(abspath tools/valgrind/onnxruntime.supp)
VALGRIND_OUT ?= target/valgrind
VALGRIND_PROPTEST_CASES ?= 8
.PHONY: valgrind
valgrind: build test-models
	@command -v valgrind >/dev/null || { SUDO=$$( [ "$$(id -u)" -ne 0 ] && command -v sudo || true ); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind; }
	mkdir -p $(VALGRIND_OUT)
	$(ORT_ENV) cargo test --release --lib --test prop_invariants --no-run 2>&1 | tee $(VALGRIND_OUT)/build.log
	set -e; for exe in $$(grep -o '(target/release/deps/[^)]*)' $(VALGRIND_OUT)/build.log | tr -d '()'); do \
	  name=$$(basename $$exe); echo "valgrind: $$exe"; \
	  $(ORT_ENV) PROPTEST_CASES=$(VALGRIND_PROPTEST_CASES) GLIMPSE_TEST_TIME_SCALE=20 valgrind $(VALGRIND_FLAGS) \
	    --log-file=$(VALGRIND_OUT)/$$name.log $$exe --test-threads=2 -q \
	    || { tail -40 $(VALGRIND_OUT)/$$name.log; exit 1; }; \
	  grep 'ERROR SUMMARY' $(VALGRIND_OUT)/$$name.log; done
	$(ORT_ENV) valgrind $(VALGRIND_FLAGS) --log-file=$(VALGRIND_OUT)/uci-session.log $(BIN) \
	  < tools/valgrind/script.uci > $(VALGRIND_OUT)/uci-session.out \
	  || { tail -40 $(VALGRIND_OUT)/uci-session.log; exit 1; }
	grep -q '^bestmove' $(VALGRIND_OUT)/uci-session.out
	grep 'ERROR SUMMARY' $(VALGRIND_OUT)/uci-session.log
	@echo "valgrind: clean (apart from the suppressions in tools/valgrind/onnxruntime.supp)"
