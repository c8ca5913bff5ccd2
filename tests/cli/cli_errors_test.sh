#!/usr/bin/env bash
# CLI tests, bad input: each gives one line on stderr, exit code 1 (2 for
# usage errors), no core dump and no partial output file. The other CLI tests
# are cli_test.sh (a test of their own, so the two run side by side).
#   cli_errors_test.sh QFX_BINARY FIXTURES_DIR PYTHON SOURCE_DIR
set -u
source "$(dirname "$0")/common.sh"
cli_test_args "$@"
out="$work/never.pt"
"$python" -c "import torch, sys; torch.save(torch.rand(2, 5, 8, 8), sys.argv[1])" "$work/bad_shape.pt"
expect_error 1 "cannot open model file '/nonexistent.pt'" -- run /nonexistent.pt --input "$fixtures/resnet18.input.pt" -o "$out"
expect_error 1 "is not a TorchScript archive" -- print "$fixtures/resnet18.fx.json"
expect_error 1 "--dynamic sets the QConfigMapping \(default_dynamic_qconfig\) and --qconfig another" -- \
  quantize "$fixtures/resnet18.pt" -o "$out" --dynamic --qconfig qnnpack.json
expect_error 1 "cannot open '/nonexistent.input.pt'" -- run "$fixtures/resnet18.pt" --input /nonexistent.input.pt -o "$out"
expect_error 1 "cannot read '.*resnet18.fx.json': expected a torch.save file" -- run "$fixtures/resnet18.pt" --input "$fixtures/resnet18.fx.json" -o "$out"
expect_error 1 "running '.*resnet18.pt' on '.*module_zoo.input.pt': forward\(\) takes 1 input\(s\), got 4" -- run "$fixtures/resnet18.pt" --input "$fixtures/module_zoo.input.pt" -o "$out"
expect_error 1 "While executing %conv1 .*expected input\[2, 5, 8, 8\] to have 3 channels" -- \
  run "$fixtures/resnet18.pt" --input "$work/bad_shape.pt" -o "$out"
# Records shorter than their tensors (a torch.save file and a model, rewritten with a quarter of data/0).
"$python" - "$work" "$fixtures/linear_relu.pt" <<'EOF'
import sys, torch, zipfile
work, model = sys.argv[1:]
torch.save(torch.rand(4, 1, 28, 28), f'{work}/full.pt')
def truncate(src, dst):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, 'w') as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            zout.writestr(info, data[:len(data) // 4] if info.filename.endswith('/data/0') else data)
truncate(f'{work}/full.pt', f'{work}/short_data.pt')
truncate(model, f'{work}/short_model.pt')
EOF
expect_error 1 "'.*short_data.pt': a tensor of sizes \[4, 1, 28, 28\] reads 12544 bytes, its data holds 3136" -- \
  run "$fixtures/resnet18.pt" --input "$work/short_data.pt" -o "$out"
expect_error 1 "model '.*short_model.pt': its tensors need [0-9]+ bytes, its data records hold [0-9]+" -- \
  quantize "$work/short_model.pt" -o "$out" --dynamic
# Numbers that are out of range or not finite, empty calibration data.
demo_cnn="$source_dir/examples/fashion_mnist/fashion_cnn.pt"
fashion_test=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
expect_error 1 "std values must be positive and finite, got inf" -- quantize "$demo_cnn" -o "$out" \
  --calib "$fashion_test" --mean 0 --std inf -q
expect_error 1 "mean values must be finite, got nan" -- quantize "$demo_cnn" -o "$out" \
  --calib "$fashion_test" --mean nan --std 1 -q
expect_error 1 "--seed must be a non-negative integer, got -5" -- quantize "$demo_cnn" -o "$out" \
  --calib "$fashion_test" --seed -5 -q
"$qfx" quantize "$demo_cnn" -o "$work/huge_limit.pt" --calib "$fashion_test" --batch-size 1000 \
  --calib-batches 9223372036854775807 -q || fail "--calib-batches 2^63-1 is 'all batches', not an error"
"$python" -c "import torch, sys; torch.save(torch.zeros(0, 1, 28, 28), sys.argv[1])" "$work/empty_calib.pt"
expect_error 1 "calibration data '.*empty_calib.pt' holds no items" -- quantize "$demo_cnn" -o "$out" \
  --calib "$work/empty_calib.pt" -q
# A BatchNorm whose running variance is negative (a corrupt model: every output would be NaN).
"$python" -c "
import sys, torch
m = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2)).eval()
m[1].running_var[0] = -0.5
torch.jit.trace(m, torch.rand(1, 1, 8, 8)).save(sys.argv[1])" "$work/negative_var.pt"
expect_error 1 "negative_var.pt: import: cannot read torch.nn.modules.batchnorm.BatchNorm2d in module '1': running_var holds negative or NaN values" -- \
  quantize "$work/negative_var.pt" -o "$out" --dynamic -q
