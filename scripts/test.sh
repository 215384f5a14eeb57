#!/usr/bin/env bash
#===- scripts/test.sh - set up and run every test -------------------------===#
# SPDX-License-Identifier: Apache-2.0
#
# On a fresh Debian 12 machine: installs the dependencies, builds dist-opt and
# runs the lit suite (IR, importer, bad input, ONNX node tests, PyTorch
# models, mutation robustness) and the GoogleTest suites. Each suite prints
# its own summary; the last line is the total: `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1
scripts/build.sh || exit 1

lit_log=$(mktemp)
unit_log=$(mktemp)
trap 'rm -f "$lit_log" "$unit_log"' EXIT

echo "== lit =="
/usr/lib/llvm-22/bin/lit -sv build/test 2>&1 | tee "$lit_log"
lit_status=${PIPESTATUS[0]}
echo "== GoogleTest (ctest) =="
(cd build && ctest --output-on-failure -E '^lit$' 2>&1) | tee "$unit_log"
unit_status=${PIPESTATUS[0]}

count() { # count LABEL FILE: lit's "  Label: N (..%)" summary lines
  sed -n "s/^ *$1 *: *\([0-9]*\).*/\1/p" "$2" | tail -1
}
lit_pass=$(( $(count Passed "$lit_log" || echo 0) + 0 ))
lit_fail=0
for kind in Failed Unresolved 'Unexpectedly Passed' 'Timed Out'; do
  n=$(count "$kind" "$lit_log")
  lit_fail=$(( lit_fail + ${n:-0} ))
done
unit_total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$unit_log" | tail -1)
unit_fail=$(sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' "$unit_log" | tail -1)
unit_total=${unit_total:-0}
unit_fail=${unit_fail:-0}
unit_pass=$(( unit_total - unit_fail ))
# A suite that did not run at all counts as a failure.
[ "$lit_status" -ne 0 ] && [ "$lit_fail" -eq 0 ] && lit_fail=1
[ "$unit_status" -ne 0 ] && [ "$unit_fail" -eq 0 ] && unit_fail=1

echo "lit: $lit_pass passed, $lit_fail failed"
echo "GoogleTest: $unit_pass passed, $unit_fail failed"
echo "$(( lit_pass + unit_pass )) passed, $(( lit_fail + unit_fail )) failed"
[ "$lit_status" -eq 0 ] && [ "$unit_status" -eq 0 ]
