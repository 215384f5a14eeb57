#!/usr/bin/env bash
#===- scripts/fuzz-importer.sh - short libFuzzer run of the ONNX importer ===#
# SPDX-License-Identifier: Apache-2.0
#
# Builds the importer with clang-22, libFuzzer and AddressSanitizer in
# build-fuzz/ and fuzzes it for SECONDS (default 60) from a corpus seeded
# with the textual test models and freshly exported PyTorch models. Exits
# non-zero if libFuzzer finds a crash, leak or hang (artifacts land in
# build-fuzz/artifacts/).
#
#   scripts/fuzz-importer.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
build=build-fuzz
cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DDIST_ENABLE_FUZZER=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address" >/dev/null
ninja -C "$build" -j2 dist-import-fuzzer
corpus="$build/corpus"
mkdir -p "$corpus" "$build/artifacts"
cp test/Import/ONNX/*.onnxtext "$corpus/" 2>/dev/null || true
if [ ! -f "$corpus/mlp_opset17.onnx" ]; then
  /usr/bin/python3 scripts/export_models.py --out "$corpus" --opset 13 17 \
    --model mlp dlrm resnet >/dev/null
fi
# The importer allocates what a model declares; cap memory per input.
ASAN_OPTIONS=detect_leaks=1 "$build/bin/dist-import-fuzzer" "$corpus" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
  -max_len=65536 -artifact_prefix="$build/artifacts/" -print_final_stats=1
