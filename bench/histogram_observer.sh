#!/usr/bin/env bash
# HistogramObserver: forward on 8 batches of 1x64x112x112 activations plus
# calculate_qparams, qfx (C++) against PyTorch 1.13 (Python), in one run, with
# 1 and 2 threads. Prints medians, spreads, the ratio, and whether the qparams
# agree (qfx vs 1.13 with the upstream histc range fix, docs/divergences.md).
#   bench/histogram_observer.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -c "
import torch
g = torch.Generator().manual_seed(0)
batches = [torch.relu(torch.randn(1, 64, 112, 112, generator=g) * (1 + 0.25 * i)) - 0.1 * i for i in range(8)]
torch.save(batches, '$work/inputs.pt')"
echo "| threads | PyTorch median s (min-max) | qfx median s (min-max) | speed-up | same qparams |"
echo "|---|---|---|---|---|"
for threads in 1 2; do
  theirs=$("$python" "$here/histogram_observer.py" "$work/inputs.pt" "$threads" 7)
  ours=$("$build/bin/bench_histogram_observer" "$work/inputs.pt" "$threads" 7)
  "$python" - "$theirs" "$ours" "$threads" <<'PY'
import json, sys
t, o, threads = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
same = t['scale'] == o['scale'] and t['zero_point'] == o['zero_point']
print(f"| {threads} | {t['median']:.4f} ({t['min']:.4f}-{t['max']:.4f}) | {o['median']:.4f} ({o['min']:.4f}-{o['max']:.4f})"
      f" | {t['median'] / o['median']:.1f}x | {'yes' if same else 'NO'} |")
PY
done
