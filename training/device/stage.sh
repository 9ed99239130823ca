#!/bin/bash
# On the GPU machine, between lab.sh and train.sh, when prepare.sh made .dev/stage (a pack too large for
# two calls): hand the pack files it carries to train.sh. Carry .dev/stage.
#   bash training/device/stage.sh
set -e
mkdir -p /tmp/g/pack-extra
cp .dev/stage/* /tmp/g/pack-extra/
ls -la /tmp/g/pack-extra
