#!/usr/bin/env bash
#===- scripts/build.sh - configure and build dist-opt ----------------------===#
# SPDX-License-Identifier: Apache-2.0
#
# Configures build/ with Ninja (Release) if needed and builds everything with
# two jobs. Assumes scripts/install-deps.sh has run.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release
fi
ninja -C build -j"${DIST_JOBS:-2}"
