#!/usr/bin/env bash
#===- scripts/demo.sh - set up and run the main job -------------------------===#
# SPDX-License-Identifier: Apache-2.0
#
# On a fresh Debian 12 machine: installs the dependencies, builds dist-opt,
# exports a small GPT-style language model with PyTorch (dynamic batch) and
# imports it, printing the dist IR (stdout) and a summary (stderr). The
# parameters land in out/gpt.params, the IR in out/gpt.mlir.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
mkdir -p out/models
/usr/bin/python3 scripts/export_models.py --out out/models --opset 17 \
  --model gpt >/dev/null
build/bin/dist-opt out/models/gpt_opset17.onnx --params-file=out/gpt.params \
  -o out/gpt.mlir --summary
cat out/gpt.mlir
