#!/usr/bin/env bash
#===- scripts/demo.sh - set up and run the main job -------------------------===#
# SPDX-License-Identifier: Apache-2.0
#
# On a fresh Debian 12 machine: installs the dependencies, builds dist-opt,
# exports a small GPT-style language model with PyTorch (dynamic batch),
# compiles it into out/gpt/ (executable, shared library + C header, manifest,
# parameter file), runs it on sample input at two batch sizes and checks the
# logits against PyTorch's. The local machine is the cluster (one process).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
mkdir -p out/models out/inputs
py=/usr/bin/python3
$py scripts/export_models.py --out out/models --opset 17 --model gpt >/dev/null
echo "== compile: dist-opt out/models/gpt_opset17.onnx -o out/gpt/ --name gpt"
time build/bin/dist-opt out/models/gpt_opset17.onnx -o out/gpt/ --name gpt
ls -l out/gpt
for batch in 2 8; do
  $py scripts/make_model_inputs.py out/models/gpt_opset17.onnx --batch "$batch" \
    --out "out/inputs/b$batch" >/dev/null
  echo "== run: out/gpt/gpt --input idx=out/inputs/b$batch/idx.npy --output-dir out/results/b$batch"
  out/gpt/gpt --input "idx=out/inputs/b$batch/idx.npy" \
    --output-dir "out/results/b$batch" --bench 20
  # Reference: the same model (same deterministic weights) in PyTorch.
  $py - "$batch" <<'PY'
import sys, numpy as np, torch
sys.path.insert(0, "scripts")
from export_models import make_model
b = sys.argv[1]
model = make_model("gpt")[0].eval()
idx = np.load(f"out/inputs/b{b}/idx.npy")
out = np.load(f"out/results/b{b}/logits.npy")
with torch.no_grad():
    ref = model(torch.from_numpy(idx)).numpy()
diff = float(np.abs(out - ref).max())
print(f"batch {b}: logits {list(out.shape)}, max |dist-opt - PyTorch| = {diff:.2e}")
assert out.shape == ref.shape and diff < 1e-3, "mismatch with PyTorch"
PY
done
