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
