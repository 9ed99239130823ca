#!/bin/bash
# On the GPU machine, first call: start training in the background and return. Carry .dev/pack (made here by
# prepare.sh: the start nets, config.json and the slices that fit). Training starts on those slices; the ones
# lab.sh and stage.sh bring later land in $T/g/slices and join the data there within seconds.
# Extra arguments go to `remote train` (both arms).
#   bash training/device/train.sh SECONDS [--lr 1e-3 --decay-frac 0.4 ...]
T=${DEVICE_TMP:-/tmp}  # where the calls leave their files (a test sets another folder)
set -e
secs=${1:?seconds}; shift
mkdir -p $T/code $T/g
cp -r training/glimpse_train $T/code/
rm -rf $T/g/pack; cp -r .dev/pack $T/g/pack
mkdir -p $T/g/slices
# JAX's persistent compilation cache: the step's compile takes ~95 s on a fresh machine. collect.sh brings
# the cache back as jaxcache.tar; put it in .dev/pack/ for the next run (it hits on the same GPU and jax).
export JAX_COMPILATION_CACHE_DIR=$T/g/jaxcache; mkdir -p "$JAX_COMPILATION_CACHE_DIR"
if [ -f $T/g/pack/jaxcache.tar ]; then tar xf $T/g/pack/jaxcache.tar -C $T/g; fi
# Arm B (prepare.sh SMOLGEN_B=G put start-b.onnx in the pack) trains beside arm A on the same GPU, from the
# same data, with the same arguments and clock: /tmp/g/work-b, /tmp/train-b.log. JAX takes 75 % of the GPU's
# memory by default, so each arm then gets a share.
arms=a
if [ -f $T/g/pack/start-b.onnx ]; then arms="a b"; export XLA_PYTHON_CLIENT_MEM_FRACTION=${XLA_PYTHON_CLIENT_MEM_FRACTION:-0.45}; fi
for arm in $arms; do
  if [ $arm = a ]; then net=start.onnx work=$T/g/work log=$T/train.log
  else net=start-b.onnx work=$T/g/work-b log=$T/train-b.log; fi
  (cd $T && PYTHONPATH=$T/code:$T/g/pack/py setsid nohup ${PY:-python3} -m glimpse_train.remote train --pack $T/g/pack \
    --more $T/g/slices \
    --start-net $net --work $work --seconds "$secs" --batch 1024 --snapshot-minutes 2 "$@" > $log 2>&1 < /dev/null &)
done
sleep 15; cat $T/train.log $T/train-b.log 2>/dev/null
