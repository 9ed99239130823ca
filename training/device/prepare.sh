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
# STOCKFISH (lab.sh's labelling binary; default make stockfish-native's build, else /usr/games/stockfish), SLICE
# (positions a slice of the pack holds, default 400,000), PACKED=1 (only place the slices made before again).
set -euo pipefail
big="data/labels weights training/campaign tests/data tools/results"
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
  rm -rf .dev/pack .dev/lab/slices .dev/lab/pack .dev/lab/py .dev/lab/fens.txt .dev/stage[0-9]*
  PYTHONPATH=training $py -m glimpse_train.remote pack --out .dev/pack --start "$start" --fens "${FENS:-60000}" \
    ${SLICE:+--slice-positions "$SLICE"}
  if [ -n "${SMOLGEN_B:-}" ]; then
    PYTHONPATH=training $py -m glimpse_train.grow --net "$start" --smolgen "$SMOLGEN_B" --out .dev/pack/start-b.onnx
  fi
fi
# Spread the pack over calls of at most LIMIT_MB each: the FENs go with lab.sh; the data is in slices
# (slice-NN/, each a uniform sample of the positions, SLICE positions, default 400,000 ≈ 31 MB), placed largest
# first (first-fit decreasing) in .dev/pack (train.sh's call, with the start nets), .dev/lab/slices and as many
# .dev/stage1, .dev/stage2, ... as needed. train.sh goes first and trains on the slices it carries; lab.sh and
# each `stage.sh .dev/stageK` put theirs in the folder it watches, where they join the data within seconds.
# A call carries at most 64 MiB (67,108,864 bytes) with the tree that travels (tracked and untracked files that
# are not ignored, ~2.3 MB once the big folders leave the index): a folder gets what the tree leaves, less 1 MB
# (LIMIT_MB sets it instead). PACKED=1 skips `remote pack` and only places again the slices made before.
tree=$(git ls-files -z --cached --others --exclude-standard -- . $(for b in $big; do printf ' :(exclude)%s' $b; done) \
  | du -cb --files0-from=- | tail -1 | cut -f1)
limit=$(( 67108864 - tree - 1000000 ))
[ -z "${LIMIT_MB:-}" ] || limit=$(( LIMIT_MB * 1000000 ))
limit_mb=$(( limit / 1000000 ))
echo "prepare: the tree that travels is $(( tree / 1000 )) kB; at most $limit bytes a folder"
mkdir -p .dev/lab .dev/spill
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
# Gather the slices from every folder, then place them.
for src in .dev/pack/slice-* .dev/lab/slices/slice-* .dev/stage[0-9]*/slice-*; do
  [ -d "$src" ] && mv "$src" .dev/spill/
done
rm -rf .dev/stage[0-9]* .dev/lab/slices
ls .dev/spill/slice-* > /dev/null 2>&1 || { echo "prepare: no slice-NN folders in .dev/pack: run it without PACKED" >&2; exit 1; }
mkdir -p .dev/lab/slices
stages=0
for src in $(du -sb .dev/spill/slice-* | sort -rn | cut -f2); do
  size=$(bytes "$src"); placed=
  for dst in .dev/pack .dev/lab/slices $(for k in $(seq 1 $stages); do echo .dev/stage$k; done); do
    base=$dst; [ $dst = .dev/lab/slices ] && base=.dev/lab
    if [ $(( $(bytes $base) + size )) -le "$limit" ]; then mv "$src" $dst/; placed=1; break; fi
  done
  [ -n "$placed" ] || { stages=$((stages + 1)); mkdir -p .dev/stage$stages; mv "$src" .dev/stage$stages/; }
done
rmdir .dev/spill
for d in .dev/pack .dev/lab .dev/stage[0-9]*; do
  [ -d $d ] || continue
  echo "prepare: $d $(( $(bytes $d) / 1000000 )) MB: $(ls $d $d/slices 2>/dev/null | grep -c '^slice-') slices"
  [ "$(bytes "$d")" -le "$limit" ] || { echo "prepare: $d is over $limit_mb MB: a smaller SLICE= (positions a slice) or FENS=" >&2; exit 1; }
done
ls .dev/pack | grep -q '^slice-' || echo "prepare: warning: no slice fits beside the start nets in .dev/pack; train.sh waits for lab.sh's" >&2
echo "prepare: calls in order: train.sh (carry .dev/pack), lab.sh (carry .dev/lab)$(for k in $(seq 1 $stages); do printf ', stage.sh .dev/stage%s (carry it)' $k; done), then collect.sh"
# The calls one after the other (a machine left idle 30 s goes back, and its training with it):
echo "prepare: run 'bash training/device/train.sh SECONDS --step-precision default' carry [.dev/pack]"
echo "prepare: run 'bash training/device/lab.sh SECONDS' carry [.dev/lab]"
for k in $(seq 1 $stages); do echo "prepare: run 'bash training/device/stage.sh .dev/stage$k' carry [.dev/stage$k]"; done
echo "prepare: run 'bash training/device/collect.sh MAX_SECONDS' (as often as needed)"
git rm -r --cached -q --ignore-unmatch $big
mkdir -p .git/info
if ! grep -qxF "$mark" .git/info/exclude 2>/dev/null; then printf '%s\n' "$mark" $big >> .git/info/exclude; fi
echo "prepare: tree that travels: $(( $(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- | tail -1 | cut -f1) / 1000 )) kB"
echo "prepare: now the calls (CAMPAIGN.md); afterwards: bash training/device/prepare.sh restore"
