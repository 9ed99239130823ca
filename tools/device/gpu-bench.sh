#!/bin/bash
# On a GPU machine, one call per folder made by tools/device/gpu-kit.sh, in order, carrying it:
#   bash tools/device/gpu-bench.sh .dev/gpuK
# Each call keeps its part in /tmp/ortgpu (the machine keeps /tmp while it stays warm, 30 s after a call); the
# part calls take seconds, the last one (the folder with RUN in it) is the check, at most BENCH_SECONDS (default
# 420) of benches. It unpacks the libraries, points the loader at the CUDA 13 / cuDNN 9 libraries of the
# machine's Python (site-packages/nvidia/*/lib) and writes $OUT/gpu-bench.txt:
#   1. the engine's GPU check: with `Backend cuda` and no `WeightsFile` the start-up line and `d` must name the
#      embedded float32 net (PASS/FAIL line);
#   2. the batch table (rows per run 1/8/32/128) with CUDA for the float32, float16 and int8 nets;
#   3. MCTS nodes/s and positions per run by `MinibatchSize` (16, 64, 256; 1,600 playouts a position), pipelined
#      (the engine's way on a GPU), and 256 once more without the pipeline;
#   4. the paper's 270M action-value configuration (random weights, float16: glimpse_train.skeleton, filled
#      here), ms per searchless move;
#   5. TensorRT on the float32 and float16 nets where libnvinfer.so.10 exists, otherwise one line saying so.
# Here, afterwards: `python -m glimpse_tools.gpu_summary gpu-bench.txt --json tools/device/results/<gpu>-<date>.json
# --markdown` for the JSON and the README's table.
set -uo pipefail
dir=${1:?folder}
mkdir -p /tmp/ortgpu
cp "$dir"/part-* /tmp/ortgpu/ 2>/dev/null
[ -f "$dir/RUN" ] || { ls -la /tmp/ortgpu; exit 0; }
mkdir -p /tmp/ortgpu/lib /tmp/ortgpu/nets
cat /tmp/ortgpu/part-* | xz -dc | tar x -C /tmp/ortgpu/lib || exit 1
cp "$dir"/*.onnx "$dir"/*.fill.json /tmp/ortgpu/nets/ && cp "$dir/glimpse" /tmp/ortgpu/glimpse && chmod +x /tmp/ortgpu/glimpse
site=$(python3 -c 'import site; print(site.getsitepackages()[0])')
export ORT_DYLIB_PATH=/tmp/ortgpu/lib/libonnxruntime.so.1.31.1
# CUDA 13 / cuDNN 9 from the nvidia-* wheels; TensorRT 10 (libnvinfer) from tensorrt_libs when installed.
export LD_LIBRARY_PATH=/tmp/ortgpu/lib:$(find "$site/nvidia" "$site/tensorrt_libs" -name 'lib*.so*' -printf '%h\n' 2>/dev/null | sort -u | paste -sd:)
export GLIMPSE_TRT_CACHE=/tmp/ortgpu/trt-cache
out=${OUT:-/tmp}/gpu-bench.txt
end=$(( $(date +%s) + ${BENCH_SECONDS:-420} ))
run() {  # one bench, at most 120 s and never past the cap
  local left=$(( end - $(date +%s) )); [ "$left" -gt 5 ] || return 0
  [ "$left" -lt 120 ] || left=120
  echo "### glimpse bench $*" >> "$out"
  local t0=$(date +%s.%N)   # the wall time includes loading, so a TensorRT engine build shows
  timeout "$left" /tmp/ortgpu/glimpse bench "$@" >> "$out" 2>&1; local rc=$?
  echo "(exit $rc, $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }") s wall)" >> "$out"
}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
  echo "libnvinfer: $(find / -name 'libnvinfer.so.10*' -not -path '/proc/*' 2>/dev/null | head -3 | paste -sd' ')"; } > "$out" 2>&1
nets=/tmp/ortgpu/nets
# 1. The engine's GPU check: the right net for the backend.
uci=$(printf 'uci\nsetoption name Backend value cuda\nisready\nd\nquit\n' | timeout 60 /tmp/ortgpu/glimpse 2>&1)
echo "### uci check: Backend cuda, no WeightsFile" >> "$out"
grep -E '^info string (loaded|backend|Model)' <<< "$uci" >> "$out"
if grep -qE '^info string Model: <embedded> .*\| fp32 \|.*backend Cuda' <<< "$uci"; then
  echo "uci check: PASS (the embedded float32 net plays on CUDA)" >> "$out"
else
  echo "uci check: FAIL" >> "$out"
fi
# 2. Batch tables.
for net in fp32 fp16 int8; do run --backend cuda --weights $nets/$net.onnx --reps 3; done
# 3. MCTS by minibatch.
for mb in 16 64 256; do run --backend cuda --weights $nets/fp32.onnx --mcts --nodes 1600 --minibatch $mb --reps 1; done
run --backend cuda --weights $nets/fp32.onnx --mcts --nodes 1600 --minibatch 256 --pipelined false --reps 1
# 4. The paper's 270M AV net at float16 (random weights, made here: 0.54 GB).
if python3 training/glimpse_train/skeleton.py --fill $nets/270M-fp16.fill.json >> "$out" 2>&1; then
  run --backend cuda --weights $nets/270M-fp16.onnx --reps 1 --no-batches --no-matmul
fi
# 5. TensorRT 10 where the machine has it.
if grep -q 'libnvinfer: /' "$out"; then
  run --backend tensorrt --weights $nets/fp32.onnx --reps 3   # builds the engine (one profile)
  run --backend tensorrt --weights $nets/fp16.onnx --reps 3
  ls -la "$GLIMPSE_TRT_CACHE" >> "$out" 2>&1
else
  echo "TensorRT 10: none on this machine (no libnvinfer.so.10); the tensorrt backend falls back to cuda" >> "$out"
fi
run --backend cpu --weights $nets/int8.onnx --reps 3 --no-batches   # this host's CPU, for scale
tail -c 6000 "$out"
