#!/usr/bin/env bash
# ONNX Runtime on qfx's ONNX QDQ export against LibTorch on qfx's int8
# TorchScript and PyTorch's converted model, side by side in one run: for each
# model, one calibration (get_default_qconfig_mapping("onednn"), 8 batches of
# 4) made three ways by `qfx quantize` (int8 TorchScript for onednn; ONNX QDQ
# on the native BackendConfig; ONNX QDQ on the onnxruntime BackendConfig), the
# float model as ONNX (`qfx export`), then latency at batch 1 and 8 with 1 and
# 2 threads: PyTorch 1.13's converted GraphModule (bench/flow.py), LibTorch on
# the TorchScript files (bench_flow --latency), ONNX Runtime 1.30 (npm's
# onnxruntime-node, tools/ort/qfx_ort.js bench) on the ONNX files; top-1
# agreement is the demo's (make demo). Prints the Markdown table of
# docs/benchmarks.md ("ONNX Runtime") and writes bench/onnx_results.json.
#   bench/onnx.sh [BUILD_DIR] [MODELS...]
set -euo pipefail
build=${1:-build}
shift $(( $# > 0 ? 1 : 0 ))
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet18 resnet50 mobilenet_v2 mobilenet_v3_large fashion_cnn)
here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
qfx="$build/bin/qfx"
ort="$here/../tools/ort/qfx_ort.js"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results="$work/results.jsonl"

for model in "${models[@]}"; do
  echo "bench: $model" >&2
  "$python" "$here/make_inputs.py" "$model" "$work" "$here/../examples/fashion_mnist/fashion_cnn.pt"
  shape=1,3,224,224
  [ "$model" = fashion_cnn ] && shape=1,1,28,28
  m="$work/$model"
  theirs=$("$python" "$here/flow.py" "$model" "$m.pt" "$work/calib.pt" "$work/eval.pt" 1)
  "$qfx" quantize "$m.pt" -o "${m}_int8.pt" --calib "$work/calib.pt" -q
  "$qfx" quantize "$m.pt" -o "${m}_int8.onnx" --calib "$work/calib.pt" -q
  "$qfx" quantize "$m.pt" -o "${m}_int8_ort.onnx" --backend onnxruntime --calib "$work/calib.pt" -q
  "$qfx" export "$m.pt" -o "${m}_float.onnx" --input-shape "$shape"
  libtorch=$("$build/bin/bench_flow" --latency onednn "$m.pt" "${m}_int8.pt" "$work/eval.pt")
  ort_native=$(node "$ort" bench "${m}_int8.onnx" "$shape")
  ort_backend=$(node "$ort" bench "${m}_int8_ort.onnx" "$shape")
  ort_float=$(node "$ort" bench "${m}_float.onnx" "$shape")
  kernels=$(node "$ort" ops "${m}_int8.onnx" "$shape")
  echo "{\"model\": \"$model\", \"pytorch\": $theirs, \"libtorch\": $libtorch, \"ort_qdq\": $ort_native, \"ort_qdq_onnxruntime_backend\": $ort_backend, \"ort_float\": $ort_float, \"ort_kernels\": $kernels}" >>"$results"
done

"$python" - "$results" "$here/onnx_results.json" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
json.dump(rows, open(sys.argv[2], 'w'), indent=1)
def ms(x): return 1000 * x['median']
print('| model | batch, threads | PyTorch int8 | LibTorch int8 (qfx .pt) | ORT QDQ (qfx .onnx) | ORT QDQ, onnxruntime backend | ORT float | LibTorch / ORT QDQ |')
print('|---|---|---|---|---|---|---|---|')
for r in rows:
    for key in ('b1_t1', 'b1_t2', 'b8_t1', 'b8_t2'):
        batch, threads = key[1:].split('_t')
        pt = ms(r['pytorch']['latency']['int8_graph_module'][key])
        lt = ms(r['libtorch']['latency']['int8_script'][key])
        oq, ob, of = (ms(r[k][key]) for k in ('ort_qdq', 'ort_qdq_onnxruntime_backend', 'ort_float'))
        print(f"| {r['model']} | {batch}, {threads} | {pt:.2f} | {lt:.2f} | {oq:.2f} | {ob:.2f} | {of:.2f} | {lt / oq:.2f} |")
print()
for r in rows:
    print(f"{r['model']}: ONNX Runtime kernels of the QDQ file: {json.dumps(r['ort_kernels'])}")
PY
