#!/usr/bin/env bash
# The mobile engine's ReLU6 networks (docs/divergences.md, "qnnpack's clamp
# family"): the Fashion-MNIST MobileNetV2-style network with ReLU6, quantized
# for qnnpack, keeps its accuracy in the file qfx writes, run by qfx (torch::jit)
# and by PyTorch 1.13; with the kernel workarounds off the same file falls to
# chance, and the accuracy-driven fallback finds the faulty kernels and only
# them. The fallback also meets a budget on a network whose damage is spread
# over many layers (rescale_expansions.py), and a budget it cannot meet exits 1
# with only the report written.
#
#   relu6_test.sh QFX FIXTURES PYTHON SOURCE_DIR
set -u
source "$(dirname "$0")/common.sh"
cli_test_args "$@"

fmnist=/usr/share/datasets/fashion-mnist
test_images="$fmnist/t10k-images-idx3-ubyte.gz"
model="$source_dir/examples/fashion_mnist/fashion_mobilenet_relu6.pt"
norm=(--mean 0.2860 --std 0.3530)
calib=(--calib "$fmnist/train-images-idx3-ubyte.gz" "${norm[@]}" --batch-size 32 --calib-batches 32 --seed 0 -q)
eval_args=(--data "$test_images" "${norm[@]}" --batch-size 500 -q)

# top1 FILE: the top-1 of an eval JSON, in percent
top1() { "$python" -c 'import json, sys; print(100 * json.load(open(sys.argv[1]))["top1"])' "$1"; }

"$qfx" eval "$model" "${eval_args[@]}" --json "$work/float.json" >/dev/null || fail "eval of the float model exited $?"
for workarounds in on off; do
  "$qfx" quantize "$model" -o "$work/q_$workarounds.pt" --engine qnnpack --qconfig default:qnnpack "${calib[@]}" \
    --kernel-workarounds "$workarounds" || fail "quantize --kernel-workarounds $workarounds exited $?"
  "$qfx" eval "$work/q_$workarounds.pt" --engine qnnpack "${eval_args[@]}" --json "$work/q_$workarounds.json" \
    >/dev/null || fail "eval of the $workarounds model exited $?"
done
float=$(top1 "$work/float.json") on=$(top1 "$work/q_on.json") off=$(top1 "$work/q_off.json")
echo "float $float%, qnnpack int8 $on% (workarounds off: $off%)"
"$python" -c 'import sys; f, on, off = map(float, sys.argv[1:]); assert f - on < 1 and off < 20, (f, on, off)' \
  "$float" "$on" "$off" || fail "qnnpack int8 is not within a point of float, or the kernel fault is gone"

# PyTorch 1.13 runs the written files on its own qnnpack kernels: the same counts as qfx eval
"$python" - "$test_images" "$work/q_on.pt" "$work/q_on.json" "$work/q_off.pt" "$work/q_off.json" <<'PY' \
  || fail "PyTorch's run of the written files differs from qfx eval"
import gzip, json, sys
import numpy as np, torch
torch.backends.quantized.engine = 'qnnpack'
torch.set_num_threads(1)
images = sys.argv[1]
with gzip.open(images) as f:
    pixels = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
with gzip.open(images.replace('images-idx3', 'labels-idx1')) as f:
    labels = torch.from_numpy(np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64))
x = (torch.from_numpy(pixels.astype(np.float32)) / 255 - 0.2860) / 0.3530
for model_path, report in zip(sys.argv[2::2], sys.argv[3::2]):
    model = torch.jit.load(model_path)
    with torch.no_grad():
        correct = int(sum((model(b).argmax(1) == l).sum() for b, l in zip(x.split(500), labels.split(500))))
    ours = json.load(open(report))
    assert ours['items'] == 10000 and round(ours['top1'] * 10000) == correct, (model_path, ours, correct)
PY

# With the workarounds off, --max-drop finds the kernel faults: it leaves every clamp float (each more than a
# step away from its reference in LibTorch's kernel), little else, and meets the budget.
"$qfx" quantize "$model" -o "$work/fallback.pt" --engine qnnpack --qconfig default:qnnpack "${calib[@]}" \
  --kernel-workarounds off --eval "$test_images" --eval-batches 8 --max-drop 0.5 --report "$work/fallback.json" \
  || fail "--max-drop with the workarounds off exited $?"
