"""Model fixtures: TorchScript files of real and seed models and what
torch.fx makes of them.

For every model below it writes, with random weights from a fixed seed:
  NAME.pt           torch.jit.trace of the model (and NAME.scripted.pt where
                    torch.jit.script works), the files qfx imports
  NAME.input.pt     a random input, as torch.save writes it
  NAME.output.pt    the Python model's output on that input
  NAME.fx.json      torch.fx.symbolic_trace of the Python model: nodes (name, op,
                    target), the generated code, and the printed module tree
and, for the IR tests, names.json (FX's naming rules), literals.json (Python's
repr of floats and strings) and codegen.json (FX's code for a graph built with
the torch.fx.Graph API, mirrored in tests/ir/codegen_test.cpp).
"""
import json
import math
import operator
import os
import random
import struct

from typing import Optional

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
import torchvision

OUT = '.'


class LinearReLUModule(nn.Module):
    """The FX design document's example (seed 000)."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(5, 10).float()
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.linear(x))


class MyModel(nn.Module):
    """The BackendConfig tutorial's model (seed 002)."""

    def __init__(self, use_bn: bool):
        super().__init__()
        self.linear = nn.Linear(10, 3)
        self.conv = nn.Conv2d(3, 3, 3)
        self.bn = nn.BatchNorm2d(3)
        self.relu = nn.ReLU()
        self.sigmoid = nn.Sigmoid()
        self.use_bn = use_bn

    def forward(self, x):
        x = self.linear(x)
        x = self.conv(x)
        if self.use_bn:
            x = self.bn(x)
        x = self.relu(x)
        x = self.sigmoid(x)
        return x


class ModuleZoo(nn.Module):
    """One of every float module kind qfx imports, hyper-parameters off default."""

    def __init__(self):
        super().__init__()
        self.conv1d = nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=1, groups=2, bias=False)
        self.conv2d = nn.Conv2d(4, 8, (3, 1), stride=(2, 1), padding=(1, 0), dilation=(1, 2))
        self.conv2d_reflect = nn.Conv2d(8, 8, 3, padding=1, padding_mode='reflect')
        self.conv3d = nn.Conv3d(2, 3, 2)
        self.tconv1d = nn.ConvTranspose1d(6, 4, 3, stride=2, padding=1, output_padding=1)
        self.tconv2d = nn.ConvTranspose2d(8, 4, 2, stride=2, groups=2, bias=False)
        self.tconv3d = nn.ConvTranspose3d(3, 2, 2)
        self.bn1d = nn.BatchNorm1d(6, eps=1e-3, momentum=0.2)
        self.bn2d = nn.BatchNorm2d(8, affine=False)
        self.bn3d = nn.BatchNorm3d(3)
        self.in1d = nn.InstanceNorm1d(4, affine=True)
        self.in2d = nn.InstanceNorm2d(4, track_running_stats=True)
        self.in3d = nn.InstanceNorm3d(2, track_running_stats=True)
        self.ln = nn.LayerNorm([4, 5], eps=1e-6)
        self.gn = nn.GroupNorm(2, 8)
        self.relu = nn.ReLU(inplace=True)
        self.relu6 = nn.ReLU6()
        self.hardswish = nn.Hardswish()
        self.hardsigmoid = nn.Hardsigmoid()
        self.hardtanh = nn.Hardtanh(-2.0, 3.0)
        self.silu = nn.SiLU()
        self.gelu = nn.GELU(approximate='tanh')
        self.sigmoid = nn.Sigmoid()
        self.tanh = nn.Tanh()
        self.leaky = nn.LeakyReLU(0.2)
        self.elu = nn.ELU(alpha=0.5)
        self.prelu = nn.PReLU(8)
        self.softmax = nn.Softmax(dim=1)
        self.maxpool1d = nn.MaxPool1d(2)
        self.maxpool2d = nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)
        self.maxpool3d = nn.MaxPool3d(2)
        self.avgpool1d = nn.AvgPool1d(2)
        self.avgpool2d = nn.AvgPool2d(2, stride=1, padding=1, count_include_pad=False)
        self.avgpool3d = nn.AvgPool3d(2)
        self.aap1d = nn.AdaptiveAvgPool1d(3)
        self.aap2d = nn.AdaptiveAvgPool2d((2, 3))
        self.aap3d = nn.AdaptiveAvgPool3d((1, 1, 1))
        self.flatten = nn.Flatten()
        self.dropout = nn.Dropout(0.25)
        self.linear = nn.Linear(32, 7)
        self.embedding = nn.Embedding(10, 4, padding_idx=1)
        self.bag = nn.EmbeddingBag(10, 4, mode='sum')

    def forward(self, x1, x2, x3, tokens):
        a = self.bn1d(self.conv1d(x1))
        a = self.tconv1d(a)
        a = self.maxpool1d(self.in1d(a))
        a = self.aap1d(self.avgpool1d(self.relu6(a)))
        b = self.conv2d_reflect(self.bn2d(self.conv2d(x2)))
        b = self.prelu(self.gn(b))
        b = self.tconv2d(self.maxpool2d(self.leaky(b)))
        b = self.in2d(self.elu(b))
        b = self.aap2d(self.avgpool2d(self.hardswish(b)))
        c = self.tconv3d(self.bn3d(self.conv3d(x3)))
        c = self.aap3d(self.avgpool3d(self.maxpool3d(self.in3d(c))))
        d = self.ln(self.hardtanh(self.gelu(self.silu(x1[:, :, :5]))))
        flat = torch.cat([self.flatten(a), self.flatten(b), self.flatten(c), self.flatten(d)], 1)
        out = self.softmax(self.linear(self.dropout(flat[:, :32])))
        e = self.embedding(tokens).sum(1) + self.bag(tokens)
        return (self.relu(out), self.tanh(self.sigmoid(e)),
                self.hardsigmoid(b).sum())


