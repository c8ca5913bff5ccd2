#!/usr/bin/env bash
# Two builds of qfx against PyTorch 1.13 in one run, for a change that must
# keep qfx's speed: per model, bench/flow.py once (PyTorch) and bench_flow of
# each build on the same files (as bench/run.sh: get_default_qconfig_mapping
# ("onednn"), native BackendConfig, 8 calibration batches of 4), then a table
# of prepare + convert and calibration, each as seconds and as the ratio
# PyTorch / qfx, before and after.
#   bench/before_after.sh BEFORE_BUILD AFTER_BUILD [REPEATS] [MODELS...]
# e.g. build the old commit with `git worktree add /tmp/old OLD && cmake -S /tmp/old -B /tmp/old/build && cmake --build /tmp/old/build --target bench_flow`.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bench/before_after.sh BEFORE_BUILD AFTER_BUILD [REPEATS] [MODELS...]" >&2; exit 2; }
before=$1 after=$2
repeats=${3:-5}
shift $(( $# > 3 ? 3 : $# ))
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet18 resnet50 mobilenet_v2 mobilenet_v3_large shufflenet_v2_x1_0 fashion_cnn)
here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results="$work/results.jsonl"

for model in "${models[@]}"; do
  echo "bench: $model" >&2
  "$python" "$here/make_inputs.py" "$model" "$work" "$here/../examples/fashion_mnist/fashion_cnn.pt"
  theirs=$("$python" "$here/flow.py" "$model" "$work/$model.pt" "$work/calib.pt" "$work/eval.pt" "$repeats")
  old=$("$before/bin/bench_flow" "$work/$model.pt" "$work/calib.pt" "$work/eval.pt" "$work/${model}_before.pt" "$repeats")
  new=$("$after/bin/bench_flow" "$work/$model.pt" "$work/calib.pt" "$work/eval.pt" "$work/${model}_after.pt" "$repeats")
  echo "{\"model\": \"$model\", \"pytorch\": $theirs, \"before\": $old, \"after\": $new}" >>"$results"
done

"$python" - "$results" "$before" "$after" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print(f"before: {sys.argv[2]}, after: {sys.argv[3]}; medians in seconds, x = PyTorch / qfx\n")
print('| model | PyTorch prepare+convert | before | x | after | x | PyTorch calibrate | before | x | after | x |')
print('|---|---|---|---|---|---|---|---|---|---|---|')
med = lambda x, k: x[k]['median']
pc = lambda x: med(x, 'prepare') + med(x, 'convert')
for r in rows:
    p, b, a = r['pytorch'], r['before'], r['after']
    cells = [r['model'], f"{pc(p):.4f}", f"{pc(b):.4f}", f"{pc(p) / pc(b):.1f}", f"{pc(a):.4f}", f"{pc(p) / pc(a):.1f}",
             f"{med(p, 'calibrate'):.4f}", f"{med(b, 'calibrate'):.4f}", f"{med(p, 'calibrate') / med(b, 'calibrate'):.1f}",
             f"{med(a, 'calibrate'):.4f}", f"{med(p, 'calibrate') / med(a, 'calibrate'):.1f}"]
    print('| ' + ' | '.join(cells) + ' |')
PY
