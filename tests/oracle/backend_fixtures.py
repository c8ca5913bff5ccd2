"""BackendConfigs and batch-norm folding as PyTorch has them, for qfx's tests.

backend_configs.json: every built-in BackendConfig in qfx's JSON form
(docs/config-format.md), converted from PyTorch 1.13's to_dict(): patterns in
forward order, classes and functions by their PyTorch names, fuser methods by
name. Two built-ins need more than 1.13 gives:
  - executorch: 1.13's definition never returns (its share-qparams loop
    appends to the list it iterates); its source is run with that one line
    fixed, as upstream did.
  - onednn: 1.13 has none; it is built here from PyTorch 2.x's onednn.py on
    1.13's common op configs, with stand-ins for the classes 1.13 lacks.
  - every config with RNN op configs lists nn.GRU after nn.LSTM, with its
    reference module, as PyTorch 2.x does (1.13 has no reference GRU).
The tutorial's custom backend (my_backend) is there too.

fusion.json, fusion_model.pt, fusion_tensors.pt: conv/linear + batch norm
modules, what PyTorch's fuser methods make of them (repr, folded weights) and
the fused modules' outputs.
"""
import inspect
import itertools
import json
import operator
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.intrinsic as nni
import torch.nn.intrinsic.qat as nniqat
import torch.nn.quantized._reference as nnqr
from torch.ao.quantization import backend_config as bc
from torch.ao.quantization import fuser_method_mappings as fmm
from torch.ao.quantization.backend_config import (BackendConfig, BackendPatternConfig, DTypeConfig,
                                                  DTypeWithConstraints, ObservationType)
from torch.ao.quantization.backend_config import _common_operator_config_utils as common
from torch.ao.quantization.backend_config import x86 as bc_x86
from torch.ao.quantization.utils import MatchAllNode

from pytorch_names import module_class_name, object_type_name, spec_json

OUT = None
DIFFERENT = ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT

# ---- BackendConfig -> qfx JSON ------------------------------------------------


def op_name(op):
    return 'MatchAllNode' if op is MatchAllNode else object_type_name(op)


def forward_chain(p):
    """The ops of a reversed nested sequence pattern in forward order, or None."""
    if not isinstance(p, tuple):
        return None if p is MatchAllNode else [p]
    if len(p) != 2 or p[0] is MatchAllNode:
        return None
    rest = forward_chain(p[1])
    return None if rest is None else rest + [p[0]]


def nested_json(p):
    if not isinstance(p, tuple):
        return op_name(p)
    return [op_name(p[0])] + [nested_json(a) for a in p[1:]]


def pattern_json(p):
    chain = forward_chain(p)
    if chain is not None and len(chain) <= 3:
        names = [op_name(o) for o in chain]
        return {'pattern': names[0] if len(names) == 1 else names}
    return {'pattern_complex_format': nested_json(p)}


def dtype_json(d):
    bounds = {k: getattr(d, k) for k in ('quant_min_lower_bound', 'quant_max_upper_bound',
                                         'scale_min_lower_bound', 'scale_max_upper_bound')
              if getattr(d, k) is not None}
    return {'dtype': str(d.dtype), **bounds} if bounds else str(d.dtype)


def dtype_config_json(d):
    out = {}
    for key, value in d.items():
        if key in ('input_dtype', 'output_dtype', 'weight_dtype'):
            out[key] = dtype_json(value)
        elif key == 'bias_dtype':
            out[key] = str(value)
        else:
            out[key] = value
    return out


def fuser_json(f, fused_module):
    """A fuser method's name; None for "build the fused module from the matched modules"."""
    free = dict(zip(f.__code__.co_freevars, (c.cell_contents for c in f.__closure__ or ())))
    if f.__name__ == 'fuser_method' and 'sequential' in free:  # (reverse_)sequential_wrapper2(cls)
        assert free['sequential'] is fused_module
        return None
    if f.__name__ == 'reversed' and 'f' in free:  # reverse2/3: 1.13 passes modules in reversed order
        return free['f'].__name__
    return f.__name__


