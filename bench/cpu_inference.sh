#!/usr/bin/env bash
#===- bench/cpu_inference.sh - dist-opt against onnxruntime on the CPU ----===#
# SPDX-License-Identifier: Apache-2.0
#
# Exports four PyTorch models (bench/export_bench_models.py: an MLP
# 784-512-512-10 at batch 64, a 2-layer GPT-style LM with d=256, 4 heads and
# sequence 64 at batch 4, a small residual CNN on 3x32x32 at batch 8 and a
# DLRM-style model with 8 embedding tables at batch 128), compiles each with
# dist-opt (timed) and, for 1 and 2 threads, times the executable
# (`--bench N --threads T`) beside onnxruntime-node on the same model and
# inputs (bench/ort_bench.js: CPU execution provider, graph optimization level
# 'all', intraOpNumThreads T, interOpNumThreads 1, sequential execution, 10
# warm-up runs then N timed ones). The outputs of both are compared
# (bench/bench_util.py compare: rtol 1e-4, atol 1e-5). Prints one table per
# thread count (median latency, speedup = onnxruntime ms / dist-opt ms, max
# abs and relative output difference, compile seconds) and the geometric mean
# speedup. A model that dist-opt fails to compile or run is reported in the
# table and the others still run.
#
# This machine is shared and noisy (one run can be 20% off), so each model is
# timed in ROUNDS rounds (default 3) that alternate dist-opt and
# onnxruntime, each of ITERATIONS / ROUNDS timed runs; the table shows the
# median of the rounds' medians (and of their p90s) for each. With
# ROUND_MS set (milliseconds, default 0), the rounds after the first make
# as many timed runs as fill ROUND_MS on each side at the first round's
# median latency (the slower side's), at least ITERATIONS / ROUNDS and at
# most 1000: a model of a few milliseconds is then timed over a stretch of
# the machine's time, not over a few runs that one burst of another
# tenant's work can take whole.
#
#   bench/cpu_inference.sh [ITERATIONS [WORK_DIR]]
#
# ITERATIONS defaults to 100 and WORK_DIR to /tmp/dist-bench. Environment:
# DIST_OPT (default build/bin/dist-opt), THREADS (default "1 2"), ROUNDS
# (default 3), WARMUP (onnxruntime's warm-up runs per round, default 10;
# the executables always make 3), MODELS
# (default "mlp gpt resnet dlrm"), ROUND_MS (above), DYNAMIC_BATCH (1:
# export every model with its batch dimension left open,
# bench/export_bench_models.py --dynamic-batch; use another WORK_DIR). Installs onnxruntime-node into
# bench/node_modules (the version bench/package.json pins) when it is missing.
# Exits with 0 if every model compiled, ran and matched onnxruntime, 1 if not
# and 2 on a usage or setup error.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$PWD
iters=${1:-100}
work=${2:-/tmp/dist-bench}
py=/usr/bin/python3
dist_opt=${DIST_OPT:-$root/build/bin/dist-opt}
read -ra threads <<<"${THREADS:-1 2}"
read -ra models <<<"${MODELS:-mlp gpt resnet dlrm}"
warmup=${WARMUP:-10}
step_timeout=600
rounds=${ROUNDS:-3}
round_ms=${ROUND_MS:-0}

die() {
  echo "error: $*" >&2
  exit 2
}
[[ $iters =~ ^[1-9][0-9]*$ ]] || die "ITERATIONS must be a positive integer, not '$iters'"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, not '$rounds'"
[[ $warmup =~ ^[0-9]+$ ]] || die "WARMUP must be a count, not '$warmup'"
[[ $round_ms =~ ^[0-9]+$ ]] || die "ROUND_MS must be a whole number of milliseconds, not '$round_ms'"
per_round=$(((iters + rounds - 1) / rounds))
command -v node >/dev/null || die "node is missing (apt-get install nodejs npm)"
mkdir -p "$work" || die "cannot create $work"
work=$(cd "$work" && pwd)

#===----------------------------------------------------------------------===#
# Setup: onnxruntime-node and the models
#===----------------------------------------------------------------------===#