# Integers beyond 64 bits are errors (CLI11 alone made them 2^63 - 1); step counts are bounded.
expect_error 2 "--seed: '99999999999999999999' is out of the range of a 64-bit integer" -- quantize "$demo_cnn" \
  -o "$out" --calib "$fashion_test" --seed 99999999999999999999 -q
expect_error 2 "--epochs: Value 99999999999999999999 not in range 1 to 1000000" -- quantize "$demo_cnn" -o "$out" \
  --calib "$fashion_test" --qconfig qat --train "$fashion_test" --epochs 99999999999999999999 -q
expect_error 2 "--adaround-iters: Value 0 not in range 1 to 10000000" -- quantize "$demo_cnn" -o "$out" \
  --calib "$fashion_test" --adaround --adaround-iters 0 -q
# A forward that fails inside torch::jit (1x1 images through the CNN): the data file, batch and cause on one line.
"$python" -c "
import struct, sys
open(sys.argv[1] + '/one-images-idx3-ubyte', 'wb').write(struct.pack('>IIII', 0x803, 3, 1, 1) + bytes(3))
open(sys.argv[1] + '/one-labels-idx1-ubyte', 'wb').write(struct.pack('>II', 0x801, 3) + bytes(3))" "$work"
expect_error 1 "^qfx: error: data '.*one-images-idx3-ubyte' batch 0: RuntimeError: .*Output size is too small$" -- \
  eval "$demo_cnn" --data "$work/one-images-idx3-ubyte" -q
# A torch.save file whose version record is binary: the error line is printable (no raw bytes, no enforce prefix).
"$python" - "$work" <<'EOF'
import sys, torch, zipfile
torch.save(torch.rand(3), f'{sys.argv[1]}/plain.pt')
with zipfile.ZipFile(f'{sys.argv[1]}/plain.pt') as zin, zipfile.ZipFile(f'{sys.argv[1]}/bad_version.pt', 'w') as zout:
    for info in zin.infolist():
        data = zin.read(info.filename)
        zout.writestr(info.filename, bytes([0xff, 0xfe, 0x80, 0x01, 0x07]) * 5 if info.filename.endswith('version') else data)
EOF
expect_error 1 "cannot read '.*bad_version.pt': expected a torch.save file of tensors, lists or tuples \(Couldn't parse the version \? as Long Long.\)$" -- \
  run "$demo_cnn" --input "$work/bad_version.pt" -o "$out"
# Quantization ranges the dtype cannot hold, fixed qparams outside their range.
echo '{"": {"activation": {"type": "MinMaxObserver", "args": {"dtype": "torch.quint8", "quant_min": -128, "quant_max": 127}}, "weight": "default_weight_observer"}}' >"$work/range.json"
expect_error 1 "range.json: \"\".activation: MinMaxObserver: the quantization range \[-128, 127\] does not fit torch.quint8 \(\[0, 255\]\)" -- \
  quantize "$demo_cnn" -o "$out" --calib "$fashion_test" --qconfig "$work/range.json" -q
echo '{"": {"activation": {"type": "FixedQParamsObserver", "args": {"scale": 0.01, "zero_point": 100000}}, "weight": "default_weight_observer"}}' >"$work/fixed.json"
expect_error 1 "FixedQParamsObserver: zero_point 100000 is outside the quantization range \[0, 255\]" -- \
  quantize "$demo_cnn" -o "$out" --calib "$fashion_test" --qconfig "$work/fixed.json" -q
# A model whose code is corrupt (binary bytes in a .py record), and a histogram too large to allocate.
"$python" - "$source_dir/examples/fashion_mnist/fashion_cnn.pt" "$work/bad_code.pt" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as zin, zipfile.ZipFile(sys.argv[2], 'w') as zout:
    for info in zin.infolist():
        data = zin.read(info.filename)
        if info.filename.endswith('qfx.py'):
            data = data[:200] + bytes([0xff, 0xfe, 0x01, 0x80]) * 10 + b'\ndef )(:\n' + data[200:]
        zout.writestr(info, data)
