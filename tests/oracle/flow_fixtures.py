"""Quantization-flow fixtures: what PyTorch 1.13's FX passes make of models.

fuse.json: for each case, the model file qfx imports, the backend, the mode
(eval, or train with is_qat as prepare_qat_fx fuses), and what
torch.ao.quantization.fx.fuse.fuse made of the symbolically traced model:
nodes (name, op, target), code and printed module tree. In eval mode the fused
model's outputs on the model's input are in CASE.fused_output.pt.
fusion_zoo.pt (and fusion_zoo_qat.pt): a model with every native fusion
pattern kind, traced; fusion_zoo.input.pt its inputs.

prepare.json: for each case, the model, backend and QConfigMapping (qfx JSON),
and what PyTorch's prepare_fx made: nodes (name, op, target), the class of
each observer module and which observer nodes share one module, the
observed node names, and each observer's scale and zero point after one
forward of the model's input; then what convert_to_reference_fx made of it
(nodes, code, module tree) and its output (CASE.reference_output.pt), and
what convert_fx made of it with the case's quantized engine (nodes, code,
module tree, output in CASE.lowered_output.pt, and `output_step`: the scale
of the quantized tensor the output was dequantized from, 0 if none).
HistogramObserver runs with upstream's histc range fix
(docs/divergences.md), as in quant_fixtures.py.
"""
import copy
import json
import os

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.ao.quantization.backend_config import get_native_backend_config
from torch.ao.quantization import (QConfig, QConfigMapping, default_dynamic_qconfig, float16_static_qconfig,
                                   float_qparams_weight_only_qconfig, float_qparams_weight_only_qconfig_4bit,
                                   get_default_qconfig, get_default_qconfig_mapping)
from torch.ao.quantization import observer as ob
from torch.ao.quantization.backend_config import get_qnnpack_backend_config
from torch.ao.quantization.fx.fuse import fuse
from torch.ao.quantization.fx.custom_config import PrepareCustomConfig
from torch.ao.quantization.quantize_fx import convert_fx, convert_to_reference_fx, prepare_fx

import backend_fixtures
import model_fixtures
import quant_fixtures
from pytorch_names import class_name, qconfig_mapping_json

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


