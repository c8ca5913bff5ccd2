"""Checks `qfx quantize` output against PyTorch 1.13: the exported int8 model,
run by torch.jit.load, is within one output quantization step of PyTorch's
prepare_fx / calibrate / convert_fx on the same data, and every observed
output in the report has PyTorch's scale and zero point.
    check_quantize.py SOURCE_DIR FIXTURES MODEL_NAME ENGINE CALIB.pt BATCH INT8.pt REPORT.json"""
import copy
import json
import os
import sys

import torch

source_dir, fixtures, name, engine, calib, batch, int8, report = sys.argv[1:9]
sys.path.insert(0, os.path.join(source_dir, 'tests', 'oracle'))
import flow_fixtures  # noqa: E402
import quant_fixtures  # noqa: E402
from torch.ao.quantization import get_default_qconfig_mapping, observer as ob  # noqa: E402
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx  # noqa: E402

torch.set_grad_enabled(False)
ob.HistogramObserver.forward = quant_fixtures.FixedHistogramObserver.forward
flow_fixtures.OUT = fixtures
torch.backends.quantized.engine = engine
model = flow_fixtures.python_model(name)
inputs = flow_fixtures.load_inputs(name)
prepared = prepare_fx(copy.deepcopy(model), get_default_qconfig_mapping(engine), inputs)
for b in torch.load(calib).split(int(batch)):
    prepared(b)

observed = {}
modules = dict(prepared.named_modules(remove_duplicate=False))
for n in prepared.graph.nodes:
    if n.op == 'call_module' and isinstance(modules[n.target], ob.ObserverBase):
        scale, zero_point = modules[n.target].calculate_qparams()
        observed[n.args[0].name] = (scale.reshape(-1).tolist(), zero_point.reshape(-1).tolist())
nodes = json.load(open(report))['nodes']
checked = 0
for node in nodes:
    q = node.get('output_qparams')
    if not q or 'scale' not in q or node['name'] not in observed:
        continue
    scale = q['scale'] if isinstance(q['scale'], list) else [q['scale']]
    zero_point = q['zero_point'] if isinstance(q['zero_point'], list) else [q['zero_point']]
    assert (scale, zero_point) == (observed[node['name']][0], [int(z) for z in observed[node['name']][1]]), \
        f"{node['name']}: report {scale} {zero_point} != PyTorch {observed[node['name']]}"
    checked += 1
assert checked > 0, 'the report has no output qparams to check'

converted = convert_fx(prepared)
expected = converted(*inputs)
ours = torch.jit.load(int8)(*inputs)
step = flow_fixtures.output_step(converted, inputs)
error = (ours - expected).abs().max().item()
assert step > 0 and error <= step * (1 + 1e-6), f'exported model differs by {error}, one output step is {step}'
print(f'{name}: {checked} observed outputs equal, exported output within {error:.3g} (step {step:.3g})')
