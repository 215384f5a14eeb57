#!/usr/bin/env bash
#===- scripts/demo.sh - set up and run the main job -------------------------===#
# SPDX-License-Identifier: Apache-2.0
#
# On a fresh Debian 12 machine: installs the dependencies, builds dist-opt,
# exports a small GPT-style language model with PyTorch (dynamic batch),
# compiles it into out/gpt/ (executable, shared library + C header, manifest,
# parameter file), runs it on sample input at two batch sizes and checks the
# logits against PyTorch's. Then compiles it again with a training step
# (dist-opt --train), partitioned for 2 data-parallel ranks (--mesh dp=2) and
# planned for the local machine (the plan is printed and written to
# out/gpt_train/plan.json and plan.html), and trains it for 300 steps on
# synthetic data on 2 local ranks (mpirun -np 2), with a metrics log,
# checkpoints and the trained parameters saved, and checks that the loss
# fell.
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

# Training: the same model compiled with a training step, trained on a
# synthetic next-token task (arithmetic sequences mod the vocabulary) whose
# loss visibly falls.
echo "== compile for training on 2 local ranks (data parallel), with the plan for this machine: dist-opt out/models/gpt_opset17.onnx --train --loss=cross_entropy --optimizer=adamw --lr=3e-3 --mesh dp=2 --cluster=local --global-batch 16 -o out/gpt_train/ --name gpt"
time build/bin/dist-opt out/models/gpt_opset17.onnx --train --loss=cross_entropy \
  --optimizer=adamw --lr=3e-3 --mesh dp=2 --cluster=local --global-batch 16 \
  -o out/gpt_train/ --name gpt
$py - <<'PY'
import numpy as np, onnx
m = onnx.load("out/models/gpt_opset17.onnx")
dims = m.graph.input[0].type.tensor_type.shape.dim
t = dims[1].dim_value
vocab = m.graph.output[0].type.tensor_type.shape.dim[2].dim_value
r = np.random.RandomState(0)
n = 512
start = r.randint(0, vocab, size=(n, 1))
step = r.randint(1, 4, size=(n, 1))
seq = (start + step * np.arange(t + 1)[None, :]) % vocab
np.save("out/inputs/train_idx.npy", seq[:, :t].astype(np.int64))
np.save("out/inputs/train_label.npy", seq[:, 1:].astype(np.int64))
PY
echo "== train on 2 ranks: mpirun -np 2 out/gpt_train/gpt train --data idx=out/inputs/train_idx.npy --data label=out/inputs/train_label.npy --batch-size 16 --steps 300 --threads 1"
rm -rf out/gpt_train/ckpt
mpirun --allow-run-as-root --oversubscribe --mca btl self,vader --bind-to none \
  -np 2 out/gpt_train/gpt train --threads 1 --data idx=out/inputs/train_idx.npy \
  --data label=out/inputs/train_label.npy --batch-size 16 --steps 300 \
  --log out/gpt_train/metrics.jsonl --save-params out/gpt_train/trained \
  --checkpoint-dir out/gpt_train/ckpt --checkpoint-every 100
$py - <<'PY'
import json
rows = [json.loads(l) for l in open("out/gpt_train/metrics.jsonl")]
first = sum(r["loss"] for r in rows[:10]) / 10
last = sum(r["loss"] for r in rows[-10:]) / 10
print(f"mean loss of the first 10 steps {first:.3f}, of the last 10 {last:.3f}")
assert last < 0.5 * first, "the loss did not fall"
PY
