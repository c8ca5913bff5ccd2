"""compare fixtures: PyTorch 1.13's FX numeric suite (torch.ao.ns._numeric_suite_fx)
on a float model and its convert_fx model (onednn engine, default qconfig
mapping), the oracle for qfx's per-layer comparison. HistogramObserver runs
with upstream's histc range fix (docs/divergences.md), as in quant_fixtures.py.

compare_model.pt: the traced float model; compare_calib.pt: its calibration
batch; compare_data.pt: the batch both models are compared on.
compare.json: per layer of the int8 model (the suite's layer names, the int8
model's node names) the float node it is compared with and the suite's
compute_sqnr, compute_normalized_l2_error and compute_cosine_similarity; the
same for the model output.
"""
import copy
import json
import os

import torch
import torch.ao.ns._numeric_suite_fx as ns
import torch.nn as nn
from torch.ao.ns.fx.utils import compute_cosine_similarity, compute_normalized_l2_error, compute_sqnr
import torch.ao.quantization.observer as ob
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

import quant_fixtures

METRICS = {'sqnr_db': compute_sqnr, 'normalized_l2': compute_normalized_l2_error, 'cosine': compute_cosine_similarity}


class CompareNet(nn.Module):
    """conv-bn-relu (fused), a residual add, pooling and two linears."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc1 = nn.Linear(8, 16)
        self.relu3 = nn.ReLU()
        self.fc2 = nn.Linear(16, 5)

    def forward(self, x):
        y = self.relu1(self.bn1(self.conv1(x)))
        y = self.relu2(self.conv2(y) + y)
        y = torch.flatten(self.pool(y), 1)
        return self.fc2(self.relu3(self.fc1(y)))


def metrics(x, y):
    return {name: float(fn(x, y)) for name, fn in METRICS.items()}


def write_all(out):
    torch.manual_seed(0)
    model = CompareNet().eval()
    with torch.no_grad():  # non-trivial batch-norm statistics
        model.bn1.running_mean.uniform_(-0.2, 0.2)
        model.bn1.running_var.uniform_(0.5, 1.5)
    calib = torch.randn(16, 3, 12, 12)
    data = torch.randn(8, 3, 12, 12)
    torch.jit.trace(model, calib[:1]).save(os.path.join(out, 'compare_model.pt'))
    torch.save(calib, os.path.join(out, 'compare_calib.pt'))
    torch.save(data, os.path.join(out, 'compare_data.pt'))

    torch.backends.quantized.engine = 'onednn'
    ob.HistogramObserver.forward = quant_fixtures.FixedHistogramObserver.forward
    prepared = prepare_fx(copy.deepcopy(model), get_default_qconfig_mapping('onednn'), (calib,))
    prepared(calib)
    quantized = convert_fx(prepared)
    float_gm = torch.fx.symbolic_trace(model)
    logged_float, logged_int8 = ns.add_loggers('fp32', float_gm, 'int8', quantized, ns.OutputLogger)
    logged_float(data)
    logged_int8(data)
    results = ns.extract_logger_info(logged_float, logged_int8, ns.OutputLogger, 'int8')
    layers = {}
    for name, entry in results.items():
        fp32, int8 = entry['node_output']['fp32'][0], entry['node_output']['int8'][0]
        x, y = fp32['values'][0], int8['values'][0]
        x = x.dequantize() if x.is_quantized else x
        y = y.dequantize() if y.is_quantized else y
        layers[name] = dict(float_node=fp32['prev_node_name'], **metrics(x, y))
    output = metrics(model(data), quantized(data))
    with open(os.path.join(out, 'compare.json'), 'w') as f:
        json.dump({'layers': layers, 'output': output}, f, indent=1)