EOF
expect_error 1 "'.*bad_code.pt' is not a TorchScript archive: expected a valid token but found '\?'" -- \
  print "$work/bad_code.pt"
echo '{"": {"activation": {"type": "HistogramObserver", "args": {"bins": 1000000000}}, "weight": "default_weight_observer"}}' >"$work/bins.json"
expect_error 1 "bins.json: \"\".activation: HistogramObserver: bins \(1000000000\) times upsample_rate \(128\) must be at most 2\^26" -- \
  quantize "$demo_cnn" -o "$out" --calib "$fashion_test" --qconfig "$work/bins.json" -q
# A flipped byte in a weight record (the zip's CRC-32 no longer matches), in a model and in a data file.
"$python" - "$fixtures/linear_relu.pt" "$work/flipped.pt" "$work/full.pt" "$work/flipped_data.pt" <<'EOF'
import shutil, sys, zipfile
def flip(src, dst):
    shutil.copy(src, dst)
    with zipfile.ZipFile(dst) as z:
        info = next(i for i in z.infolist() if i.filename.endswith('/data/0'))
    with open(dst, 'r+b') as f:
        f.seek(info.header_offset + 26)
        at = info.header_offset + 30 + int.from_bytes(f.read(2), 'little') + int.from_bytes(f.read(2), 'little')
        f.seek(at)
        byte = f.read(1)[0]
        f.seek(at)
        f.write(bytes([byte ^ 0x40]))
flip(sys.argv[1], sys.argv[2])
flip(sys.argv[3], sys.argv[4])
EOF
expect_error 1 "'.*flipped.pt': record '.*data/0' is corrupt \(its CRC-32 does not match" -- print "$work/flipped.pt"
expect_error 1 "'.*flipped_data.pt': record '.*data/0' is corrupt" -- \
  run "$fixtures/resnet18.pt" --input "$work/flipped_data.pt" -o "$out"
"$python" -c "import torch, sys; torch.save({'x': torch.rand(1)}, sys.argv[1])" "$work/dict.pt"
expect_error 1 "'.*dict.pt' must hold a tensor or a list/tuple of tensors, not a GenericDict" -- \
  run "$fixtures/resnet18.pt" --input "$work/dict.pt" -o "$out"
expect_error 1 "cannot write '/nonexistent/dir/out.pt'" -- \
  run "$fixtures/linear_relu.pt" --input "$fixtures/linear_relu.input.pt" -o /nonexistent/dir/out.pt
expect_error 1 "unsupported op aten::cumsum in the root module" -- print "$fixtures/bad_op.pt"
expect_error 1 "data-dependent control flow" -- print "$fixtures/bad_control_flow.scripted.pt"
echo '{"type": "HistogramObserver", "args": {"dtype": "torch.quint9"}}' >"$work/bad_spec.json"
expect_error 1 "bad_spec.json: args.dtype: unknown dtype \"torch.quint9\"" -- \
  observe --observer "$work/bad_spec.json" --input "$work/batches.pt"
echo '{"type": "HistogramObserver", "args": {"bins": 0}}' >"$work/bad_bins.json"
expect_error 1 "bins and upsample_rate must be positive" -- observe --observer "$work/bad_bins.json" --input "$work/batches.pt"
echo '{"type": "MinMaxObserver"' >"$work/broken.json"
expect_error 1 "broken.json: not valid JSON" -- observe --observer "$work/broken.json" --input "$work/batches.pt"
expect_error 2 "backend: .*not in" -- qconfig dump tpu
# Values echoed in errors are cut: a 1 MB observer class name is named by its first 80 characters and its length.
"$python" -c "import json, sys; json.dump({'': {'activation': {'type': 'X' * 1000000}, 'weight': 'default_weight_observer'}}, open(sys.argv[1], 'w'))" "$work/long_name.json"
expect_error 1 "long_name.json: \"\".activation.type: unknown observer class \"X{80}...\" \(1000000 characters\)" -- \
  quantize "$demo_cnn" -o "$out" --calib "$fashion_test" --qconfig "$work/long_name.json" -q
[ "$(wc -c <"$work/err")" -lt 300 ] || fail "the long observer name is echoed: $(wc -c <"$work/err") bytes of error"
# An IDX header counting 2^31 items in a file that holds one: an error naming the file, before any allocation.
"$python" -c "
import struct, sys
open(sys.argv[1], 'wb').write(struct.pack('>IIII', 0x803, 2**31, 28, 28) + bytes(784))" "$work/huge-images-idx3-ubyte"
expect_error 1 "'.*huge-images-idx3-ubyte': the header counts 2147483648 items of 784 bytes, but the file holds 784 bytes" -- \
  eval "$demo_cnn" --data "$work/huge-images-idx3-ubyte" -q
