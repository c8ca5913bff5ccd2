#!/usr/bin/env bash
# The demo: the bundled Fashion-MNIST classifier (trained by qfx,
# examples/fashion_mnist/train.cpp) quantized with qfx for the onednn and
# qnnpack engines, calibrated on 1,024 training images, and every model
# evaluated on the 10,000 test images: top-1, size on disk, latency.
#   run.sh QFX_BINARY [OUT_DIR]   (OUT_DIR default: demo-out)
set -euo pipefail
qfx=$1
out=${2:-demo-out}
here=$(cd "$(dirname "$0")/.." && pwd)
model="$here/fashion_mnist/fashion_cnn.pt"
data=/usr/share/datasets/fashion-mnist
norm=(--mean 0.2860 --std 0.3530)
mkdir -p "$out"

echo "== float model: $model"
"$qfx" eval "$model" --data "$data/t10k-images-idx3-ubyte.gz" "${norm[@]}" --json "$out/float.json"
for engine in onednn qnnpack; do
  backend=native
  [ "$engine" = qnnpack ] && backend=qnnpack
  echo
  echo "== int8 for $engine: qfx quantize (backend $backend, default qconfig mapping, 32 x 32 training images)"
  "$qfx" quantize "$model" -o "$out/fashion_cnn_int8_$engine.pt" --engine "$engine" --backend "$backend" \
    --calib "$data/train-images-idx3-ubyte.gz" "${norm[@]}" --batch-size 32 --calib-batches 32 --seed 0 \
    --report "$out/quantize_$engine.json"
  "$qfx" eval "$out/fashion_cnn_int8_$engine.pt" --engine "$engine" --data "$data/t10k-images-idx3-ubyte.gz" \
    "${norm[@]}" --json "$out/int8_$engine.json"
done

summary_table() {
  # the summary table, from the eval reports
  printf '\n%-14s %8s %10s %16s\n' model top-1 size latency
  for row in "float:float.json:$model" "int8-onednn:int8_onednn.json:$out/fashion_cnn_int8_onednn.pt" \
             "int8-qnnpack:int8_qnnpack.json:$out/fashion_cnn_int8_qnnpack.pt"; do
    IFS=: read -r name json file <<<"$row"
    top1=$(grep -o '"top1": [0-9.e-]*' "$out/$json" | awk '{printf "%.2f%%", $2 * 100}')
    ms=$(grep -o '"latency_ms_per_image": [0-9.e-]*' "$out/$json" | awk '{printf "%.4f ms/image", $2}')
    size=$(stat -c %s "$file" | awk '{printf "%.0f KB", $1 / 1024}')
    printf '%-14s %8s %10s %16s\n' "$name" "$top1" "$size" "$ms"
  done
}
summary_table | tee "$out/summary.txt"
echo
echo "reports: $out/float.json, $out/int8_*.json, $out/quantize_*.json (per-node qparams), $out/summary.txt"
