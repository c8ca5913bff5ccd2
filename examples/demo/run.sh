#!/usr/bin/env bash
# The demo: the bundled Fashion-MNIST classifier (trained by qfx,
# examples/fashion_mnist/train.cpp) quantized with qfx four ways, every model
# evaluated on the 10,000 test images (top-1, size on disk, latency):
#   int8-onednn / int8-qnnpack: post-training quantization, calibrated on
#     1,024 training images;
#   dynamic-int8: dynamic quantization (int8 Linear layers, activation qparams
#     computed per batch, convolutions float), no calibration;
#   qat-int8: prepare_qat_fx, one epoch of fine-tuning on the 60,000 training
#     images with fake quantization, convert_fx (onednn);
#   int8-pt2: the same classifier exported by PyTorch 2 (torch.export, .pt2),
#     quantized as int8-onednn (the same top-1);
#   int8-onnx: the onednn quantization written as ONNX QDQ and run by ONNX
#     Runtime (npm's onnxruntime-node, tools/ort/qfx_ort.js).
# Then the per-layer comparison of the onednn model with the float one, and
# report.json / report.html (self-contained) combining all of it.
#   run.sh QFX_BINARY [OUT_DIR]   (OUT_DIR default: demo-out)
set -euo pipefail
qfx=$1
out=${2:-demo-out}
here=$(cd "$(dirname "$0")/.." && pwd)
model="$here/fashion_mnist/fashion_cnn.pt"
data=/usr/share/datasets/fashion-mnist
train="$data/train-images-idx3-ubyte.gz"
test="$data/t10k-images-idx3-ubyte.gz"
norm=(--mean 0.2860 --std 0.3530)
mkdir -p "$out"

echo "== float model: $model"
"$qfx" eval "$model" --data "$test" "${norm[@]}" --json "$out/float.json"
for engine in onednn qnnpack; do
  backend=native
  [ "$engine" = qnnpack ] && backend=qnnpack
  echo
  echo "== int8 for $engine: qfx quantize (backend $backend, default qconfig mapping, 32 x 32 training images)"
  "$qfx" quantize "$model" -o "$out/fashion_cnn_int8_$engine.pt" --engine "$engine" --backend "$backend" \
    --calib "$train" "${norm[@]}" --batch-size 32 --calib-batches 32 --seed 0 --report "$out/quantize_$engine.json"
  "$qfx" eval "$out/fashion_cnn_int8_$engine.pt" --engine "$engine" --data "$test" "${norm[@]}" \
    --json "$out/int8_$engine.json"
done

echo
echo "== int8 from PyTorch 2: the same classifier saved by torch.export.save (fashion_cnn.pt2, tests/pt2/make_fixtures.py),"
echo "   quantized with the int8-onednn settings"
"$qfx" quantize "$here/fashion_mnist/fashion_cnn.pt2" -o "$out/fashion_cnn_int8_pt2.pt" --engine onednn \
  --calib "$train" "${norm[@]}" --batch-size 32 --calib-batches 32 --seed 0
"$qfx" eval "$out/fashion_cnn_int8_pt2.pt" --engine onednn --data "$test" "${norm[@]}" --json "$out/int8_pt2.json"

echo
echo "== int8 as ONNX QDQ: qfx quantize -o fashion_cnn_int8.onnx (the onednn run's settings), run by ONNX Runtime"
"$qfx" quantize "$model" -o "$out/fashion_cnn_int8.onnx" --calib "$train" "${norm[@]}" --batch-size 32 \
  --calib-batches 32 --seed 0
node "$here/../tools/ort/qfx_ort.js" eval "$out/fashion_cnn_int8.onnx" "$test" "$data/t10k-labels-idx1-ubyte.gz" \
  --mean 0.2860 --std 0.3530 --json "$out/int8_onnx.json"

echo
echo "== dynamic int8: qfx quantize --dynamic (Linear layers int8, qparams per batch; convolutions stay float)"
"$qfx" quantize "$model" -o "$out/fashion_cnn_dynamic_int8.pt" --dynamic --report "$out/quantize_dynamic.json"
"$qfx" eval "$out/fashion_cnn_dynamic_int8.pt" --data "$test" "${norm[@]}" --json "$out/dynamic_int8.json"

echo
echo "== QAT int8: qfx quantize --qconfig qat --train (1 epoch, Adam 1e-5, batches of 64)"
"$qfx" quantize "$model" -o "$out/fashion_cnn_qat_int8.pt" --qconfig qat --train "$train" "${norm[@]}" \
  --batch-size 64 --seed 0 --epochs 1 --lr 1e-5 --report "$out/quantize_qat.json"
"$qfx" eval "$out/fashion_cnn_qat_int8.pt" --data "$test" "${norm[@]}" --json "$out/qat_int8.json"

echo
echo "== per-layer comparison: float vs int8-onednn on 1,024 test images"
"$qfx" compare "$model" "$out/fashion_cnn_int8_onednn.pt" --data "$test" "${norm[@]}" --batch-size 256 \
  --json "$out/compare_onednn.json"

"$qfx" report --title "qfx demo: Fashion-MNIST CNN, float vs int8" --quantize "$out/quantize_onednn.json" \
  --compare "$out/compare_onednn.json" --eval "float=$out/float.json" --eval "int8-onednn=$out/int8_onednn.json" \
  --eval "int8-qnnpack=$out/int8_qnnpack.json" --eval "dynamic-int8=$out/dynamic_int8.json" \
  --eval "qat-int8=$out/qat_int8.json" --eval "int8-onnx=$out/int8_onnx.json" \
  --json "$out/report.json" --html "$out/report.html"

summary_table() {
  # the summary table, from the eval reports
  printf '\n%-14s %8s %10s %16s\n' model top-1 size latency
  for row in float int8_onednn int8_pt2 int8_qnnpack int8_onnx dynamic_int8 qat_int8; do
    json="$out/$row.json"
    file=$(grep -o '"model": "[^"]*"' "$json" | cut -d'"' -f4)
    top1=$(grep -o '"top1": [0-9.e-]*' "$json" | awk '{printf "%.2f%%", $2 * 100}')
    ms=$(grep -o '"latency_ms_per_image": [0-9.e-]*' "$json" | awk '{printf "%.4f ms/image", $2}')
    size=$(stat -c %s "$file" | awk '{printf "%.0f KB", $1 / 1024}')
    printf '%-14s %8s %10s %16s\n' "${row/_/-}" "$top1" "$size" "$ms"
  done
}
summary_table | tee "$out/summary.txt"
echo
echo "reports: $out/report.html (open in a browser), $out/report.json, $out/summary.txt"
