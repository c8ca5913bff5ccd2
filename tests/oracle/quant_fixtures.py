"""Quantization fixtures, computed by PyTorch 1.13:

  observers.json, observer_inputs.pt, observer_histograms.pt
      every observer class in its main configurations on inputs of several
      kinds: scale, zero point, min/max and (histograms) the histogram;
  fake_quant.json, fake_quant_inputs.pt, fake_quant_<case>.pt
      fake-quantize modules over four steps: outputs and gradients;
  qconfig_mappings.json, qconfig_presets.json, observer_presets.json
      the default QConfigMappings and presets in qfx's JSON form;
  resolution.json, resolution_model.pt
      generate_qconfig_map on a nested model with every kind of entry.

HistogramObserver: PyTorch 1.13 truncates the histogram range with int()
before torch.histc, which drops values outside (-1, 1); qfx follows the
upstream fix, so the expected values come from 1.13's class with that one
call fixed (and, where 1.13 is right, are checked equal to 1.13's own).
"""
import inspect
import json
import os
import textwrap

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.ao.quantization import fake_quantize as fq
from torch.ao.quantization import observer as ob
from torch.ao.quantization import qconfig as qc
from torch.ao.quantization import QConfig, QConfigMapping, get_default_qconfig_mapping, \
    get_default_qat_qconfig_mapping
from torch.ao.quantization._learnable_fake_quantize import _LearnableFakeQuantize
from torch.ao.quantization.fx.qconfig_mapping_utils import generate_qconfig_map
from torch.ao.quantization.fx.tracer import QuantizationTracer

from pytorch_names import qconfig_json, qconfig_mapping_json, spec_json

OUT = '.'
BACKENDS = ['fbgemm', 'x86', 'qnnpack', 'onednn']


def fixed_histogram_observer():
    """1.13's HistogramObserver with histc given the float range (upstream's fix)."""
    src = textwrap.dedent(inspect.getsource(ob.HistogramObserver.forward))
    for name in ('min_val', 'max_val', 'combined_min', 'combined_max'):
        assert f'=int({name})' in src, name
        src = src.replace(f'=int({name})', f'=float({name})')
    namespace = {'torch': torch}
    exec(src, namespace)
    return type('HistogramObserver', (ob.HistogramObserver,), {'forward': namespace['forward']})


FixedHistogramObserver = fixed_histogram_observer()


def input_kinds():
    g = torch.Generator().manual_seed(0)
    shape = (2, 8, 12, 12)

    def randn(*s):
        return torch.randn(*s, generator=g)

    def rand(*s):
        return torch.rand(*s, generator=g)

    outliers = randn(*shape)
    outliers.view(-1)[::97] *= 50.0
    # a range that _adjust_min_max moves when 1000 bins (upsampled 100x) see it again
    moving_range = rand(*shape) * 30 - 15
    moving_range.view(-1)[:2] = torch.tensor([-18.83616828918457, 18.816429138183594])
    zero_channel = randn(*shape) * 2
    zero_channel[:, 2] = 0
    zero_channel[1] = 0
    with_nan = randn(*shape)
    with_nan.view(-1)[::31] = float('nan')
    with_nan.view(-1)[5] = float('inf')
    with_nan.view(-1)[9] = float('-inf')
    return [
        ('normal', [randn(*shape)]),
        ('uniform', [rand(*shape) * 4 - 1]),
        ('outliers', [outliers]),
        ('zeros', [torch.zeros(shape)]),
        ('constant', [torch.full(shape, 0.7)]),
        ('negative', [-rand(*shape) - 0.5]),
        ('small', [rand(*shape) * 0.9 - 0.45]),
        ('batches', [randn(*shape), randn(*shape) * 3, randn(*shape) * 0.5, randn(*shape) * 2 + 1]),
        ('zero_channel', [zero_channel]),
        ('large', [randn(1, 16, 56, 56) * 1.5 + 0.2, randn(1, 16, 56, 56)]),
        ('constant_then_normal', [torch.full(shape, -0.3), randn(*shape)]),
        ('with_nan', [with_nan, randn(*shape) * 2]),
        ('tiny', [randn(1, 4, 2, 2)]),
        ('two_values', [torch.where(rand(*shape) < 0.9, -1.0, 3.0)]),
        ('tiny_batches', [randn(1, 4, 2, 2), randn(1, 4, 2, 2) * 5 + 2]),
        # calibration-like: most batches fall inside the range seen so far
        ('relu_batches', [torch.relu(randn(*shape) * (1.0 + 0.1 * k)) for k in (5, 0, 3, 1, 4, 2, 6, 0)]),
        ('moving_range', [moving_range, randn(*shape) * 4, randn(*shape) * 30]),
        # a zero bound and batches inside it with the other zero
        ('signed_zero_min', [torch.relu(randn(*shape)), torch.where(rand(*shape) < 0.5, -0.0, rand(*shape))]),
        ('signed_zero_max', [-torch.relu(randn(*shape)), torch.where(rand(*shape) < 0.5, 0.0, -rand(*shape))]),
    ]


