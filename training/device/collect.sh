#!/bin/bash
# On the lent GPU machine, last call: every 10 s copy the label shards (as one labs.tar: unpack it here, then
# `remote import` each lab-* folder), the newest ONNX snapshot and the logs to $OUT, until no `remote` job runs
# or MAX_SECONDS pass. What is under $OUT comes back even when the call runs out of time, but not when the
# machine is taken back mid-call: several short calls lose less.
#   bash training/device/collect.sh [MAX_SECONDS]
end=$(( $(date +%s) + ${1:-100000} ))
while true; do
  # One tar of every burst's shards and summary: a call returns only a few files (the rest are left out).
  ( cd /tmp && ls -d lab-*/ > /dev/null 2>&1 && tar cf "$OUT/labs.tar.tmp" $(ls -d lab-*/*.gz lab-*/label-summary.json 2>/dev/null) \
    && mv "$OUT/labs.tar.tmp" "$OUT/labs.tar" )
  if [ -f /tmp/g/work/out/latest.onnx ]; then cp /tmp/g/work/out/latest.onnx "$OUT/latest.onnx.tmp" && mv "$OUT/latest.onnx.tmp" "$OUT/latest.onnx"; fi
  cat /tmp/train.log /tmp/lab-*.log > "$OUT/logs.txt" 2>/dev/null
  pgrep -f "glimpse_train.remote" > /dev/null || break
  [ "$(date +%s)" -lt "$end" ] || break
  sleep 10
done
tail -3 /tmp/train.log /tmp/lab-*.log 2>/dev/null
