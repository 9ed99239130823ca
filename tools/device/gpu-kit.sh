#!/bin/bash
# Here, before the GPU machine's calls (`glimpse bench` with the CUDA and TensorRT execution providers): the onnxruntime-gpu 1.31.1 libraries split into parts that fit one call each
# (.dev/gpu1 … .dev/gpuN, 55 MB apiece), and a last folder with the release binary, the default net's
# float32 source, its int8 twin, a float16 copy (onnxruntime.transformers.float16, inputs and outputs
# kept) and the 270M float16 skeleton (glimpse_train.skeleton: the graph; its weights are made on the device).
# Needs the venv (`make train-setup`) and `make build`. Then on the device, one call per folder in
# order, each carrying it: `bash tools/device/gpu-bench.sh .dev/gpuK`; the last call runs the benches.
# Each call may carry 64 MiB in all: take data/labels, weights, training/campaign and tests/data out of the
# index and into .git/info/exclude for the calls, as training/device/prepare.sh does (training/CAMPAIGN.md,
# "Scale out").
# Checked on a CPU-only machine (2026-11-26): 4 calls (56, 56, 56, 46 MB); the providers then fail for want of
# libcublasLt.so.13 and every bench falls back to the CPU, as it should here.
set -euo pipefail
cd "$(dirname "$0")/../.."
kit=.dev/ortgpu
mkdir -p "$kit"
if [ ! -f "$kit/ort-gpu.tar.xz" ]; then
  .venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 -d "$kit" onnxruntime-gpu==1.31.1
  (cd "$kit" && unzip -o -q -j onnxruntime_gpu-1.31.1-*.whl 'onnxruntime/capi/libonnxruntime*.so*' \
    && tar cf - libonnxruntime*.so* | xz -9 -T2 > ort-gpu.tar.xz.tmp && mv ort-gpu.tar.xz.tmp ort-gpu.tar.xz \
    && rm -f libonnxruntime*.so*)
fi
rm -rf .dev/gpu[0-9]* "$kit"/part-*
split -b 55M -d -a 1 "$kit/ort-gpu.tar.xz" "$kit/part-"
n=0
for p in "$kit"/part-*; do n=$((n + 1)); mkdir -p ".dev/gpu$n"; mv "$p" ".dev/gpu$n/"; done
net=$(cat weights/DEFAULT); src=${net%-int8.onnx}.onnx
# The binary (which embeds the int8 twin and its float32 source) and the three nets ride with the last part
# when they fit: binary + int8 + float32 + float16 (half the float32).
need=$(( ( $(stat -c %s target/release/glimpse) + $(stat -c %s "weights/$net") + $(stat -c %s "weights/$src") * 3 / 2 ) / 1000000 + 1 ))
last=".dev/gpu$n"
if [ $(( $(du -sm "$last" | cut -f1) + need )) -gt 60 ]; then n=$((n + 1)); last=".dev/gpu$n"; mkdir -p "$last"; fi
cp target/release/glimpse "$last/glimpse"
cp "weights/$net" "$last/int8.onnx"; cp "weights/$src" "$last/fp32.onnx"
.venv/bin/python - "$last/fp32.onnx" "$last/fp16.onnx" <<'PY'
import sys, onnx
from onnxruntime.transformers.float16 import convert_float_to_float16
m = convert_float_to_float16(onnx.load(sys.argv[1]), keep_io_types=True)
meta = {p.key: p.value for p in m.metadata_props}; meta["glimpse.precision"] = "fp16"
onnx.helper.set_model_props(m, meta); onnx.save(m, sys.argv[2])
PY
# The paper's 270M action-value layout at float16 as a graph whose 0.54 GB of weights gpu-bench.sh makes there.
(cd training && ../.venv/bin/python -m glimpse_train.skeleton --size 270M --precision fp16 --out "../$last")
touch "$last/RUN"
du -sh .dev/gpu[0-9]*
echo "calls: $(for d in .dev/gpu[0-9]*; do printf '%s ' "$d"; done)(each: bash tools/device/gpu-bench.sh DIR, carry DIR)"