def pattern_config_json(c):
    d = c.to_dict()
    out = pattern_json(d.pop('pattern'))
    out['observation_type'] = d.pop('observation_type').name
    out['dtype_configs'] = [dtype_config_json(x) for x in d.pop('dtype_configs')]
    for key in ('root_module', 'qat_module', 'fused_module'):
        if key in d:
            out[key] = module_class_name(d[key])
    if 'reference_quantized_module_for_root' in d:
        out['reference_quantized_module'] = module_class_name(d.pop('reference_quantized_module_for_root'))
    if 'fuser_method' in d:
        name = fuser_json(d.pop('fuser_method'), d.get('fused_module'))
        if name:
            out['fuser_method'] = name
    d.pop('root_module', None), d.pop('qat_module', None), d.pop('fused_module', None)
    for key in ('root_node_getter', 'extra_inputs_getter'):
        if key in d:
            out[key] = d.pop(key).__name__
    if 'num_tensor_args_to_observation_type' in d:
        out['num_tensor_args_to_observation_type'] = {
            str(k): v.name for k, v in d.pop('num_tensor_args_to_observation_type').items()}
    for key in ('input_type_to_index', 'input_output_observed'):
        if key in d:
            out[key] = d.pop(key)
    for key in ('overwrite_output_fake_quantize', 'overwrite_output_observer'):
        if key in d:
            out[key] = spec_json(d.pop(key))
    assert not d, f'unconverted keys {list(d)}'
    return out


def backend_json(config):
    return {'name': config.name, 'configs': [pattern_config_json(c) for c in config.configs.values()]}

# ---- configs 1.13 does not give as they should be ------------------------------


def fixed_executorch_backend_config():
    import torch.ao.quantization.backend_config.executorch as ex
    source = inspect.getsource(ex)
    bug = 'share_qparams_ops.append('
    assert source.count(bug) == 1
    namespace = {'__name__': ex.__name__ + '_fixed', '__package__': ex.__package__}
    exec(compile(source.replace(bug, 'share_qparams_op_configs.append('), ex.__file__, 'exec'), namespace)
    return namespace['get_executorch_backend_config']()


def upstream_class(name):
    """A stand-in for a module class of PyTorch 2.x that 1.13 lacks."""
    return type(name.rsplit('.', 1)[1], (nn.Module,), {'qfx_name': name})


def named(name):
    """A stand-in for an upstream function: only its name goes into the JSON."""
    def f(*args):
        raise NotImplementedError(name)
    f.__name__ = name
    return f


ConvAdd2d = upstream_class('torch.ao.nn.intrinsic.ConvAdd2d')
ConvAddReLU2d = upstream_class('torch.ao.nn.intrinsic.ConvAddReLU2d')
LinearLeakyReLU = upstream_class('torch.ao.nn.intrinsic.LinearLeakyReLU')
LinearTanh = upstream_class('torch.ao.nn.intrinsic.LinearTanh')


def onednn_conv_add_config(pattern, kind, side, fused, dtype_configs):
    return (BackendPatternConfig(pattern)
            .set_observation_type(DIFFERENT)
            .set_dtype_configs(dtype_configs)
            .set_fuser_method(named(f'_fuse_{kind}_{side}'))
            ._set_root_node_getter(named(f'_{kind}_root_node_getter_{side}'))
            ._set_extra_inputs_getter(named(f'_{kind}_extra_inputs_getter_{side}'))
            .set_fused_module(fused))


