#!/bin/bash
# Here, before a GPU lease (training/CAMPAIGN.md, "On a lent GPU machine"): build .dev/pack (for train.sh) and
# .dev/lab (for lab.sh), each under the 64 MiB a call carries, and take the big tracked folders out of git's
# index so that the tree that travels with every call stays ~2 MB. Stop the campaign first (the pack reads
# the label store); `restore` after the lease, before any commit.
#   bash training/device/prepare.sh [LAYERS]   # LAYERS: start from the best net grown to LAYERS blocks (grow.py)
#   bash training/device/prepare.sh restore    # the big folders back in the index
# Environment: FENS (unlabelled positions for lab.sh, default 60000), BEST (the start net, default the
# campaign run's best.onnx).
set -euo pipefail
big="data/labels weights training/campaign tests/data"
mark="# glimpse lease: big folders out of the tree that travels (training/device/prepare.sh)"
if [ "${1:-}" = restore ]; then
  git reset -q -- $big
  awk -v m="$mark" '$0 == m {exit} {print}' .git/info/exclude > .git/info/exclude.tmp
  mv .git/info/exclude.tmp .git/info/exclude
  git status --short | head -5
  echo "prepare: big folders back in the index"
  exit 0
fi
py=${PY:-.venv/bin/python}
best=${BEST:-training/runs/campaign-l6d128/best.onnx}
[ -f "$best" ] || { echo "prepare: no start net $best" >&2; exit 1; }
mkdir -p .dev
start=$best
if [ -n "${1:-}" ]; then
  PYTHONPATH=training $py -m glimpse_train.grow --net "$best" --layers "$1" --out .dev/grown.onnx
  start=.dev/grown.onnx
fi
rm -rf .dev/pack .dev/lab/pack .dev/lab/py .dev/lab/fens.txt
PYTHONPATH=training $py -m glimpse_train.remote pack --out .dev/pack --start "$start" --fens "${FENS:-60000}"
# Split the pack so that neither call carries more than ~60 MB: the FENs and the largest array go with lab.sh
# (which hands the array on to train.sh through /tmp/g/pack-extra).
mkdir -p .dev/lab/pack
mv .dev/pack/fens.txt .dev/lab/fens.txt && touch .dev/pack/fens.txt
mv .dev/pack/row_p.npy.xz .dev/lab/pack/
cp -r .dev/pack/py .dev/lab/py
[ -s .dev/lab/stockfish.xz ] || xz -6 -c /usr/games/stockfish > .dev/lab/stockfish.xz
for d in .dev/pack .dev/lab; do
  mb=$(du -sm "$d" | cut -f1)
  echo "prepare: $d $mb MB"
  [ "$mb" -le 62 ] || { echo "prepare: $d is over 62 MB: move another array to .dev/lab/pack or lower FENS" >&2; exit 1; }
done
git rm -r --cached -q $big
if ! grep -qxF "$mark" .git/info/exclude; then printf '%s\n' "$mark" $big >> .git/info/exclude; fi
echo "prepare: tree that travels: $(git ls-files | xargs du -cm 2>/dev/null | tail -1 | cut -f1) MB tracked"
echo "prepare: now the calls (CAMPAIGN.md); afterwards: bash training/device/prepare.sh restore"
