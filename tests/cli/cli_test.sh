#!/usr/bin/env bash
# CLI tests: every command on the oracle's fixtures and on Fashion-MNIST
# against PyTorch, and their usage errors. The bad-input contract (one line
# on stderr, exit code 1, no core dump, no partial output file) for corrupt,
# foreign and wrong inputs is cli_errors_test.sh, a test of its own so that
# the two run side by side.
#   cli_test.sh QFX_BINARY FIXTURES_DIR PYTHON SOURCE_DIR
set -u
source "$(dirname "$0")/common.sh"
cli_test_args "$@"

# --- the allocator: tcmalloc unless built with -DQFX_TCMALLOC=OFF ----------
if [ "${QFX_TCMALLOC:-1}" = 1 ]; then  # 1 or 0, from $<BOOL:...> in tests/CMakeLists.txt
  ldd "$qfx" | grep -q 'libtcmalloc_minimal' || fail "qfx is not linked with tcmalloc: $(ldd "$qfx" | grep -i malloc)"
fi

# --- qfx print -----------------------------------------------------------
"$qfx" print "$fixtures/linear_relu.pt" >"$work/code.txt" || fail "print exited $?"
"$python" - "$work/code.txt" "$fixtures/linear_relu.fx.json" <<'EOF' || fail "print differs from PyTorch's print(gm)"
import json, sys
ours = open(sys.argv[1]).read()
fx = json.load(open(sys.argv[2]))
expected = fx['module_tree'] + '\n' + fx['code'] + '\n'
sys.exit(0 if ours == expected else 1)
EOF

"$qfx" print --ir "$fixtures/resnet18.pt" >"$work/ir.txt" || fail "print --ir exited $?"
grep -qF '%layer1_0_conv1 : [num_users=1] = call_module[target=layer1.0.conv1](args = (%maxpool,), kwargs = {})' \
  "$work/ir.txt" || fail "print --ir lacks the layer1.0.conv1 node"
grep -qF '%add : [num_users=1] = call_function[target=operator.add](args = (%layer1_0_bn2, %maxpool), kwargs = {})' \
  "$work/ir.txt" || fail "print --ir lacks the first residual add"

"$qfx" print --json "$fixtures/resnet18.pt" >"$work/graph.json" || fail "print --json exited $?"
"$python" - "$work/graph.json" "$fixtures/resnet18.fx.json" <<'EOF' || fail "print --json nodes differ from torch.fx"
import json, sys
ours = json.load(open(sys.argv[1]))['nodes']
fx = json.load(open(sys.argv[2]))['nodes']
assert [(n['name'], n['op'], n['target']) for n in ours] == [(n['name'], n['op'], n['target']) for n in fx]
add = next(n for n in ours if n['name'] == 'add')
assert add['args'] == [{'node': 'layer1_0_bn2'}, {'node': 'maxpool'}], add['args']
flatten = next(n for n in ours if n['name'] == 'flatten')
assert flatten['args'] == [{'node': 'avgpool'}, 1], flatten['args']
EOF

# --- qfx run -------------------------------------------------------------
for model in resnet18 module_zoo; do
  "$qfx" run "$fixtures/$model.pt" --input "$fixtures/$model.input.pt" -o "$work/$model.out.pt" \
    || fail "run $model exited $?"
  "$python" - "$work/$model.out.pt" "$fixtures/$model.output.pt" <<'EOF' || fail "run $model: output differs from PyTorch"
import sys, torch
ours, ref = torch.load(sys.argv[1]), torch.load(sys.argv[2])
if isinstance(ref, torch.Tensor):
    ours, ref = [ours], [ref]
assert len(ours) == len(ref)
for a, b in zip(ours, ref):
    assert a.shape == b.shape and (a - b).abs().max() <= 1e-5 * max(1e-12, b.abs().max()), (a - b).abs().max()
EOF
done
# A one-element list (pickled with APPEND, which LibTorch's own unpickler lacks) is one input.
"$python" -c "import torch, sys; torch.save([torch.load(sys.argv[1])], sys.argv[2])" \
  "$fixtures/linear_relu.input.pt" "$work/one_input.pt"
"$qfx" run "$fixtures/linear_relu.pt" --input "$work/one_input.pt" -o "$work/one_output.pt" || fail "run on a one-element list exited $?"
"$qfx" run "$fixtures/linear_relu.pt" --input "$fixtures/linear_relu.input.pt" >"$work/summary.txt" \
  || fail "run without -o exited $?"
grep -q '^output: Tensor\[2, 10\] Float' "$work/summary.txt" || fail "run summary: $(cat "$work/summary.txt")"

# --- qfx qconfig / qfx observe -------------------------------------------
for backend in fbgemm onednn; do
  "$qfx" qconfig dump "$backend" >"$work/mapping.json" || fail "qconfig dump $backend exited $?"
  "$qfx" qconfig dump "$backend" --qat >"$work/qat_mapping.json" || fail "qconfig dump --qat $backend exited $?"
  "$python" - "$work/mapping.json" "$work/qat_mapping.json" "$fixtures/qconfig_mappings.json" "$backend" <<'PY' \
    || fail "qconfig dump $backend differs from PyTorch's mapping"
import json, sys
expected = json.load(open(sys.argv[3]))
assert json.load(open(sys.argv[1])) == expected['default:' + sys.argv[4]]
assert json.load(open(sys.argv[2])) == expected['qat:' + sys.argv[4]]
PY
done
# One oracle case through `qfx observe`: the observer spec alone, and as a qconfig's activation.
"$python" - "$fixtures" "$work" <<'PY' || fail "could not prepare the observe inputs"
import json, sys, torch
fixtures, work = sys.argv[1], sys.argv[2]
case = next(c for c in json.load(open(fixtures + '/observers.json')) if c['name'] == 'histogram_reduce/batches')
json.dump(case['spec'], open(work + '/spec.json', 'w'))
json.dump({'activation': case['spec'], 'weight': 'default_weight_observer'}, open(work + '/qconfig.json', 'w'))
json.dump(case, open(work + '/case.json', 'w'))
torch.save(torch.load(fixtures + '/observer_inputs.pt')[case['input']], work + '/batches.pt')
PY
for spec in spec.json qconfig.json; do
  "$qfx" observe --observer "$work/$spec" --input "$work/batches.pt" >"$work/observed.json" || fail "observe exited $?"
  "$python" - "$work/observed.json" "$work/case.json" <<'PY' || fail "observe ($spec) differs from PyTorch"
import json, sys
ours, case = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert [float.fromhex(h) for h in case['scale']] == ours['scale'], (case['scale'], ours['scale'])
assert [float.fromhex(h) for h in case['zero_point']] == ours['zero_point']
assert [float.fromhex(h) for h in case['min_val']] == [ours['min_val']]
PY
done
"$qfx" observe --observer "$work/qconfig.json" --weight --input "$work/batches.pt" >"$work/weight.json" \
  || fail "observe --weight exited $?"
grep -q '"zero_point": \[' "$work/weight.json" || fail "observe --weight printed no qparams"

# qfx's calibration observers: PercentileObserver's qparams are those of numpy's percentiles of all batches
"$python" -c 'import sys, torch; torch.manual_seed(0); torch.save([torch.randn(20000) * 2 + 0.5, torch.randn(20000)], sys.argv[1])' \
  "$work/percentile_in.pt"
echo '{"type": "qfx.observer.PercentileObserver", "args": {"percentile": 99.0}}' >"$work/percentile.json"
"$qfx" observe --observer "$work/percentile.json" --input "$work/percentile_in.pt" >"$work/percentile_out.json" \
  || fail "observe with PercentileObserver exited $?"
