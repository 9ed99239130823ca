#!/bin/bash
# Here, before the GPU machine's calls (training/CAMPAIGN.md, "Scale out"): build .dev/pack (for train.sh) and
# .dev/lab (for lab.sh), each under the 64 MiB a call carries, and take the big tracked folders out of git's
# index so that the tree that travels with every call stays ~2 MB. Stop the campaign first (the pack reads
# the label store); `restore` after the last call, before any commit.
#   bash training/device/prepare.sh [LAYERS]   # LAYERS: start from the best net grown to LAYERS blocks (grow.py)
#   bash training/device/prepare.sh restore    # the big folders back in the index
# Environment: FENS (unlabelled positions for lab.sh, default 60000), BEST (the start net, default the
# campaign run's best.onnx, else training/campaign/campaign-l6d128.onnx), SMOLGEN (G: give the start net a
# smolgen of G values a head, grow.py --smolgen; its outputs stay the same until training moves it), SMOLGEN_B
# (G: also pack arm B, the start net given a smolgen of G, as start-b.onnx: train.sh then trains both arms at
# once on the GPU, from the same data for the same wall time, an A/B test of the smolgen at equal time),
# STOCKFISH (lab.sh's labelling binary; default make stockfish-native's build, else /usr/games/stockfish).
set -euo pipefail
big="data/labels weights training/campaign tests/data"
mark="# glimpse device calls: big folders out of the tree that travels (training/device/prepare.sh)"
if [ "${1:-}" = restore ]; then
  git reset -q -- $big
  awk -v m="$mark" '$0 == m {exit} {print}' .git/info/exclude > .git/info/exclude.tmp
  mv .git/info/exclude.tmp .git/info/exclude
  git status --short | head -5
  echo "prepare: big folders back in the index"
  exit 0
fi
py=${PY:-.venv/bin/python}
# The run's best.onnx; on a fresh clone (no run folder yet) the committed gated checkpoint, the same net.
best=${BEST:-training/runs/campaign-l6d128/best.onnx}
[ -f "$best" ] || [ -n "${BEST:-}" ] || best=training/campaign/campaign-l6d128.onnx
[ -f "$best" ] || { echo "prepare: no start net $best" >&2; exit 1; }
mkdir -p .dev
start=$best
if [ -n "${1:-}" ] || [ -n "${SMOLGEN:-}" ]; then
  PYTHONPATH=training $py -m glimpse_train.grow --net "$best" ${1:+--layers "$1"} ${SMOLGEN:+--smolgen "$SMOLGEN"} \
    --out .dev/grown.onnx
  start=.dev/grown.onnx
fi
if [ -z "${PACKED:-}" ]; then
  rm -rf .dev/pack .dev/lab/pack .dev/lab/py .dev/lab/fens.txt
  PYTHONPATH=training $py -m glimpse_train.remote pack --out .dev/pack --start "$start" --fens "${FENS:-60000}"
  if [ -n "${SMOLGEN_B:-}" ]; then
    PYTHONPATH=training $py -m glimpse_train.grow --net "$start" --smolgen "$SMOLGEN_B" --out .dev/pack/start-b.onnx
  fi
