#!/bin/bash
# On the GPU machine, between lab.sh and train.sh, once for each .dev/stageK that prepare.sh made (a pack too
# large for two calls): hand the pack files and parts it carries to train.sh. Carry DIR.
#   bash training/device/stage.sh DIR    # .dev/stage1, .dev/stage2, ...
T=${DEVICE_TMP:-/tmp}  # where the calls leave their files (a test sets another folder)
set -e
dir=${1:?folder (.dev/stageK)}
mkdir -p $T/g/pack-extra
cp "$dir"/* $T/g/pack-extra/
ls -la $T/g/pack-extra
