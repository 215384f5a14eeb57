#!/usr/bin/env bash
#===- scripts/test.sh - set up and run every test -------------------------===#
# SPDX-License-Identifier: Apache-2.0
#
# On a fresh Debian 12 machine: installs the dependencies, builds dist-opt and
# runs the lit suite (IR, importer, bad input, ONNX node tests, PyTorch
# models, mutation robustness) and the GoogleTest suites, then a part of both
# under AddressSanitizer and UndefinedBehaviorSanitizer and a short run of
# every fuzzer. Each suite prints its own summary; the last line is the
# total: `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1
scripts/build.sh || exit 1

lit_log=$(mktemp)
unit_log=$(mktemp)
san_log=$(mktemp)
fuzz_log=$(mktemp)
trap 'rm -f "$lit_log" "$unit_log" "$san_log" "$fuzz_log"' EXIT

echo "== lit =="
/usr/lib/llvm-22/bin/lit -sv build/test 2>&1 | tee "$lit_log"
lit_status=${PIPESTATUS[0]}
echo "== GoogleTest (ctest) =="
(cd build && ctest --output-on-failure -E '^lit$' 2>&1) | tee "$unit_log"
unit_status=${PIPESTATUS[0]}

# The sanitized part (clang build in build-san/) and a short run of every
# fuzzer (build-fuzz/); the whole of either: scripts/test-sanitize.sh,
# scripts/fuzz.sh.
echo "== sanitizers (scripts/test-sanitize.sh --quick) =="
scripts/test-sanitize.sh --quick 2>&1 | tee "$san_log"
san_status=${PIPESTATUS[0]}
echo "== fuzzers (scripts/fuzz.sh --seconds ${DIST_FUZZ_SECONDS:-20}) =="
scripts/fuzz.sh --seconds "${DIST_FUZZ_SECONDS:-20}" 2>&1 | tee "$fuzz_log"
fuzz_status=${PIPESTATUS[0]}

source scripts/test_counts.sh
count_results "$lit_log" "$lit_status" "$unit_log" "$unit_status"
san_pass=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$san_log" | tail -1)
san_fail=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$san_log" | tail -1)
san_pass=${san_pass:-0}
san_fail=${san_fail:-0}
fuzz_pass=$(grep -c '^fuzz .*no finding$' "$fuzz_log")
fuzz_fail=$(grep -c '^fuzz .*FINDING' "$fuzz_log")
# A suite that did not run at all counts as a failure.
[ "$san_status" -ne 0 ] && [ "$san_fail" -eq 0 ] && san_fail=1
[ "$fuzz_status" -ne 0 ] && [ "$fuzz_fail" -eq 0 ] && fuzz_fail=1

echo "lit: $lit_pass passed, $lit_fail failed"
echo "GoogleTest: $unit_pass passed, $unit_fail failed"
echo "sanitized (lit + GoogleTest): $san_pass passed, $san_fail failed"
echo "fuzzers: $fuzz_pass passed, $fuzz_fail failed"
echo "$(( lit_pass + unit_pass + san_pass + fuzz_pass )) passed, $(( lit_fail + unit_fail + san_fail + fuzz_fail )) failed"
[ "$lit_status" -eq 0 ] && [ "$unit_status" -eq 0 ] && [ "$san_status" -eq 0 ] &&
  [ "$fuzz_status" -eq 0 ]