"$python" - "$work/fallback.json" <<'PY' || fail "the fallback left float more or other than the faulty clamps"
import json, sys
fallback = json.load(open(sys.argv[1]))['fallback']
assert fallback['met'] and not fallback['out_of_trials'], fallback
nodes = fallback['float_nodes']
faults = [n for n in nodes if n['kernel_gap_steps'] > 1]
# the network's 11 ReLU6 (traced as hardtanh), and little else: the budget is 0.5 points of 256 images
assert len(faults) == 11 and all('hardtanh' in n['target'] or 'relu6' in n['target'] for n in faults), nodes
assert len(nodes) - len(faults) <= 2, nodes
print(f"fallback, workarounds off: {len(faults)} clamps and {len(nodes) - len(faults)} other node(s) float, "
      f"{fallback['trials']} trials "
      f"of {fallback['candidates']} candidates, top-1 {fallback['quantized']:.2f} -> {fallback['final']:.2f}")
PY

# qfx sensitivity says "kernel fault", not "sensitive layer": the 11 clamps rank first, each a fault
"$qfx" sensitivity "$model" --engine qnnpack --qconfig default:qnnpack --kernel-workarounds off \
  --calib "$fmnist/train-images-idx3-ubyte.gz" "${norm[@]}" --calib-batches 8 --data "$test_images" --limit-batches 2 \
  -q --json "$work/sensitivity.json" >/dev/null || fail "sensitivity with the workarounds off exited $?"
"$python" - "$work/sensitivity.json" <<'PY' || fail "sensitivity does not rank the faulty clamps first"
import json, sys
nodes = json.load(open(sys.argv[1]))['nodes']
first = nodes[:11]
assert all(n['kernel_fault'] and ('hardtanh' in n['target'] or 'relu6' in n['target']) for n in first), first
assert not any(n['kernel_fault'] for n in nodes[11:]), nodes[11:]
PY

# Damage spread over layers: the ReLU network with its expansion channels rescaled (same function)
"$python" "$source_dir/examples/fashion_mnist/rescale_expansions.py" \
  "$source_dir/examples/fashion_mnist/fashion_mobilenet.pt" "$work/rescaled.pt" 0 || fail "rescale_expansions.py exited $?"
"$qfx" quantize "$work/rescaled.pt" -o "$work/rescaled_int8.pt" --engine qnnpack --qconfig default:qnnpack "${calib[@]}" \
  --eval "$test_images" --eval-batches 8 --max-drop 0.5 --report "$work/rescaled.json" \
  || fail "--max-drop on the rescaled network exited $?"
"$python" - "$work/rescaled.json" <<'PY' || fail "the fallback did not meet the budget on the rescaled network"
import json, sys
fallback = json.load(open(sys.argv[1]))['fallback']
assert fallback['met'] and fallback['quantized'] < fallback['float'] - 20, fallback
assert fallback["float"] - fallback["final"] <= 0.5 and len(fallback['float_nodes']) >= 2, fallback
print(f"fallback, rescaled: {len(fallback['float_nodes'])} nodes float, {fallback['trials']} trials "
      f"of {fallback['candidates']} candidates, top-1 {fallback['quantized']:.2f} -> {fallback['final']:.2f} "
      f"(float {fallback['float']:.2f})")
PY

# A budget that cannot be met within one float node: exit 1, one line, only the report; --best-effort writes
# the best found
missed=(--eval "$test_images" --eval-batches 1 --max-drop 0.01 --max-float-nodes 1 --max-trials 8)
"$qfx" quantize "$work/rescaled.pt" -o "$work/missed.pt" --engine qnnpack --qconfig default:qnnpack "${calib[@]}" \
  "${missed[@]}" --report "$work/missed.json" 2>"$work/missed.err"
[ $? -eq 1 ] || fail "a missed budget did not exit 1"
tail -1 "$work/missed.err" | grep -qE -- "--max-drop 0.01 not met: float top-1 .* with [01] node\(s\) float after [0-9]+ trials.*; only .*missed.json written" \
  || fail "a missed budget's error: $(cat "$work/missed.err")"
[ ! -e "$work/missed.pt" ] && [ ! -e "$work/missed.qconfig.json" ] || fail "a missed budget wrote the model or its mapping"
"$python" -c 'import json, sys; f = json.load(open(sys.argv[1]))["fallback"]; assert not f["met"] and f["trials"] <= 8, f' \
  "$work/missed.json" || fail "the missed budget's report does not say so"
"$qfx" quantize "$work/rescaled.pt" -o "$work/missed.pt" --engine qnnpack --qconfig default:qnnpack "${calib[@]}" \
  "${missed[@]}" --best-effort || fail "--best-effort exited $?"
[ -s "$work/missed.pt" ] && [ -s "$work/missed.qconfig.json" ] || fail "--best-effort did not write the model and its mapping"

finish "ReLU6"
