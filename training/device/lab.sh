#!/bin/bash
# On the GPU machine (training/CAMPAIGN.md, "Scale out"), after train.sh: start a labelling
# burst in the background and return. Carry .dev/lab (stockfish.xz, fens.txt, py/chess; and slices/ with pack slices
# that did not fit train.sh's call).
#   bash training/device/lab.sh SECONDS [SEED0] [WORKERS]
# A second burst on the same warm machine: pass a new SEED0; the FENs are labelled only by the first.
T=${DEVICE_TMP:-/tmp}  # where the calls leave their files (a test sets another folder)
set -e
secs=${1:?seconds}; seed0=${2:-20000000}; workers=${3:-14}
mkdir -p $T/code $T/labpack
cp -r training/glimpse_train $T/code/   # the tree is replaced by the next call: run from a copy
cp -r .dev/lab/py $T/labpack/
# Pack slices that did not fit train.sh's call come in .dev/lab/slices: stage.sh puts them where the training
# picks them up.
if [ -d .dev/lab/slices ]; then bash "$(dirname "$0")/stage.sh" .dev/lab/slices > /dev/null; fi
if [ -e $T/lab.done-fens ]; then : > $T/labpack/fens.txt; else cp .dev/lab/fens.txt $T/labpack/; touch $T/lab.done-fens; fi
[ -x $T/sf ] || { xz -dc .dev/lab/stockfish.xz > $T/sf; chmod +x $T/sf; }
# A native build (prepare.sh) needs the instructions it was compiled for: a CPU without them ends here.
$T/sf bench 16 1 1 > /dev/null 2>&1 || { echo "lab: $(cat .dev/lab/stockfish.src 2>/dev/null) does not run on this CPU;" \
  "run prepare.sh with STOCKFISH=/usr/games/stockfish" >&2; rm -f $T/sf; exit 1; }
echo uci | $T/sf | head -1; nproc
out=$T/lab-$seed0
cd $T && PYTHONPATH=$T/code:$T/labpack/py setsid nohup ${PY:-python3} -m glimpse_train.remote label --pack $T/labpack \
  --stockfish $T/sf --workers "$workers" --seconds "$secs" --seed0 "$seed0" --out "$out" > "$out.log" 2>&1 < /dev/null &
echo "labelling into $out for $secs s"