"$python" - "$work/percentile_in.pt" "$work/percentile_out.json" <<'PY' || fail "PercentileObserver's qparams are not the data's percentiles'"
import json, sys
import numpy as np, torch
x = torch.cat(torch.load(sys.argv[1])).numpy()
observer = torch.ao.quantization.MinMaxObserver()
observer(torch.tensor([np.percentile(x, 1), np.percentile(x, 99)], dtype=torch.float32))
scale, zero_point = observer.calculate_qparams()
ours = json.load(open(sys.argv[2]))
# the observer's histogram has 2048 bins: each end is within a bin (0.05% of the range) of numpy's percentile
assert abs(ours['scale'][0] - scale.item()) <= 1e-3 * scale.item(), (ours, scale)
assert abs(ours['zero_point'][0] - zero_point.item()) <= 1, (ours, zero_point)
PY

# --- qfx backend-config ----------------------------------------------------
for backend in native fbgemm qnnpack x86 onednn executorch tensorrt; do
  "$qfx" backend-config dump "$backend" >"$work/backend.json" || fail "backend-config dump $backend exited $?"
  "$python" - "$work/backend.json" "$fixtures/backend_configs.json" "$backend" <<'PY' \
    || fail "backend-config dump $backend differs from PyTorch's config"
import json, sys
ours = json.load(open(sys.argv[1]))
theirs = json.load(open(sys.argv[2]))[sys.argv[3]]
key = lambda c: json.dumps(c, sort_keys=True)
assert ours['name'] == theirs['name'], (ours['name'], theirs['name'])
assert sorted(map(key, ours['configs'])) == sorted(map(key, theirs['configs']))
PY
done

"$qfx" backend-config dump qnnpack >"$work/qnnpack.json"
"$qfx" backend-config check "$work/qnnpack.json" >"$work/check.txt" || fail "check of a dumped config exited $?"
grep -qF 'valid BackendConfig "qnnpack", 184 patterns' "$work/check.txt" || fail "check summary: $(head -1 "$work/check.txt")"
grep -qF '| `torch.nn.Linear` | qint8, w qint8*; quint8, w qint8 | quint8, w qint8; float16, w float16 |  |  | own observer |  |' \
  "$work/check.txt" || fail "check table lacks qnnpack's Linear row"
grep -qF '| `torch.nn.Embedding` |  |  | w quint8; w quint4x2 |' "$work/check.txt" \
  || fail "check table lacks qnnpack's weight-only Embedding row"
"$qfx" backend-config check "$source_dir/examples/backends/my_backend.json" >"$work/check.txt" \
  || fail "check of the tutorial backend exited $?"
grep -qF '| `torch.nn.Conv2d -> torch.nn.ReLU` |  |  |  |  | own observer | `torch.ao.nn.intrinsic.ConvReLU2d` |' \
  "$work/check.txt" || fail "check table lacks the tutorial's conv-relu fusion"

"$qfx" backend-config docs -o "$work/backends.md" || fail "backend-config docs exited $?"
diff -q "$work/backends.md" "$source_dir/docs/backends.md" >/dev/null \
  || fail "docs/backends.md is stale: run qfx backend-config docs -o docs/backends.md"

# --- qfx opt ------------------------------------------------------------------
"$qfx" opt "$fixtures/linear_relu.pt" --passes fuse,insert-observers,convert-to-reference --code \
  --qconfig default:fbgemm >"$work/opt.txt" 2>"$work/opt_err.txt" || fail "opt exited $?"
"$python" - "$work/opt.txt" "$fixtures/prepare.json" <<'PY' || fail "opt's reference code differs from convert_to_reference_fx"
import json, sys
ours = open(sys.argv[1]).read()
case = next(c for c in json.load(open(sys.argv[2])) if c['case'] == 'linear_relu')
assert ours.endswith(case['reference']['code'] + '\n'), ours
PY
grep -q "qfx: warning: .*no data" "$work/opt_err.txt" || fail "opt without calibration does not warn about unobserved observers"
"$qfx" opt "$fixtures/tutorial_no_bn.pt" --passes fuse,insert-observers --print-after-all \
  --backend "$source_dir/examples/backends/my_backend.json" --qconfig default:fbgemm >"$work/opt.txt" 2>"$work/opt_err.txt" \
  || fail "opt --print-after-all exited $?"
[ "$(grep -c '^// after ' "$work/opt.txt")" -eq 2 ] || fail "opt --print-after-all did not print after each pass"
grep -q "call_module\[target=conv\]" "$work/opt.txt" || fail "opt did not fuse the tutorial's conv-relu"
grep -q "qfx: warning: prepare: %linear (torch.nn.Linear) stays float: activation eps" "$work/opt_err.txt" \
  || fail "opt does not say why the tutorial backend rejects the default qconfig: $(cat "$work/opt_err.txt")"
"$qfx" opt "$fixtures/linear_relu.pt" --passes fuse,insert-observers,dce --time-passes >/dev/null 2>"$work/opt_times.txt" \
  || fail "opt --time-passes exited $?"
grep -Eq '^fuse +[0-9.]+ s  lint +[0-9.]+ s' "$work/opt_times.txt" || fail "opt --time-passes did not time fuse: $(cat "$work/opt_times.txt")"
[ "$(grep -cE '^(fuse|insert-observers|dce|total) ' "$work/opt_times.txt")" -eq 4 ] \
  || fail "opt --time-passes did not print one line per pass and a total: $(cat "$work/opt_times.txt")"
expect_error 1 'unknown pass "bogus"' -- opt "$fixtures/linear_relu.pt" --passes fuse,bogus
expect_error 1 'unknown qconfig mapping preset "nonsense"' -- opt "$fixtures/linear_relu.pt" --passes fuse --qconfig nonsense
expect_error 1 "missing.json" -- opt "$fixtures/linear_relu.pt" --passes fuse --backend "$work/missing.json"
expect_error 2 "passes is required|required" -- opt "$fixtures/linear_relu.pt"

sed 's/"torch.qint8"/"torch.qint9"/' "$work/qnnpack.json" >"$work/bad_dtype.json"
expect_error 1 'bad_dtype.json: configs\[0\]\.dtype_configs\[0\]\.input_dtype\.dtype: unknown dtype "torch.qint9"' \
  -- backend-config check "$work/bad_dtype.json"
head -c 500 "$work/qnnpack.json" >"$work/truncated.json"
expect_error 1 "truncated.json: not valid JSON" -- backend-config check "$work/truncated.json"
expect_error 1 "missing.json" -- backend-config check "$work/missing.json"
echo '{"name": "b", "configs": [{"pattern": ["torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU", "torch.nn.ReLU"]}]}' \
  >"$work/long.json"
expect_error 1 "long.json: configs\[0\]\.pattern: .*pattern_complex_format" -- backend-config check "$work/long.json"
expect_error 2 "name: .*not in" -- backend-config dump tpu
expect_error 1 "" -- backend-config docs -o "$work/no_such_dir/backends.md"
expect_error 2 "model is required|required" -- run
expect_error 2 "--input is required" -- run "$fixtures/resnet18.pt"
expect_error 2 "" -- nonsense
ls -A "$work" | grep -q '\.qfx-' && fail "an error left a temporary file behind"
ls core* >/dev/null 2>&1 && fail "a core file was written"

