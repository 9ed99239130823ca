#!/bin/bash
# On the GPU machine, last call: every 10 s copy the label shards (as labs-N.tar: unpack them all here,
# then `remote import` each lab-* folder), the newest ONNX snapshot (arm B's too: latest-b.onnx), JAX's
# compilation cache (jaxcache.tar) and the logs to $OUT, until no `remote` job runs or MAX_SECONDS pass. What
# is under $OUT comes back even when the call runs out of time, but not when the machine is taken back
# mid-call: several short calls lose less.
#   bash training/device/collect.sh [MAX_SECONDS]
T=${DEVICE_TMP:-/tmp}  # where the calls leave their files (a test sets another folder)
end=$(( $(date +%s) + ${1:-100000} ))
while true; do
  # The shards and summaries of every burst in a few tars (labs-0.tar, labs-1.tar, ...) of at most
  # TAR_BYTES each: a call returns only 8 files, and a file of 17 MB comes back "left out (size)".
  shopt -s nullglob; files=($T/lab-*/label-summary.json $T/lab-*/*.gz); shopt -u nullglob
  k=0; size=0; group=()
  for f in "${files[@]}" END; do
    b=0; [ "$f" = END ] || b=$(stat -c %s "$f")
    if [ ${#group[@]} -gt 0 ] && { [ "$f" = END ] || [ $((size + b)) -gt "${TAR_BYTES:-12000000}" ]; }; then
      tar cf "$OUT/labs-$k.tar.tmp" -C $T "${group[@]#$T/}" && mv "$OUT/labs-$k.tar.tmp" "$OUT/labs-$k.tar"
      k=$((k + 1)); size=0; group=()
    fi
    [ "$f" = END ] || { group+=("$f"); size=$((size + b)); }
  done
  for arm in "" -b; do  # arm A's newest snapshot as latest.onnx, arm B's (train.sh) as latest-b.onnx
    f=$T/g/work$arm/out/latest.onnx
    if [ -f $f ]; then cp $f "$OUT/latest$arm.onnx.tmp" && mv "$OUT/latest$arm.onnx.tmp" "$OUT/latest$arm.onnx"; fi
  done
  if [ -n "$(ls -A $T/g/jaxcache 2>/dev/null)" ]; then tar cf "$OUT/jaxcache.tar.tmp" -C $T/g jaxcache && mv "$OUT/jaxcache.tar.tmp" "$OUT/jaxcache.tar"; fi
  cat $T/train.log $T/train-b.log $T/lab-*.log > "$OUT/logs.txt" 2>/dev/null
  # a `remote` job still runs (read from /proc: no pgrep needed; the bracket keeps grep from finding itself)
  grep -qsa "glimpse_train[.]remote" /proc/[0-9]*/cmdline || break
  [ "$(date +%s)" -lt "$end" ] || break
  sleep 10
done
tail -3 $T/train.log $T/train-b.log $T/lab-*.log 2>/dev/null || true  # the calls without a lab or arm B have fewer logs
