#!/bin/bash
# On a GPU machine, one call per folder made by tools/device/gpu-kit.sh, in order, carrying it:
#   bash tools/device/gpu-bench.sh .dev/gpuK
# Each call keeps its part in /tmp/ortgpu (the machine keeps /tmp while it stays warm, 30 s after a call).
# The folder with RUN in it unpacks the libraries, points the loader at the CUDA 13 / cuDNN 9 libraries of
# the machine's Python (site-packages/nvidia/*/lib) and runs `glimpse bench` with the CUDA and TensorRT
# providers on the float32, float16 and int8 nets, searchless (with the batch table) and MCTS, into
# $OUT/gpu-bench.txt. Set BENCH_SECONDS to cap the whole run (default 400).
set -uo pipefail
dir=${1:?folder}
mkdir -p /tmp/ortgpu
cp "$dir"/part-* /tmp/ortgpu/ 2>/dev/null
[ -f "$dir/RUN" ] || { ls -la /tmp/ortgpu; exit 0; }
mkdir -p /tmp/ortgpu/lib /tmp/ortgpu/nets
cat /tmp/ortgpu/part-* | xz -dc | tar x -C /tmp/ortgpu/lib || exit 1
cp "$dir"/*.onnx /tmp/ortgpu/nets/ && cp "$dir/glimpse" /tmp/ortgpu/glimpse && chmod +x /tmp/ortgpu/glimpse
site=$(python3 -c 'import site; print(site.getsitepackages()[0])')
export ORT_DYLIB_PATH=/tmp/ortgpu/lib/libonnxruntime.so.1.31.1
# CUDA 13 / cuDNN 9 from the nvidia-* wheels; TensorRT 10 (libnvinfer) from tensorrt_libs when installed.
export LD_LIBRARY_PATH=/tmp/ortgpu/lib:$(find "$site/nvidia" "$site/tensorrt_libs" -name 'lib*.so*' -printf '%h\n' 2>/dev/null | sort -u | paste -sd:)
export GLIMPSE_TRT_CACHE=/tmp/ortgpu/trt-cache
out=${OUT:-/tmp}/gpu-bench.txt
end=$(( $(date +%s) + ${BENCH_SECONDS:-400} ))
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
for net in fp32 fp16; do run --backend cuda --weights /tmp/ortgpu/nets/$net.onnx --reps 3; done
run --backend tensorrt --weights /tmp/ortgpu/nets/fp32.onnx --reps 3   # builds the engine (one profile)
run --backend tensorrt --weights /tmp/ortgpu/nets/fp32.onnx --reps 3 --no-batches   # second load: cached engine
run --backend tensorrt --weights /tmp/ortgpu/nets/fp16.onnx --reps 3
run --backend cuda --weights /tmp/ortgpu/nets/int8.onnx --reps 3 --no-batches
run --backend cuda --weights /tmp/ortgpu/nets/fp32.onnx --mcts --nodes 400 --reps 1
run --backend tensorrt --weights /tmp/ortgpu/nets/fp16.onnx --mcts --nodes 400 --reps 1
run --backend cpu --weights /tmp/ortgpu/nets/int8.onnx --reps 3 --no-batches   # this host's CPU, for scale
ls -la "$GLIMPSE_TRT_CACHE" "$GLIMPSE_TRT_CACHE"/* >> "$out" 2>&1
tail -c 6000 "$out"
