"""PrepareCustomConfig fixtures: standalone modules, non-traceable modules,
preserved attributes and custom module classes, as PyTorch 1.13's
prepare_fx / convert_fx handle them.

custom_configs.json: for each case, the model file (traced, with the
non-traceable module scripted), its input, the PrepareCustomConfig in qfx's
JSON (PyTorch's to_dict() keys, classes by name), the QConfigMapping, and what
PyTorch made of it: after prepare_fx the parent's and the standalone module's
nodes and code and their observers' qparams after one forward; after
convert_to_reference_fx and convert_fx (onednn) both codes and the output
(CASE.custom_reference_output.pt, CASE.custom_lowered_output.pt, with
`output_step`). The preserved buffer's value is in CASE.preserved.pt.

custom_module.json: CustomModuleNet with CustomLinear swapped for
ObservedCustomLinear (prepare) and QuantizedCustomLinear (convert): the
configs, prepared nodes, code and observers, converted code and output.
"""
import copy
import json
import os

import torch
import torch.nn as nn
from torch.ao.quantization import QConfigMapping, get_default_qconfig, get_default_qconfig_mapping
from torch.ao.quantization import observer as ob
from torch.ao.quantization.backend_config import get_native_backend_config
from torch.ao.quantization.fx.custom_config import ConvertCustomConfig, PrepareCustomConfig
from torch.ao.quantization.quantize_fx import convert_fx, convert_to_reference_fx, prepare_fx

import flow_fixtures
import quant_fixtures
from pytorch_names import qconfig_mapping_json


class Block(nn.Module):
    """A residual conv block, prepared as a standalone module."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.conv(x)) + x


class Gate(nn.Module):
    """Data-dependent control flow: FX cannot trace it."""

    def forward(self, x):
        if bool(x.mean() > 0):
            return x * 0.5
        return x - 1.0


class CustomConfigNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.block = Block()
        self.gate = Gate()
        self.fc = nn.Linear(4 * 6 * 6, 5)
        self.register_buffer('class_weights', torch.arange(5.0))  # not used by forward

    def forward(self, x):
        x = self.conv(x)
        x = self.block(x)
        x = self.gate(x)
        return self.fc(torch.flatten(x, 1))


class CustomLinear(nn.Module):
    """A user module quantized through custom module classes."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.linear(x)) * 2.0


class ObservedCustomLinear(nn.Module):
    def __init__(self, linear):
        super().__init__()
        self.linear = linear

    def forward(self, x):
        return torch.relu(self.linear(x)) * 2.0

    @classmethod
    def from_float(cls, float_module):
        observed = cls(float_module.linear)
        observed.qconfig = float_module.qconfig
        return observed


class QuantizedCustomLinear(nn.Module):
    """Takes and returns quint8; computes in float, quantizes with the output observer's qparams."""

    def __init__(self, linear, scale, zero_point):
        super().__init__()
        self.linear = linear
        self.scale = scale
        self.zero_point = zero_point

    def forward(self, x):
        y = torch.relu(self.linear(x.dequantize())) * 2.0
        return torch.quantize_per_tensor(y, self.scale, self.zero_point, torch.quint8)

    @classmethod
    def from_observed(cls, observed):
        scale, zero_point = observed.activation_post_process.calculate_qparams()
        return cls(observed.linear, float(scale), int(zero_point))


class CustomModuleNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.custom = CustomLinear()
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(self.custom(self.fc1(x)))


def write_custom_module(out):
    torch.manual_seed(0)
    model = CustomModuleNet().eval()
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(4))
    torch.jit.trace(model, (x,)).save(os.path.join(out, 'custom_module_net.pt'))
    torch.save(x, os.path.join(out, 'custom_module_net.input.pt'))
    prepare_config = PrepareCustomConfig().set_float_to_observed_mapping(CustomLinear, ObservedCustomLinear)
    convert_config = ConvertCustomConfig().set_observed_to_quantized_mapping(ObservedCustomLinear,
                                                                             QuantizedCustomLinear)
    prepared = prepare_fx(copy.deepcopy(model), onednn_mapping(), (x,), prepare_custom_config=prepare_config)
    prepared(x)
    record = {'model': 'custom_module_net.pt', 'input': 'custom_module_net.input.pt',
              'qconfig_mapping': qconfig_mapping_json(onednn_mapping()),
              'prepare_custom_config': {'float_to_observed_custom_module_class':
                                        {'static': {'CustomLinear': 'ObservedCustomLinear'}}},
              'convert_custom_config': {'observed_to_quantized_custom_module_class':
                                        {'static': {'ObservedCustomLinear': 'QuantizedCustomLinear'}}},
              'prepared': code_and_nodes(prepared), 'observers': flow_fixtures.observer_records(prepared)}
    torch.backends.quantized.engine = 'onednn'
    lowered = convert_fx(copy.deepcopy(prepared), convert_custom_config=convert_config)
    assert type(lowered.custom) is QuantizedCustomLinear
    record['lowered'] = code_and_nodes(lowered)
    torch.save(lowered(x), os.path.join(out, 'custom_module.lowered_output.pt'))
    record['lowered']['output'] = 'custom_module.lowered_output.pt'
    record['lowered']['output_step'] = flow_fixtures.output_step(lowered, (x,))
    with open(os.path.join(out, 'custom_module.json'), 'w') as f:
        json.dump(record, f, indent=1)


