#!/bin/bash
# On the lent GPU machine, last call: every 10 s copy the label shards (as one labs.tar: unpack it here, then
# `remote import` each lab-* folder), the newest ONNX snapshot, JAX's compilation cache (jaxcache.tar) and the
# logs to $OUT, until no `remote` job runs or MAX_SECONDS pass. What is under $OUT comes back even when the
# call runs out of time, but not when the machine is taken back mid-call: several short calls lose less.
#   bash training/device/collect.sh [MAX_SECONDS]
end=$(( $(date +%s) + ${1:-100000} ))
while true; do
  # One tar of every burst's shards and summary: a call returns only a few files (the rest are left out).
  shopt -s nullglob; files=(/tmp/lab-*/*.gz /tmp/lab-*/label-summary.json); shopt -u nullglob
  if [ ${#files[@]} -gt 0 ]; then tar cf "$OUT/labs.tar.tmp" -C /tmp "${files[@]#/tmp/}" && mv "$OUT/labs.tar.tmp" "$OUT/labs.tar"; fi
  if [ -f /tmp/g/work/out/latest.onnx ]; then cp /tmp/g/work/out/latest.onnx "$OUT/latest.onnx.tmp" && mv "$OUT/latest.onnx.tmp" "$OUT/latest.onnx"; fi
  if [ -n "$(ls -A /tmp/g/jaxcache 2>/dev/null)" ]; then tar cf "$OUT/jaxcache.tar.tmp" -C /tmp/g jaxcache && mv "$OUT/jaxcache.tar.tmp" "$OUT/jaxcache.tar"; fi
  cat /tmp/train.log /tmp/lab-*.log > "$OUT/logs.txt" 2>/dev/null
  pgrep -f "glimpse_train.remote" > /dev/null || break
  [ "$(date +%s)" -lt "$end" ] || break
  sleep 10
done
tail -3 /tmp/train.log /tmp/lab-*.log 2>/dev/null
