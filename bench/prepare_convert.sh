#!/usr/bin/env bash
# prepare_fx + convert_fx (lowered to quantized kernels), qfx (C++) against PyTorch 1.13
# (Python), in one run: torchvision models with random weights, the native
# BackendConfig and get_default_qconfig_mapping("onednn"), one calibration
# batch between prepare and convert (not timed). Prints medians, spreads and
# the ratio PyTorch / qfx.
#   bench/prepare_convert.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
build=${1:-build}
repeats=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| model | nodes (PyTorch / qfx) | PyTorch prepare s | qfx prepare s | speed-up | PyTorch convert s | qfx convert s | speed-up | qfx import s |"
echo "|---|---|---|---|---|---|---|---|---|"
for model in resnet18 resnet50 mobilenet_v2; do
  "$python" -c "
import torch, torchvision
torch.manual_seed(0)
m = getattr(torchvision.models, '$model')().eval()
x = torch.rand(1, 3, 224, 224, generator=torch.Generator().manual_seed(1))
torch.jit.trace(m, (x,)).save('$work/$model.pt')
torch.save(x, '$work/input.pt')" 2>/dev/null
  theirs=$("$python" "$here/prepare_convert.py" "$model" "$work/input.pt" onednn "$repeats")
  ours=$("$build/bin/bench_prepare_convert" "$work/$model.pt" "$work/input.pt" onednn "$repeats" 2>/dev/null)
  "$python" - "$model" "$theirs" "$ours" <<'PY'
import json, sys
name, t, o = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
def cell(s):
    return f"{s['median']:.4f} ({s['min']:.4f}-{s['max']:.4f})"
print(f"| {name} | {t['nodes']} / {o['nodes']} | {cell(t['prepare'])} | {cell(o['prepare'])} | "
      f"{t['prepare']['median'] / o['prepare']['median']:.1f}x | {cell(t['convert'])} | {cell(o['convert'])} | "
      f"{t['convert']['median'] / o['convert']['median']:.1f}x | {o['import']['median']:.3f} |")
PY
done
