#!/usr/bin/env bash
#===- scripts/install-deps.sh - Install dist-opt's build and test deps ---===#
# SPDX-License-Identifier: Apache-2.0
#
# Installs every dependency of dist-opt from Debian packages on a Debian 12
# machine. Safe to run again: apt-get skips what is already installed.
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

PKGS=(
  # Build tools.
  cmake ninja-build ccache g++ pkg-config git clang-format-22
  # LLVM / MLIR 22 (shared libLLVM and libMLIR, tablegen, lit, FileCheck).
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools clang-22 lld-22
  # ONNX and protobuf.
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  # Compiled models: gcc links the artifacts; the runtime loads OpenBLAS
  # (pthread variant) and oneDNN at run time for matrix products and
  # channels-last convolutions (oneDNN's header to build it).
  gcc libc6-dev libopenblas0-pthread libdnnl2 libdnnl-dev
  # Collectives between ranks (MPI backend) and the launcher.
  libopenmpi-dev openmpi-bin
  # dist-launch --etcd: the hosts of an elastic job kept in etcd (etcdctl
  # reads them; the elastic test runs a one-member etcd on loopback).
  etcd-server etcd-client
  # The parameter server's transport (ZeroMQ); pyzmq and gRPC for its
  # benchmarks' peers (bench/ps_throughput.py, bench/ps_transport.py).
  libzmq3-dev python3-zmq python3-grpcio
  # Unit tests.
  libgtest-dev libgmock-dev
  # Model export scripts (PyTorch) and ONNX python helpers for tests.
  python3 python3-torch python3-onnx python3-numpy
  # ImageNet models for the convolution benchmark (bench/zoo.sh).
  python3-torchvision
  # Headless Chromium renders plan.html in the planner tests.
  chromium
  # Peak-memory measurement in bench/cpu_training.py (GNU time).
  time
  # bench/cost_model.py reads the cluster files `dist-opt calibrate` writes.
  python3-yaml
  # Sanitizer and libFuzzer runtimes (scripts/test-sanitize.sh, scripts/fuzz.sh).
  libclang-rt-22-dev
)

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${PKGS[@]}"
echo "install-deps: all dependencies present"
