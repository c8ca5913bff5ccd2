#!/usr/bin/env bash
# Distributed calibration and QAT on this machine, in one run:
#   - calibration throughput (images/s; the calibrate stage of `qfx quantize
#     --report`, every rank done) of resnet18 (torchvision, seeded weights,
#     256 random 224x224 images in batches of 8) and the demo CNN (32,000
#     Fashion-MNIST training images in batches of 32), default qconfig
#     (HistogramObserver), with 1 rank and with 2 ranks (--workers 2), each
#     rank on one thread; beside it one process on two threads (medians of
#     three runs), and the machine's ceiling: the one-rank time over that of
#     two independent one-thread processes, each on half the batches, run at
#     once (nothing shared, nothing exchanged);
#   - the merge's cost (merge_s) and its scaling on loopback with 2, 4 and 8
#     ranks (demo CNN, 8 ranks on 2 cores);
#   - top-1 of the demo CNN calibrated by 1 and by 2 ranks (histogram merge);
#   - QAT of the demo model (1 epoch on the 60,000 training images, Adam
#     1e-5): one process with batches of 64 against 2 ranks with batches of
#     32 each (the same items per step), top-1 on the 10,000 test images.
# Prints the Markdown tables of docs/benchmarks.md ("Distributed").
#   bench/dist.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
qfx="$build/bin/qfx"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data=/usr/share/datasets/fashion-mnist
demo="$here/../examples/fashion_mnist/fashion_cnn.pt"
norm=(--mean 0.2860 --std 0.3530)

"$python" - "$work" <<'EOF'
import sys, warnings
import torch, torchvision
warnings.simplefilter('ignore')
work = sys.argv[1]
g = torch.Generator().manual_seed(1)
torch.save([torch.rand(8, 3, 224, 224, generator=g) for _ in range(32)], f'{work}/calib.pt')
torch.manual_seed(0)
m = torchvision.models.resnet18().eval()
torch.jit.trace(m, torch.rand(1, 3, 224, 224, generator=g)).save(f'{work}/resnet18.pt')
EOF

