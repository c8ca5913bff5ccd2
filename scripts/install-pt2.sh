#!/usr/bin/env bash
# The PyTorch 2 toolchain of `make test-pt2` and the .pt2 benchmarks: a
# virtual environment from PyPI with the pinned torch, torchvision, torchao,
# transformers, onnx and onnxruntime of tests/pt2/requirements.txt (CPU use;
# PyPI's torch wheel needs its CUDA runtime libraries even so). Debian's
# python3-torch 1.13 stays the FX oracle; this is the PyTorch 2 oracle.
#   install-pt2.sh [VENV [REQUIREMENTS]]   (default $QFX_PT2_VENV, else /opt/qfx-pt2;
#   tests/pt2/requirements-2.5.txt makes the PyTorch 2.5 venv of the flat-layout fixtures)
# Prints the venv's python. Nothing is done when it is already complete.
set -euo pipefail
venv=${1:-${QFX_PT2_VENV:-/opt/qfx-pt2}}
here=$(cd "$(dirname "$0")/.." && pwd)
requirements=${2:-"$here/tests/pt2/requirements.txt"}
stamp="$venv/.qfx-requirements"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && cmp -s "$stamp" "$requirements"; then
  echo "$venv/bin/python"
  exit 0
fi
if ! /usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends python3-venv >&2
fi
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv" >&2
"$venv/bin/pip" install --quiet --disable-pip-version-check pip==26.3 >&2
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$requirements" >&2
modules=torch,torchvision,torchao,transformers,onnx,onnxruntime
grep -q '^torchvision==' "$requirements" || modules=torch,numpy
"$venv/bin/python" -c "import $modules" >&2
cp "$requirements" "$stamp"
echo "$venv/bin/python"