# lower-to-native --explain: what stays reference, and why
"$python" -c "import json; c = [c for c in json.load(open('$fixtures/prepare.json')) if c['case'] == 'module_zoo'][0]; json.dump(c['qconfig_mapping'], open('$work/module_zoo.json', 'w'))"
"$qfx" opt "$fixtures/module_zoo.pt" --passes fuse,insert-observers,convert-to-reference,lower-to-native \
  --qconfig "$work/module_zoo.json" --explain >"$work/lower_out.txt" 2>"$work/lower_err.txt" || fail "opt lower-to-native exited $?"
grep -q "^%tconv1d stays reference: cannot build torch.ao.nn.quantized.ConvTranspose1d: .*ONEDNN only supports zero output_padding" \
  "$work/lower_err.txt" || fail "lower-to-native --explain does not say why tconv1d stays reference"
grep -q "^%tconv3d stays reference: PyTorch 1.13 lowers no torch.ao.nn.quantized.reference.ConvTranspose3d" \
  "$work/lower_err.txt" || fail "lower-to-native --explain does not say why tconv3d stays reference"
grep -q "^%tconv1d not lowered as special pattern: cannot build torch.ao.nn.quantized.ConvTranspose1d" \
  "$work/lower_err.txt" || fail "lower-to-native --explain does not say which rule declined at tconv1d"

# --- qfx quantize --------------------------------------------------------
"$python" -c "import torch; g = torch.Generator().manual_seed(5); torch.save(torch.randn(12, 3, 224, 224, generator=g), '$work/calib.pt'); torch.save(torch.randn(6, 7), '$work/calib_bad_shape.pt'); x = torch.randn(4, 3, 224, 224); x[1, 0, 0, 0] = float('nan'); torch.save(x, '$work/calib_nan.pt')"
"$qfx" quantize "$fixtures/resnet18.pt" -o "$work/r18_int8.pt" --calib "$work/calib.pt" --batch-size 4 \
  --report "$work/r18_report.json" 2>"$work/quantize_err.txt" || fail "quantize resnet18 exited $?: $(cat "$work/quantize_err.txt")"
"$python" "$source_dir/tests/cli/check_quantize.py" "$source_dir" "$fixtures" resnet18 onednn "$work/calib.pt" 4 \
  "$work/r18_int8.pt" "$work/r18_report.json" || fail "quantize resnet18 differs from PyTorch"
"$python" - "$work/r18_report.json" "$fixtures/resnet18.fx.json" <<'EOF' || fail "quantize report lacks fields"
import json, sys
r = json.load(open(sys.argv[1]))
assert r['schema_version'] == 2, r.get('schema_version')
assert set(r['timings']) == {'import_s', 'prepare_s', 'calibrate_s', 'convert_s', 'export_s'}, r['timings']
# name, op and target as torch.fx's symbolic_trace gives them (a call_module's target is its module path)
fx = [(n['name'], n['op'], n['target']) for n in json.load(open(sys.argv[2]))['nodes'] if n['op'] not in ('placeholder', 'output')]
assert [(n['name'], n['op'], n['target']) for n in r['nodes']] == fx
conv1 = next(n for n in r['nodes'] if n['name'] == 'conv1')
assert conv1['quantized'] and conv1['mode'] == 'static', conv1
assert conv1['target'] == 'conv1' and conv1['module_type'] == 'torch.nn.Conv2d', conv1
block = next(n for n in r['nodes'] if n['name'] == 'layer1_0_conv1')
assert block['target'] == 'layer1.0.conv1' and block['module_type'] == 'torch.nn.Conv2d', block
add = next(n for n in r['nodes'] if n['name'] == 'add')
assert add['target'] == 'operator.add' and 'module_type' not in add, add
assert conv1['weight_qparams']['qscheme'] == 'torch.per_channel_symmetric', conv1
relu = next(n for n in r['nodes'] if n['name'] == 'relu')
assert relu['fused_into'] == 'bn1' and relu['quantized'], relu
EOF
"$qfx" quantize "$fixtures/dynamic_linears.pt" -o "$work/dyn_int8.pt" --dynamic --report "$work/dyn_report.json" \
  || fail "quantize --dynamic exited $?"
"$python" - "$work/dyn_report.json" "$work/dyn_int8.pt" "$fixtures/dynamic_linears.input.pt" <<'EOF' || fail "quantize --dynamic report or model wrong"
import json, sys, torch
r = json.load(open(sys.argv[1]))
modes = {n['name']: n['mode'] for n in r['nodes']}
assert modes['fc2'] == 'dynamic', modes
m = torch.jit.load(sys.argv[2])
assert 'linear_dynamic' in m.code, m.code
m(torch.load(sys.argv[3]))
EOF
# The static LSTM (custom module): its (h, c) argument listed as its parts, its gates' observers under its node.
cat >"$work/lstm_prepare.json" <<'JSON'
{"float_to_observed_custom_module_class": {"static": {"torch.nn.LSTM": "torch.ao.nn.quantizable.LSTM"}}}
JSON
cat >"$work/lstm_convert.json" <<'JSON'
{"observed_to_quantized_custom_module_class": {"static": {"torch.ao.nn.quantizable.LSTM": "torch.ao.nn.quantized.LSTM"}}}
JSON
"$python" -c "import sys, torch; torch.save([torch.load(sys.argv[1])], sys.argv[2])" "$fixtures/suite/static_lstm.input.pt" \
  "$work/static_lstm_calib.pt"  # one batch of three inputs
"$qfx" quantize "$fixtures/suite/static_lstm.pt" -o "$work/static_lstm_int8.pt" --calib "$work/static_lstm_calib.pt" \
  --prepare-custom-config "$work/lstm_prepare.json" --convert-custom-config "$work/lstm_convert.json" \
  --report "$work/static_lstm.json" -q || fail "quantize the static LSTM exited $?"
"$python" - "$work/static_lstm.json" <<'EOF' || fail "the static LSTM's report"
import json, sys
nodes = json.load(open(sys.argv[1]))['nodes']
lstm = next(n for n in nodes if n.get('module_type') == 'torch.nn.LSTM')
assert lstm['target'] == 'lstm', lstm
state = lstm['input_qparams'][1]
assert isinstance(state, list) and len(state) == 2 and all(q['dtype'] == 'torch.quint8' for q in state), state
gates = lstm['internal_qparams']
for gate in ('igates', 'hgates', 'gates', 'fgate_cx', 'igate_cgate', 'ogate_cy'):
    assert f'layers.0.layer_fw.cell.{gate}.activation_post_process' in gates, (gate, sorted(gates))
assert all('scale' in q for q in gates.values()), gates
EOF
expect_error 1 "calibration data '.*calib_bad_shape.pt' batch 0: .*conv1" -- quantize "$fixtures/resnet18.pt" \
  -o "$work/bad.pt" --calib "$work/calib_bad_shape.pt"
expect_error 1 "calibration data '.*calib_nan.pt' batch 0 holds NaN" -- quantize "$fixtures/resnet18.pt" \
  -o "$work/bad.pt" --calib "$work/calib_nan.pt"
expect_error 1 "needs calibration data" -- quantize "$fixtures/resnet18.pt" -o "$work/bad.pt"
# an error inside a pass or the report names the node, never a bare ATen message
cat >"$work/bad_axis.json" <<'JSON'
{"": {"activation": {"type": "MinMaxObserver"},
      "weight": {"type": "PerChannelMinMaxObserver", "args": {"ch_axis": 5, "dtype": "torch.qint8",
                                                               "qscheme": "torch.per_channel_symmetric"}}}}
