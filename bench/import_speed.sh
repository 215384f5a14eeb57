#!/usr/bin/env bash
#===- bench/import_speed.sh - import time of a large model -----------------===#
# SPDX-License-Identifier: Apache-2.0
#
# Exports an MLP with about SIZE_MB (default 300) of float32 weights, both as
# one protobuf file and with external data, and times `dist-opt` importing it
# (IR printed, parameter file written) beside the peer: Python ONNX's
# `onnx.load` of the same file (which only parses it). Median of 3 runs.
#
#   bench/import_speed.sh [SIZE_MB]
set -euo pipefail
cd "$(dirname "$0")/.."
size="${1:-300}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
/usr/bin/python3 scripts/export_models.py --out "$dir" --opset 17 --model mlp \
  --big-mlp-mb "$size" >/dev/null 2>&1
/usr/bin/python3 - "$dir/big_mlp.onnx" "$dir/big_mlp_ext.onnx" <<'PY'
import onnx, sys
m = onnx.load(sys.argv[1])
onnx.save_model(m, sys.argv[2], save_as_external_data=True,
                all_tensors_to_one_file=True, location="big_mlp_ext.data",
                size_threshold=1024)
PY
median() { sort -n | sed -n 2p; }
time_cmd() { # prints milliseconds for one run of "$@"
  local s e
  s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N)
  echo $(( (e - s) / 1000000 ))
}
for model in big_mlp big_mlp_ext; do
  f="$dir/$model.onnx"
  files=("$f")
  [ -f "$dir/$model.data" ] && files+=("$dir/$model.data")
  mb=$(du -scm "${files[@]}" | tail -1 | cut -f1)
  ours=$(for i in 1 2 3; do time_cmd build/bin/dist-opt "$f" -o "$dir/out.mlir" --params-file="$dir/out.params"; done | median)
  peer=$(for i in 1 2 3; do time_cmd /usr/bin/python3 -c "import onnx,sys; onnx.load(sys.argv[1])" "$f"; done | median)
  printf '%-12s %5s MB  dist-opt import %6d ms   peer onnx.load (python) %6d ms\n' \
    "$model" "$mb" "$ours" "$peer"
done