def observer_cases():
    s, a = torch.per_tensor_symmetric, torch.per_tensor_affine
    cs, ca, fq_ = torch.per_channel_symmetric, torch.per_channel_affine, torch.per_channel_affine_float_qparams
    q8, qi8 = torch.quint8, torch.qint8
    mm, mma = ob.MinMaxObserver, ob.MovingAverageMinMaxObserver
    pc, pca = ob.PerChannelMinMaxObserver, ob.MovingAveragePerChannelMinMaxObserver
    h = FixedHistogramObserver
    return [
        ('minmax', mm, {}),
        ('minmax_qint8_sym', mm, dict(dtype=qi8, qscheme=s)),
        ('minmax_reduce', mm, dict(reduce_range=True)),
        ('minmax_0_127', mm, dict(quant_min=0, quant_max=127)),
        ('minmax_quint8_sym', mm, dict(qscheme=s)),
        ('minmax_quint8_sym_custom', mm, dict(qscheme=s, quant_min=0, quant_max=127)),
        ('minmax_qint8_127_eps', mm, dict(dtype=qi8, qscheme=s, quant_min=-127, quant_max=127, eps=2 ** -12)),
        ('minmax_reduce_custom', mm, dict(quant_min=0, quant_max=255, reduce_range=True)),
        ('minmax_qint8_reduce', mm, dict(dtype=qi8, quant_min=-128, quant_max=127, reduce_range=True)),
        ('minmax_qint32', mm, dict(dtype=torch.qint32)),
        ('moving_avg', mma, {}),
        ('moving_avg_half_sym', mma, dict(averaging_constant=0.5, dtype=qi8, qscheme=s)),
        ('per_channel_sym', pc, dict(dtype=qi8, qscheme=cs)),
        ('per_channel_axis1_reduce', pc, dict(ch_axis=1, reduce_range=True)),
        ('per_channel_axis_neg1', pc, dict(ch_axis=-1, qscheme=ca)),
        ('per_channel_float_qparams', pc, dict(qscheme=fq_, dtype=q8)),
        ('per_channel_float_qparams_4bit', pc, dict(qscheme=fq_, dtype=torch.quint4x2)),
        ('moving_avg_per_channel', pca, dict(averaging_constant=0.2, dtype=qi8, qscheme=cs)),
        ('histogram', h, {}),
        ('histogram_reduce', h, dict(reduce_range=True)),
        ('histogram_qint8_sym', h, dict(dtype=qi8, qscheme=s)),
        ('histogram_small_bins', h, dict(bins=256, upsample_rate=16)),
        # not powers of two: _adjust_min_max can move an unchanged range
        ('histogram_bins_1000', h, dict(bins=1000, upsample_rate=100)),
        ('histogram_0_127', h, dict(quant_min=0, quant_max=127)),
    ]


def hexes(t):
    return [float(v).hex() for v in t.reshape(-1).tolist()]


def finite(batch, per_channel):
    """What PyTorch should see where qfx leaves non-finite values out."""
    return batch if per_channel else batch[torch.isfinite(batch)]


def run_observer(cls, kwargs, batches, per_channel):
    obs = cls(**kwargs)
    for b in batches:
        obs(finite(b, per_channel))
    scale, zero_point = obs.calculate_qparams()
    return obs, scale, zero_point


