#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# scripts/gpu_bundle.sh [OUT]: compiles here (no GPU needed) what
# scripts/gpu_check.sh runs on a GPU machine, into OUT (default
# gpu-bundle/, which git ignores; carry it to the device):
#   models/<m>/   the four benchmark models (mlp gpt resnet dlrm) for
#                 --target=cuda:$DIST_GPU_ARCH, their inputs and PyTorch's
#                 outputs (bench/export_bench_models.py)
#   gemm/         a 2048^3 product (a and b are inputs, drawn on the device)
#   conformance/  the lit conformance subset (test/Codegen/Host/Inputs/
#                 conformance-subset.txt) compiled and staged with its data
#                 (onnx_conformance.py --stage)
#   train/<m>/    the MLP and the GPT-style LM exported in training mode
#                 (bench/cpu_training.py's export: data and labels; the
#                 initial weights are the benchmark models' own, which the
#                 check rebuilds), their training steps compiled with
#                 --train (AdamW, lr 1e-3, cross_entropy) at
#                 --precision=fp32 (out/) and bf16 (out_bf16/, which
#                 trains from out/'s parameter file)
#   calibrate/    dist-calibrate, for --gpu 0 on the card
#   lib/          the shared runtime every executable links (libdist_rt.so)
#                 and the libraries it needs that a bare machine may lack
# Prints the bundle's size: the device tool carries 64 MiB at most.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-gpu-bundle}
ARCH=${DIST_GPU_ARCH:-sm_90}
BUILD=${BUILD:-build}
DIST_OPT=$BUILD/bin/dist-opt
RTLIB=$(readlink -f "$BUILD/lib/libdist_rt.so")
PY=/usr/bin/python3
[ -x "$DIST_OPT" ] && [ -f "$RTLIB" ] || {
  echo "error: build first (no $DIST_OPT or $RTLIB)" >&2; exit 1; }

rm -rf "$OUT"
mkdir -p "$OUT/lib" "$OUT/models" "$OUT/gemm"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== benchmark models"
$PY bench/export_bench_models.py --out "$work" --model mlp gpt resnet dlrm \
  > "$work/models.txt"
for m in mlp gpt resnet dlrm; do
  d=$OUT/models/$m
  mkdir -p "$d/inputs" "$d/torch"
  "$DIST_OPT" "$work/models/$m.onnx" --target=cuda:$ARCH \
    --runtime-lib "$RTLIB" -o "$d/out" 2> "$d/compile.log" || {
    cat "$d/compile.log" >&2; exit 1; }
  # The executable is what the check runs (the library and header are
  # the same code).
  rm -f "$d/out/lib$m.so" "$d/out/$m.h"
  cp "$work/inputs/$m/"*.npy "$d/inputs/"
  cp "$work/torch/$m/"*.npy "$d/torch/"
  batch=$(grep "^$m " "$work/models.txt" | sed 's/.* batch=\([0-9]*\).*/\1/')
  $PY - "$d" "$m" "$batch" <<'PYEOF'
import json, os, sys
d, m, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
manifest = json.load(open(os.path.join(d, "out", m + ".json")))
json.dump({"inputs": [i["name"] for i in manifest["inputs"]],
           "outputs": [o["name"] for o in manifest["outputs"]],
           "batch": batch}, open(os.path.join(d, "bundle.json"), "w"))
PYEOF
  echo "$m: $(grep -c . "$d/compile.log" || true) compile warnings"
done

echo "== gemm"
cat > "$work/gemm.onnxtext" <<'ONNX'
<ir_version: 8, opset_import: ["" : 17]>
gemm (float[2048, 2048] a, float[2048, 2048] b) => (float[2048, 2048] c) {
  c = MatMul (a, b)
}
ONNX
"$DIST_OPT" "$work/gemm.onnxtext" --target=cuda:$ARCH --runtime-lib "$RTLIB" \
  -o "$OUT/gemm/out"
echo '{"m": 2048, "k": 2048, "n": 2048}' > "$OUT/gemm/bundle.json"

echo "== training steps"
mkdir -p "$OUT/train"
for m in mlp gpt; do
  d=$OUT/train/$m
  mkdir -p "$d"
  info=$($PY - "$work/train" "$m" <<'PYEOF'
import json, os, sys
sys.path.insert(0, "bench")
import cpu_training
path, batch, files, label = cpu_training.export_and_data(sys.argv[2], sys.argv[1])
print(json.dumps({"onnx": path, "batch": batch, "inputs": list(files),
                  "dir": os.path.dirname(path)}))
PYEOF
)
  src=$($PY -c 'import json,sys; print(json.loads(sys.argv[1])["dir"])' "$info")
  onnx=$($PY -c 'import json,sys; print(json.loads(sys.argv[1])["onnx"])' "$info")
  for p in fp32 bf16; do
    o=$d/out; [ $p = bf16 ] && o=$d/out_bf16
    "$DIST_OPT" "$onnx" --train --loss=cross_entropy --optimizer=adamw \
      --lr=1e-3 --target=cuda:$ARCH --precision=$p --runtime-lib "$RTLIB" \
      -o "$o" 2> "$d/compile-$p.log" || { cat "$d/compile-$p.log" >&2; exit 1; }
    # The check needs neither the library nor --export-onnx's model; the
    # bf16 run reads out/'s parameters (the same initializers).
    rm -f "$o/lib$m.so" "$o/$m.h" "$o/$m.onnx"
    [ $p = bf16 ] && rm -f "$o/$m.params"
    echo "$m $p: $(grep -c . "$d/compile-$p.log" || true) compile warnings"
  done
  cp "$src"/*.npy "$d/"
  # A parameter file the inference bundle holds already (the same bytes:
  # the MLP's) is read from there.
  params=out/$m.params
  if cmp -s "$d/out/$m.params" "$OUT/models/$m/out/$m.params"; then
    rm "$d/out/$m.params"
    params=../../models/$m/out/$m.params
  fi
  $PY -c 'import json,sys; i=json.loads(sys.argv[1]); json.dump({"batch": i["batch"], "inputs": i["inputs"], "params": sys.argv[3]}, open(sys.argv[2], "w"))' "$info" "$d/bundle.json" "$params"
done

echo "== calibrate"
mkdir -p "$OUT/calibrate"
cp "$BUILD/bin/dist-calibrate" "$OUT/calibrate/"

echo "== conformance subset"
$PY scripts/onnx_conformance.py --dist-opt "$DIST_OPT" \
  --data-root /usr/share/libonnx-testdata/data \
  --tests-from test/Codegen/Host/Inputs/conformance-subset.txt \
  --target cuda:$ARCH --runtime-lib "$RTLIB" --stage "$OUT/conformance" -j 2 |
  tail -1

echo "== libraries"
cp "$RTLIB" "$OUT/lib/"
# What the runtime links that a bare machine may not have (libstdc++ of
# this compiler; the C library and the loader are the machine's). MPI,
# OpenBLAS and CUDA's libraries are loaded with dlopen, MPI only under an
# MPI launcher.
ldd "$RTLIB" | awk '/=> \// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*) ;;
    *) cp -L "$lib" "$OUT/lib/" ;;
  esac
done
du -sh "$OUT"
size=$(du -sm "$OUT" | cut -f1)
if [ "$size" -gt 64 ]; then
  echo "error: the bundle is $size MiB; the device tool carries 64 MiB" >&2
  exit 1
fi