def graph_json(gm, with_tree=True):
    return {
        'nodes': [{'name': n.name, 'op': n.op, 'target': model_fixtures.target_name(n)} for n in gm.graph.nodes],
        'code': gm.code,
        'module_tree': nn.Module.__repr__(gm) if with_tree else None,
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


class DynamicLinears(nn.Module):
    """Linear layers only, for dynamic and float16 quantization."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class DynamicCNN(nn.Module):
    """A CNN under a global dynamic qconfig (qfx quantize --dynamic): the
    Linear layers (one fused with its relu) become dynamic, conv-relu stays
    float."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc1 = nn.Linear(4 * 10 * 10, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.flatten(F.relu(self.conv(x)), 1)
        return self.fc2(F.relu(self.fc1(x)))


class SharedInput(nn.Module):
    """The design document's example: one input read by linear1 and linear2,
    which must share one input observer."""

    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(4, 4)
        self.linear2 = nn.Linear(4, 4)

    def forward(self, x):
        return self.linear1(x) + self.linear2(x)


class Embeddings(nn.Module):
    """Weight-only quantization: an Embedding (8-bit) and an EmbeddingBag (4-bit)."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(10, 4, padding_idx=1)
        self.bag = nn.EmbeddingBag(10, 4, mode='sum')

    def forward(self, tokens):
        return self.embedding(tokens), self.bag(tokens)


def weight_only_embeddings():
    return (QConfigMapping().set_object_type(nn.Embedding, float_qparams_weight_only_qconfig)
            .set_object_type(nn.EmbeddingBag, float_qparams_weight_only_qconfig_4bit))


def tutorial_qconfig_mapping():
    """The BackendConfig tutorial's QConfigMapping, which meets my_backend's constraints."""
    qconfig = QConfig(activation=ob.MinMaxObserver.with_args(quant_min=0, quant_max=127, eps=2 ** -12),
                      weight=ob.default_weight_observer)
    return (QConfigMapping().set_object_type(nn.Linear, qconfig).set_object_type(nn.Conv2d, qconfig)
            .set_object_type(nn.BatchNorm2d, qconfig).set_object_type(nn.ReLU, qconfig))


def per_tensor_conv_transpose(mapping):
    """PyTorch rejects per-channel weight observers for ConvTranspose."""
    for cls in (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d):
        mapping.set_object_type(cls, get_default_qconfig('qnnpack'))
    return mapping


PREPARE_CASES = [
    # (case, model, backend, qconfig mapping)
    ('linear_relu', 'linear_relu', 'native', lambda: QConfigMapping().set_global(get_default_qconfig('fbgemm'))),
    ('tutorial_no_bn', 'tutorial_no_bn', 'my_backend', tutorial_qconfig_mapping),
    ('tutorial_bn', 'tutorial_bn', 'my_backend', tutorial_qconfig_mapping),
    ('tutorial_default_mapping', 'tutorial_bn', 'my_backend', lambda: get_default_qconfig_mapping()),
    ('fusion_zoo', 'fusion_zoo_qat', 'native', lambda: get_default_qconfig_mapping('onednn')),
    ('functional_zoo', 'functional_zoo', 'native', lambda: get_default_qconfig_mapping('onednn')),
    ('module_zoo', 'module_zoo', 'native', lambda: per_tensor_conv_transpose(get_default_qconfig_mapping('onednn'))),
    ('resnet18', 'resnet18', 'native', lambda: get_default_qconfig_mapping('onednn')),
    ('resnet18_qnnpack', 'resnet18', 'qnnpack', lambda: get_default_qconfig_mapping('qnnpack')),
    ('resnet50', 'resnet50', 'native', lambda: get_default_qconfig_mapping('onednn')),
    ('resnet50_qnnpack', 'resnet50', 'qnnpack', lambda: get_default_qconfig_mapping('qnnpack')),
    ('mobilenet_v2', 'mobilenet_v2', 'native', lambda: get_default_qconfig_mapping('onednn')),
    ('mobilenet_v2_qnnpack', 'mobilenet_v2', 'qnnpack', lambda: get_default_qconfig_mapping('qnnpack')),
    ('mobilenet_v3_large_onednn', 'mobilenet_v3_large', 'native', lambda: get_default_qconfig_mapping('onednn')),
    ('mobilenet_v3_large', 'mobilenet_v3_large', 'qnnpack', lambda: get_default_qconfig_mapping('qnnpack')),
    ('linear_relu_quantized_io', 'linear_relu', 'native',
     lambda: QConfigMapping().set_global(get_default_qconfig('fbgemm'))),
    ('shared_input', 'shared_input', 'native', lambda: get_default_qconfig_mapping('onednn')),
    ('dynamic_linears', 'dynamic_linears', 'native', lambda: QConfigMapping().set_global(default_dynamic_qconfig)),
    ('dynamic_cnn', 'dynamic_cnn', 'native', lambda: QConfigMapping().set_global(default_dynamic_qconfig)),
    ('embeddings', 'embeddings', 'native', weight_only_embeddings),
    ('float16_linears', 'dynamic_linears', 'native', lambda: QConfigMapping().set_global(float16_static_qconfig)),
]


# PrepareCustomConfig per case; a quantized graph input arrives as
# quantize_per_tensor(x, QUANTIZED_INPUT scale, zero point, quint8) after prepare.
CUSTOM_CONFIGS = {'linear_relu_quantized_io': {'input_quantized_indexes': [0], 'output_quantized_indexes': [0]}}
QUANTIZED_INPUT = (0.05, 128)


SMALL_MODELS = {
    'dynamic_linears': (DynamicLinears, lambda g: torch.randn(3, 8, generator=g)),
    'dynamic_cnn': (DynamicCNN, lambda g: torch.randn(2, 1, 12, 12, generator=g)),
    'shared_input': (SharedInput, lambda g: torch.randn(2, 4, generator=g)),
    'embeddings': (Embeddings, lambda g: torch.randint(0, 10, (3, 5), generator=g)),
}


def write_small_models():
    for name, (cls, make_input) in SMALL_MODELS.items():
        torch.manual_seed(0)
        model = cls().eval()
        x = make_input(torch.Generator().manual_seed(2))
        torch.jit.trace(model, (x,)).save(os.path.join(OUT, f'{name}.pt'))
        torch.save(x, os.path.join(OUT, f'{name}.input.pt'))


def observer_records(prepared):
    modules = dict(prepared.named_modules(remove_duplicate=False))
    groups, records = {}, {}
    for node in prepared.graph.nodes:
        if node.op != 'call_module':
            continue
        m = modules[node.target]
        if not isinstance(m, (ob.ObserverBase, torch.ao.quantization.FakeQuantizeBase)):
            continue
        record = {'type': class_name(type(m)).split('.')[-1], 'group': groups.setdefault(id(m), node.target)}
        if hasattr(m, 'calculate_qparams') and not isinstance(m, ob.PlaceholderObserver):
            scale, zero_point = m.calculate_qparams()
            record['scale'] = quant_fixtures.hexes(scale)
            record['zero_point'] = quant_fixtures.hexes(zero_point.double())
        records[node.target] = record
    return records


def patch_reference_conv_padding():
    """1.13's reference Conv1d/2d/3d drop padding_mode (reflect padding
    becomes zeros); pad first, as the float and the quantized convs do
    (docs/divergences.md)."""
    import torch.ao.nn.quantized.reference as nnqr
    for cls, conv in ((nnqr.Conv1d, F.conv1d), (nnqr.Conv2d, F.conv2d), (nnqr.Conv3d, F.conv3d)):
        def forward(self, x, conv=conv):
            weight = self.get_weight()
            if self.padding_mode == 'zeros':
                return conv(x, weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
            x = F.pad(x, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(x, weight, self.bias, self.stride, 0, self.dilation, self.groups)
        cls.forward = forward


def output_step(gm, inputs):
    """The scale of the quantized tensor a single dequantized output came from."""
    out = [n for n in gm.graph.nodes if n.op == 'output'][0].args[0]
    if not (isinstance(out, torch.fx.Node) and out.op == 'call_method' and out.target == 'dequantize'):
        return 0.0
    values = {}

    class Capture(torch.fx.Interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            if n is out.args[0]:
                values['q'] = result
            return result
    Capture(gm).run(*inputs)
    q = values['q']
    return float(q.q_scale()) if q.is_quantized and q.qscheme() == torch.per_tensor_affine else 0.0


def lowered_record(case, prepared, backend_config, engine, inputs):
    torch.backends.quantized.engine = engine
    try:
        lowered = convert_fx(copy.deepcopy(prepared), backend_config=backend_config)
        try:
            record = graph_json(lowered)
        except RuntimeError:  # qnnpack cannot unpack conv1d/3d weights, which repr() does
            record = graph_json(lowered, with_tree=False)
        record['engine'] = engine
        try:
            output = lowered(*inputs)
        except (RuntimeError, NotImplementedError) as e:  # a lowered op without a quantized kernel
            record['error'] = str(e).splitlines()[0]
            return record
        torch.save(output, os.path.join(OUT, f'{case}.lowered_output.pt'))
        record.update({'output': f'{case}.lowered_output.pt', 'output_step': output_step(lowered, inputs)})
        return record
    finally:
        torch.backends.quantized.engine = 'onednn'


def patch_prelu_lowering():
    """1.13 lowers nn.PReLU to a quantized PReLU whose weight observer never
    ran (slopes become 0) on a kernel that also scales positive inputs; qfx
    keeps PReLU float (docs/divergences.md): so does the patched oracle."""
    import torch.ao.quantization.fx._lower_to_native_backend as lower
    original = lower.is_default_node

    def is_default_node(node, modules):
        f, m, mod = original(node, modules)
        return f, m, mod and not isinstance(modules.get(str(node.target)), nn.PReLU)
    lower.is_default_node = is_default_node


def patch_max_pool3d_lowering():
    """1.13 lowers nn.MaxPool3d / F.max_pool3d onto the quantized tensor, which
    LibTorch has no kernel for; qfx keeps them between dequantize and quantize
    (docs/divergences.md): so does the patched oracle."""
    import torch.ao.quantization.fx._lower_to_native_backend as lower
    original = lower.is_copy_node

    def is_copy_node(node, modules):
        if node.op == 'call_function' and node.target is F.max_pool3d:
            return False, False, False
        if node.op == 'call_module' and isinstance(modules.get(str(node.target)), nn.MaxPool3d):
            return False, False, False
        return original(node, modules)
    lower.is_copy_node = is_copy_node


# Cases whose prepared nodes are compared by name only, and why.
NODE_NAMES_ONLY = {
    'functional_zoo': 'a trace records torch.chunk(x) as x.chunk(), and PyTorch spells some functions by their C '
                      'names (torch._C._nn.avg_pool2d)',
}


def write_prepare():
    ob.HistogramObserver.forward = quant_fixtures.FixedHistogramObserver.forward
    patch_reference_conv_padding()
    patch_prelu_lowering()
    patch_max_pool3d_lowering()
    backends = {'native': get_native_backend_config(), 'qnnpack': get_qnnpack_backend_config(),
                'my_backend': backend_fixtures.tutorial_backend_config()}
    python_models = {name: (lambda cls=cls: cls().eval()) for name, (cls, _) in SMALL_MODELS.items()}
    cases = []
    for case, model_name, backend, make_mapping in PREPARE_CASES:
        if model_name in python_models:
            torch.manual_seed(0)
            model = python_models[model_name]()
        else:
            model = python_model(model_name)
        inputs = load_inputs(model_name)
        mapping = make_mapping()
        custom = CUSTOM_CONFIGS.get(case, {})
        prepare_custom_config = (PrepareCustomConfig().set_input_quantized_indexes(custom['input_quantized_indexes'])
                                 .set_output_quantized_indexes(custom['output_quantized_indexes'])) if custom else None
        prepared = prepare_fx(copy.deepcopy(model), mapping, inputs, backend_config=backends[backend],
                              prepare_custom_config=prepare_custom_config)
        prepared(*inputs)
        record = {'case': case, 'model': f'{model_name}.pt', 'backend': backend,
                  'qconfig_mapping': qconfig_mapping_json(mapping),
                  'input': ('fusion_zoo' if model_name.startswith('fusion_zoo') else model_name) + '.input.pt',
                  'observed_node_names': sorted(prepared._observed_node_names),
                  'observers': observer_records(prepared)}
        if case in NODE_NAMES_ONLY:
            record['compare_node_names_only'] = NODE_NAMES_ONLY[case]
        if custom:
            record['prepare_custom_config'] = custom
            record['quantized_input'] = QUANTIZED_INPUT
            inputs = tuple(torch.quantize_per_tensor(x, *QUANTIZED_INPUT, torch.quint8) for x in inputs)
        record.update(graph_json(prepared))
        reference = convert_to_reference_fx(copy.deepcopy(prepared), backend_config=backends[backend])
        record['reference'] = graph_json(reference)
        torch.save(reference(*inputs), os.path.join(OUT, f'{case}.reference_output.pt'))
        record['reference']['output'] = f'{case}.reference_output.pt'
        # onednn's ConvTranspose prepack rejects output_padding
        engine = 'qnnpack' if backend == 'qnnpack' or case == 'module_zoo' else 'onednn'
        record['lowered'] = lowered_record(case, prepared, backends[backend], engine, inputs)
        if engine == 'qnnpack' and case == 'module_zoo':  # its Conv1d and Conv3d
            record['lowered']['export_error'] = 'QNNPACK only supports conv2d_unpack right now'
        cases.append(record)
    with open(os.path.join(OUT, 'prepare.json'), 'w') as f:
        json.dump(cases, f, indent=1)


def write_all(out):
    global OUT
    OUT = out
    write_fusion_zoo()
    write_fuse()
    write_small_models()
    write_prepare()