# Deep graphs: a chain of 5,000 relu(x * 1.0001) runs in torch::jit (whose passes recurse once per node: it
# overflowed the 8 MB main stack), one of 120,000 in the qfx interpreter, with a warning. Scores are pixels
# 400..409 scaled by 1.0001^n, so top-1 is numpy's argmax of those pixels.
"$python" - "$work" <<'EOF'
import re, sys, torch, zipfile
work = sys.argv[1]
class Chain(torch.nn.Module):
    def forward(self, x):
        x = x.flatten(1)[:, 400:410]
        for _ in range(2):
            x = torch.relu(x * 1.0001)
        return x
torch.jit.trace(Chain(), torch.rand(1, 1, 28, 28)).save(f'{work}/chain2.pt')
def lengthen(n, dst):  # the traced code with n links in the chain
    with zipfile.ZipFile(f'{work}/chain2.pt') as zin, zipfile.ZipFile(dst, 'w') as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith('.debug_pkl'):
                continue
            if info.filename.endswith('code/__torch__.py'):
                code = data.decode()
                head = re.match(r'(.*?\n)\s+\S+ = torch.relu\(torch.mul\(', code, re.S).group(1)
                first = re.search(r'torch.mul\((\S+),', code).group(1)
                links = [f'    c{i} = torch.relu(torch.mul({f"c{i - 1}" if i else first}, CONSTANTS.c0))\n' for i in range(n)]
                data = (head + ''.join(links) + f'    return c{n - 1}\n').encode()
            zout.writestr(info.filename, data)
lengthen(5000, f'{work}/chain5k.pt')
lengthen(120000, f'{work}/chain120k.pt')
EOF
chain_top1=$("$python" -c "
import gzip, sys, numpy as np
with gzip.open(sys.argv[1]) as f: pixels = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)[:128]
with gzip.open(sys.argv[1].replace('images-idx3', 'labels-idx1')) as f: labels = np.frombuffer(f.read(), np.uint8, offset=8)[:128]
print(int((pixels[:, 400:410].argmax(1) == labels).sum()))" "$fashion_test")
for n in 5k 120k; do
  "$qfx" eval "$work/chain$n.pt" --data "$fashion_test" --limit-batches 2 -q >"$work/chain_out" 2>"$work/chain_err"
  code=$?
  [ "$code" -eq 0 ] || fail "eval of the $n-node chain exited $code: $(head -c 300 "$work/chain_err")"
  grep -q "^top-1 [0-9.]*% ($chain_top1/128)" "$work/chain_out" || fail "eval of the $n-node chain: $(cat "$work/chain_out"), numpy counts $chain_top1/128"
done
grep -q "^qfx: warning: '.*chain120k.pt' has [0-9]* nodes, more than torch::jit runs safely (100000); running it in the qfx interpreter$" \
  "$work/chain_err" || fail "no interpreter warning for the 120k-node chain: $(cat "$work/chain_err")"
# A preserved `training` is the exported module's own flag (before: "attribute name 'training' is used twice").
echo '{"preserved_attributes": ["training"]}' >"$work/preserve_training.json"
"$qfx" quantize "$demo_cnn" -o "$work/training.pt" --calib "$work/full.pt" -q \
  --prepare-custom-config "$work/preserve_training.json" 2>"$work/training_err" || fail "preserving training: $(cat "$work/training_err")"
"$python" -c "import torch, sys; m = torch.jit.load(sys.argv[1]); assert m.training is False; m(torch.rand(2, 1, 28, 28))" \
  "$work/training.pt" || fail "the model preserving training does not run in eval mode"
# A non-traceable module that is a leaf anyway (conv1) changes nothing, as in PyTorch (the tracer alone reads it).
echo '{"non_traceable_module_name": ["conv1"]}' >"$work/leaf_non_traceable.json"
"$qfx" quantize "$demo_cnn" -o "$work/leaf_plain.pt" --calib "$work/full.pt" -q || fail "quantize of the demo CNN exited $?"
"$qfx" quantize "$demo_cnn" -o "$work/leaf_config.pt" --calib "$work/full.pt" -q \
  --prepare-custom-config "$work/leaf_non_traceable.json" 2>"$work/leaf_err" || fail "non-traceable leaf: $(cat "$work/leaf_err")"
