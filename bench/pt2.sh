#!/usr/bin/env bash
# The .pt2 door against PyTorch 2, one run (bench/pt2.py): torch.export.load
# against qfx's import, torchao's PT2E prepare + convert against qfx's, and
# calibration, on resnet18, resnet50, mobilenet_v2, vit_b_16 and BERT-base.
# Installs the PyTorch 2 venv first (scripts/install-pt2.sh).
#   bench/pt2.sh [BUILD_DIR] [MODELS...]
set -euo pipefail
build=${1:-build}
shift $(( $# > 1 ? 1 : $# ))
here=$(cd "$(dirname "$0")" && pwd)
python=$("$here/../scripts/install-pt2.sh")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" "$here/pt2.py" "$build/bin/qfx" "$work" "$@"
