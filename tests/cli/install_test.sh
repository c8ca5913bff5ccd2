#!/usr/bin/env bash
# The installed package: `cmake --install` of the build tree, then
# examples/cpp_api built against it with find_package(qfx) and run on the
# tutorial's model. Its converted code must be PyTorch's convert_fx code for
# that model and backend (oracle fixture), its int8 file must run in Python,
# and the installed CLI must run.
#   install_test.sh BUILD_DIR SOURCE_DIR FIXTURES_DIR PYTHON
set -euo pipefail
build=$1
source_dir=$2
fixtures=$3
python=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
"$work/prefix/bin/qfx" --help >/dev/null
cmake -S "$source_dir/examples/cpp_api" -B "$work/example" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/example" -j 2 >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
"$work/example/tutorial_flow" "$fixtures/tutorial_no_bn.pt" "$work/tutorial_int8.pt" >"$work/code.txt"
"$python" - "$work/code.txt" "$fixtures/prepare.json" "$work/tutorial_int8.pt" <<'PY'
import json, sys, torch
code = open(sys.argv[1]).read()
record = [r for r in json.load(open(sys.argv[2])) if r['case'] == 'tutorial_no_bn'][0]
assert code == record['lowered']['code'], code
torch.backends.quantized.engine = 'onednn'
y = torch.jit.load(sys.argv[3])(torch.rand(1, 3, 10, 10))
assert y.shape == (1, 3, 8, 1), y.shape
PY
echo "installed package checks passed"