JSON
expect_error 1 "^qfx: error: %conv1 \(torch.nn.Conv2d\): its weight observer .*PerChannelMinMaxObserver: ch_axis 5 is out of range for a 4-d tensor$" -- \
  quantize "$fixtures/resnet18.pt" -o "$work/bad.pt" --calib "$work/calib.pt" --calib-batches 1 -q --qconfig "$work/bad_axis.json"
expect_error 1 "missing_calib.pt" -- quantize "$fixtures/resnet18.pt" -o "$work/bad.pt" --calib "$work/missing_calib.pt"
echo '{"global": {"activation": {"type": "NoSuchObserver"}}}' >"$work/bad_qconfig.json"
expect_error 1 "bad_qconfig.json" -- quantize "$fixtures/resnet18.pt" -o "$work/bad.pt" --calib "$work/calib.pt" \
  --qconfig "$work/bad_qconfig.json"
echo '{"output_quantized_idxs": [0]}' >"$work/output_quantized.json"
"$qfx" quantize "$fixtures/linear_relu.pt" -o "$work/lr_qout.pt" --calib "$fixtures/linear_relu.input.pt" \
  --prepare-custom-config "$work/output_quantized.json" || fail "quantize --prepare-custom-config exited $?"
"$python" -c "import torch, sys; y = torch.jit.load(sys.argv[1])(torch.load(sys.argv[2])); sys.exit(0 if y.is_quantized else 1)" \
  "$work/lr_qout.pt" "$fixtures/linear_relu.input.pt" || fail "output_quantized_idxs: the exported output is not quantized"
echo '{"standalone_module_name": [["block"]]}' >"$work/standalone.json"
expect_error 1 "standalone.json: standalone_module_name\[0\]: expected \[name, qconfig_mapping" -- quantize \
  "$fixtures/linear_relu.pt" -o "$work/bad.pt" --calib "$fixtures/linear_relu.input.pt" \
  --prepare-custom-config "$work/standalone.json"
# a standalone module, a non-traceable one (data-dependent control flow) and a preserved buffer
cat >"$work/custom_config.json" <<'EOF'
{"standalone_module_name": [["block", null, null, null, null]], "non_traceable_module_name": ["gate"],
 "preserved_attributes": ["class_weights"]}
EOF
"$qfx" quantize "$fixtures/custom_config_net.pt" -o "$work/custom_int8.pt" --calib "$fixtures/custom_config_net.input.pt" \
  --prepare-custom-config "$work/custom_config.json" 2>"$work/custom_err.txt" \
  || fail "quantize with standalone/non-traceable modules exited $?: $(cat "$work/custom_err.txt")"
"$python" - "$work/custom_int8.pt" "$fixtures" <<'PY' || fail "quantize with custom configs differs from PyTorch"
import json, sys, torch
model, fixtures = torch.jit.load(sys.argv[1]), sys.argv[2]
record = [r for r in json.load(open(fixtures + '/custom_configs.json')) if r['case'] == 'standalone_by_name'][0]
x = torch.load(fixtures + '/custom_config_net.input.pt')
expected = torch.load(fixtures + '/' + record['lowered']['output'])
error = (model(x) - expected).abs().max().item()
assert error <= record['lowered']['output_step'] * (1 + 1e-6), error
assert torch.equal(model.class_weights, torch.load(fixtures + '/' + record['preserved']['class_weights']))
PY
expect_error 1 "custom_config_net.pt: import: data-dependent control flow .* in module 'gate'" -- quantize \
  "$fixtures/custom_config_net.pt" -o "$work/bad.pt" --calib "$fixtures/custom_config_net.input.pt"
# --qconfig qat: prepare_qat_fx, calibration in eval mode, convert_fx, as PyTorch
"$qfx" quantize "$fixtures/linear_relu.pt" -o "$work/lr_qat.pt" --calib "$fixtures/linear_relu.input.pt" --qconfig qat \
  || fail "quantize --qconfig qat exited $?"
"$python" - "$work/lr_qat.pt" "$fixtures" "$source_dir/tests/oracle" <<'PY' || fail "quantize --qconfig qat differs from PyTorch"
import sys, torch
sys.path.insert(0, sys.argv[3])
import flow_fixtures
from torch.ao.quantization import get_default_qat_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_qat_fx
torch.backends.quantized.engine = 'onednn'
x = torch.load(sys.argv[2] + '/linear_relu.input.pt')
prepared = prepare_qat_fx(flow_fixtures.python_model('linear_relu').train(), get_default_qat_qconfig_mapping('onednn'), (x,))
prepared.eval()
with torch.no_grad():
    prepared(x)
    converted = convert_fx(prepared)
    expected, ours = converted(x), torch.jit.load(sys.argv[1])(x)
step = flow_fixtures.output_step(converted, (x,))
assert step > 0 and (ours - expected).abs().max().item() <= step * (1 + 1e-6), (ours, expected)
PY
[ ! -e "$work/bad.pt" ] || fail "a failed quantize left its output file"

# --- data, qfx eval, quantize on Fashion-MNIST ---------------------------------
fmnist=/usr/share/datasets/fashion-mnist
demo_model="$source_dir/examples/fashion_mnist/fashion_cnn.pt"
norm=(--mean 0.2860 --std 0.3530)
"$qfx" eval "$demo_model" --data "$fmnist/t10k-images-idx3-ubyte.gz" "${norm[@]}" --limit-batches 40 \
  --json "$work/eval_float.json" >"$work/eval_out.txt" 2>"$work/eval_err.txt" || fail "eval exited $?: $(cat "$work/eval_err.txt")"
grep -qE '^top-1 [0-9.]+% \(([0-9]+)/2560\)  top-5 [0-9.]+%$' "$work/eval_out.txt" || fail "eval output: $(cat "$work/eval_out.txt")"
grep -q '^eval: 40/40 batches' "$work/eval_err.txt" || fail "eval: no plain progress lines on a non-terminal stderr"
"$qfx" quantize "$demo_model" -o "$work/fmnist_int8.pt" --calib "$fmnist/train-images-idx3-ubyte.gz" "${norm[@]}" \
  --batch-size 32 --calib-batches 16 --seed 0 -q 2>"$work/fq_err.txt" || fail "quantize on IDX data exited $?: $(cat "$work/fq_err.txt")"
# -q: nothing on stderr but, on a CPU without VNNI (onednn saturates there), the one warning that says so
! grep -v "^qfx: warning: this CPU has no VNNI: " "$work/fq_err.txt" | grep -q . \
  || fail "quantize -q wrote to stderr: $(cat "$work/fq_err.txt")"
if grep -qwE 'avx512_vnni|avx_vnni' /proc/cpuinfo; then
  [ ! -s "$work/fq_err.txt" ] || fail "a saturation warning on a CPU with VNNI: $(cat "$work/fq_err.txt")"
else
  [ "$(wc -l <"$work/fq_err.txt")" -eq 1 ] || fail "no saturation warning (once) on a CPU without VNNI"
fi
"$qfx" eval "$work/fmnist_int8.pt" --data "$fmnist/t10k-images-idx3-ubyte.gz" "${norm[@]}" --limit-batches 40 -q \
  --json "$work/eval_int8.json" >/dev/null || fail "eval of the int8 model exited $?"
# Python reads the IDX file itself and runs both TorchScript files: the same top-1 counts
"$python" - "$demo_model" "$work/fmnist_int8.pt" "$work/eval_float.json" "$work/eval_int8.json" \
  "$fmnist/t10k-images-idx3-ubyte.gz" <<'PY' || fail "qfx eval differs from PyTorch"
import gzip, json, sys
import numpy as np, torch
torch.backends.quantized.engine = 'onednn'
images = sys.argv[5]
with gzip.open(images) as f:
    pixels = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