if ! node -e "require('$root/bench/node_modules/onnxruntime-node')" 2>/dev/null; then
  echo "installing onnxruntime-node into bench/node_modules" >&2
  npm install --prefix bench --no-audit --no-fund \
    --onnxruntime-node-install=skip >&2 || die "npm install failed"
fi

echo "exporting models to $work/models" >&2
dynamic=()
[[ ${DYNAMIC_BATCH:-0} == 1 ]] && dynamic=(--dynamic-batch)
$py bench/export_bench_models.py --out "$work" --model "${models[@]}" \
  "${dynamic[@]}" >&2 || die "exporting the models failed"

# Seconds since the epoch with nanoseconds.
now() { date +%s.%N; }
elapsed() { awk -v s="$1" -v e="$2" 'BEGIN { printf "%.2f", e - s }'; }
first_line() { grep -m1 . "$1" | cut -c1-200 | tr '\t' ' '; }
latency() { grep -o "latency_ms_$1=[0-9.eE+-]*" "$2" | head -1 | cut -d= -f2; }
# The median of the numbers given as arguments (empty for none).
median() {
  printf '%s\n' "$@" | sort -g |
    awk '{a[NR] = $1} END {if (NR) print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
# runs_for BUDGET_MS LEAST MS...: the timed runs that fill BUDGET_MS at the
# largest of the latencies MS (LEAST at least, 1000 at most).
runs_for() {
  local budget=$1 least=$2
  shift 2
  printf '%s\n' "$@" | sort -g | tail -1 |
    awk -v b="$budget" -v l="$least" '{n = ($1 > 0) ? int(b / $1 + 0.999) : l;
      if (n < l) n = l; if (n > 1000) n = 1000; print n}
      END {if (!NR) print l}'
}

#===----------------------------------------------------------------------===#
# Compile each model once
#===----------------------------------------------------------------------===#

declare -A dist_state compile_s
failures=0
for m in "${models[@]}"; do
  out=$work/build/$m
  rm -rf "$out"
  mkdir -p "$out"
  compile_s[$m]=-
  if [[ ! -x $dist_opt ]]; then
    echo "error: no dist-opt at $dist_opt (build it or set DIST_OPT)" >&2
    dist_state[$m]="no dist-opt"
    failures=$((failures + 1))
    continue
  fi
  echo "compiling $m" >&2
  start=$(now)
  timeout "$step_timeout" "$dist_opt" "$work/models/$m.onnx" -o "$out" \
    --name "$m" >"$out/compile.log" 2>&1
  rc=$?
  end=$(now)
  if [[ $rc -eq 0 && -x $out/$m && -f $out/$m.json ]]; then
    compile_s[$m]=$(elapsed "$start" "$end")
    dist_state[$m]=ok
    continue
  fi
  failures=$((failures + 1))
  case $rc in
    0) why="exit 0 but no $m executable or $m.json" ;;
    3) why="not supported" ;;
    124) why="timed out after ${step_timeout}s" ;;
    *) why="exit $rc" ;;
  esac
  echo "error: dist-opt failed to compile $m ($why): $(first_line "$out/compile.log")" >&2
  echo "  command: $dist_opt $work/models/$m.onnx -o $out --name $m" >&2
  echo "  log: $out/compile.log" >&2
  dist_state[$m]="compile failed"
done

#===----------------------------------------------------------------------===#
# Run
#===----------------------------------------------------------------------===#

