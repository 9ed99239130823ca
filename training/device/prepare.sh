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
# Split the pack so that no call carries more than LIMIT_MB: the FENs go with lab.sh, and the largest arrays
# move out of .dev/pack, first to .dev/lab/pack (lab.sh hands them to train.sh through /tmp/g/pack-extra),
# then to .dev/stage (carried by stage.sh, a call between lab.sh and train.sh) once lab.sh's call is full.
# A call carries at most 64 MiB (67.1 MB) with the tracked tree (~2 MB once the big folders leave the index):
# 64 MB a folder. At 60 (sessions 15-17) the L10 pack of session 18 did not fit: row_p (38 MB) missed .dev/lab
# by 0.4 MB and .dev/stage took 84 MB.
limit_mb=${LIMIT_MB:-64}
limit=$(( limit_mb * 1000000 ))
rm -rf .dev/stage
mkdir -p .dev/lab/pack
mv .dev/pack/fens.txt .dev/lab/fens.txt && touch .dev/pack/fens.txt
cp -r .dev/pack/py .dev/lab/py
[ -s .dev/lab/stockfish.xz ] || xz -6 -c /usr/games/stockfish > .dev/lab/stockfish.xz
bytes() { du -sb "$1" | cut -f1; }
for f in row_p row_action states start.onnx row_key; do
  [ "$(bytes .dev/pack)" -le "$limit" ] && break
  [ -f .dev/pack/$f ] && src=.dev/pack/$f || src=.dev/pack/$f.npy.xz
  size=$(bytes "$src")
  if [ $(( $(bytes .dev/lab) + size )) -le "$limit" ]; then dst=.dev/lab/pack; else dst=.dev/stage; fi
  mkdir -p $dst && mv "$src" $dst/
done
for d in .dev/pack .dev/lab .dev/stage; do
  [ -d $d ] || continue
  echo "prepare: $d $(( $(bytes $d) / 1000000 )) MB: $(ls $d | tr '\n' ' ')"
  [ "$(bytes $d)" -le "$limit" ] || { echo "prepare: $d is over $limit_mb MB: lower FENS or split by hand" >&2; exit 1; }
done
[ -d .dev/stage ] && echo "prepare: .dev/stage exists: call 'bash training/device/stage.sh' (carry .dev/stage) between lab.sh and train.sh"
git rm -r --cached -q $big
if ! grep -qxF "$mark" .git/info/exclude; then printf '%s\n' "$mark" $big >> .git/info/exclude; fi
echo "prepare: tree that travels: $(git ls-files | xargs du -cm 2>/dev/null | tail -1 | cut -f1) MB tracked"
echo "prepare: now the calls (CAMPAIGN.md); afterwards: bash training/device/prepare.sh restore"