with gzip.open(images.replace('images-idx3', 'labels-idx1')) as f:
    labels = torch.from_numpy(np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64))
x = (torch.from_numpy(pixels[:2560].astype(np.float32)) / 255 - 0.2860) / 0.3530
for model_path, report in ((sys.argv[1], sys.argv[3]), (sys.argv[2], sys.argv[4])):
    model = torch.jit.load(model_path)
    with torch.no_grad():
        predicted = torch.cat([model(b).argmax(1) for b in x.split(64)])
    correct = int((predicted == labels[:2560]).sum())
    ours = json.load(open(report))
    assert ours['items'] == 2560 and round(ours['top1'] * 2560) == correct, (model_path, ours, correct)
float_top1, int8_top1 = (json.load(open(p))['top1'] for p in sys.argv[3:5])
assert float_top1 - int8_top1 < 0.01, (float_top1, int8_top1)
PY
# cross-layer equalization, AdaRound and bias correction before observation: the qnnpack (per-tensor) model stays
# within a point of float on the same 2,560 images
"$qfx" quantize "$demo_model" -o "$work/fmnist_cle.pt" --engine qnnpack --equalize --adaround --adaround-iters 50 --correct-bias \
  --calib "$fmnist/train-images-idx3-ubyte.gz" "${norm[@]}" --batch-size 32 --calib-batches 16 --seed 0 -q \
  || fail "quantize --equalize --adaround --correct-bias exited $?"
"$qfx" eval "$work/fmnist_cle.pt" --engine qnnpack --data "$fmnist/t10k-images-idx3-ubyte.gz" "${norm[@]}" \
  --limit-batches 40 -q --json "$work/eval_cle.json" >/dev/null || fail "eval of the equalized model exited $?"
"$python" -c 'import json, sys; f, q = (json.load(open(p))["top1"] for p in sys.argv[1:]); assert f - q < 0.01, (f, q)' \
  "$work/eval_float.json" "$work/eval_cle.json" || fail "the equalized, adarounded, bias-corrected model lost a point or more"
expect_error 1 "--correct-bias and --adaround need calibration data: pass --calib DATA" -- \
  quantize "$demo_model" -o "$work/never.pt" --correct-bias
expect_error 1 "--equalize, --adaround and --correct-bias are for post-training static quantization" -- \
  quantize "$demo_model" -o "$work/never.pt" --equalize --dynamic

# accuracy-driven fallback: qnnpack int8 loses ~0.16 points; --max-drop 0.1 leaves nodes float, reports them, and
# its QConfigMapping gives the same model again through plain --qconfig
fallback_args=(--engine qnnpack --calib "$fmnist/train-images-idx3-ubyte.gz" "${norm[@]}" --batch-size 32 --calib-batches 32
               --seed 0 -q)
"$qfx" quantize "$demo_model" -o "$work/fallback.pt" "${fallback_args[@]}" --eval "$fmnist/t10k-images-idx3-ubyte.gz" \
  --max-drop 0.1 --report "$work/fallback_report.json" 2>"$work/fallback_err.txt" || fail "quantize --max-drop exited $?"
grep -qE '^  left float: [a-z0-9_]+ \([a-z0-9_.]+\), top-1 \+[0-9.]+ points$' "$work/fallback_err.txt" \
  || fail "--max-drop did not report the nodes left float: $(cat "$work/fallback_err.txt")"
"$qfx" quantize "$demo_model" -o "$work/fallback_again.pt" "${fallback_args[@]}" --qconfig "$work/fallback.qconfig.json" \
  || fail "quantize with the fallback's QConfigMapping exited $?"
for model in fallback fallback_again; do
  "$qfx" eval "$work/$model.pt" --engine qnnpack --data "$fmnist/t10k-images-idx3-ubyte.gz" "${norm[@]}" --batch-size 500 -q \
    --json "$work/$model.eval.json" >/dev/null || fail "eval of $model exited $?"
done
"$python" - "$work/fallback_report.json" "$work/fallback.eval.json" "$work/fallback_again.eval.json" <<'PY' \
  || fail "the fallback's model, its report and its QConfigMapping disagree"
import json, sys
fallback = json.load(open(sys.argv[1]))['fallback']
top1, again = (100 * json.load(open(p))['top1'] for p in sys.argv[2:])
assert fallback['met'] and fallback['float'] - fallback['final'] <= 0.1, fallback
assert fallback['float_nodes'] and all(n['gain'] > 0 for n in fallback['float_nodes']), fallback
assert abs(top1 - fallback['final']) < 1e-9 and abs(again - top1) < 1e-9, (top1, again, fallback)
PY
expect_error 1 "--max-drop and --max-float-nodes need --eval DATA" -- \
  quantize "$demo_model" -o "$work/never.pt" --calib "$fmnist/train-images-idx3-ubyte.gz" --max-drop 0.5

# sensitivity: every quantizable node's two trials, ranked, as a table, JSON and an HTML chart
"$qfx" sensitivity "$demo_model" --calib "$fmnist/train-images-idx3-ubyte.gz" --data "$fmnist/t10k-images-idx3-ubyte.gz" \
  "${norm[@]}" --batch-size 32 --calib-batches 8 --seed 0 --limit-batches 4 -q --json "$work/sensitivity.json" \
  --report-html "$work/sensitivity.html" >"$work/sensitivity.txt" || fail "sensitivity exited $?"
grep -qE '^top1: float [0-9.]+%, all quantized [0-9.]+%; 7 nodes, 15 trials' "$work/sensitivity.txt" \
  || fail "sensitivity table: $(head -2 "$work/sensitivity.txt")"
"$python" - "$work/sensitivity.json" <<'PY' || fail "sensitivity JSON is not ranked or lacks nodes"
import json, sys
report = json.load(open(sys.argv[1]))
names = sorted(n['node'] for n in report['nodes'])
assert names == ['conv1', 'conv2', 'fc1', 'fc2', 'flatten', 'max_pool2d', 'max_pool2d_1'], names
scores = [n['only_float'] for n in report['nodes']]
assert scores == sorted(scores, reverse=True), scores
PY
grep -q 'id="sensitivity-chart"' "$work/sensitivity.html" && grep -q '"only_float"' "$work/sensitivity.html" \
  || fail "the sensitivity HTML page lacks its chart or data"

# threads per engine: onednn LibTorch's default (PyTorch's torch.get_num_threads());
# qnnpack one, unless OpenMP waits passively or OMP_NUM_THREADS is set
# (docs/benchmarks.md, thread policy)
cores=$("$python" -c 'import torch; print(torch.get_num_threads())')
threads_of() {  # threads qfx eval reports with the environment and options in "$@"
  env "$@" --limit-batches 2 -q --json "$work/eval_threads.json" >/dev/null || fail "eval $* exited $?"
  "$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["threads"])' "$work/eval_threads.json"
}
eval_threads=("$qfx" eval "$work/fmnist_int8.pt" --data "$fmnist/t10k-images-idx3-ubyte.gz")
[ "$(threads_of "${eval_threads[@]}")" = "$cores" ] || fail "onednn eval does not use LibTorch's default of $cores threads"
[ "$(threads_of "${eval_threads[@]}" --engine qnnpack)" = 1 ] || fail "qnnpack eval does not default to one thread"
[ "$(threads_of OMP_WAIT_POLICY=PASSIVE "${eval_threads[@]}" --engine qnnpack)" = "$cores" ] ||
  fail "qnnpack eval under OMP_WAIT_POLICY=PASSIVE does not use LibTorch's default of $cores threads"
