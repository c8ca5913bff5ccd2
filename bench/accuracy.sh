#!/usr/bin/env bash
# The accuracy table of docs/accuracy.md: the Fashion-MNIST models trained by
# qfx (examples/fashion_mnist: the demo CNN, the MobileNetV2-style network
# and the small ViT), quantized every way qfx offers, top-1 on the 10,000 test images,
# and the seconds each `qfx quantize` took (import to export, calibration on
# 1,024 training images: 32 batches of 32, seed 0). Per-tensor rows use the
# qnnpack engine and its weight observer (MinMaxObserver, qint8, per-tensor
# symmetric) with the activation observer named; per-channel is onednn's
# default mapping; QAT fine-tunes one epoch. Prints the Markdown table, then
# the time of `qfx sensitivity` on each model against one float scoring pass.
#   bench/accuracy.sh [BUILD_DIR] [MODELS...]   (models: cnn mobilenet vit)
set -euo pipefail
build=${1:-build}
shift $(( $# > 0 ? 1 : 0 ))
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(cnn mobilenet vit)
here=$(cd "$(dirname "$0")/.." && pwd)
qfx="$build/bin/qfx"
data=/usr/share/datasets/fashion-mnist
norm=(--mean 0.2860 --std 0.3530)
calib=(--calib "$data/train-images-idx3-ubyte.gz" "${norm[@]}" --batch-size 32 --calib-batches 32 --seed 0 -q)
configs="$here/examples/configs"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

top1() {  # top1 MODEL ENGINE: top-1 in percent on the test set
  "$qfx" eval "$1" --engine "$2" --data "$data/t10k-images-idx3-ubyte.gz" "${norm[@]}" --batch-size 500 -q \
    --json "$work/eval.json" >/dev/null
  /usr/bin/python3 -c 'import json, sys; print("%.2f" % (100 * json.load(open(sys.argv[1]))["top1"]))' "$work/eval.json"
}

row() {  # row LABEL ENGINE QUANTIZE-ARGS...: quantizes, evaluates, prints a table row
  local label=$1 engine=$2
  shift 2
  local start end
  start=$(date +%s.%N)
  "$qfx" quantize "$model_file" -o "$work/q.pt" --engine "$engine" "$@" 2>"$work/err.txt"
  end=$(date +%s.%N)
  printf '| %s | %s | %s | %.1f |\n' "$model" "$label" "$(top1 "$work/q.pt" "$engine")" "$(echo "$end - $start" | bc)"
}

echo "| model | quantization | top-1 % | seconds |"
echo "|---|---|---|---|"
for model in "${models[@]}"; do
  model_file="$here/examples/fashion_mnist/fashion_$model.pt"
  printf '| %s | float | %s | |\n' "$model" "$(top1 "$model_file" onednn)"
  row "per-tensor, min/max" qnnpack "${calib[@]}" --qconfig "$configs/qnnpack_minmax.json"
  row "per-tensor, histogram (qnnpack default)" qnnpack "${calib[@]}"
  row "per-tensor, percentile 99.99" qnnpack "${calib[@]}" --qconfig "$configs/qnnpack_percentile.json"
  row "per-tensor, entropy" qnnpack "${calib[@]}" --qconfig "$configs/qnnpack_entropy.json"
  row "per-tensor, entropy, first conv min/max" qnnpack "${calib[@]}" --qconfig "$configs/qnnpack_entropy_first_minmax.json"
  row "per-tensor, MSE" qnnpack "${calib[@]}" --qconfig "$configs/qnnpack_mse.json"
  row "per-tensor, histogram + CLE" qnnpack "${calib[@]}" --equalize
  row "per-tensor, histogram + CLE + bias correction" qnnpack "${calib[@]}" --equalize --correct-bias
  row "per-tensor, histogram + CLE + AdaRound" qnnpack "${calib[@]}" --equalize --adaround
  row "per-channel (onednn default)" onednn "${calib[@]}"
  row "per-tensor, histogram, --max-drop 0.3" qnnpack "${calib[@]}" --eval "$data/t10k-images-idx3-ubyte.gz" \
    --max-drop 0.3 --write-qconfig "$work/fallback.json"
  row "QAT (qnnpack, 1 epoch)" qnnpack "${calib[@]}" --qconfig qat --train "$data/train-images-idx3-ubyte.gz"
done

# sensitivity of every node against one float scoring pass on the same data (the 10,000 test images)
for model in "${models[@]}"; do
  "$qfx" sensitivity "$here/examples/fashion_mnist/fashion_$model.pt" "${calib[@]}" \
    --data "$data/t10k-images-idx3-ubyte.gz" --json "$work/sensitivity.json" >/dev/null
  /usr/bin/python3 - "$model" "$work/sensitivity.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))
print('sensitivity %s: %d nodes, %d trials in %.1f s, one float pass %.2f s: %.1fx (%.0f%% of trial nodes shared)'
      % (sys.argv[1], len(r['nodes']), 2 * len(r['nodes']) + 1, r['seconds'], r['float_seconds'],
         r['seconds'] / r['float_seconds'], 100 * r['shared_nodes']))
PY
done