def onednn_mapping():
    return get_default_qconfig_mapping('onednn')


CASES = [
    # (case, PrepareCustomConfig, its qfx JSON)
    ('standalone_by_name',
     lambda x: (PrepareCustomConfig().set_standalone_module_name('block', None, (x,), None, None)
                .set_non_traceable_module_names(['gate']).set_preserved_attributes(['class_weights'])),
     {'standalone_module_name': [['block', None, None, None, None]], 'non_traceable_module_name': ['gate'],
      'preserved_attributes': ['class_weights']}),
    ('standalone_quantized_io',
     lambda x: (PrepareCustomConfig().set_standalone_module_class(
         Block, QConfigMapping().set_global(get_default_qconfig('onednn')), (x,),
         PrepareCustomConfig().set_input_quantized_indexes([0]).set_output_quantized_indexes([0]), None)
         .set_non_traceable_module_classes([Gate]).set_preserved_attributes(['class_weights'])),
     {'standalone_module_class': [['Block', qconfig_mapping_json(QConfigMapping().set_global(
         get_default_qconfig('onednn'))), None, {'input_quantized_idxs': [0], 'output_quantized_idxs': [0]}, None]],
      'non_traceable_module_class': ['Gate'], 'preserved_attributes': ['class_weights']}),
]


def code_and_nodes(gm):
    record = flow_fixtures.graph_json(gm, with_tree=False)
    del record['module_tree']
    return record


def write_model(out):
    torch.manual_seed(0)
    model = CustomConfigNet().eval()
    x = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(3))
    scripted = copy.deepcopy(model)
    scripted.gate = torch.jit.script(Gate())
    torch.jit.trace(scripted, (x,)).save(os.path.join(out, 'custom_config_net.pt'))
    torch.save(x, os.path.join(out, 'custom_config_net.input.pt'))
    return model, x


def write_all(out):
    ob.HistogramObserver.forward = quant_fixtures.FixedHistogramObserver.forward
    flow_fixtures.OUT = out
    model, x = write_model(out)
    records = []
    for case, make_config, config_json in CASES:
        prepared = prepare_fx(copy.deepcopy(model), onednn_mapping(), (x,), prepare_custom_config=make_config(x),
                              backend_config=get_native_backend_config())
        prepared(x)
        record = {'case': case, 'model': 'custom_config_net.pt', 'input': 'custom_config_net.input.pt',
                  'qconfig_mapping': qconfig_mapping_json(onednn_mapping()), 'prepare_custom_config': config_json,
                  'prepared': code_and_nodes(prepared), 'standalone_prepared': code_and_nodes(prepared.block),
                  'observers': flow_fixtures.observer_records(prepared),
                  'standalone_observers': flow_fixtures.observer_records(prepared.block)}
        torch.save(prepared.class_weights, os.path.join(out, f'{case}.preserved.pt'))
        record['preserved'] = {'class_weights': f'{case}.preserved.pt'}
        convert_config = ConvertCustomConfig().set_preserved_attributes(['class_weights'])
        reference = convert_to_reference_fx(copy.deepcopy(prepared), convert_custom_config=convert_config)
        record['reference'] = code_and_nodes(reference)
        record['reference']['standalone'] = code_and_nodes(reference.block)
        torch.save(reference(x), os.path.join(out, f'{case}.custom_reference_output.pt'))
        record['reference']['output'] = f'{case}.custom_reference_output.pt'
        torch.backends.quantized.engine = 'onednn'
        lowered = convert_fx(copy.deepcopy(prepared), convert_custom_config=convert_config)
        assert torch.equal(lowered.class_weights, model.class_weights)
        record['lowered'] = code_and_nodes(lowered)
        record['lowered']['standalone'] = code_and_nodes(lowered.block)
        torch.save(lowered(x), os.path.join(out, f'{case}.custom_lowered_output.pt'))
        record['lowered']['output'] = f'{case}.custom_lowered_output.pt'
        record['lowered']['output_step'] = flow_fixtures.output_step(lowered, (x,))
        records.append(record)
    with open(os.path.join(out, 'custom_configs.json'), 'w') as f:
        json.dump(records, f, indent=1)
    write_custom_module(out)
