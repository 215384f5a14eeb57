#!/usr/bin/env bash
#===- scripts/test-sanitize.sh - every suite under ASan and UBSan ---------===#
# SPDX-License-Identifier: Apache-2.0
#
# Builds everything with clang-22, AddressSanitizer (with LeakSanitizer) and
# UndefinedBehaviorSanitizer in build-san/ (-DDIST_SANITIZE=address,undefined:
# the compiler, the runtime, the tools, the GoogleTests, and the runtime
# that the artifacts compiled by the tests link) and runs the lit suite
# (IR, importer, code generation end to end, training, distributed runs
# under mpirun) and the GoogleTests there. Any sanitizer report fails the
# test that caused it. Assumes scripts/install-deps.sh has run.
#
#   scripts/test-sanitize.sh              every suite
#   scripts/test-sanitize.sh --quick      the part CI runs (below)
#   scripts/test-sanitize.sh -- LIT-ARGS  lit with these arguments instead
#
# The last line is the total: `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
quick=0
lit_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --) shift; lit_args=("$@"); break ;;
    -h|--help) sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test-sanitize.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

build=build-san
if [ ! -f "$build/build.ninja" ]; then
  mkdir -p "$build"
  cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DDIST_SANITIZE=address,undefined >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; exit 1; }
fi
echo "== sanitizer build ($build) =="
start=$(date +%s)
ninja -C "$build" -j"${DIST_JOBS:-2}" >"$build/ninja.log" 2>&1 ||
  { tail -40 "$build/ninja.log"; exit 1; }
echo "built in $(( $(date +%s) - start )) s"

# Findings stop the process with a report (the build adds
# -fno-sanitize-recover); leaks are reported at exit. Only libraries this
# project does not build are suppressed (scripts/sanitizer/lsan.supp).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/scripts/sanitizer/lsan.supp:print_suppressions=0
[ -x /usr/lib/llvm-22/bin/llvm-symbolizer ] &&
  export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer

# The CI part (a few minutes): the importer's tests (every ONNX node test
# model, mutated models), the dialect's, the host code generation passes'
# (their rewrites erase and move ops), code generation run end to end
# (the C API, bad inputs, training resumed from checkpoints), the planner's
# calibration tool, the runtime's collectives and tensor-parallel runs under
# mpirun; and every GoogleTest.
quick_filter='Import/|Dialect/|Codegen/Host/|Planner/calibrate-tool|Codegen/Emit/sanitize|Codegen/e2e/(c-api|bad-input|compile-and-run|train-resume|channels-last-transposed)|Runtime/collectives\.test|Distributed/tensor-parallel\.test'
if [ ${#lit_args[@]} -eq 0 ]; then
  lit_args=(-sv "$build/test")
  [ $quick -eq 1 ] && lit_args+=(--filter "$quick_filter")
fi

lit_log=$(mktemp)
unit_log=$(mktemp)
trap 'rm -f "$lit_log" "$unit_log"' EXIT
echo "== lit under sanitizers =="
start=$(date +%s)
/usr/lib/llvm-22/bin/lit "${lit_args[@]}" 2>&1 | tee "$lit_log"
lit_status=${PIPESTATUS[0]}
echo "lit took $(( $(date +%s) - start )) s"
echo "== GoogleTest under sanitizers =="
(cd "$build" && ctest --output-on-failure -E '^lit$' 2>&1) | tee "$unit_log"
unit_status=${PIPESTATUS[0]}

source scripts/test_counts.sh
count_results "$lit_log" "$lit_status" "$unit_log" "$unit_status"

echo "sanitized lit: $lit_pass passed, $lit_fail failed"
echo "sanitized GoogleTest: $unit_pass passed, $unit_fail failed"
echo "$(( lit_pass + unit_pass )) passed, $(( lit_fail + unit_fail )) failed"
[ "$lit_status" -eq 0 ] && [ "$unit_status" -eq 0 ]
