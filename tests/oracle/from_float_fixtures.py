"""from_float fixtures: PyTorch 1.13's eager-mode `from_float` of quantized
modules (onednn engine).

from_float.json: the traced model holding the float modules, and per module
its path (or for conv_relu, the parts of the ConvReLU2d), the quantized class, the qconfig (qfx JSON), the output qparams its
activation_post_process computed on the module's float output, the quantized
input's qparams (static modules), and the quantized module's output on it
(FROM_FLOAT_CASE.from_float_output.pt: int_repr for static modules, the
float output for dynamic ones).
"""
import json
import os

import torch
import torch.ao.nn.intrinsic as nni
import torch.ao.nn.quantized as nnq
import torch.ao.nn.quantized.dynamic as nnqd
import torch.nn as nn
import torch.nn.intrinsic.quantized as nniq
from torch.ao.quantization import default_dynamic_qconfig, get_default_qconfig

import quant_fixtures
from pytorch_names import qconfig_json


class FromFloatNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(6, 4)
        self.conv = nn.Conv2d(3, 4, 3)
        self.cr_conv = nn.Conv2d(3, 2, 1)  # fused into ConvReLU2d for from_float
        self.cr_relu = nn.ReLU()
        self.bn = nn.BatchNorm2d(3)
        self.dynamic = nn.Linear(6, 4)

    def forward(self, x, image):
        return self.linear(x), self.conv(image), self.cr_relu(self.cr_conv(image)), self.bn(image), self.dynamic(x)


CASES = [
    # (path, quantized class and its qfx name, qconfig, input index)
    ('linear', nnq.Linear, 'torch.ao.nn.quantized.Linear', get_default_qconfig('onednn'), 0),
    ('conv', nnq.Conv2d, 'torch.ao.nn.quantized.Conv2d', get_default_qconfig('qnnpack'), 1),
    ('conv_relu', nniq.ConvReLU2d, 'torch.ao.nn.intrinsic.quantized.ConvReLU2d', get_default_qconfig('onednn'), 1),
    ('bn', nnq.BatchNorm2d, 'torch.ao.nn.quantized.BatchNorm2d', get_default_qconfig('onednn'), 1),
    ('dynamic', nnqd.Linear, 'torch.ao.nn.quantized.dynamic.Linear', default_dynamic_qconfig, 0),
]


def write_all(out):
    torch.manual_seed(0)
    model = FromFloatNet().eval()
    model.bn.running_mean.uniform_(-0.5, 0.5)
    model.bn.running_var.uniform_(0.5, 2.0)
    g = torch.Generator().manual_seed(5)
    inputs = (torch.randn(3, 6, generator=g), torch.randn(2, 3, 5, 5, generator=g))
    torch.jit.trace(model, inputs).save(os.path.join(out, 'from_float_net.pt'))
    torch.save(list(inputs), os.path.join(out, 'from_float_net.input.pt'))
    torch.backends.quantized.engine = 'onednn'
    records = []
    for path, cls, name, qconfig, index in CASES:
        module = nni.ConvReLU2d(model.cr_conv, model.cr_relu) if path == 'conv_relu' else getattr(model, path)
        for m in module.modules():  # as eager-mode prepare propagates it
            m.qconfig = qconfig
        x = inputs[index]
        record = {'path': path, 'quantized_type': name, 'parts': ['cr_conv', 'cr_relu'] if path == 'conv_relu' else [],
                  'qconfig': qconfig_json(qconfig), 'input': index}
        if qconfig is default_dynamic_qconfig:
            quantized = cls.from_float(module)
            output = quantized(x)
        else:
            module.activation_post_process = qconfig.activation()
            module.activation_post_process(module(x))
            if isinstance(module, nni.ConvReLU2d):  # from_float reads the relu's
                module[1].activation_post_process = module.activation_post_process
            scale, zero_point = module.activation_post_process.calculate_qparams()
            input_observer = qconfig.activation()
            input_observer(x)
            in_scale, in_zero_point = input_observer.calculate_qparams()
            quantized = cls.from_float(module)
            qx = torch.quantize_per_tensor(x, float(in_scale), int(in_zero_point), torch.quint8)
            output = quantized(qx).int_repr()
            record.update({'output_qparams': [float(scale).hex(), int(zero_point)],
                           'input_qparams': [float(in_scale).hex(), int(in_zero_point)]})
        torch.save(output, os.path.join(out, f'{path}.from_float_output.pt'))
        record['output'] = f'{path}.from_float_output.pt'
        records.append(record)
    with open(os.path.join(out, 'from_float.json'), 'w') as f:
        json.dump({'model': 'from_float_net.pt', 'inputs': 'from_float_net.input.pt', 'cases': records}, f, indent=1)
