#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# scripts/gpu_check.sh [BUNDLE]: the prepared GPU check of issue 37, run on
# the GPU machine (the device tool) on a bundle made here by
# scripts/gpu_bundle.sh (default gpu-bundle/). Builds nothing: points the
# loader at the bundle's libraries and runs scripts/gpu_check.py, which
# prints the conformance results, the models' errors and latencies beside
# PyTorch's and the product's beside torch.mm's, then `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
BUNDLE=${1:-gpu-bundle}
PY=${PYTHON:-python3}
nvidia-smi -L || echo "warning: nvidia-smi lists no GPU"
export LD_LIBRARY_PATH="$PWD/$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# One executable first: whether the artifacts load here at all (the C
# library, the driver), in one line.
first=$(ls "$BUNDLE"/models/*/out/* 2>/dev/null | grep -v '\.' | head -1)
[ -n "$first" ] && { "$first" --help > /dev/null || echo "error: $first does not start here"; }
exec "$PY" scripts/gpu_check.py "$BUNDLE" "$@"
