"""Quantization-flow fixtures: what PyTorch 1.13's FX passes make of models.

fuse.json: for each case, the model file qfx imports, the backend, the mode
(eval, or train with is_qat as prepare_qat_fx fuses), and what
torch.ao.quantization.fx.fuse.fuse made of the symbolically traced model:
nodes (name, op, target), code and printed module tree. In eval mode the fused
model's outputs on the model's input are in CASE.fused_output.pt.
fusion_zoo.pt (and fusion_zoo_qat.pt): a model with every native fusion
pattern kind, traced; fusion_zoo.input.pt its inputs.
"""
import json
import os

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.ao.quantization.backend_config import get_native_backend_config
from torch.ao.quantization.fx.fuse import fuse

import backend_fixtures
import model_fixtures

OUT = None


class FusionZoo(nn.Module):
    """Every kind of native fusion, plus a conv whose value is used twice
    (which must not fuse with its batch norm)."""

    def __init__(self, with_transpose=True):
        super().__init__()
        self.conv1 = nn.Conv1d(3, 4, 3)
        self.bn1 = nn.BatchNorm1d(4)
        self.relu1 = nn.ReLU()
        self.conv3 = nn.Conv3d(2, 3, 2)
        self.bn3 = nn.BatchNorm3d(3)
        self.conv2 = nn.Conv2d(3, 4, 3)
        self.bn2 = nn.BatchNorm2d(4)
        self.relu2 = nn.ReLU(inplace=True)
        self.with_transpose = with_transpose
        self.convt = nn.ConvTranspose2d(4, 4, 2)
        self.bnt = nn.BatchNorm2d(4)
        self.linear = nn.Linear(6, 5)
        self.bnl = nn.BatchNorm1d(5)
        self.linear2 = nn.Linear(5, 5)
        self.shared = nn.Conv2d(4, 4, 1)
        self.bn_shared = nn.BatchNorm2d(4)

    def forward(self, x1, x2, x3, x4):
        a = self.relu1(self.bn1(self.conv1(x1)))
        b = self.bn3(self.conv3(x3))
        c = F.relu(self.conv2(x2))
        c = self.relu2(self.bn2(c))
        if self.with_transpose:
            c = self.bnt(self.convt(c))
        e = F.relu(self.linear2(self.bnl(self.linear(x4))), inplace=True)
        s = self.shared(c)
        f = self.bn_shared(s) + s
        return a, b, f, e


def fusion_zoo_inputs():
    g = torch.Generator().manual_seed(1)
    return (torch.randn(2, 3, 8, generator=g), torch.randn(2, 3, 6, 6, generator=g),
            torch.randn(2, 2, 3, 3, 3, generator=g), torch.randn(4, 6, generator=g))


def write_fusion_zoo():
    inputs = fusion_zoo_inputs()
    torch.save(list(inputs), os.path.join(OUT, 'fusion_zoo.input.pt'))
    for name, with_transpose in (('fusion_zoo', True), ('fusion_zoo_qat', False)):
        torch.manual_seed(0)
        model = FusionZoo(with_transpose).eval()
        model_fixtures.randomize_stats(model)
        torch.jit.trace(model, inputs).save(os.path.join(OUT, f'{name}.pt'))


def python_model(name):
    """The Python model a fixture file was traced from (same seed, same stats)."""
    ctors = {n: c for n, c, _, _ in model_fixtures.models()}
    ctors['fusion_zoo'] = lambda: FusionZoo(True)
    ctors['fusion_zoo_qat'] = lambda: FusionZoo(False)
    torch.manual_seed(0)
    model = ctors[name]().eval()
    model_fixtures.randomize_stats(model)
    return model


def load_inputs(name):
    stem = 'fusion_zoo' if name.startswith('fusion_zoo') else name
    value = torch.load(os.path.join(OUT, f'{stem}.input.pt'))
    return tuple(value) if isinstance(value, list) else (value,)


def graph_json(gm):
    return {
        'nodes': [{'name': n.name, 'op': n.op, 'target': model_fixtures.target_name(n)} for n in gm.graph.nodes],
        'code': gm.code,
        'module_tree': nn.Module.__repr__(gm),
    }


FUSE_CASES = [
    # (case, model, backend, is_qat)
    ('fusion_zoo', 'fusion_zoo', 'native', False),
    ('fusion_zoo_qat', 'fusion_zoo_qat', 'native', True),
    ('resnet18', 'resnet18', 'native', False),
    ('resnet18_qat', 'resnet18', 'native', True),
    ('mobilenet_v2', 'mobilenet_v2', 'native', False),
    ('mobilenet_v3_large', 'mobilenet_v3_large', 'native', False),
    ('linear_relu', 'linear_relu', 'native', False),
    ('tutorial_no_bn', 'tutorial_no_bn', 'my_backend', False),
    ('tutorial_bn', 'tutorial_bn', 'my_backend', False),
    ('tutorial_bn_native', 'tutorial_bn', 'native', False),
]


def write_fuse():
    backends = {'native': get_native_backend_config(), 'my_backend': backend_fixtures.tutorial_backend_config()}
    cases = []
    for case, model_name, backend, is_qat in FUSE_CASES:
        model = python_model(model_name)
        if is_qat:
            model.train()
        fused = fuse(torch.fx.symbolic_trace(model), is_qat, backend_config=backends[backend])
        record = {'case': case, 'model': f'{model_name}.pt', 'backend': backend, 'is_qat': is_qat}
        record.update(graph_json(fused))
        if not is_qat:
            with torch.no_grad():
                torch.save(fused(*load_inputs(model_name)), os.path.join(OUT, f'{case}.fused_output.pt'))
            record['input'] = ('fusion_zoo' if model_name.startswith('fusion_zoo') else model_name) + '.input.pt'
            record['output'] = f'{case}.fused_output.pt'
        cases.append(record)
    with open(os.path.join(OUT, 'fuse.json'), 'w') as f:
        json.dump(cases, f, indent=1)


def write_all(out):
    global OUT
    OUT = out
    write_fusion_zoo()
    write_fuse()
