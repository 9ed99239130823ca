#!/bin/bash
# On the GPU machine, second call: start training in the background and return. Carry .dev/pack
# (made here by `remote pack`, fens.txt moved to .dev/lab). Extra arguments go to `remote train`.
#   bash training/device/train.sh SECONDS [--lr 1e-3 --decay-frac 0.4 ...]
set -e
secs=${1:?seconds}; shift
mkdir -p /tmp/code /tmp/g
cp -r training/glimpse_train /tmp/code/
rm -rf /tmp/g/pack; cp -r .dev/pack /tmp/g/pack
cp -n /tmp/g/pack-extra/* /tmp/g/pack/ 2>/dev/null || true  # pack files sent by lab.sh (.dev/lab/pack/) and stage.sh
# A file cut into parts by prepare.sh (NAME.part-00, -01, ...) is joined again.
for first in /tmp/g/pack/*.part-00; do
  [ -e "$first" ] || continue
  base=${first%.part-00}; cat "$base".part-* > "$base" && rm "$base".part-*
done
# JAX's persistent compilation cache: the step's compile takes ~95 s on a fresh machine. collect.sh brings
# the cache back as jaxcache.tar; put it in .dev/pack/ for the next run (it hits on the same GPU and jax).
export JAX_COMPILATION_CACHE_DIR=/tmp/g/jaxcache; mkdir -p "$JAX_COMPILATION_CACHE_DIR"
if [ -f /tmp/g/pack/jaxcache.tar ]; then tar xf /tmp/g/pack/jaxcache.tar -C /tmp/g; fi
cd /tmp && PYTHONPATH=/tmp/code:/tmp/g/pack/py setsid nohup ${PY:-python3} -m glimpse_train.remote train --pack /tmp/g/pack \
  --work /tmp/g/work --seconds "$secs" --batch 1024 --snapshot-minutes 2 "$@" > /tmp/train.log 2>&1 < /dev/null &
sleep 15; cat /tmp/train.log
