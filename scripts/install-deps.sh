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
  libonnx-dev             # ONNX protobuf types, checker and shape inference (ONNX export)
  libre2-dev              # module_name_regex matched in linear time
  libgloo-dev libfmt-dev libgoogle-glog-dev iproute2  # c10d's ProcessGroupGloo headers and log level; network namespaces for the two-host test
  nodejs                  # runs ONNX Runtime (npm's onnxruntime-node) in tests, demo and bench
  clang-14 libclang-rt-14-dev  # make fuzz: libFuzzer targets with ASan and UBSan
)

# ONNX Runtime's CPU build from npm (onnxruntime-node, pinned in tools/ort/package.json)
# into tools/ort/node_modules. Its install script would fetch GPU files from outside
# the registry: ONNXRUNTIME_NODE_INSTALL=skip keeps it to the CPU runtime npm carries.
install_ort() {
  local ort_dir
  ort_dir="$(cd "$(dirname "$0")/.." && pwd)/tools/ort"
  if [ -f "$ort_dir/node_modules/onnxruntime-node/package.json" ]; then
    return 0
  fi
  echo "install-deps: installing onnxruntime-node into $ort_dir"
  (cd "$ort_dir" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error)
}

# Debian's nodejs brings npm as a package of its own; other builds of nodejs carry it.
if ! command -v npm >/dev/null 2>&1; then
  packages+=(npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  install_ort
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
install_ort