def onednn_conv_configs(dtype_configs):
    """PyTorch 2.x onednn.py's conv configs (patterns in 1.13's reversed form)."""
    configs = common._get_conv_configs(dtype_configs)
    for with_bn, add_op in itertools.product([True, False], [torch.add, operator.add]):
        conv = (nn.BatchNorm2d, nn.Conv2d) if with_bn else nn.Conv2d
        kind = 'conv_bn_add' if with_bn else 'conv_add'
        configs.append(onednn_conv_add_config((add_op, conv, MatchAllNode), kind, 'left', ConvAdd2d, dtype_configs))
    for with_bn, add_op in itertools.product([True, False], [torch.add, operator.add]):
        conv = (nn.BatchNorm2d, nn.Conv2d) if with_bn else nn.Conv2d
        kind = 'conv_bn_add' if with_bn else 'conv_add'
        configs.append(onednn_conv_add_config((add_op, MatchAllNode, conv), kind, 'right', ConvAdd2d, dtype_configs))
    configs.append(BackendPatternConfig(ConvAdd2d).set_observation_type(DIFFERENT).set_dtype_configs(dtype_configs)
                   .set_root_module(nn.Conv2d).set_reference_quantized_module(nnqr.Conv2d))
    for with_bn, add_op in itertools.product([True, False], [torch.add, operator.add]):
        conv = (nn.BatchNorm2d, nn.Conv2d) if with_bn else nn.Conv2d
        kind = 'conv_bn_add_relu' if with_bn else 'conv_add_relu'
        configs.append(onednn_conv_add_config((nn.ReLU, (add_op, conv, MatchAllNode)), kind, 'left', ConvAddReLU2d,
                                              dtype_configs))
    for with_bn, add_op in itertools.product([True, False], [torch.add, operator.add]):
        conv = (nn.BatchNorm2d, nn.Conv2d) if with_bn else nn.Conv2d
        kind = 'conv_bn_add_relu' if with_bn else 'conv_add_relu'
        configs.append(onednn_conv_add_config((nn.ReLU, (add_op, MatchAllNode, conv)), kind, 'right', ConvAddReLU2d,
                                              dtype_configs))
    configs.append(BackendPatternConfig(ConvAddReLU2d).set_observation_type(DIFFERENT)
                   .set_dtype_configs(dtype_configs).set_root_module(nn.Conv2d)
                   .set_reference_quantized_module(nnqr.Conv2d))
    return configs


def add_eltwise_fusion_configs(configs, root_module, root_op, post_module, post_op, dtype_configs, fused):
    configs.append(BackendPatternConfig((post_module, root_module)).set_dtype_configs(dtype_configs)
                   .set_fuser_method(fmm.sequential_wrapper2(fused)).set_fused_module(fused))
    configs.append(BackendPatternConfig((post_op, root_module)).set_dtype_configs(dtype_configs)
                   .set_fuser_method(fmm.sequential_wrapper2(fused)).set_fused_module(fused))
    configs.append(BackendPatternConfig(fused).set_observation_type(DIFFERENT).set_dtype_configs(dtype_configs)
                   .set_root_module(root_module).set_reference_quantized_module(nnqr.Linear))
    configs.append(BackendPatternConfig((post_module, root_op)).set_observation_type(DIFFERENT)
                   .set_dtype_configs(dtype_configs))
    configs.append(BackendPatternConfig((post_op, root_op)).set_observation_type(DIFFERENT)
                   .set_dtype_configs(dtype_configs))


def onednn_backend_config():
    weighted = DTypeConfig(torch.quint8, torch.quint8, torch.qint8, torch.float)
    op_quint8 = DTypeConfig(torch.quint8, torch.quint8)
    dynamic_int8 = DTypeConfig(torch.quint8, torch.float, torch.qint8, torch.float, is_dynamic=True)
    weight_only_qint8 = DTypeConfig(torch.float, torch.float, torch.qint8)
    input_output_only_quint8 = DTypeConfig(torch.quint8, torch.quint8, torch.float, torch.float)
    linear_dtype_configs = [weighted, dynamic_int8]
    linear_configs = common._get_linear_configs(linear_dtype_configs)
    add_eltwise_fusion_configs(linear_configs, nn.Linear, F.linear, nn.LeakyReLU, F.leaky_relu,
                               linear_dtype_configs, LinearLeakyReLU)
    linear_configs.append(BackendPatternConfig((nn.LeakyReLU, (nn.BatchNorm1d, nn.Linear)))
                          .set_dtype_configs(linear_dtype_configs)
                          .set_fuser_method(named('_fuse_linear_bn_leaky_relu'))
                          .set_fused_module(LinearLeakyReLU))
    add_eltwise_fusion_configs(linear_configs, nn.Linear, F.linear, nn.Tanh, torch.tanh,
                               linear_dtype_configs, LinearTanh)
    return (BackendConfig('onednn')
            .set_backend_pattern_configs(onednn_conv_configs([weighted]))
            .set_backend_pattern_configs(linear_configs)
            .set_backend_pattern_configs(common._get_binary_op_configs([op_quint8]))
            .set_backend_pattern_config(common._get_cat_config([op_quint8]))
            .set_backend_pattern_configs(common._get_default_op_configs([op_quint8]))
            .set_backend_pattern_configs(common._get_fixed_qparams_op_configs([op_quint8]))
            .set_backend_pattern_configs(common._get_share_qparams_op_configs([op_quint8]))
            .set_backend_pattern_configs(common._get_bn_configs([op_quint8]))
            .set_backend_pattern_configs(common._get_ln_configs([input_output_only_quint8]))
            .set_backend_pattern_configs(common._get_rnn_op_configs([dynamic_int8]))
            .set_backend_pattern_configs(common._get_embedding_op_configs([weight_only_qint8])))


