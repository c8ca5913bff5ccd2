#!/usr/bin/env bash
# qfx against PyTorch 1.13 FX quantization, side by side in one run: for each
# model, bench/flow.py (PyTorch: prepare_fx, calibration on 8 batches of 4,
# convert_fx, latency of the converted GraphModule) and bench_flow (qfx C++
# API: import, prepare_fx, calibration, convert_fx, export, latency of the
# exported TorchScript and of the interpreter), both with
# get_default_qconfig_mapping("onednn") on the native BackendConfig; and
# flow.py once more with the allocator of qfx's programs (tcmalloc, preloaded),
# so the allocator's share of the ratios shows.
# Writes bench/results.json and prints the Markdown tables of docs/benchmarks.md,
# then the scaling tables of bench_scaling (time per node, wall time per pass).
#   bench/run.sh [BUILD_DIR] [REPEATS] [MODELS...]
set -euo pipefail
build=${1:-build}
repeats=${2:-5}
shift $(( $# > 2 ? 2 : $# ))
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet18 resnet50 mobilenet_v2 mobilenet_v3_large shufflenet_v2_x1_0 fashion_cnn)
here=$(cd "$(dirname "$0")" && pwd)
# The float baseline needs an optimized BLAS behind LibTorch's libblas.so.3.
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 || true)
case "$blas" in
  *openblas*) ;;
  *) echo "bench/run.sh: libblas.so.3 is '$blas', not OpenBLAS: the float baseline would be Debian's reference BLAS (install libopenblas0-pthread)" >&2; exit 1 ;;
esac
python=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results="$work/results.jsonl"
tcmalloc=$(ldd "$build/bin/bench_flow" | awk '/libtcmalloc/ {print $3}')
[ -n "$tcmalloc" ] || { echo "bench/run.sh: $build/bin/bench_flow is not linked with tcmalloc (built with -DQFX_TCMALLOC=OFF?)" >&2; exit 1; }

for model in "${models[@]}"; do
  echo "bench: $model" >&2
  "$python" "$here/make_inputs.py" "$model" "$work" "$here/../examples/fashion_mnist/fashion_cnn.pt"
  theirs=$("$python" "$here/flow.py" "$model" "$work/$model.pt" "$work/calib.pt" "$work/eval.pt" "$repeats")
  # PyTorch again with qfx's allocator
  theirs_tcmalloc=$(LD_PRELOAD="$tcmalloc" "$python" "$here/flow.py" "$model" "$work/$model.pt" "$work/calib.pt" "$work/eval.pt" 1)
  ours=$("$build/bin/bench_flow" "$work/$model.pt" "$work/calib.pt" "$work/eval.pt" "$work/${model}_int8.pt" "$repeats")
  # qnnpack, and both engines again with OpenMP's passive wait policy
  qnnpack=$("$build/bin/bench_flow" "$work/$model.pt" "$work/calib.pt" "$work/eval.pt" "$work/${model}_qnnpack.pt" 1 qnnpack)
  passive=$(OMP_WAIT_POLICY=PASSIVE "$build/bin/bench_flow" --latency onednn "$work/$model.pt" "$work/${model}_int8.pt" "$work/eval.pt")
  qnnpack_passive=$(OMP_WAIT_POLICY=PASSIVE "$build/bin/bench_flow" --latency qnnpack "$work/$model.pt" "$work/${model}_qnnpack.pt" "$work/eval.pt")
  echo "{\"model\": \"$model\", \"pytorch\": $theirs, \"pytorch_tcmalloc\": $theirs_tcmalloc, \"qfx\": $ours, \"qfx_qnnpack\": $qnnpack, \"passive\": {\"onednn\": $passive, \"qnnpack\": $qnnpack_passive}}" >>"$results"
done

"$python" - "$results" "$here/results.json" "$repeats" "$blas" <<'PY'
import json, os, platform, sys
import torch
rows = [json.loads(line) for line in open(sys.argv[1])]
flags = next((l.split(':', 1)[1].split() for l in open('/proc/cpuinfo') if l.startswith('flags')), [])
cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), '?')
machine = {'cpu': cpu, 'cores': os.cpu_count(), 'python': platform.python_version(),
           'simd': [f for f in flags if f.startswith(('avx', 'fma', 'amx'))], 'repeats': int(sys.argv[3]),
           'blas': sys.argv[4], 'threads_default': torch.get_num_threads()}
