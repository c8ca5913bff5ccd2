#!/usr/bin/env bash
# `make demo`'s job, checked: the bundled model's float top-1 on the 10,000
# Fashion-MNIST test images is at least 90%, both int8 models are within 0.5
# points of it and at most a third of its size on disk.
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
grep -q '^int8-onednn' "$out/summary.txt"
echo "demo checks passed"
