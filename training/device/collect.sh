#!/bin/bash
# On the lent GPU machine, last call: every 10 s copy the label shards and the newest ONNX snapshot to $OUT,
# until no `remote` job runs or MAX_SECONDS pass. What is under $OUT comes back even when the call runs out
# of time, but not when the machine is taken back mid-call: several short calls lose less.
#   bash training/device/collect.sh [MAX_SECONDS]
end=$(( $(date +%s) + ${1:-100000} ))
while true; do
  for d in /tmp/lab-*/; do [ -d "$d" ] && mkdir -p "$OUT/$(basename "$d")" && cp "$d"*.gz "$d"label-summary.json "$OUT/$(basename "$d")/" 2>/dev/null; done
  if [ -f /tmp/g/work/out/latest.onnx ]; then cp /tmp/g/work/out/latest.onnx "$OUT/latest.onnx.tmp" && mv "$OUT/latest.onnx.tmp" "$OUT/latest.onnx"; fi
  cp /tmp/train.log /tmp/lab-*.log "$OUT/" 2>/dev/null
  pgrep -f "glimpse_train.remote" > /dev/null || break
  [ "$(date +%s)" -lt "$end" ] || break
  sleep 10
done
tail -3 /tmp/train.log /tmp/lab-*.log 2>/dev/null