cmp -s "$work/leaf_plain.pt" "$work/leaf_config.pt" || fail "a non-traceable leaf module changed the model"
echo '{"non_traceable_module_name": ["conv9"]}' >"$work/missing_module.json"
expect_error 1 ".*missing_module.json: the PrepareCustomConfig names the non-traceable module \"conv9\", which is not a module of the model" -- \
  quantize "$demo_cnn" -o "$out" --calib "$work/full.pt" -q --prepare-custom-config "$work/missing_module.json"
# A forward taking List[Tensor] keeps its type through quantize (before: exported as taking a Tensor); the
# int8 model is within one output step of PyTorch's prepare_fx/convert_fx of the same model and data.
cat >"$work/list_model.py" <<'EOF'
import sys, torch
from typing import List
class ListInput(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
    def forward(self, xs: List[torch.Tensor]):
        return self.fc(xs[0] + xs[1])
torch.manual_seed(0)
model = ListInput().eval()
torch.jit.script(model).save(f'{sys.argv[1]}/list_input.pt')
torch.save([[[torch.randn(8, 4), torch.randn(8, 4)]] for _ in range(4)], f'{sys.argv[1]}/list_calib.pt')
EOF
"$python" "$work/list_model.py" "$work"  # torch.jit.script reads the class's source from its file
"$qfx" quantize "$work/list_input.pt" -o "$work/list_int8.pt" --calib "$work/list_calib.pt" -q \
  || fail "quantize of a List[Tensor] model exited $?"
"$python" - "$work" "$source_dir" <<'EOF' || fail "the List[Tensor] model's int8 export differs from PyTorch"
import copy, sys, torch
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx
work = sys.argv[1]
sys.path.insert(0, f'{sys.argv[2]}/tests/oracle')
from flow_fixtures import output_step
from quant_fixtures import FixedHistogramObserver
from torch.ao.quantization import observer
observer.HistogramObserver.forward = FixedHistogramObserver.forward  # upstream's histc fix (docs/divergences.md)
torch.backends.quantized.engine = 'onednn'
ours = torch.jit.load(f'{work}/list_int8.pt')
assert str(ours.forward.schema) == 'forward(__torch__.qfx.ExportedModule self, Tensor[] xs) -> Tensor', ours.forward.schema
calib = torch.load(f'{work}/list_calib.pt')
scripted = torch.jit.load(f'{work}/list_input.pt')
class ListInput(torch.nn.Module):  # the scripted model as Python, with its weights
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
    def forward(self, xs):
        return self.fc(xs[0] + xs[1])
model = ListInput().eval()
model.fc.load_state_dict({'weight': scripted.fc.weight, 'bias': scripted.fc.bias})
with torch.no_grad():
    prepared = prepare_fx(copy.deepcopy(model), get_default_qconfig_mapping('onednn'), tuple(calib[0]))
    for batch in calib:
        prepared(*batch)
    converted = convert_fx(prepared)
    error = max((ours(*b) - converted(*b)).abs().max().item() for b in calib)
    step = output_step(converted, calib[0])
assert step > 0 and error <= step * (1 + 1e-6), (error, step)
EOF
# Messages that name what the user gave: a directory as model or data, batches that do not fit the model's
# declared inputs, a model saved in training mode, data whose expanded tensors would not fit in memory,
# a PrepareCustomConfig key qfx cannot honour, a standalone module a frozen model no longer calls.
mkdir "$work/dir_model.pt"
expect_error 1 "cannot read model file '.*dir_model.pt': it is a directory, not a TorchScript archive" -- print "$work/dir_model.pt"
expect_error 1 "cannot read model file '.*dir_model.pt': it is a directory, not a TorchScript archive" -- \
  quantize "$work/dir_model.pt" -o "$out" --dynamic
"$python" -c "import torch, sys; torch.save(torch.randn(8, 4), sys.argv[1])" "$work/plain_calib.pt"
expect_error 1 "calibration data '.*plain_calib.pt' batch 0: input %xs is declared List\[Tensor\], and the value given is a Tensor" -- \
  quantize "$work/list_input.pt" -o "$out" --calib "$work/plain_calib.pt" -q
"$python" - "$work" <<'EOF'
import sys, torch
class ConvBn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2)
    def forward(self, x):
        return self.bn(self.conv(x))
torch.jit.trace(ConvBn(), torch.rand(1, 1, 8, 8)).save(f'{sys.argv[1]}/training_mode.pt')  # never .eval()
torch.save(torch.zeros(1, 1, 28, 28).expand(20_000_000, 1, 28, 28), f'{sys.argv[1]}/expanded.pt')
class Unused(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner, self.fc = torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)
    def forward(self, x):
        return self.fc(x)  # never calls self.inner