class FunctionalZoo(nn.Module):
    """Functional ops and Tensor methods that FX records as call_function / call_method."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 6)
        self.scale = nn.Parameter(torch.rand(6))

    def forward(self, x, y):
        z = F.relu(x) + y * 2.0
        z = torch.cat([z, x - y], dim=1)
        z = z.view(z.size(0), -1)
        parts = torch.chunk(z, 2, dim=1)
        a, b = parts[0], parts[1]
        z = torch.flatten(torch.stack([a, b], 1), 1)
        z = self.fc(z[:, :12]) * self.scale
        z = F.hardsigmoid(z) + torch.sigmoid(z) - torch.tanh(z) / 3
        z = z.reshape(-1, 3, 2).transpose(1, 2).contiguous()
        z = F.softmax(z, dim=-1).mean(dim=1, keepdim=True)
        w = F.adaptive_avg_pool2d(x, (2, 2))
        w = F.max_pool2d(w, 2) + F.avg_pool2d(w, 2)
        return z.permute(0, 2, 1), w.squeeze(-1), F.leaky_relu(-x, 0.1)


class DataDependentIf(nn.Module):
    """Control flow on the data: qfx must refuse it, naming the location."""

    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x


class UnmappedOp(nn.Module):
    """An ATen op qfx has no FX mapping for."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.cumsum(self.fc(x), 1)


