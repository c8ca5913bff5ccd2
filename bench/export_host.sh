#!/usr/bin/env bash
# What the exported file's robustness costs, one run (bench_export_host):
# latency of the onednn export with pointwise convolutions as quantized::linear
# (qfx's default) against LibTorch's convolution, and the time of the
# run-once check of the written model. Prints one JSON line per model and a
# Markdown table (docs/benchmarks.md).
#   bench/export_host.sh [BUILD_DIR] [MODELS...]
set -euo pipefail
build=${1:-build}
shift $(( $# > 1 ? 1 : $# ))
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet18 mobilenet_v2 resnet50 fashion_cnn)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for model in "${models[@]}"; do
  /usr/bin/python3 "$here/make_inputs.py" "$model" "$work" "$here/../examples/fashion_mnist/fashion_cnn.pt"
  echo "{\"model\": \"$model\", \"result\": $("$build/bin/bench_export_host" "$work/$model.pt" "$work/calib.pt" "$work/eval.pt" "$work")}"
done | tee "$work/rows.jsonl"
/usr/bin/python3 - "$work/rows.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("\n| model | batch 1, 1 thread | batch 8, 1 thread | batch 1, 2 threads | batch 8, 2 threads | check (load + one batch) |")
print("|---|---|---|---|---|---|")
for r in rows:
    lat = r["result"]["latency"]
    cells = [f"{1e3 * lat[k]['conv_s']:.2f} → {1e3 * lat[k]['linear_s']:.2f} ms ({100 * (lat[k]['ratio'] - 1):+.1f}%)"
             for k in ("b1_t1", "b8_t1", "b1_t2", "b8_t2")]
    check = r["result"]["check_s"]
    print(f"| {r['model']} | " + " | ".join(cells) + f" | {1e3 * check:.0f} ms of {1e3 * r['result']['export_checked_s']:.0f} ms |")
PY
