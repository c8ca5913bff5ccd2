#!/usr/bin/env bash
# Runs qfx's libFuzzer targets (tests/fuzz/targets/), built by `make fuzz`.
#
#   scripts/fuzz.sh run BUILD SECONDS JOBS [TARGET...]   each target SECONDS, JOBS at once
#   scripts/fuzz.sh merge BUILD [TARGET...]              minimizes what the runs found into tests/fuzz/corpus/
#
# A run starts from the committed corpus (tests/fuzz/corpus/TARGET) and
# what earlier runs found (BUILD/fuzz/corpus/TARGET), adds what it finds to
# the latter, and writes crashing inputs to BUILD/fuzz/artifacts/. One line
# per run goes to BUILD/fuzz/runs.tsv: date, target, seconds run (a run
# ends early at its first crash), executions,
# coverage (edges), features, corpus size, crash file or "-".
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
mode="$1" build="$(cd "$2" && pwd)"
shift 2
work="$build/fuzz"
mkdir -p "$work/corpus" "$work/artifacts" "$work/logs"

export ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=1:${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$root/tests/sanitize/ubsan.supp"

all_targets() { for f in "$root"/tests/fuzz/targets/*.cpp; do basename "$f" .cpp; done; }

run_one() {  # TARGET SECONDS
  local target="$1" seconds="$2" log="$work/logs/$1.log"
  mkdir -p "$work/corpus/$target"
  local status=0 start
  start=$(date +%s)
  "$build/bin/fuzz_$target" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=6144 -malloc_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/$target-" \
    "$work/corpus/$target" "$root/tests/fuzz/corpus/$target" >"$log" 2>&1 || status=$?
  local execs cov ft corpus crash
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corpus=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$target" "$(($(date +%s) - start))" "${execs:-0}" "${cov:-0}" \
    "${ft:-0}" "${corpus:-0}" "${crash:--}" | tee -a "$work/runs.tsv"
  [ "$status" -eq 0 ] || { echo "fuzz: $target found a crash (exit $status): $log" >&2; return 1; }
}

merge_one() {  # TARGET: the committed corpus becomes the minimal set covering it and what runs found
  local target="$1" merged="$work/merged-$1"
  rm -rf "$merged" && mkdir -p "$merged" "$work/corpus/$target"
  "$build/bin/fuzz_$target" -merge=1 "$merged" "$root/tests/fuzz/corpus/$target" "$work/corpus/$target" \
    >"$work/logs/$target-merge.log" 2>&1
  rm -rf "$root/tests/fuzz/corpus/$target" && mv "$merged" "$root/tests/fuzz/corpus/$target"
  echo "fuzz: $target: $(ls "$root/tests/fuzz/corpus/$target" | wc -l) inputs in tests/fuzz/corpus/$target"
}

case "$mode" in
  run)
    seconds="$1" jobs="$2"
    shift 2
    targets=("$@")
    [ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(all_targets)
    export -f run_one
    export work root build
    printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {} '"$seconds"
    ;;
  merge)
    targets=("$@")
    [ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(all_targets)
    for t in "${targets[@]}"; do merge_one "$t"; done
    ;;
  *)
    echo "usage: scripts/fuzz.sh run BUILD SECONDS JOBS [TARGET...] | merge BUILD [TARGET...]" >&2
    exit 2
    ;;
esac