class UnsupportedLeaf(nn.Module):
    """A torch.nn module kind qfx has no form of (it runs as TorchScript)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), nn.Softsign())

    def forward(self, x):
        return self.body(x)


def write_bad_models():
    torch.manual_seed(0)
    torch.jit.script(DataDependentIf()).save(os.path.join(OUT, 'bad_control_flow.scripted.pt'))
    torch.jit.trace(UnmappedOp().eval(), torch.rand(2, 4)).save(os.path.join(OUT, 'bad_op.pt'))
    torch.jit.trace(UnsupportedLeaf().eval(), torch.rand(2, 4)).save(os.path.join(OUT, 'bad_leaf.pt'))


def models():
    """(name, constructor, example inputs, script?) for every fixture model."""
    image = (torch.rand(1, 3, 224, 224),)
    return [
        ('resnet18', torchvision.models.resnet18, image, True),
        ('resnet50', torchvision.models.resnet50, image, False),
        ('mobilenet_v2', torchvision.models.mobilenet_v2, image, True),
        ('mobilenet_v3_large', torchvision.models.mobilenet_v3_large, image, True),
        ('linear_relu', LinearReLUModule, (torch.rand(2, 5),), True),
        ('tutorial_no_bn', lambda: MyModel(False), (torch.rand(1, 3, 10, 10),), True),
        ('tutorial_bn', lambda: MyModel(True), (torch.rand(1, 3, 10, 10),), True),
        ('module_zoo', ModuleZoo, (torch.randn(2, 4, 10), torch.randn(2, 4, 12, 10),
                                   torch.randn(2, 2, 5, 5, 5), torch.tensor([[1, 2, 3], [4, 5, 6]])), False),
        ('functional_zoo', FunctionalZoo, (torch.randn(2, 3, 4, 4), torch.randn(2, 3, 4, 4)), False),
    ]


def target_name(node):
    return node._pretty_print_target(node.target) if node.op in ('call_function',) else str(node.target)


def randomize_stats(model):
    """BatchNorm/InstanceNorm running stats away from 0/1, so that they matter."""
    for m in model.modules():
        if getattr(m, 'running_mean', None) is not None:
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)


def write_model(name, ctor, inputs, script):
    torch.manual_seed(0)
    model = ctor().eval()
    randomize_stats(model)
    with torch.no_grad():
        output = model(*inputs)
    torch.jit.trace(model, inputs).save(os.path.join(OUT, f'{name}.pt'))
    if script:
        torch.jit.script(model).save(os.path.join(OUT, f'{name}.scripted.pt'))
    torch.save(inputs[0] if len(inputs) == 1 else list(inputs), os.path.join(OUT, f'{name}.input.pt'))
    torch.save(output, os.path.join(OUT, f'{name}.output.pt'))
    gm = torch.fx.symbolic_trace(model)
    fx = {
        'nodes': [{'name': n.name, 'op': n.op, 'target': target_name(n)} for n in gm.graph.nodes],
        'code': gm.code,
        'module_tree': nn.Module.__repr__(gm),  # print(gm) without the code
    }
    with open(os.path.join(OUT, f'{name}.fx.json'), 'w') as f:
        json.dump(fx, f, indent=1)


def write_names():
    """FX's _Namespace on sequences of candidates."""
    cases = [
        ['layer1.0.conv1', 'add', 'add', 'add', 'add_1', 'add_1'],
        ['input', 'input', 'list', 'sum', 'torch', 'device', 'inf'],
        ['1x', '9', 'a-b', 'a--b.c', '_', 'x_0', 'x_0', 'x'],
        ['convBlock', 'ALL_CAPS', 'for', 'class', 'None', 'relu_10', 'relu_10', 'relu'],
        ['a.b.c', 'a_b_c', 'a_b_c_1', 'a_b_c'],
    ]
    results = []
    for candidates in cases:
        ns = torch.fx.graph._Namespace()
        names = [ns.create_name(torch.fx.graph._snake_case(c), object()) for c in candidates]
        results.append({'candidates': candidates, 'names': names})
    with open(os.path.join(OUT, 'names.json'), 'w') as f:
        json.dump(results, f, indent=1)


