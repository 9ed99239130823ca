#!/bin/bash
# On the GPU machine, after train.sh (and lab.sh), once for each .dev/stageK that prepare.sh made: put the pack
# slices it carries where the running training picks them up ($T/g/slices; each slice is copied under a
# temporary name and renamed, so the trainer never reads half a slice). Carry DIR.
#   bash training/device/stage.sh DIR    # .dev/stage1, .dev/stage2, ...
T=${DEVICE_TMP:-/tmp}  # where the calls leave their files (a test sets another folder)
set -e
dir=${1:?folder (.dev/stageK)}
mkdir -p $T/g/slices
for s in "$dir"/slice-*; do
  [ -d "$s" ] || continue
  n=$(basename "$s"); rm -rf "$T/g/slices/.$n.tmp"
  cp -r "$s" "$T/g/slices/.$n.tmp" && mv "$T/g/slices/.$n.tmp" "$T/g/slices/$n"
done
ls $T/g/slices