[ "$(threads_of OMP_NUM_THREADS=2 "${eval_threads[@]}" --engine qnnpack)" = 2 ] ||
  fail "qnnpack eval overrides OMP_NUM_THREADS"
expect_error 1 "has no labels; qfx eval needs labelled data" -- eval "$demo_model" --data "$work/calib.pt"
printf 'garbage' >"$work/bad-images-idx3-ubyte"
expect_error 1 "bad-images-idx3-ubyte' is not an IDX file" -- eval "$demo_model" --data "$work/bad-images-idx3-ubyte"
expect_error 1 "calibration data: .*bad-images-idx3-ubyte' is not an IDX file" -- quantize "$demo_model" -o "$work/bad.pt" \
  --calib "$work/bad-images-idx3-ubyte"

# progress on a terminal (script(1) gives qfx a pseudo-terminal): a bar redrawn
# in place with batches, images/s and ETA
script -qec "'$qfx' eval '$demo_model' --data '$fmnist/t10k-images-idx3-ubyte.gz' --limit-batches 20" /dev/null |
  tr '\r' '\n' >"$work/tty.txt" || fail "eval on a terminal exited $?"
grep -qE '^eval \[#+\] 20/20 batches, [0-9]+ images/s, ETA [0-9]+s' "$work/tty.txt" ||
  fail "eval on a terminal: no progress bar: $(head -c 300 "$work/tty.txt")"
[ "$(grep -c '^eval \[' "$work/tty.txt")" -ge 10 ] || fail "eval on a terminal: the bar is not redrawn per batch"

# streaming: a 314 MB IDX file (plain, gzipped, and read in a seeded order)
# costs the same memory as the 8 MB test set, not the file
"$python" - "$work" <<'PY'
import gzip, os, struct, sys
import numpy as np
n, work = 400000, sys.argv[1]
block = np.zeros((10000, 784), np.uint8)
block[:, ::7] = 200
for name, magic, header, chunk in (('big-images-idx3-ubyte', 2051, (n, 28, 28), block.tobytes()),
                                   ('big-labels-idx1-ubyte', 2049, (n,), (np.arange(10000) % 10).astype(np.uint8).tobytes())):
    with open(os.path.join(work, name), 'wb') as plain, gzip.open(os.path.join(work, name + '.gz'), 'wb', 1) as packed:
        for f in (plain, packed):
            f.write(struct.pack('>I' + 'I' * len(header), magic, *header))
            for _ in range(n // 10000):
                f.write(chunk)
PY
peak_mb() {  # peak resident memory of `qfx eval` on the data in "$@", in MB
  "$python" -c "
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)" \
    "$qfx" eval "$demo_model" --limit-batches 4 -q --data "$@"
}
small=$(peak_mb "$fmnist/t10k-images-idx3-ubyte.gz")
for data in "$work/big-images-idx3-ubyte" "$work/big-images-idx3-ubyte.gz" "$work/big-images-idx3-ubyte.gz --seed 1"; do
  # shellcheck disable=SC2086
  big=$(peak_mb $data) || fail "eval on $data exited $?"
  [ "$big" -le $((small + 40)) ] || fail "eval on $data: peak ${big} MB, ${small} MB on the small test set"
done
rm -f "$work"/big-*

# --- qfx compare, qfx report, quantize --train -----------------------------------
"$qfx" compare "$fixtures/compare_model.pt" "$work/cmp_int8.pt" --data "$fixtures/compare_data.pt" --batch-size 8 \
  >/dev/null 2>"$work/err" && fail "compare of a missing quantized file exited 0"
grep -q "cannot open model file '$work/cmp_int8.pt'" "$work/err" || fail "compare missing file: $(cat "$work/err")"
"$qfx" quantize "$fixtures/compare_model.pt" -o "$work/cmp_int8.pt" --calib "$fixtures/compare_calib.pt" \
  --batch-size 16 -q --report "$work/cmp_quantize.json" || fail "quantize of the compare model exited $?"
"$qfx" compare "$fixtures/compare_model.pt" "$work/cmp_int8.pt" --data "$fixtures/compare_data.pt" --batch-size 8 -q \
  --json "$work/cmp.json" >"$work/cmp.txt" || fail "compare exited $?"
# the layers and numbers of PyTorch's numeric suite (compare_fixtures.py), table and JSON
"$python" - "$work/cmp.txt" "$work/cmp.json" "$fixtures/compare.json" <<'PY' || fail "qfx compare differs from the numeric suite"
import json, sys
table = {line.split()[0]: line.split() for line in open(sys.argv[1]).read().splitlines()[1:]}
ours = {l['name']: l for l in json.load(open(sys.argv[2]))['layers']}
suite = json.load(open(sys.argv[3]))
for name, e in suite['layers'].items():
    assert ours[name]['float_node'] == e['float_node'], (name, ours[name], e)
    assert abs(ours[name]['sqnr_db'] - e['sqnr_db']) < 1e-3, (name, ours[name], e)
    assert abs(float(table[name][2]) - e['sqnr_db']) < 0.006, (name, table[name], e)
assert abs(float(table['output'][2]) - suite['output']['sqnr_db']) < 0.006
# each row's float node in FX's words: op, target (a module path for call_module) and the module's class apart
for layer in ours.values():
    assert layer['op'] in ('call_module', 'call_function', 'call_method'), layer
    assert ('module_type' in layer) == (layer['op'] == 'call_module'), layer
    assert not layer['target'].startswith('torch.nn.') or layer['op'] != 'call_module', layer
PY
"$python" -c "import json, sys; r = json.load(open(sys.argv[1])); del r['schema_version']; json.dump(r, open(sys.argv[2], 'w'))" \
  "$work/cmp_quantize.json" "$work/old_report.json"  # a report of qfx before schema version 2
expect_error 1 "--quantize: '.*old_report.json' is a report of schema version 1; this qfx reads version 2 \(run qfx quantize --report again\)" -- \
  report --quantize "$work/old_report.json" --json "$work/r_old.json"
# Around a leaf kept whole (nn.MultiheadAttention, run as TorchScript): each row pairs a node with itself
"$python" -c "import sys, torch; torch.save(torch.rand(10, 2, 8), sys.argv[1])" "$work/mha_data.pt"
# (qnnpack: onednn's linears saturate on a CPU without VNNI, docs/divergences.md)
"$qfx" quantize "$fixtures/suite/multihead_attention.pt" -o "$work/mha_int8.pt" --calib "$work/mha_data.pt" \
  --engine qnnpack --batch-size 5 -q 2>/dev/null || fail "quantize multihead_attention exited $?"
"$qfx" compare "$fixtures/suite/multihead_attention.pt" "$work/mha_int8.pt" --data "$work/mha_data.pt" --batch-size 5 \
  --engine qnnpack -q --json "$work/mha_cmp.json" >/dev/null 2>&1 || fail "compare multihead_attention exited $?"
"$python" - "$work/mha_cmp.json" <<'PY' || fail "compare pairs rows wrongly around the attention leaf"
import json, sys
layers = json.load(open(sys.argv[1]))['layers']
assert [(l['name'], l['float_node']) for l in layers] == [('fc1', 'fc1'), ('attn', 'attn'), ('fc2', 'fc2')], layers
assert all(l['sqnr_db'] > 20 for l in layers), layers
PY
"$qfx" eval "$demo_model" --data "$fmnist/t10k-images-idx3-ubyte.gz" "${norm[@]}" --limit-batches 2 -q \
  --json "$work/eval_small.json" >/dev/null || fail "eval for the report exited $?"