def write_literals():
    rng = random.Random(0)
    values = [0.0, -0.0, 1.0, -1.5, 0.1, 1e-5, 1e-4, 0.0001234, 1e15, 1e16, 123456789.0, 2.0 ** -12,
              2.0 ** -23, 1.0 / 3, 5e-324, 1.7976931348623157e308, math.inf, -math.inf, 0.012136868201196194,
              0.0029353597201406956, 100.0, 1234567890123456.0, 12345678901234567.0]
    values += [struct.unpack('<d', struct.pack('<Q', rng.getrandbits(64)))[0] for _ in range(200)]
    values += [rng.uniform(-1e3, 1e3) for _ in range(200)] + [rng.random() * 10.0 ** rng.randint(-30, 30) for _ in range(200)]
    # powers of two (a shorter gap below than above) and float32 values, as scales are
    values += [2.0 ** k for k in range(-1074, 1024, 3)]
    values += [struct.unpack('<f', struct.pack('<I', rng.getrandbits(32) & 0x7f7fffff))[0] for _ in range(300)]
    floats = [{'hex': v.hex(), 'repr': repr(v)} for v in values if not math.isnan(v)]
    strings = ['cpu', "it's", 'say "hi"', 'both \' and "', 'tab\there', 'new\nline', 'back\\slash', '', 'caf\u00e9']
    with open(os.path.join(OUT, 'literals.json'), 'w') as f:
        json.dump({'floats': floats, 'strings': [{'text': s, 'repr': repr(s)} for s in strings]}, f, indent=1)


def write_codegen():
    """A graph with every argument kind; tests/ir/codegen_test.cpp builds the same."""
    g = torch.fx.Graph()
    x = g.placeholder('x')
    inp = g.placeholder('input')
    w = g.get_attr('layer.0.weight')
    add = g.call_function(operator.add, (x, w))
    mul = g.call_function(operator.mul, (add, 2.5))
    flat = g.call_function(torch.flatten, (mul,), {'start_dim': 1})
    view = g.call_method('view', (flat, -1, 4))
    item = g.call_function(operator.getitem, (view, (slice(None, None, None), slice(1, 3, None))))
    to = g.call_method('to', (item, torch.float16))
    relu = g.call_function(F.relu, (to,), {'inplace': False})
    mod = g.call_module('layer.0', (relu, [inp, None], 'cpu'))
    cat = g.call_function(torch.cat, ([mod, relu],), {'dim': 0})
    neg = g.call_function(operator.neg, (cat,))
    dead = g.call_function(torch.sigmoid, (neg,))  # noqa: F841 (a node without users)
    g.output((neg, item))
    with open(os.path.join(OUT, 'codegen.json'), 'w') as f:
        json.dump({'code': g.python_code('self').src}, f, indent=1)


class FastPathEncoder(nn.Module):
    """A batch-first TransformerEncoder with a Linear head: traced under torch.no_grad() in eval mode, each layer
    records aten::_transformer_encoder_layer_fwd (PyTorch's fast path)."""

    def __init__(self, norm_first, activation):
        super().__init__()
        layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True, norm_first=norm_first,
                                           activation=activation)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.enc(x))


class FastPathAttention(nn.Module):
    """Self-attention between Linear layers: traced under torch.no_grad(), the attention records
    aten::_native_multi_head_attention."""

    def __init__(self):
        super().__init__()
        self.fc1, self.attn, self.fc2 = nn.Linear(8, 8), nn.MultiheadAttention(8, 2, batch_first=True), nn.Linear(8, 4)

    def forward(self, x):
        x = self.fc1(x)
        return self.fc2(self.attn(x, x, x, need_weights=False)[0])


