#===- scripts/test_counts.sh - pass and fail counts of lit and ctest -----===#
# SPDX-License-Identifier: Apache-2.0
#
# Sourced by scripts/test.sh and scripts/test-sanitize.sh.
#
#   count_results LIT_LOG LIT_STATUS UNIT_LOG UNIT_STATUS
#
# sets lit_pass, lit_fail (lit's Failed, Unresolved, Unexpectedly Passed
# and Timed Out), unit_pass and unit_fail (ctest's summary). A suite that
# exited non-zero without a failure in its summary (it did not run at all)
# counts one failure.

count_label() { # count_label LABEL FILE: lit's "  Label: N (..%)" lines
  sed -n "s/^ *$1 *: *\([0-9]*\).*/\1/p" "$2" | tail -1
}

count_results() {
  local n kind unit_total
  lit_pass=$(( $(count_label Passed "$1" || echo 0) + 0 ))
  lit_fail=0
  for kind in Failed Unresolved 'Unexpectedly Passed' 'Timed Out'; do
    n=$(count_label "$kind" "$1")
    lit_fail=$(( lit_fail + ${n:-0} ))
  done
  unit_total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$3" | tail -1)
  unit_fail=$(sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' "$3" | tail -1)
  unit_total=${unit_total:-0}
  unit_fail=${unit_fail:-0}
  unit_pass=$(( unit_total - unit_fail ))
  [ "$2" -ne 0 ] && [ "$lit_fail" -eq 0 ] && lit_fail=1
  [ "$4" -ne 0 ] && [ "$unit_fail" -eq 0 ] && unit_fail=1
  return 0
}