json.dump({'machine': machine, 'models': rows}, open(sys.argv[2], 'w'), indent=1)

def s(x): return f"{x['median']:.4f} ({x['min']:.4f}-{x['max']:.4f})"
def lat(x): return x['median']
def ms(x): return f"{1000 * lat(x):.2f}"
def ms_spread(x): return f"{ms(x)} ({1000 * x['min']:.2f}-{1000 * x['max']:.2f})"
# the latency configurations: JSON key and "batch, threads"
CONFIGS = [(key, key[1:].replace('_t', ', ')) for key in ('b1_t1', 'b1_t2', 'b8_t1', 'b8_t2')]
print(f"Machine: {cpu}, {os.cpu_count()} cores, {' '.join(machine['simd'])}; BLAS {sys.argv[4]}; medians (min-max) of at least "
      f"{sys.argv[3]} runs, repeated until the median of prepare + convert moves by less than 5% "
      f"(runs PyTorch / qfx in the first column).\n")
print('| model (runs) | nodes | PyTorch prepare s | qfx prepare s | x | PyTorch calibrate s | qfx calibrate s | x | PyTorch convert s | qfx convert s | x | prepare+convert x | qfx import s | qfx export s |')
print('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
for r in rows:
    p, q = r['pytorch'], r['qfx']
    ratio = lambda k: p[k]['median'] / q[k]['median']
    pc = (p['prepare']['median'] + p['convert']['median']) / (q['prepare']['median'] + q['convert']['median'])
    print(f"| {r['model']} ({p['repeats']} / {q['repeats']}) | {p['nodes']} / {q['nodes']} | {s(p['prepare'])} | {s(q['prepare'])} | {ratio('prepare'):.1f} "
          f"| {s(p['calibrate'])} | {s(q['calibrate'])} | {ratio('calibrate'):.1f} | {s(p['convert'])} | {s(q['convert'])} "
          f"| {ratio('convert'):.1f} | {pc:.1f} | {q['import']['median']:.3f} | {q['export']['median']:.3f} |")
print('\nCalibration is the float forward plus the observers: the float forward over the same 8 batches (no observers), and the observers\' share of calibration')
print('\n| model | PyTorch float forward s | PyTorch calibrate s | PyTorch observer overhead | qfx float forward s | qfx calibrate s | qfx observer overhead |')
print('|---|---|---|---|---|---|---|')
for r in rows:
    p, q = r['pytorch'], r['qfx']
    over = lambda x: f"{100 * (x['calibrate']['median'] / x['float_forward']['median'] - 1):+.0f}%"
    print(f"| {r['model']} | {p['float_forward']['median']:.4f} | {p['calibrate']['median']:.4f} | {over(p)} "
          f"| {q['float_forward']['median']:.4f} | {q['calibrate']['median']:.4f} | {over(q)} |")
print(f"\nAllocator: qfx's programs allocate with tcmalloc ({rows[0]['qfx']['allocator']} in bench_flow), PyTorch with glibc's malloc. "
      'PyTorch again with tcmalloc preloaded (one run), and qfx against both')
print('\n| model | PyTorch float forward s (glibc / tcmalloc) | PyTorch calibrate s (glibc / tcmalloc) | qfx calibrate s | calibrate x (glibc / tcmalloc) | PyTorch prepare+convert s (glibc / tcmalloc) | prepare+convert x (glibc / tcmalloc) | PyTorch int8 batch 8, 1 thread ms (glibc / tcmalloc) |')
print('|---|---|---|---|---|---|---|---|')
for r in rows:
    p, pr, q = r['pytorch'], r['pytorch_tcmalloc'], r['qfx']
    med = lambda x, k: x[k]['median']
    pc = lambda x: med(x, 'prepare') + med(x, 'convert')
    print(f"| {r['model']} | {med(p, 'float_forward'):.4f} / {med(pr, 'float_forward'):.4f} | {med(p, 'calibrate'):.4f} / {med(pr, 'calibrate'):.4f} "
          f"| {med(q, 'calibrate'):.4f} | {med(p, 'calibrate') / med(q, 'calibrate'):.1f} / {med(pr, 'calibrate') / med(q, 'calibrate'):.1f} "
          f"| {pc(p):.4f} / {pc(pr):.4f} | {pc(p) / pc(q):.1f} / {pc(pr) / pc(q):.1f} "
          f"| {ms(p['latency']['int8_graph_module']['b8_t1'])} / {ms(pr['latency']['int8_graph_module']['b8_t1'])} |")
print('\nint8 latency, ms per batch (onednn): PyTorch converted GraphModule / qfx exported TorchScript from C++ / qfx interpreter, and PyTorch / qfx TorchScript; '
      'each the median of rounds of 10 runs after 3 warm-ups (until the last three rounds lie within 5%, at most 8 rounds), '
      'with the min-max of the rounds\' medians')
print('\n| model | batch, threads | PyTorch int8 | qfx TorchScript | qfx interpreter | x | float (qfx TorchScript) | int8 speed-up over float |')
print('|---|---|---|---|---|---|---|---|')
for r in rows:
    pl, ql = r['pytorch']['latency'], r['qfx']['latency']
    for key, config in CONFIGS:
        print(f"| {r['model']} | {config} | {ms_spread(pl['int8_graph_module'][key])} | {ms_spread(ql['int8_script'][key])} "
              f"| {ms(ql['int8_interpreter'][key])} | {lat(pl['int8_graph_module'][key]) / lat(ql['int8_script'][key]):.2f} "
              f"| {ms(ql['float_script'][key])} | {lat(ql['float_script'][key]) / lat(ql['int8_script'][key]):.2f} |")
print('\nThread policy: qfx exported int8 (onednn, qnnpack) and float latency, ms per batch, with OpenMP\'s default wait policy / OMP_WAIT_POLICY=PASSIVE')
print('\n| model | batch, threads | onednn int8 | qnnpack int8 | float |')
print('|---|---|---|---|---|')
for r in rows:
    q, qn, pa = r['qfx']['latency'], r['qfx_qnnpack']['latency'], r['passive']
    for key, config in CONFIGS:
        pair = lambda x, y: f"{ms(x)} / {ms(y)}"
        print(f"| {r['model']} | {config} | {pair(q['int8_script'][key], pa['onednn']['latency']['int8_script'][key])} "
              f"| {pair(qn['int8_script'][key], pa['qnnpack']['latency']['int8_script'][key])} "
              f"| {pair(q['float_script'][key], pa['onednn']['latency']['float_script'][key])} |")
print('\n| model | float size MB | int8 size MB (qfx file / PyTorch state_dict) | SQNR int8 vs float dB (PyTorch / qfx) | peak memory MB (PyTorch / qfx) |')
print('|---|---|---|---|---|')
for r in rows:
    p, q = r['pytorch'], r['qfx']
    print(f"| {r['model']} | {q['size_float'] / 1e6:.1f} | {q['size_int8'] / 1e6:.1f} / {p['size_int8_state_dict'] / 1e6:.1f} "
          f"| {p['sqnr_db']:.1f} / {q['sqnr_db']:.1f} | {p['peak_rss_mb']:.0f} / {q['peak_rss_mb']:.0f} |")
PY

# Scaling with graph size (qfx only), each size in a fresh process: a first
# run (one-time set-up included), then the median of 3 more
echo
echo "Scaling: prepare_fx + convert_fx on synthetic conv-bn-relu chains with residual adds (bench_scaling, one process per size; median of 3 runs after a first one, shown apart)"
echo
scaling=$(mktemp -d)
for nodes in 1000 5000 20000 100000; do "$build/bin/bench_scaling" "$nodes" >"$scaling/$nodes.md"; done
head -2 "$scaling/1000.md"
for nodes in 1000 5000 20000 100000; do sed -n 3p "$scaling/$nodes.md"; done
echo
echo "Wall time per pass (s):"
echo
sed -n 5,6p "$scaling/1000.md"
for nodes in 1000 5000 20000 100000; do sed -n 7p "$scaling/$nodes.md"; done
rm -rf "$scaling"