"$qfx" report --quantize "$work/cmp_quantize.json" --compare "$work/cmp.json" --eval "float=$work/eval_small.json" \
  --json "$work/report.json" --html "$work/report.html" || fail "report exited $?"
"$python" - "$work/report.json" "$demo_model" <<'PY' || fail "report.json content"
import json, os, sys
r = json.load(open(sys.argv[1]))
assert len(r['nodes']) > 5 and len(r['compare']['layers']) == 7, r.keys()
m = r['models'][0]
assert m['name'] == 'float' and m['items'] == 128 and m['size_bytes'] == os.path.getsize(sys.argv[2]), m
PY
expect_error 1 "pass --json FILE and/or --html FILE" -- report --quantize "$work/cmp_quantize.json"
expect_error 1 "--eval takes NAME=FILE.json, got 'eval_small.json'" -- report --eval eval_small.json --json "$work/r2.json"
expect_error 1 "--compare: '.*cmp_quantize.json' is not the output of qfx compare --json" -- \
  report --compare "$work/cmp_quantize.json" --json "$work/r2.json"
[ ! -e "$work/r2.json" ] || fail "report wrote a file on error"
expect_error 1 "compare: no node of '.*linear_relu.pt' has a match in '.*cmp_int8.pt' \(was it made from that float model\?\)" -- compare "$fixtures/linear_relu.pt" \
  "$work/cmp_int8.pt" --data "$fixtures/compare_data.pt"
"$python" -c "import torch; x = torch.load('$fixtures/compare_data.pt'); x[3, 0, 0, 0] = float('nan'); torch.save(x, '$work/compare_nan.pt')"
expect_error 1 "data '.*compare_nan.pt' batch 0 holds NaN or infinite values" -- compare "$fixtures/compare_model.pt" \
  "$work/cmp_int8.pt" --data "$work/compare_nan.pt" --batch-size 8 --json "$work/cmp_nan.json"
[ ! -e "$work/cmp_nan.json" ] || fail "compare wrote its JSON on error"
# --dynamic on a conv-relu / linear-relu model, against PyTorch's prepare_fx with default_dynamic_qconfig
# (the Linear layers dynamic, the rest float); no warning about the convolutions.
"$qfx" quantize "$demo_model" -o "$work/cnn_dynamic.pt" --dynamic --report "$work/cnn_dynamic.json" \
  2>"$work/dynamic_err.txt" || fail "quantize --dynamic on the CNN exited $?: $(cat "$work/dynamic_err.txt")"
[ ! -s "$work/dynamic_err.txt" ] || fail "quantize --dynamic warned: $(cat "$work/dynamic_err.txt")"
"$python" - "$demo_model" "$work/cnn_dynamic.pt" "$work/cnn_dynamic.json" "$source_dir/examples/fashion_mnist/sample_batch.pt" \
  <<'EOF' || fail "quantize --dynamic on the CNN differs from PyTorch"
import json, sys, torch, torch.nn as nn, torch.nn.functional as F
from torch.ao.quantization import QConfigMapping, default_dynamic_qconfig
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx
scripted = torch.jit.load(sys.argv[1])