results=$work/results.tsv
: >"$results"
rm -rf "$work/out"
for t in "${threads[@]}"; do
  for m in "${models[@]}"; do
    echo "running $m, threads=$t" >&2
    dist_res=$work/out/t$t/dist/$m
    ort_res=$work/out/t$t/ort/$m
    mkdir -p "$dist_res" "$ort_res"
    dist_status=${dist_state[$m]} dist_ms=- dist_p90=-
    ort_status=ok ort_ms=- ort_p90=-
    max_abs=- max_rel=- ok=- ort_vs_torch=-

    dist_args=()
    if [[ $dist_status == ok ]]; then
      if ! mapfile -t dist_args < <($py bench/bench_util.py dist-args \
          "$work/build/$m/$m.json" "$work/inputs/$m" 2>"$dist_res.err") ||
          [[ -s $dist_res.err ]]; then
        dist_status="bad manifest"
        echo "error: $m: $(first_line "$dist_res.err")" >&2
        failures=$((failures + 1))
      fi
    fi
    exe=$work/build/$m/$m
    dist_meds=() dist_p90s=() ort_meds=() ort_p90s=()
    n=$per_round
    for ((round = 1; round <= rounds; round++)); do
      if ((round == 2 && round_ms > 0)); then
        n=$(runs_for "$round_ms" "$per_round" "${dist_meds[@]}" "${ort_meds[@]}")
      fi
      if [[ $dist_status == ok ]]; then
        timeout "$step_timeout" "$exe" "${dist_args[@]}" --output-dir "$dist_res" \
          --threads "$t" --bench "$n" >"$dist_res.log" 2>"$dist_res.err"
        rc=$?
        med=$(latency median "$dist_res.log")
        if [[ $rc -ne 0 || -z $med ]]; then
          [[ $rc -ne 0 ]] && dist_status="run failed" || dist_status="no latency"
          echo "error: $m (threads=$t): $exe exited with $rc: $(first_line "$dist_res.err")" >&2
          failures=$((failures + 1))
        else
          dist_meds+=("$med")
          dist_p90s+=("$(latency p90 "$dist_res.log")")
        fi
      fi
      if [[ $ort_status == ok ]]; then
        timeout "$step_timeout" node bench/ort_bench.js "$work/models/$m.onnx" \
          "$work/inputs/$m" "$ort_res" --threads "$t" --iters "$n" \
          --warmup "$warmup" >"$ort_res.log" 2>"$ort_res.err"
        rc=$?
        med=$(latency median "$ort_res.log")
        if [[ $rc -ne 0 || -z $med ]]; then
          echo "error: onnxruntime failed on $m (threads=$t): $(first_line "$ort_res.err")" >&2
          ort_status="ort failed"
          failures=$((failures + 1))
        else
          ort_meds+=("$med")
          ort_p90s+=("$(latency p90 "$ort_res.log")")
        fi
      fi
    done
    if [[ $dist_status == ok ]]; then
      dist_ms=$(median "${dist_meds[@]}") dist_p90=$(median "${dist_p90s[@]}")
    fi
    if [[ $ort_status == ok ]]; then
      ort_ms=$(median "${ort_meds[@]}") ort_p90=$(median "${ort_p90s[@]}")
      ort_vs_torch=$($py bench/bench_util.py compare "$ort_res" \
        "$work/torch/$m" | grep -o 'max_abs=[^ ]*' | cut -d= -f2)
    fi

    if [[ $dist_status == ok && $ort_status == ok ]]; then
      cmp=$($py bench/bench_util.py compare "$dist_res" "$ort_res")
      max_abs=$(grep -o 'max_abs=[^ ]*' <<<"$cmp" | cut -d= -f2)
      max_rel=$(grep -o 'max_rel=[^ ]*' <<<"$cmp" | cut -d= -f2)
      ok=$(grep -o 'ok=[01]' <<<"$cmp" | cut -d= -f2)
      if [[ $ok != 1 ]]; then
        echo "error: $m (threads=$t): dist-opt's outputs differ from onnxruntime's: $cmp" >&2
        failures=$((failures + 1))
      fi
    fi
    printf '%s\t' "$t" "$m" "$dist_status" "${dist_ms:--}" "${dist_p90:--}" \
      "$ort_status" "${ort_ms:--}" "${ort_p90:--}" "${max_abs:--}" \
      "${max_rel:--}" "${ok:--}" "${compile_s[$m]}" >>"$results"
    printf '%s\n' "${ort_vs_torch:--}" >>"$results"
  done
done

$py bench/bench_util.py report "$results" || exit 2
echo
echo "results: $results; outputs under $work/out"
[[ $failures -eq 0 ]] || exit 1