fi
# Split the pack so that no call carries more than LIMIT_MB: the FENs go with lab.sh, a pack file larger than
# a quarter of a call is cut into parts (NAME.part-00, -01, ...; train.sh joins them), and the files and parts are
# placed largest first (first-fit decreasing) in .dev/pack, .dev/lab/pack (lab.sh hands them to train.sh
# through /tmp/g/pack-extra) and as many .dev/stage1, .dev/stage2, ... as needed (each carried by a
# `stage.sh DIR` call between lab.sh and train.sh).
# A call carries at most 64 MiB (67.1 MB) with the tracked tree (~2 MB once the big folders leave the index):
# 64 MB a folder. With 2.4 M positions row_action.npy.xz alone is 92 MB, hence the parts.
# PACKED=1 skips `remote pack` and only re-splits the .dev/pack made before.
limit_mb=${LIMIT_MB:-64}
limit=$(( limit_mb * 1000000 ))
part=$(( (limit - 200000) / 4 ))   # four parts fill a folder
mkdir -p .dev/lab/pack .dev/spill
if [ -s .dev/pack/fens.txt ]; then mv .dev/pack/fens.txt .dev/lab/fens.txt; fi
touch .dev/pack/fens.txt .dev/lab/fens.txt
rm -rf .dev/lab/py && cp -r .dev/pack/py .dev/lab/py
# The labelling oracle for lab.sh: make stockfish-native's build when there (the same labels for less CPU; lab.sh
# checks that it runs on the GPU machine's CPU), else the package's; STOCKFISH= overrides.
sf=${STOCKFISH:-}
[ -n "$sf" ] || { [ -f .cache/stockfish/build.json ] && sf=.cache/stockfish/stockfish; } || sf=/usr/games/stockfish
if [ ! -s .dev/lab/stockfish.xz ] || [ "$(cat .dev/lab/stockfish.src 2>/dev/null)" != "$sf" ] || [ "$sf" -nt .dev/lab/stockfish.xz ]; then
  xz -6 -T0 -c "$sf" > .dev/lab/stockfish.xz && echo "$sf" > .dev/lab/stockfish.src
fi
bytes() { du -sb "$1" | cut -f1; }
# Gather the pack's data files (and the parts of an earlier split) from every folder, join the parts.
for d in .dev/pack .dev/lab/pack .dev/stage .dev/stage[0-9]*; do
  [ -d "$d" ] || continue
  for f in row_p row_action states start.onnx start-b.onnx row_key counts val; do
    for src in $d/$f $d/$f.npy.xz $d/$f.npy.xz.part-*; do [ -f "$src" ] && mv "$src" .dev/spill/; done
  done
done
for first in .dev/spill/*.part-00; do
  [ -e "$first" ] || continue
  base=${first%.part-00}; cat "$base".part-* > "$base" && rm "$base".part-*
done
rm -rf .dev/stage .dev/stage[0-9]*
for src in .dev/spill/*; do
  if [ "$(bytes "$src")" -gt "$part" ]; then split -b "$part" -d -a 2 "$src" "$src.part-" && rm "$src"; fi
done
stages=0
for src in $(ls -S .dev/spill/* 2>/dev/null); do
  size=$(bytes "$src"); placed=
  for dst in .dev/pack .dev/lab/pack $(for k in $(seq 1 $stages); do echo .dev/stage$k; done); do
    base=$dst; [ $dst = .dev/lab/pack ] && base=.dev/lab
    if [ $(( $(bytes $base) + size )) -le "$limit" ]; then mv "$src" $dst/; placed=1; break; fi
  done
  [ -n "$placed" ] || { stages=$((stages + 1)); mkdir -p .dev/stage$stages; mv "$src" .dev/stage$stages/; }
done
rmdir .dev/spill
for d in .dev/pack .dev/lab .dev/stage[0-9]*; do
  [ -d $d ] || continue
  echo "prepare: $d $(( $(bytes $d) / 1000000 )) MB: $(ls $d | tr '\n' ' ')"
  [ "$(bytes $d)" -le "$limit" ] || { echo "prepare: $d is over $limit_mb MB: lower FENS or split by hand" >&2; exit 1; }
done
[ "$stages" -eq 0 ] || echo "prepare: calls in order: lab.sh (carry .dev/lab), then for K in 1..$stages 'bash training/device/stage.sh .dev/stageK' (carry .dev/stageK), then train.sh (carry .dev/pack)"
git rm -r --cached -q $big
mkdir -p .git/info
if ! grep -qxF "$mark" .git/info/exclude 2>/dev/null; then printf '%s\n' "$mark" $big >> .git/info/exclude; fi
echo "prepare: tree that travels: $(git ls-files | xargs du -cm 2>/dev/null | tail -1 | cut -f1) MB tracked"
echo "prepare: now the calls (CAMPAIGN.md); afterwards: bash training/device/prepare.sh restore"
