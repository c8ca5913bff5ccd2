#!/usr/bin/env bash
# The demo: import the bundled TorchScript model into qfx's FX graph, show
# it, and run it in the qfx interpreter on 16 Fashion-MNIST test images.
#   run.sh QFX_BINARY
set -euo pipefail
qfx=$1
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== qfx print $here/fashion_cnn.pt"
"$qfx" print "$here/fashion_cnn.pt"
echo
echo "== qfx run (16 Fashion-MNIST test images)"
start=$(date +%s%N)
"$qfx" run "$here/fashion_cnn.pt" --input "$here/fashion_test16.pt"
"$qfx" run "$here/fashion_cnn.pt" --input "$here/fashion_test16.pt" -o "$out/logits.pt"
end=$(date +%s%N)
echo "logits written to a file that torch.load reads: $(stat -c %s "$out/logits.pt") bytes"
echo "two imports and runs took $(((end - start) / 1000000)) ms"