def write_fast_paths():
    """Each model traced twice with the same weights: on PyTorch's fast path (no_grad) and on its slow path
    (grad enabled), with the eval-mode output: `fast_path_<name>{_fast,_slow}.pt`, `.input.pt`, `.output.pt`."""
    cases = [('encoder', lambda: FastPathEncoder(False, 'relu')),
             ('encoder_norm_first_gelu', lambda: FastPathEncoder(True, 'gelu')),
             ('attention', FastPathAttention)]
    for name, ctor in cases:
        torch.manual_seed(0)
        model = ctor().eval()
        x = torch.rand(2, 5, 8)
        with torch.no_grad():
            fast = torch.jit.trace(model, x)
            output = model(x)
        with torch.enable_grad():  # make_fixtures.py disables grad for every writer
            slow = torch.jit.trace(model, x, check_trace=False)
        base = os.path.join(OUT, f'fast_path_{name}')
        fast.save(base + '_fast.pt')
        slow.save(base + '_slow.pt')
        torch.save(x, base + '.input.pt')
        torch.save(output, base + '.output.pt')


class AttentionCall(nn.Module):
    """One nn.MultiheadAttention call with every argument: scripted, the module keeps its attributes and
    chooses its fast path at run time."""

    def __init__(self, attn, need_weights, average):
        super().__init__()
        self.attn, self.need_weights, self.average = attn, need_weights, average

    def forward(self, q, k, v, key_padding_mask: Optional[torch.Tensor], attn_mask: Optional[torch.Tensor]):
        return self.attn(q, k, v, key_padding_mask=key_padding_mask, need_weights=self.need_weights,
                         attn_mask=attn_mask, average_attn_weights=self.average)


def attention_cases():
    """(name, module kwargs, call flags, inputs maker): the forms of 1.13's forward. `self` passes one tensor
    as query, key and value (the identity test picks the packed projection and, batch first in eval without
    grad, the fast path)."""
    x3 = lambda *s: torch.randn(*s)  # noqa: E731
    def self_inputs(shape):
        x = x3(*shape)
        return x, x, x, None, None
    bool_mask = torch.tensor([[False, False, True, False, True], [False, True, False, False, False]])
    return [
        ('seq_first_self', dict(embed_dim=8, num_heads=2), (True, True), lambda: self_inputs((5, 2, 8))),
        ('batch_first_self', dict(embed_dim=8, num_heads=2, batch_first=True), (False, True),
         lambda: self_inputs((2, 5, 8))),
        ('batch_first_key_padding', dict(embed_dim=8, num_heads=2, batch_first=True), (True, False),
         lambda: (lambda x: (x, x, x, bool_mask, None))(x3(2, 5, 8))),
        ('cross_kdim_vdim', dict(embed_dim=8, num_heads=4, kdim=6, vdim=3), (True, False),
         lambda: (x3(4, 2, 8), x3(5, 2, 6), x3(5, 2, 3), bool_mask, None)),
        ('shared_key_value', dict(embed_dim=8, num_heads=2, bias=False), (True, True),
         lambda: (lambda kv: (x3(4, 2, 8), kv, kv, None, torch.randn(4, 5)))(x3(5, 2, 8))),
        ('bias_kv_zero_attn', dict(embed_dim=8, num_heads=2, add_bias_kv=True, add_zero_attn=True), (True, True),
         lambda: (x3(4, 2, 8), x3(5, 2, 8), x3(5, 2, 8), bool_mask, torch.rand(4, 5) > 0.7)),
        ('unbatched', dict(embed_dim=8, num_heads=2), (True, True), lambda: self_inputs((5, 8))),
    ]