# field REPORT KEY: a timing of a quantize report.
field() { "$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["timings"].get(sys.argv[2], 0))' "$1" "$2"; }

# calibrate NAME MODEL IMAGES THREADS WORKERS ARGS...: prints "seconds merge_seconds".
calibrate() {
  local name=$1 model=$2 threads=$4 workers=$5
  shift 5
  OMP_NUM_THREADS=$threads "$qfx" quantize "$model" -o "$work/$name.pt" --report "$work/$name.json" -q \
    --workers "$workers" "$@"
  echo "$(field "$work/$name.json" calibrate_s) $(field "$work/$name.json" merge_s)"
}

echo "| model | images | 1 rank, 1 thread | 2 ranks, 1 thread each | speed-up | ceiling | 1 process, 2 threads | merge (2 ranks) |"
echo "|---|---|---|---|---|---|---|---|"
# median NAME MODEL THREADS WORKERS ARGS...: "seconds merge_seconds", the medians of three runs.
median() {
  local runs=()
  for i in 1 2 3; do runs+=("$(calibrate "$1" "$2" 0 "$3" "$4" "${@:5}")"); done
  "$python" -c 'import statistics, sys
pairs = [tuple(map(float, run.split())) for run in sys.argv[1:]]
print(*(statistics.median(p[k] for p in pairs) for k in (0, 1)))' "${runs[@]}"
}

# pair NAME MODEL ARGS...: two independent one-thread processes at once,
# each on half the batches (its own copy of the work, nothing exchanged): the
# machine's ceiling for two ranks. Prints the slower one's calibrate seconds.
pair() {
  local name=$1 model=$2
  shift 2
  for i in 1 2; do
    OMP_NUM_THREADS=1 "$qfx" quantize "$model" -o "$work/${name}_$i.pt" --report "$work/${name}_$i.json" -q "$@" &
  done
  wait
  "$python" -c 'import json, sys
print(max(json.load(open(f))["timings"]["calibrate_s"] for f in sys.argv[1:]))' "$work/${name}_1.json" \
    "$work/${name}_2.json"
}

row() {
  local name=$1 model=$2 images=$3 batches=$4
  shift 4
  read -r one _ < <(median "${name}_1" "$model" 1 1 "$@" --calib-batches "$batches")
  read -r two merge < <(median "${name}_2" "$model" 1 2 "$@" --calib-batches "$batches")
  read -r threads _ < <(median "${name}_t" "$model" 2 1 "$@" --calib-batches "$batches")
  local halves=()
  for i in 1 2 3; do halves+=("$(pair "${name}_h" "$model" "$@" --calib-batches $((batches / 2)))"); done
  "$python" - "$name" "$images" "$one" "$two" "$threads" "$merge" "${halves[@]}" <<'EOF'
import statistics, sys
name, images = sys.argv[1], int(sys.argv[2])
one, two, threads, merge = map(float, sys.argv[3:7])
ceiling = one / statistics.median(map(float, sys.argv[7:]))
print(f"| {name} | {images} | {images / one:.1f} img/s | {images / two:.1f} img/s | {one / two:.2f}x "
      f"| {ceiling:.2f}x | {images / threads:.1f} img/s | {merge * 1000:.0f} ms |")
EOF
}
row resnet18 "$work/resnet18.pt" 256 32 --calib "$work/calib.pt"
row fashion_cnn "$demo" 32000 1000 --calib "$data/train-images-idx3-ubyte.gz" "${norm[@]}" --batch-size 32

echo
echo "| demo CNN, HistogramObserver, 1,000 calibration batches | top-1 (10,000 test images) |"
echo "|---|---|"
for name in fashion_cnn_1 fashion_cnn_2; do
  "$qfx" eval "$work/$name.pt" --data "$data/t10k-images-idx3-ubyte.gz" "${norm[@]}" -q --json "$work/$name.eval.json" \
    >/dev/null
  "$python" - "${name/fashion_cnn_/}" "$work/$name.eval.json" <<'EOF'
import json, sys
print(f"| {sys.argv[1]} rank(s) | {100 * json.load(open(sys.argv[2]))['top1']:.2f}% |")
EOF
done

echo
echo "| ranks (loopback, demo CNN, HistogramObserver) | merge |"
echo "|---|---|"
for n in 2 4 8; do
  read -r _ merge < <(calibrate "scale_$n" "$demo" 8192 1 "$n" --calib "$data/train-images-idx3-ubyte.gz" \
    "${norm[@]}" --batch-size 32 --calib-batches 256)
  "$python" -c 'import sys; print(f"| {sys.argv[1]} | {float(sys.argv[2]) * 1000:.0f} ms |")' "$n" "$merge"
done

echo
echo "| QAT, demo CNN, 1 epoch | train time | top-1 |"
echo "|---|---|---|"
for setup in "1 64" "2 32"; do
  read -r ranks batch <<<"$setup"
  "$qfx" quantize "$demo" -o "$work/qat$ranks.pt" --qconfig qat --train "$data/train-images-idx3-ubyte.gz" \
    "${norm[@]}" --batch-size "$batch" --seed 0 --epochs 1 --lr 1e-5 --workers "$ranks" -q \
    --report "$work/qat$ranks.json"
  "$qfx" eval "$work/qat$ranks.pt" --data "$data/t10k-images-idx3-ubyte.gz" "${norm[@]}" -q \
    --json "$work/qat$ranks.eval.json" >/dev/null
  "$python" - "$ranks" "$batch" "$work/qat$ranks.json" "$work/qat$ranks.eval.json" <<'EOF'
import json, sys
ranks, batch, report, evaluation = sys.argv[1:]
train = json.load(open(report))["timings"]["train_s"]
top1 = 100 * json.load(open(evaluation))["top1"]
print(f"| {ranks} rank(s), batches of {batch} | {train:.1f} s | {top1:.2f}% |")
EOF
done
