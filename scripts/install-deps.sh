#!/usr/bin/env bash
# Installs every Debian package that building, testing and the demo of qfx need.
# Idempotent and non-interactive: does nothing when all packages are present,
# otherwise runs `apt-get update` once and installs what is missing.
set -euo pipefail

packages=(
  build-essential cmake make pkg-config
  libtorch-dev            # tensors, autograd, quantized kernels, TorchScript
  nlohmann-json3-dev      # configs and reports
  libcli11-dev            # command line
  libgtest-dev libgmock-dev
  libbenchmark-dev
  libgoogle-perftools-dev # tcmalloc for qfx's programs (QFX_TCMALLOC)
  zlib1g-dev              # gzipped IDX data
  libstb-dev              # PNG/JPEG decoding (stb_image)
  libopenblas0-pthread    # optimized BLAS for LibTorch's float path
  python3-torch python3-torchvision   # test oracle only
  dataset-fashion-mnist   # real data for the demo
  chromium                # renders the HTML report in its test
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}; run as root (or with sudo)" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