def tutorial_backend_config():
    """The BackendConfig tutorial's custom backend (seed 002), in 1.13's API:
    reversed patterns, and a fuser that takes its modules in reversed order."""
    quint8_with_constraints = DTypeWithConstraints(
        dtype=torch.quint8, quant_min_lower_bound=0, quant_max_upper_bound=255, scale_min_lower_bound=2 ** -12)
    weighted_int8_dtype_config = DTypeConfig(
        input_dtype=quint8_with_constraints, output_dtype=quint8_with_constraints,
        weight_dtype=torch.qint8, bias_dtype=torch.float)
    linear_config = (BackendPatternConfig(torch.nn.Linear).set_observation_type(DIFFERENT)
                     .add_dtype_config(weighted_int8_dtype_config).set_root_module(torch.nn.Linear)
                     .set_qat_module(torch.nn.qat.Linear).set_reference_quantized_module(nnqr.Linear))
    conv_relu_config = (BackendPatternConfig((torch.nn.ReLU, torch.nn.Conv2d)).set_fused_module(nni.ConvReLU2d)
                        .set_fuser_method(fmm.reverse_sequential_wrapper2(nni.ConvReLU2d)))
    fused_conv_relu_config = (BackendPatternConfig(nni.ConvReLU2d).set_observation_type(DIFFERENT)
                              .add_dtype_config(weighted_int8_dtype_config).set_root_module(torch.nn.Conv2d)
                              .set_qat_module(nniqat.ConvReLU2d).set_reference_quantized_module(nnqr.Conv2d))
    return (BackendConfig('my_backend').set_backend_pattern_config(linear_config)
            .set_backend_pattern_config(conv_relu_config).set_backend_pattern_config(fused_conv_relu_config))


ReferenceGRU = upstream_class('torch.ao.nn.quantized.reference.GRU')


def rnn_op_configs_with_gru(original):
    """PyTorch 2.x's _get_rnn_op_configs: 1.13's, then nn.GRU with its reference module."""
    def configs(dtype_configs):
        return original(dtype_configs) + [
            BackendPatternConfig(nn.GRU).set_observation_type(DIFFERENT).set_dtype_configs(dtype_configs)
            .set_root_module(nn.GRU).set_reference_quantized_module(ReferenceGRU)]
    return configs


def write_backend_configs():
    """The configs with 2.x's RNN op configs patched in for the time of writing
    them (the other fixtures run 1.13's own)."""
    import torch.ao.quantization.backend_config.fbgemm as bc_fbgemm
    import torch.ao.quantization.backend_config.native as bc_native
    import torch.ao.quantization.backend_config.qnnpack as bc_qnnpack
    modules = (common, bc_native, bc_fbgemm, bc_qnnpack, bc_x86)
    originals = [m._get_rnn_op_configs for m in modules]
    for module, original in zip(modules, originals):
        module._get_rnn_op_configs = rnn_op_configs_with_gru(original)
    try:
        configs = {
            'native': bc.get_native_backend_config(),
            'fbgemm': bc.get_fbgemm_backend_config(),
            'qnnpack': bc.get_qnnpack_backend_config(),
            'x86': bc_x86.get_x86_backend_config(),
            'onednn': onednn_backend_config(),
            'executorch': fixed_executorch_backend_config(),
            'tensorrt': bc.get_tensorrt_backend_config(),
            'my_backend': tutorial_backend_config(),
        }
    finally:
        for module, original in zip(modules, originals):
            module._get_rnn_op_configs = original
    with open(os.path.join(OUT, 'backend_configs.json'), 'w') as f:
        json.dump({name: backend_json(c) for name, c in configs.items()}, f, indent=1)