torch.jit.trace(Unused().eval(), torch.rand(2, 4)).save(f'{sys.argv[1]}/unused.pt')
EOF
expect_error 1 "model '.*training_mode.pt' was saved in training mode \(module 'bn', torch.nn.BatchNorm2d, has training=True\): save it after model.eval\(\), or fine-tune it with quantization-aware training \(--qconfig qat\)" -- \
  quantize "$work/training_mode.pt" -o "$out" --calib "$source_dir/examples/fashion_mnist/sample_batch.pt" -q
expect_error 1 "calibration data: data '.*expanded.pt' \(20000000 items of \[1, 28, 28\], read into batches\) needs 62.7 GB" -- \
  quantize "$demo_cnn" -o "$out" --calib "$work/expanded.pt" -q
echo '{"output_quantized_idxs": [0, 1]}' >"$work/two_outputs.json"
expect_error 1 "two_outputs.json: output_quantized_idxs: must be \[\] or \[0\]" -- \
  quantize "$demo_cnn" -o "$out" --calib "$source_dir/examples/fashion_mnist/sample_batch.pt" --prepare-custom-config "$work/two_outputs.json" -q
echo '{"standalone_module_name": [["fc", null, null, {}, null]]}' >"$work/standalone_leaf.json"
expect_error 1 "standalone_leaf.json: the PrepareCustomConfig names the standalone module \"fc\", which the model file '.*unused.pt' does not call as a graph of its own \(a leaf such as Linear or Conv2d is quantized in place, and torch.jit.freeze inlines modules\)" -- \
  quantize "$work/unused.pt" -o "$out" --dynamic --prepare-custom-config "$work/standalone_leaf.json" -q
expect_error 1 "ONNX export: input %xs is a List\[Tensor\]; ONNX inputs are tensors" -- \
  export "$work/list_input.pt" -o "$work/list.onnx" --input-shape 8,4
# The written model runs once on a calibration batch before it is kept. qnnpack's add fails when an input's
# scale is below 2^-14 of the output's (a branch scaled by 1e-6): the error names the node and no file is left;
# --fallback-on-failure leaves that add float, and the file then runs in PyTorch.
"$python" - "$work" <<'EOF'
import sys, torch
class TinyBranch(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Conv2d(3, 4, 3), torch.nn.Conv2d(3, 4, 3)
    def forward(self, x):
        return self.a(x) + self.b(x) * 1e-6
torch.manual_seed(0)
torch.jit.trace(TinyBranch().eval(), torch.rand(1, 3, 8, 8)).save(f'{sys.argv[1]}/tiny_branch.pt')
torch.save(torch.rand(4, 3, 8, 8), f'{sys.argv[1]}/tiny_branch_calib.pt')
EOF
expect_error 1 "export: the model written to '.*never.pt' fails when it runs \(torch::jit::load, one calibration batch\) at node %add_1: Error in QNNPACK: failed to create add operator .* scale ratio must be in .* range \(--fallback-on-failure leaves the node float\)" -- \
  quantize "$work/tiny_branch.pt" -o "$out" --engine qnnpack --calib "$work/tiny_branch_calib.pt" --batch-size 2 -q
[ ! -e "$out" ] || fail "a model that fails on its calibration batch was written"
"$qfx" quantize "$work/tiny_branch.pt" -o "$work/tiny_branch_int8.pt" --engine qnnpack --fallback-on-failure \
  --calib "$work/tiny_branch_calib.pt" --batch-size 2 -q 2>"$work/err" || fail "--fallback-on-failure: $(cat "$work/err")"
grep -q "^qfx: warning: node %add stays float: export: .* at node %add_1: Error in QNNPACK" "$work/err" || fail "no warning naming %add: $(cat "$work/err")"
"$python" -c "
import sys, torch
torch.backends.quantized.engine = 'qnnpack'
m = torch.jit.load(sys.argv[1])
assert 'quantized.add' not in m.code, m.code
m(torch.load(sys.argv[2])[:2])" "$work/tiny_branch_int8.pt" "$work/tiny_branch_calib.pt" || fail "the fallback model does not run"
[ ! -e "$out" ] || fail "an error left an output file behind"
ls -A "$work" | grep -q '\.qfx-' && fail "an error left a temporary file behind"
ls core* >/dev/null 2>&1 && fail "a core file was written"

finish "CLI error"
