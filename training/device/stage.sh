#!/bin/bash
# On the GPU machine, between lab.sh and train.sh, once for each .dev/stageK that prepare.sh made (a pack too
# large for two calls): hand the pack files and parts it carries to train.sh. Carry DIR.
#   bash training/device/stage.sh DIR    # .dev/stage1, .dev/stage2, ...
set -e
dir=${1:?folder (.dev/stageK)}
mkdir -p /tmp/g/pack-extra
cp "$dir"/* /tmp/g/pack-extra/
ls -la /tmp/g/pack-extra