def observer_case(name, cls, kwargs, kind_index, kind, batches, histograms):
    per_channel = cls in (ob.PerChannelMinMaxObserver, ob.MovingAveragePerChannelMinMaxObserver)
    if kind == 'with_nan' and per_channel:
        return None
    obs, scale, zero_point = run_observer(cls, kwargs, batches, per_channel)
    spec_cls = ob.HistogramObserver if cls is FixedHistogramObserver else cls
    case = {
        'name': f'{name}/{kind}',
        'spec': spec_json(spec_cls.with_args(**kwargs)),
        'input': kind_index,
        'scale': hexes(scale),
        'zero_point': hexes(zero_point.double()),
        'zero_point_dtype': str(zero_point.dtype),
        'min_val': hexes(obs.min_val),
        'max_val': hexes(obs.max_val),
    }
    if cls is FixedHistogramObserver:
        case['histogram'] = len(histograms)
        histograms.append(obs.histogram.clone())
        if kind == 'small':  # inside (-1, 1) PyTorch 1.13 is right: same result
            _, s13, z13 = run_observer(ob.HistogramObserver, kwargs, batches, False)
            assert torch.equal(s13, scale) and torch.equal(z13, zero_point), name
    return case


def write_observers():
    kinds = input_kinds()
    torch.save([batches for _, batches in kinds], os.path.join(OUT, 'observer_inputs.pt'))
    cases, histograms = [], []
    for name, cls, kwargs in observer_cases():
        for i, (kind, batches) in enumerate(kinds):
            case = observer_case(name, cls, kwargs, i, kind, batches, histograms)
            if case is not None:
                cases.append(case)
    torch.save(histograms, os.path.join(OUT, 'observer_histograms.pt'))
    with open(os.path.join(OUT, 'observers.json'), 'w') as f:
        json.dump(cases, f, indent=1)


def fake_quant_cases():
    return [
        ('default_fake_quant', fq.default_fake_quant, (4, 8, 3, 3)),
        ('default_weight_fake_quant', fq.default_weight_fake_quant, (4, 8, 3, 3)),
        ('default_per_channel_weight_fake_quant', fq.default_per_channel_weight_fake_quant, (4, 8, 3, 3)),
        ('fixed_qparams_0to1', fq.default_fixed_qparams_range_0to1_fake_quant, (4, 8, 3, 3)),
        ('fused_act', fq.default_fused_act_fake_quant, (4, 8, 3, 3)),
        ('fused_per_channel_weight', fq.default_fused_per_channel_wt_fake_quant, (4, 8, 3, 3)),
        ('learnable', _LearnableFakeQuantize.with_args(
            observer=ob.MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=torch.quint8), (4, 8, 3, 3)),
        ('learnable_per_channel', _LearnableFakeQuantize.with_args(
            observer=ob.MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype=torch.qint8,
            qscheme=torch.per_channel_symmetric, ch_axis=0, channel_len=4, use_grad_scaling=True), (4, 8, 3, 3)),
    ]


def run_fake_quant(ctor, inputs, weights):
    """Four steps; observation off (learnable: parameter learning on) from step 2."""
    module = ctor()
    learnable = isinstance(module, _LearnableFakeQuantize)
    record = []
    for step in range(4):
        if step == 2:
            if learnable:
                module.enable_param_learning()
            else:
                module.disable_observer()
        x = inputs[step].clone().requires_grad_(True)
        y = module(x)
        (y * weights[step]).sum().backward()
        record += [y.detach(), x.grad]
        if learnable:
            for p in (module.scale, module.zero_point):
                record.append(p.grad.clone() if p.grad is not None else torch.zeros_like(p))
                p.grad = None
    record += [module.scale.detach().clone(), module.zero_point.detach().clone()]
    return record


def write_fake_quants():
    g = torch.Generator().manual_seed(1)
    inputs = [torch.randn(4, 8, 3, 3, generator=g) * s for s in (1.0, 2.0, 0.5, 1.5)]
    weights = [torch.randn(4, 8, 3, 3, generator=g) for _ in range(4)]
    torch.save(inputs + weights, os.path.join(OUT, 'fake_quant_inputs.pt'))
    cases = []
    with torch.enable_grad():
        for name, ctor, _ in fake_quant_cases():
            torch.save(run_fake_quant(ctor, inputs, weights), os.path.join(OUT, f'fake_quant_{name}.pt'))
            cases.append({'name': name, 'spec': spec_json(ctor)})
    with open(os.path.join(OUT, 'fake_quant.json'), 'w') as f:
        json.dump(cases, f, indent=1)


