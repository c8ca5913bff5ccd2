#!/usr/bin/env bash
# `make demo`'s job, checked: the bundled model's float top-1 on the 10,000
# Fashion-MNIST test images is at least 90%, both PTQ int8 models are within
# 0.5 points of it and at most a third of its size on disk, the dynamic int8
# model (Linear layers only) is within 0.5 points and smaller than float, the
# QAT int8 model is at most 0.2 points below it, the int8 model exported as ONNX
# QDQ and run by ONNX Runtime is within 0.1 points of the TorchScript int8
# model's top-1, and report.json holds the models and
# the per-layer comparison (report.html is checked in a browser by
# report_html_test.sh).
#   demo_test.sh QFX_BINARY SOURCE_DIR PYTHON
set -euo pipefail
qfx=$1
source_dir=$2
python=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$source_dir/examples/demo/run.sh" "$qfx" "$out" >"$out/log.txt" 2>&1 || { cat "$out/log.txt"; exit 1; }
"$python" - "$out" "$source_dir/examples/fashion_mnist/fashion_cnn.pt" <<'PY'
import json, os, sys
out, model = sys.argv[1], sys.argv[2]
float_ = json.load(open(os.path.join(out, 'float.json')))
assert float_['items'] == 10000 and float_['top1'] >= 0.90, float_
for engine in ('onednn', 'qnnpack'):
    q = json.load(open(os.path.join(out, f'int8_{engine}.json')))
    assert q['items'] == 10000 and float_['top1'] - q['top1'] <= 0.005, (engine, float_['top1'], q['top1'])
    size = os.path.getsize(os.path.join(out, f'fashion_cnn_int8_{engine}.pt'))
    assert size * 3 <= os.path.getsize(model), (engine, size)
    print(f"{engine}: top-1 {q['top1']:.4f} (float {float_['top1']:.4f}), {size} bytes")
PY
"$python" - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
float_ = json.load(open(os.path.join(out, 'float.json')))
qat = json.load(open(os.path.join(out, 'qat_int8.json')))
dynamic = json.load(open(os.path.join(out, 'dynamic_int8.json')))
assert dynamic['items'] == 10000 and float_['top1'] - dynamic['top1'] <= 0.005, (float_['top1'], dynamic['top1'])
print(f"dynamic: top-1 {dynamic['top1']:.4f} (float {float_['top1']:.4f})")
modes = {n['name']: n['mode'] for n in json.load(open(os.path.join(out, 'quantize_dynamic.json')))['nodes']}
assert modes['fc1'] == modes['fc2'] == 'dynamic' and modes['conv1'] == modes['conv2'] == 'none', modes
assert qat['items'] == 10000 and float_['top1'] - qat['top1'] <= 0.002, (float_['top1'], qat['top1'])
print(f"qat: top-1 {qat['top1']:.4f} (float {float_['top1']:.4f})")
report = json.load(open(os.path.join(out, 'report.json')))
assert [m['name'] for m in report['models']] == ['float', 'int8-onednn', 'int8-qnnpack', 'dynamic-int8', 'qat-int8', 'int8-onnx'], report['models']
onnx = json.load(open(os.path.join(out, 'int8_onnx.json')))
onednn = json.load(open(os.path.join(out, 'int8_onednn.json')))
# Without VNNI, ONNX Runtime's u8 x s8 kernels (VPMADDUBSW) saturate, as its quantization docs say, and so do
# onednn's convolutions and linears (docs/divergences.md): each runtime is then checked against float alone.
flags = open('/proc/cpuinfo').read().split()
vnni = 'avx512_vnni' in flags or 'avx_vnni' in flags
if vnni:
    assert onnx['items'] == 10000 and abs(onnx['top1'] - onednn['top1']) <= 0.001, (onnx['top1'], onednn['top1'])
else:
    assert onnx['items'] == 10000 and float_['top1'] - onnx['top1'] <= 0.01, (onnx['top1'], float_['top1'])
print(f"onnx: top-1 {onnx['top1']:.4f} in ONNX Runtime (TorchScript int8 {onednn['top1']:.4f})")
pt2 = json.load(open(os.path.join(out, 'int8_pt2.json')))
# the same classifier from torch.export's .pt2 quantizes to the same model as from TorchScript
assert pt2['items'] == 10000 and pt2['top1'] == onednn['top1'], (pt2['top1'], onednn['top1'])
print(f"pt2: top-1 {pt2['top1']:.4f} (from TorchScript {onednn['top1']:.4f})")
layers = [l['float_node'] for l in report['compare']['layers']]
assert layers[0] == 'relu' and layers[-1] == 'fc2', layers  # conv1 fused with its relu, ..., the last linear
assert all(l['sqnr_db'] > 25 for l in report['compare']['layers']), report['compare']['layers']
assert os.path.getsize(os.path.join(out, 'report.html')) > 100000  # Chart.js inlined
PY
for row in int8-onednn int8-pt2 int8-onnx dynamic-int8 qat-int8; do grep -q "^$row" "$out/summary.txt"; done
echo "demo checks passed"
