#!/usr/bin/env bash
#===- bench/zoo.sh - Convolutional networks against onnxruntime ----------===#
# SPDX-License-Identifier: Apache-2.0
#
# Issue 33's benchmark: convolutions of every kind on real networks.
# Exports (bench/export_bench_models.py) torchvision's ResNet-50,
# MobileNetV2, EfficientNet-B0, DenseNet-121, ConvNeXt-T, ShuffleNetV2 and
# RegNetY-400MF at 224x224, and three networks written there for the other
# kinds (a causal dilated 1-D temporal network, an encoder-decoder that
# upsamples with ConvTranspose, a 3-D network over short clips), each at
# batch 1 and 8; compiles each with dist-opt and times it beside
# onnxruntime-node on the same inputs at 1 and 2 threads with
# bench/cpu_inference.sh, which checks the outputs against onnxruntime's
# and prints, per thread count, dist-opt ms, onnxruntime ms, their ratio
# and the compile seconds, then the geometric mean. A model that does not
# compile or run is a row of the table; the others still run.
#
#   bench/zoo.sh [ITERATIONS [WORK_DIR]]
#
# MobileNetV3-Large (HardSwish), GoogLeNet (inception branches), SqueezeNet
# 1.1 (fire modules) and AlexNet (a 234 MB classifier) are exported too
# when MODELS names them (mobilenet_v3_large, googlenet, squeezenet1_1,
# alexnet, each also with _b8).
# ITERATIONS (timed runs per model, thread count and side) defaults to 9 in
# 3 rounds, and the second and third rounds of a model make as many runs as
# fill 300 ms a side (ROUND_MS, cpu_inference.sh): a model of a few
# milliseconds is timed over the machine's mood of a second, not over three
# runs a burst of another tenant's work can spoil. The whole run stays near
# 12 minutes on 2 cores; WORK_DIR defaults to /tmp/dist-zoo. MODELS,
# THREADS, ROUNDS, ROUND_MS, WARMUP (default 3, as many warm-up runs as the
# executables make) and DYNAMIC_BATCH (1: every model exported with its
# batch dimension open) are cpu_inference.sh's.
# Exits as cpu_inference.sh does: 0 when every model compiled, ran and
# matched onnxruntime, 1 if not, 2 on a usage or setup error.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
default_models="resnet50 mobilenet_v2 efficientnet_b0 densenet121 convnext_tiny \
shufflenet_v2 regnet_y_400mf tcn1d unet video3d"
models=()
for m in ${MODELS:-$default_models}; do
  models+=("$m")
  [[ -z ${MODELS:-} ]] && models+=("${m}_b8")
done
MODELS="${models[*]}" ROUNDS=${ROUNDS:-3} ROUND_MS=${ROUND_MS:-300} \
  WARMUP=${WARMUP:-3} exec bench/cpu_inference.sh "${1:-9}" "${2:-/tmp/dist-zoo}"