def write_presets():
    mappings = {}
    for b in BACKENDS:
        mappings[f'default:{b}'] = qconfig_mapping_json(get_default_qconfig_mapping(b))
        mappings[f'qat:{b}'] = qconfig_mapping_json(get_default_qat_qconfig_mapping(b))
        mappings[f'qat_v0:{b}'] = qconfig_mapping_json(get_default_qat_qconfig_mapping(b, version=0))
    with open(os.path.join(OUT, 'qconfig_mappings.json'), 'w') as f:
        json.dump(mappings, f, indent=1)
    qconfigs = {name: qconfig_json(getattr(qc, name)) for name in dir(qc)
                if isinstance(getattr(qc, name), QConfig) and name != 'default_weight_only_qconfig'
                and name != 'default_activation_only_qconfig'}
    for b in BACKENDS + ['other']:
        qconfigs[f'default:{b}'] = qconfig_json(qc.get_default_qconfig(b))
        qconfigs[f'qat:{b}'] = qconfig_json(qc.get_default_qat_qconfig(b))
    with open(os.path.join(OUT, 'qconfig_presets.json'), 'w') as f:
        json.dump(qconfigs, f, indent=1)
    observers = {}
    for module in (ob, fq):
        for name in dir(module):
            value = getattr(module, name)
            if name.startswith('default_') or 'range_neg_127' in name:
                if isinstance(value, ob._PartialWrapper) or (isinstance(value, type) and name.startswith('default')):
                    observers[name] = spec_json(value)
    with open(os.path.join(OUT, 'observer_presets.json'), 'w') as f:
        json.dump(observers, f, indent=1)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = F.relu(self.bn(self.conv(x)))
        y = y + torch.sigmoid(x)
        y = F.relu(y)
        z = self.lin(y.mean([2, 3]))
        z = z.reshape(z.size(0), 4, 1, 1)
        return self.relu(y * z)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 1)
        self.layer1 = nn.Sequential(Block(), Block())
        self.extra = Block()
        self.tail = Block()  # matched by no name or regex: its type's qconfig beats its functions' own
        self.head = nn.Linear(4, 10)

    def forward(self, x):
        x = self.tail(self.extra(self.layer1(self.stem(x))))
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.head(F.relu(x))


def resolution_qconfigs():
    """Distinct qconfigs, told apart by their activation observer's eps."""
    return [QConfig(activation=ob.MinMaxObserver.with_args(eps=10.0 ** -k), weight=ob.default_weight_observer)
            for k in range(1, 9)]


def write_resolution():
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.rand(1, 3, 8, 8)
    torch.jit.trace(model, x).save(os.path.join(OUT, 'resolution_model.pt'))
    q = resolution_qconfigs()
    mapping = QConfigMapping() \
        .set_global(q[0]) \
        .set_object_type(nn.Conv2d, q[1]) \
        .set_object_type(F.relu, q[2]) \
        .set_object_type('reshape', q[3]) \
        .set_object_type(Block, q[4]) \
        .set_object_type(nn.Linear, None) \
        .set_module_name_regex(r'layer1\.1\.l.*', q[5]) \
        .set_module_name_regex(r'layer1\..*', q[6]) \
        .set_module_name('extra', q[7]) \
        .set_module_name('extra.bn', None) \
        .set_module_name_object_type_order('layer1.0', F.relu, 1, q[1]) \
        .set_module_name_object_type_order('layer1', nn.Sequential, 0, q[2]) \
        .set_module_name_object_type_order('', torch.flatten, 0, q[3])
    tracer = QuantizationTracer([], [])
    graph = tracer.trace(model)
    modules = dict(model.named_modules())
    result = generate_qconfig_map(model, modules, graph, mapping, tracer.node_name_to_scope)
    labels = {}
    for node_name, qconfig in result.items():
        # call_module qconfigs come wrapped for device placement; the partial inside is ours
        matches = [i for i, c in enumerate(q) if qconfig is not None and c.activation.p is qconfig.activation.p]
        labels[node_name] = matches[0] if matches else None
    with open(os.path.join(OUT, 'resolution.json'), 'w') as f:
        json.dump({'mapping': qconfig_mapping_json(mapping), 'qconfigs': [qconfig_json(c) for c in q],
                   'nodes': labels}, f, indent=1)


def write_all(out):
    global OUT
    OUT = out
    write_observers()
    write_fake_quants()
    write_presets()
    write_resolution()