# ---- batch-norm folding --------------------------------------------------------


class FusionCases(nn.Module):
    """Pairs of modules the fuser methods fold, run side by side."""

    def __init__(self):
        super().__init__()
        self.conv1d = nn.Conv1d(3, 4, 3)
        self.bn1d = nn.BatchNorm1d(4)
        self.conv2d = nn.Conv2d(3, 4, 3, stride=2, padding=1, bias=False)
        self.bn2d = nn.BatchNorm2d(4, eps=1e-3)
        self.conv3d = nn.Conv3d(2, 4, 3, padding=1, groups=2)
        self.bn3d = nn.BatchNorm3d(4)
        self.convt2d = nn.ConvTranspose2d(4, 3, 3, stride=2, output_padding=1)
        self.bnt2d = nn.BatchNorm2d(3)
        self.linear = nn.Linear(5, 4)
        self.bnl = nn.BatchNorm1d(4)
        self.relu = nn.ReLU()

    def forward(self, x1, x2, x3, xt, xl):
        return (self.bn1d(self.conv1d(x1)), self.relu(self.bn2d(self.conv2d(x2))), self.bn3d(self.conv3d(x3)),
                self.bnt2d(self.convt2d(xt)), self.bnl(self.linear(xl)))


FUSION_CASES = [  # fuser, module names in pattern order, input index
    ('fuse_conv_bn', ['conv1d', 'bn1d'], 0),
    ('fuse_conv_bn_relu', ['conv2d', 'bn2d', 'relu'], 1),
    ('fuse_conv_bn', ['conv2d', 'bn2d'], 1),
    ('fuse_conv_bn', ['conv3d', 'bn3d'], 2),
    ('fuse_convtranspose_bn', ['convt2d', 'bnt2d'], 3),
    ('fuse_linear_bn', ['linear', 'bnl'], 4),
]


def randomized_fusion_cases():
    torch.manual_seed(7)
    m = FusionCases()
    for bn in (m.bn1d, m.bn2d, m.bn3d, m.bnt2d, m.bnl):
        bn.running_mean.copy_(torch.randn(bn.num_features))
        bn.running_var.copy_(torch.rand(bn.num_features) + 0.5)
        bn.weight.data.copy_(torch.randn(bn.num_features))
        bn.bias.data.copy_(torch.randn(bn.num_features))
    inputs = (torch.randn(2, 3, 9), torch.randn(2, 3, 8, 8), torch.randn(1, 2, 4, 5, 5), torch.randn(2, 4, 5, 5),
              torch.randn(6, 5))
    return m.eval(), inputs


def write_fusion():
    import copy
    model, inputs = randomized_fusion_cases()
    torch.jit.trace(model, inputs).save(os.path.join(OUT, 'fusion_model.pt'))
    tensors, cases = list(inputs), []
    for fuser, names, input_index in FUSION_CASES:
        for is_qat in (False, True):
            modules = [copy.deepcopy(getattr(model, n)).train(is_qat) for n in names]
            fuse = getattr(fmm, fuser)
            try:
                fused = fuse(is_qat, *modules)
            except Exception as e:  # noqa: BLE001 - the message is the expectation
                cases.append({'fuser': fuser, 'modules': names, 'is_qat': is_qat, 'error': str(e)})
                continue
            case = {'fuser': fuser, 'modules': names, 'is_qat': is_qat, 'repr': repr(fused)}
            if not is_qat:  # folded: the conv's new weight and bias, and the fused module's output
                folded = fused[0] if isinstance(fused, nn.Sequential) else fused
                case.update(tensors=len(tensors), input=input_index)
                tensors += [folded.weight.detach(), folded.bias.detach(), fused(inputs[input_index]).detach()]
            cases.append(case)
    torch.save(tensors, os.path.join(OUT, 'fusion_tensors.pt'))
    with open(os.path.join(OUT, 'fusion.json'), 'w') as f:
        json.dump(cases, f, indent=1)


def write_all(out):
    global OUT
    OUT = out
    write_backend_configs()
    write_fusion()