def write_attention():
    """Per case: `attention_<name>.module.pt` (the constructor arguments and the state dict, one dict),
    `.inputs.pt` (q, k, v, key_padding_mask, attn_mask, need_weights, average_attn_weights), Python's outputs
    in eval mode with grad enabled (`.grad.pt`) and under no_grad (`.no_grad.pt`), and in train mode with
    dropout 0.25 after torch.manual_seed(7) (`.train.pt`); `attention_<name>.pt`, the scripted AttentionCall,
    where 1.13 can script it (not with kdim/vdim or bias=False: its forward reads in_proj_weight.dtype and
    in_proj_bias.dtype, None there)."""
    for name, kwargs, (need_weights, average), make_inputs in attention_cases():
        torch.manual_seed(0)
        attn = nn.MultiheadAttention(dropout=0.25, **kwargs)
        with torch.no_grad():
            for p in attn.parameters():
                p.copy_(torch.randn_like(p))  # biases too, which start at zero
        model = AttentionCall(attn, need_weights, average).eval()
        inputs = make_inputs()
        base = os.path.join(OUT, f'attention_{name}')
        torch.save({**kwargs, **attn.state_dict()}, base + '.module.pt')
        torch.save(list(inputs) + [need_weights, average], base + '.inputs.pt')
        with torch.enable_grad():  # make_fixtures.py disables grad for every writer
            torch.save(list(model(*inputs)), base + '.grad.pt')
        with torch.no_grad():
            torch.save(list(model(*inputs)), base + '.no_grad.pt')
        if 'kdim' not in kwargs and kwargs.get('bias', True):
            torch.jit.script(model).save(base + '.pt')
        model.train()
        torch.manual_seed(7)
        with torch.enable_grad():
            torch.save(list(model(*inputs)), base + '.train.pt')


class EncoderCall(nn.Module):
    """A TransformerEncoder (or one layer) called with both masks (the same positions in both)."""

    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder

    def forward(self, x, mask: Optional[torch.Tensor], key_padding_mask: Optional[torch.Tensor]):
        return self.encoder(x, mask, key_padding_mask)


def encoder_cases():
    """(name, module maker, inputs): 1.13's encoder forwards. Batch first with a left-aligned key padding mask in
    eval under no_grad takes the nested-tensor path (padded positions come back as zeros)."""
    padding = torch.tensor([[False, False, False, True, True], [False, False, False, False, False]])
    def layer(**kwargs):
        return nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, **kwargs)
    return [
        ('seq_first_norm', lambda: nn.TransformerEncoder(layer(), 2, norm=nn.LayerNorm(8, eps=1e-6)),
         lambda: (torch.randn(5, 2, 8), None, None)),
        ('batch_first_padding', lambda: nn.TransformerEncoder(layer(batch_first=True), 2),
         lambda: (torch.randn(2, 5, 8), None, padding)),
        ('norm_first_gelu_mask',
         lambda: nn.TransformerEncoder(layer(batch_first=True, norm_first=True, activation='gelu'), 2),
         lambda: (torch.randn(2, 5, 8), torch.randn(5, 5), None)),
        ('layer_alone', lambda: layer(batch_first=True), lambda: (torch.randn(2, 5, 8), None, padding)),
    ]


def write_encoders():
    """Per case: `encoder_<name>.pt` (the scripted EncoderCall, eval mode), `.inputs.pt` (x, mask,
    key_padding_mask), and Python's outputs with grad enabled (`.grad.pt`) and under no_grad (`.no_grad.pt`)."""
    for name, make, make_inputs in encoder_cases():
        torch.manual_seed(0)
        encoder = make()
        with torch.no_grad():
            for p in encoder.parameters():
                p.copy_(torch.randn_like(p) * 0.5)
        model = EncoderCall(encoder).eval()
        inputs = make_inputs()
        base = os.path.join(OUT, f'encoder_{name}')
        torch.jit.script(model).save(base + '.pt')
        torch.save(list(inputs), base + '.inputs.pt')
        with torch.enable_grad():  # make_fixtures.py disables grad for every writer
            torch.save(model(*inputs), base + '.grad.pt')
        with torch.no_grad():
            torch.save(model(*inputs), base + '.no_grad.pt')


def write_all(out):
    global OUT
    OUT = out
    write_fast_paths()
    write_attention()
    write_encoders()
    for name, ctor, inputs, script in models():
        write_model(name, ctor, inputs, script)
    write_bad_models()
    write_names()
    write_literals()
    write_codegen()