class FashionCNN(nn.Module):  # examples/fashion_mnist/train.cpp's model
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 16, 3, padding=1), nn.Conv2d(16, 32, 3, padding=1)
        self.fc1, self.fc2 = nn.Linear(1568, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = torch.flatten(F.max_pool2d(F.relu(self.conv2(x)), 2), 1)
        return self.fc2(F.relu(self.fc1(x)))

model = FashionCNN().eval()
model.load_state_dict(scripted.state_dict())
x = torch.load(sys.argv[4])
torch.backends.quantized.engine = 'onednn'
theirs = convert_fx(prepare_fx(model, QConfigMapping().set_global(default_dynamic_qconfig), (x,)))
ours = torch.jit.load(sys.argv[2])
assert 'quantized.linear_relu_dynamic' in ours.code and 'quantized.linear_dynamic' in ours.code, ours.code
assert 'quantized.conv' not in ours.code, ours.code
expected = theirs(x)
assert (ours(x) - expected).abs().max() <= 1e-5 * expected.abs().max(), (ours(x) - expected).abs().max()
modes = {n['name']: n['mode'] for n in json.load(open(sys.argv[3]))['nodes']}
assert modes['fc1'] == modes['fc2'] == 'dynamic' and modes['conv1'] == 'none', modes
EOF
# --report on a standalone BatchNorm2d and PReLU (no weight observer runs on them) and on an Embedding under the
# static default mapping (observed around, as PyTorch, but convert keeps it float: not "quantized").
"$python" - "$work" <<'EOF' || fail "could not make the report models"
import sys, torch, torch.nn as nn
class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn, self.prelu = nn.BatchNorm2d(3), nn.PReLU()
    def forward(self, x):
        return self.prelu(self.bn(x))
class Lookup(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.fc = nn.Embedding(10, 4), nn.Linear(4, 2)
    def forward(self, x):
        return self.fc(self.emb(x))
x, i = torch.rand(4, 3, 8, 8), torch.randint(0, 10, (4, 3))
torch.jit.trace(Norms().eval(), x).save(sys.argv[1] + '/norms.pt')
torch.jit.trace(Lookup().eval(), i).save(sys.argv[1] + '/lookup.pt')
torch.save(x, sys.argv[1] + '/norms_in.pt')
torch.save(i, sys.argv[1] + '/lookup_in.pt')
EOF
for m in norms lookup; do
  "$qfx" quantize "$work/$m.pt" -o "$work/${m}_q.pt" --calib "$work/${m}_in.pt" --batch-size 2 --report "$work/$m.json" -q \
    || fail "quantize --report on $m exited $?"
done
"$python" - "$work/norms.json" "$work/lookup.json" <<'EOF' || fail "the reports of the norms/lookup models are wrong"
import json, sys
norms = {n['name']: n for n in json.load(open(sys.argv[1]))['nodes']}
assert norms['bn']['quantized'] and norms['bn']['weight_qparams'] is None, norms['bn']
lookup = {n['name']: n for n in json.load(open(sys.argv[2]))['nodes']}
assert not lookup['emb']['quantized'] and 'convert keeps it float' in lookup['emb']['reason'], lookup['emb']
assert lookup['fc']['quantized'] and lookup['fc']['mode'] == 'static', lookup['fc']
EOF
# --dynamic on an LSTM between two linears: the linears and the LSTM become dynamic (quantized_lstm), no
# warning; the model runs in PyTorch, close to float.
"$qfx" quantize "$fixtures/suite/lstm.pt" -o "$work/lstm_dynamic.pt" --dynamic --report "$work/lstm_dynamic.json" \
  2>"$work/lstm_err.txt" || fail "quantize --dynamic on an LSTM model exited $?: $(cat "$work/lstm_err.txt")"
[ ! -s "$work/lstm_err.txt" ] || fail "quantize --dynamic on an LSTM model warned: $(cat "$work/lstm_err.txt")"
"$python" - "$work/lstm_dynamic.pt" "$work/lstm_dynamic.json" "$fixtures/suite/lstm.input.pt" \
  "$fixtures/suite/lstm.float.pt" <<'EOF' || fail "quantize --dynamic on an LSTM model is wrong"
import json, sys, torch
modes = {n['name']: n['mode'] for n in json.load(open(sys.argv[2]))['nodes']}
assert modes['fc1'] == modes['fc2'] == modes['rnn'] == 'dynamic', modes
model = torch.jit.load(sys.argv[1])
assert 'quantized_lstm' in model.rnn.code, model.rnn.code
out, h, c = model(*torch.load(sys.argv[3]))
expected_out, expected_h, expected_c = torch.load(sys.argv[4])
assert (out - expected_out).abs().max() < 0.05 and (h - expected_h).abs().max() < 0.05, (out - expected_out).abs().max()
EOF
expect_error 1 "--train needs --qconfig qat" -- quantize "$demo_model" -o "$work/t.pt" --train "$work/calib.pt"
expect_error 1 "training data '.*calib.pt' batch 0: no labels \(training needs labelled data\)" -- quantize "$demo_model" -o "$work/t.pt" \
  --qconfig qat --train "$work/calib.pt"
[ ! -e "$work/t.pt" ] || fail "quantize --train wrote a file on error"

# A quantized mean that LibTorch 1.13 cannot run on the calibrated shape (a channels_last_3d tensor whose reduced
# dimensions are all 1: s3d's classifier) stays float with one warning naming it, and the written file runs.
"$python" - "$work" <<'EOF'
import sys, torch
class Classifier3d(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv3d(3, 8, 3, padding=1)
        self.pool = torch.nn.AvgPool3d((2, 7, 7), stride=1)
        self.classifier = torch.nn.Conv3d(8, 5, 1)
    def forward(self, x):
        return torch.mean(self.classifier(self.pool(torch.relu(self.conv(x)))), dim=(2, 3, 4))
torch.manual_seed(0)
torch.jit.trace(Classifier3d().eval(), torch.rand(1, 3, 2, 7, 7)).save(f'{sys.argv[1]}/classifier3d.pt')
torch.save(torch.rand(2, 3, 2, 7, 7), f'{sys.argv[1]}/classifier3d_calib.pt')
EOF
"$qfx" quantize "$work/classifier3d.pt" -o "$work/classifier3d_int8.pt" --calib "$work/classifier3d_calib.pt" \
  --batch-size 1 -q 2>"$work/err" || fail "classifier3d: $(cat "$work/err")"
[ "$(grep -v '^qfx: warning: this CPU has no VNNI: ' "$work/err")" = "qfx: warning: node %mean stays float: LibTorch 1.13's quantized mean cannot reduce a channels_last_3d tensor whose reduced dimensions are all 1" ] ||
  fail "classifier3d: not one warning naming %mean: $(cat "$work/err")"
"$python" -c "
import sys, torch
torch.backends.quantized.engine = 'onednn'
m = torch.jit.load(sys.argv[1])
assert m(torch.load(sys.argv[2])[:1]).shape == (1, 5)" "$work/classifier3d_int8.pt" "$work/classifier3d_calib.pt" ||
  fail "classifier3d: the written file does not run"

# --- ONNX ------------------------------------------------------------------
# quantize -o X.onnx: a checked ONNX model (ONNX's magic: a ModelProto starting with ir_version, field 1)
fm_calib=(--calib "$fmnist/train-images-idx3-ubyte.gz" "${norm[@]}" --calib-batches 2 -q)
"$qfx" quantize "$demo_model" -o "$work/cnn.onnx" "${fm_calib[@]}" || fail "quantize -o cnn.onnx exited $?"
[ "$(head -c 1 "$work/cnn.onnx" | od -An -tx1 | tr -d ' ')" = 08 ] || fail "cnn.onnx is not a ModelProto"
"$qfx" quantize "$demo_model" -o "$work/cnn_onnx.bin" --format onnx "${fm_calib[@]}" || fail "--format onnx exited $?"
cmp -s "$work/cnn.onnx" "$work/cnn_onnx.bin" || fail "--format onnx and a .onnx name write different models"
# Swin's window ops (sizes by % and //, F.pad, roll, masked_fill): exported; the onnx_runtime test runs them
"$qfx" export "$fixtures/suite/window_ops.pt" -o "$work/window.onnx" --input-shape 1,3,5,5 \
  || fail "export of the window ops exited $?"
# a leaf kept as TorchScript (import warns about it, then the export's one error line)
"$qfx" export "$fixtures/bad_leaf.pt" -o "$work/leaf.onnx" --input-shape 2,4 2>"$work/leaf_err"
code=$?
[ "$code" -eq 1 ] || fail "export of a model without an ONNX form exited $code"
[ "$(tail -n 1 "$work/leaf_err")" = "qfx: error: ONNX export: node %body_1 (call_module body.1): module 'body.1' of class torch.jit.ScriptModule has no ONNX form" ] \
  || fail "export of a model without an ONNX form: $(cat "$work/leaf_err")"
[ ! -e "$work/leaf.onnx" ] || fail "export wrote a file for a model without an ONNX form"
expect_error 1 "ONNX output needs an example input: pass --input-shape" -- export "$demo_model" -o "$work/f.onnx"
expect_error 1 "--input-shape '1,x': expected positive sizes" -- export "$demo_model" -o "$work/f.onnx" --input-shape 1,x
expect_error 1 "--format 'tflite': expected torchscript or onnx" -- quantize "$demo_model" -o "$work/f.bin" --format tflite \
  "${fm_calib[@]}"
expect_error 2 "--opset: Value 18 not in range 13 to 17" -- export "$demo_model" -o "$work/f.onnx" --opset 18
[ ! -e "$work/f.onnx" ] && [ ! -e "$work/f.bin" ] || fail "an ONNX error left a file"

# the same classifier from PyTorch 2 (.pt2): every command that takes a model reads it, into the same graph
demo_pt2="$source_dir/examples/fashion_mnist/fashion_cnn.pt2"
"$qfx" opt "$demo_pt2" --passes fuse >"$work/pt2_fused.txt" || fail "opt on a .pt2 exited $?"
grep -q "call_module\[target=conv1\]" "$work/pt2_fused.txt" || fail "opt on a .pt2: $(head -5 "$work/pt2_fused.txt")"
"$qfx" quantize "$demo_pt2" -o "$work/cnn_pt2.pt" "${fm_calib[@]}" || fail "quantize of a .pt2 exited $?"
"$qfx" quantize "$demo_model" -o "$work/cnn_ts.pt" "${fm_calib[@]}" || fail "quantize exited $?"
"$python" - "$work/cnn_pt2.pt" "$work/cnn_ts.pt" "$source_dir/examples/fashion_mnist/sample_batch.pt" <<'PY' ||
import sys, torch
torch.backends.quantized.engine = 'onednn'
x = torch.load(sys.argv[3])
x = x[0] if isinstance(x, (list, tuple)) else x
a, b = torch.jit.load(sys.argv[1])(x), torch.jit.load(sys.argv[2])(x)
assert torch.equal(a, b), (a - b).abs().max()
PY
  fail "the int8 models from the .pt2 and from TorchScript differ"
"$qfx" compare "$demo_pt2" "$work/cnn_pt2.pt" --data "$fmnist/t10k-images-idx3-ubyte.gz" "${norm[@]}" \
  --limit-batches 1 >/dev/null || fail "compare with a .pt2 exited $?"
"$qfx" export "$demo_pt2" -o "$work/cnn_pt2.onnx" --input-shape 1,1,28,28 || fail "export of a .pt2 exited $?"
"$qfx" eval "$demo_pt2" --data "$fmnist/t10k-images-idx3-ubyte.gz" "${norm[@]}" --limit-batches 2 -q \
  || fail "eval of a .pt2 exited $?"
head -c 5000 "$demo_pt2" >"$work/cut.pt2"
expect_error 1 "'$work/cut.pt2'" -- print "$work/cut.pt2"

finish CLI
