#!/usr/bin/env bash
#===- scripts/fuzz.sh - libFuzzer runs of every input reader --------------===#
# SPDX-License-Identifier: Apache-2.0
#
# Builds the fuzzers with clang-22, libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer in build-fuzz/ and runs each on a corpus seeded
# by scripts/fuzz_seeds.py (build-fuzz/corpus/<name>, kept between runs):
#   import      the ONNX importer (binary and text models)
#   npy         .npy inputs, data and checkpointed tensors
#   params      parameter files
#   checkpoint  checkpoint directories (latest, state.json, tensors)
#   cluster     cluster files (YAML and JSON)
#   plan        plan files, evaluated as dist-opt --plan does
#
#   scripts/fuzz.sh [--seconds S | --runs N] [NAME...]   (default: 60 s each)
#
# Prints one line per fuzzer (runs, seconds, corpus size) and exits non-zero
# if any finds a crash, a sanitizer report, a leak, a hang (10 s) or a broken
# property (FINDING: in its log); the input that did it lands in
# build-fuzz/artifacts/<name>/ and the log in build-fuzz/logs/<name>.log.
# Reproduce one with build-fuzz/bin/dist-<name>-fuzzer FILE.
set -uo pipefail
cd "$(dirname "$0")/.."
limit=(-max_total_time=60)
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) limit=(-max_total_time="$2"); shift 2 ;;
    --runs) limit=(-runs="$2"); shift 2 ;;
    -h|--help) sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
all=(import npy params checkpoint cluster plan)
[ ${#names[@]} -eq 0 ] && names=("${all[@]}")
for name in "${names[@]}"; do
  case " ${all[*]} " in
    *" $name "*) ;;
    *) echo "fuzz.sh: unknown fuzzer '$name' (expected: ${all[*]})" >&2
       exit 2 ;;
  esac
done

build=build-fuzz
if [ ! -f "$build/build.ninja" ]; then
  mkdir -p "$build"
  cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DDIST_SANITIZE=address,undefined -DDIST_ENABLE_FUZZER=ON \
    >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
fi
targets=()
for name in "${names[@]}"; do targets+=("dist-$name-fuzzer"); done
ninja -C "$build" -j"${DIST_JOBS:-2}" "${targets[@]}" >"$build/ninja.log" 2>&1 ||
  { tail -40 "$build/ninja.log"; exit 1; }

# Seeds for corpora that do not exist yet (plans from the build's dist-opt
# when there is one).
missing=()
for name in "${names[@]}"; do
  [ -d "$build/corpus/$name" ] || missing+=("$name")
done
if [ ${#missing[@]} -gt 0 ]; then
  DIST_OPT="$PWD/build/bin/dist-opt" /usr/bin/python3 scripts/fuzz_seeds.py \
    "$build/corpus" "${missing[@]}" || exit 1
fi

# The readers write scratch files: keep them in memory where possible.
[ -d /dev/shm ] && [ -w /dev/shm ] && export TMPDIR=/dev/shm
# (The runtime's default of slow unwinding, for Open MPI, is not wanted here.)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1:fast_unwind_on_malloc=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
[ -x /usr/lib/llvm-22/bin/llvm-symbolizer ] &&
  export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer
mkdir -p "$build/logs"
failed=0
for name in "${names[@]}"; do
  mkdir -p "$build/artifacts/$name"
  log="$build/logs/$name.log"
  start=$(date +%s)
  # The importer allocates what a model declares: cap memory per input.
  "$build/bin/dist-$name-fuzzer" "$build/corpus/$name" "${limit[@]}" \
    -timeout=10 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$name/" >"$log" 2>&1
  status=$?
  seconds=$(( $(date +%s) - start ))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(ls "$build/corpus/$name" | wc -l)
  if [ $status -eq 0 ] && ! grep -q "^FINDING:" "$log"; then
    echo "fuzz $name: ${runs:-0} runs in ${seconds} s, corpus $corpus, no finding"
  else
    failed=1
    echo "fuzz $name: FINDING after ${runs:-?} runs (log $log, inputs in $build/artifacts/$name/):"
    grep -m3 -E "^(FINDING|==[0-9]+==ERROR|SUMMARY)|runtime error" "$log" | sed 's/^/  /'
  fi
done
exit $failed
