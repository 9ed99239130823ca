#!/bin/bash
# On the GPU machine, second call: start training in the background and return. Carry .dev/pack
# (made here by `remote pack`, fens.txt moved to .dev/lab). Extra arguments go to `remote train` (both arms).
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
# Arm B (prepare.sh SMOLGEN_B=G put start-b.onnx in the pack) trains beside arm A on the same GPU, from the
# same data, with the same arguments and clock: /tmp/g/work-b, /tmp/train-b.log. JAX takes 75 % of the GPU's
# memory by default, so each arm then gets a share.
arms=a
if [ -f /tmp/g/pack/start-b.onnx ]; then arms="a b"; export XLA_PYTHON_CLIENT_MEM_FRACTION=${XLA_PYTHON_CLIENT_MEM_FRACTION:-0.45}; fi
for arm in $arms; do
  if [ $arm = a ]; then net=start.onnx work=/tmp/g/work log=/tmp/train.log
  else net=start-b.onnx work=/tmp/g/work-b log=/tmp/train-b.log; fi
  (cd /tmp && PYTHONPATH=/tmp/code:/tmp/g/pack/py setsid nohup ${PY:-python3} -m glimpse_train.remote train --pack /tmp/g/pack \
    --start-net $net --work $work --seconds "$secs" --batch 1024 --snapshot-minutes 2 "$@" > $log 2>&1 < /dev/null &)
done
sleep 15; cat /tmp/train.log /tmp/train-b.log 2>/dev/null
