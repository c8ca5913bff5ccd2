#!/usr/bin/env bash
# Every example of README.md, run: the ```sh blocks after Quick start as one
# script (set -e, from a scratch directory that sees the repository's
# examples/, with qfx on PATH), the ```cpp block must be
# examples/api_tour/main.cpp and its program runs, the ```cmake lines are those
# of examples/cpp_api/CMakeLists.txt (which the install test builds). The
# Quick start block's `make demo` / `make test` are Makefile targets (the demo
# test runs the demo's script; `make test` is this suite). The ```python
# blocks (PyTorch 2) run too when PT2_PYTHON is given (make test-pt2).
#   readme_test.sh QFX_BINARY API_TOUR_BINARY SOURCE_DIR PYTHON [PT2_PYTHON]
set -euo pipefail
qfx=$1
api_tour=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
source_dir=$3
python=$4
pt2_python=${5:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$python" - "$source_dir/README.md" "$work" <<'PY'
import os, re, sys
readme, work = open(sys.argv[1]).read(), sys.argv[2]
blocks = re.findall(r'^```(\w*)\n(.*?)^```', readme, re.M | re.S)
sh = [body for lang, body in blocks if lang == 'sh']
assert sh and all(re.match(r'make (demo|test)\b', l) for l in sh[0].splitlines()), 'Quick start block'
assert len(sh) >= 3, 'CLI examples'
open(os.path.join(work, 'examples.sh'), 'w').write('set -euo pipefail\n' + '\n'.join(sh[1:]))
cpp = [body for lang, body in blocks if lang == 'cpp']
assert len(cpp) == 1, 'one C++ block'
open(os.path.join(work, 'tour.cpp'), 'w').write(cpp[0])
py = [body for lang, body in blocks if lang == 'python']
assert py, 'the PyTorch 2 example'
open(os.path.join(work, 'examples.py'), 'w').write('\n'.join(py))
cmake = [body for lang, body in blocks if lang == 'cmake']
open(os.path.join(work, 'cmake.txt'), 'w').write(''.join(cmake))
PY

for target in demo test; do grep -q "^$target:" "$source_dir/Makefile"; done
cmp "$work/tour.cpp" "$source_dir/examples/api_tour/main.cpp" || { echo "README's C++ block is not examples/api_tour/main.cpp"; exit 1; }
while read -r line; do
  [ -z "$line" ] || grep -qF -- "$line" "$source_dir/examples/cpp_api/CMakeLists.txt" ||
    { echo "README cmake line not in examples/cpp_api/CMakeLists.txt: $line"; exit 1; }
done <"$work/cmake.txt"

mkdir "$work/run" "$work/bin"
ln -s "$source_dir/examples" "$work/run/examples"
ln -s "$source_dir/tools" "$work/run/tools"
ln -s "$(cd "$(dirname "$qfx")" && pwd)/$(basename "$qfx")" "$work/bin/qfx"
(cd "$work/run" && PATH="$work/bin:$PATH" bash "$work/examples.sh") >"$work/log.txt" 2>&1 ||
  { tail -30 "$work/log.txt"; echo "a README example failed"; exit 1; }
if [ -n "$pt2_python" ]; then
  (cd "$work/run" && PATH="$work/bin:$PATH" "$pt2_python" "$work/examples.py") >"$work/log_py.txt" 2>&1 ||
    { tail -30 "$work/log_py.txt"; echo "the README's PyTorch 2 example failed"; exit 1; }
  [ -s "$work/run/net_int8.pt" ] || { echo "README's PyTorch 2 example did not write net_int8.pt"; exit 1; }
  echo "README's PyTorch 2 example ran"
fi
for f in cnn_int8.pt quantize.json quantize.html float.json int8.json compare.json report.json report.html \
         cnn_qat.pt graph.json logits.pt onednn_qconfig.json qnnpack.json backends.md cnn_custom.pt \
         cnn_int8.onnx cnn_float.onnx int8_onnx.json float_onnx.json cnn_pt2.txt cnn_pt2_int8.pt pt2_int8.json; do
  [ -s "$work/run/$f" ] || { echo "README example did not write $f"; exit 1; }
done
"$python" - "$work/run" <<'PY'
import json, os, sys, torch
run = sys.argv[1]
r = json.load(open(os.path.join(run, 'report.json')))
assert [m['name'] for m in r['models']] == ['float', 'int8'] and r['compare']['layers'], r.keys()
logits = torch.load(os.path.join(run, 'logits.pt'))
assert logits.shape == (8, 10), logits.shape
# the ONNX examples: both models ran in ONNX Runtime on the 10,000 test images
f, q = (json.load(open(os.path.join(run, n))) for n in ('float_onnx.json', 'int8_onnx.json'))
assert f['items'] == q['items'] == 10000 and f['top1'] > 0.9 and f['top1'] - q['top1'] < 0.01, (f, q)
PY

(cd "$work/run" && "$api_tour" >"$work/tour.txt" 2>&1) || { cat "$work/tour.txt"; echo "api_tour failed"; exit 1; }
grep -q '^fc2: SQNR [0-9.]* dB$' "$work/tour.txt" && [ -s "$work/run/fashion_cnn_int8.pt" ] &&
  [ -s "$work/run/fashion_cnn_pt2_int8.pt" ] ||
  { cat "$work/tour.txt"; echo "api_tour output"; exit 1; }
echo "README examples passed: $(grep -c '^qfx ' "$work/examples.sh") qfx commands, the C++ tour, the CMake lines"
