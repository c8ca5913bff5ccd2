"""PyTorch's own FX quantization test models, quantized by PyTorch 1.13.

The models are those of torch/testing/_internal/common_quantization.py (the
installed module itself) and runnable versions of the modules that
test/quantization/fx/test_quantize_fx.py defines inside its tests (general
shape and value ops, fixed-qparams ops, conv/linear module and functional
variants, norms, activations, binary ops, embeddings, dynamic and QAT
variants, qconfigs by module name / regex / object type / type order,
quantized inputs and outputs).

suite.json: one record per case: the model file (traced; `scripted` names a
torch.jit.script file when scripting works), its input, the float output,
the mode (static, qat, dynamic, weight_only), backend, engine and
QConfigMapping (qfx JSON), and what PyTorch made: prepared nodes, observed
node names and each observer's qparams after one forward of the input; the
reference model's output; convert_fx's nodes, output and output step. Where
PyTorch 1.13 itself fails, `pytorch_error` says at which stage and why, and
the test checks that qfx's model is sound instead (docs/divergences.md).
"""
import copy
import json
import os
import sys
import types
import unittest
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.ao.quantization import (QConfigMapping, default_dynamic_qconfig, default_qconfig,
                                   float16_dynamic_qconfig, float_qparams_weight_only_qconfig,
                                   get_default_qat_qconfig_mapping, get_default_qconfig,
                                   get_default_qconfig_mapping, per_channel_dynamic_qconfig)
from torch.ao.quantization.backend_config import get_native_backend_config, get_qnnpack_backend_config
from torch.ao.quantization.fx.custom_config import ConvertCustomConfig, PrepareCustomConfig
from torch.ao.quantization.quantize_fx import convert_fx, convert_to_reference_fx, prepare_fx, prepare_qat_fx

import flow_fixtures
import model_fixtures
from pytorch_names import object_type_name, qconfig_mapping_json


def common_quantization():
    """torch.testing._internal.common_quantization, whose common_utils import
    wants the `expecttest` package (not in Debian): a stand-in suffices, as
    only the model classes are used."""
    if 'expecttest' not in sys.modules:
        shim = types.ModuleType('expecttest')
        shim.TestCase, shim.ACCEPT = unittest.TestCase, False
        sys.modules['expecttest'] = shim
    import torch.testing._internal.common_quantization as cq
    return cq


cq = common_quantization()


# --- modules of test_quantize_fx.py's tests, runnable ------------------------

class BinaryOp(nn.Module):
    """test_add / test_mul: op(conv1(x), conv2(y)) both ways, tensor or scalar, in place or not."""

    def __init__(self, op, scalar):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 1, 1), nn.Conv2d(1, 1, 1)
        self.op, self.scalar = op, scalar

    def forward(self, x, y):
        x = self.conv1(x)
        y = 3.0 if self.scalar else self.conv2(y)
        x = self.op(x, y)
        return self.op(y, x) if not self.scalar else self.op(x, y)


class BinaryOpRelu(nn.Module):
    """test_add_relu / test_mul_relu: op then relu (module or functional)."""

    def __init__(self, op, functional_relu):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 1, 1), nn.Conv2d(1, 1, 1)
        self.op = op
        self.relu = F.relu if functional_relu else nn.ReLU()

    def forward(self, x, y):
        x, y = self.conv1(x), self.conv2(y)
        x = self.relu(self.op(x, y))
        return self.relu(self.op(y, x))


class ShapeOps(nn.Module):
    """test_general_shape_ops: ops that share their input's observer, between two convs."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(3, 3, 3), nn.Conv2d(3, 3, 1)
        self.maxpool2d = nn.MaxPool2d(kernel_size=3, stride=1, padding=1)
        self.dropout = nn.Dropout()
        self.relu = nn.ReLU()

    def forward(self, x):
        x = self.conv1(x)
        x = self.maxpool2d(x)
        x = F.max_pool2d(x, 3, 1, 1)
        x = torch.flatten(x, 2).reshape(1, 3, 8, 8)
        x = x.view(1, 3, 8, 8).transpose(2, 3).contiguous()
        parts = torch.chunk(x, 2, 2)  # indexed: 1.13's FX cannot unpack a Proxy under Python 3.11
        x = torch.cat([parts[0], parts[1]], 2)
        x = F.dropout(x, training=False)
        x = self.dropout(x)
        x = x.permute(0, 1, 3, 2)
        x = self.relu(x)
        x = F.relu(x)
        x = x.relu()
        x = torch.squeeze(x.unsqueeze(0), 0)
        x = x.detach()
        x = x.repeat(1, 1, 1, 1)
        x = torch.stack([x], 0)[0]
        return self.conv2(x)


class ValueOps(nn.Module):
    """test_general_value_ops: pooling, mean and activation ops, between two convs."""

    def __init__(self):
        super().__init__()
        self.conv, self.conv2 = nn.Conv2d(3, 3, 3), nn.Conv2d(3, 3, 1)
        self.avg_pool2d = nn.AvgPool2d(3, 1, 1)
        self.adaptive_avg_pool2d = nn.AdaptiveAvgPool2d((4, 4))
        self.leaky_relu = nn.LeakyReLU()
        self.hardsigmoid = nn.Hardsigmoid()
        self.sigmoid = nn.Sigmoid()
        self.tanh = nn.Tanh()

    def forward(self, x):
        x = self.conv(x)
        x = self.avg_pool2d(x)
        x = F.avg_pool2d(x, 3, 1, 1)
        x = self.adaptive_avg_pool2d(x)
        x = F.adaptive_avg_pool2d(x, (4, 4))
        x = x - torch.mean(x, [2, 3], True)
        x = self.leaky_relu(x)
        x = F.leaky_relu(x)
        x = self.hardsigmoid(x)
        x = F.hardsigmoid(x)
        x = self.sigmoid(x)
        x = torch.sigmoid(x)
        x = self.tanh(x)
        x = torch.tanh(x)
        return self.conv2(x)


class FixedQParamsOps(nn.Module):
    """test_fixed_qparams_ops: sigmoid, hardsigmoid, tanh, softmax as modules, functions and methods."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3)
        self.sigmoid, self.hardsigmoid, self.tanh, self.softmax = nn.Sigmoid(), nn.Hardsigmoid(), nn.Tanh(), nn.Softmax(1)

    def forward(self, x):
        x = self.conv(x)
        x = self.sigmoid(x) + torch.sigmoid(x) + x.sigmoid()
        x = self.hardsigmoid(x) + F.hardsigmoid(x)
        x = self.tanh(x) + torch.tanh(x) + x.tanh()
        return self.softmax(x) + F.softmax(x, 1)


class ConvNd(nn.Module):
    """test_conv_linear: a convolution (or transposed one) as a module."""

    def __init__(self, cls, dim):
        super().__init__()
        self.conv = cls(3, 3, 3)

    def forward(self, x):
        return self.conv(x)


class FunctionalConvNd(nn.Module):
    """test_conv_linear: F.convNd / F.conv_transposeNd with a weight parameter."""

    def __init__(self, fn, dim, transposed=False):
        super().__init__()
        self.weight = nn.Parameter(torch.rand((3, 3) + (3,) * dim) - 0.5)
        self.bias = nn.Parameter(torch.rand(3) - 0.5)
        self.fn = fn

    def forward(self, x):
        return self.fn(x, self.weight, self.bias)


class FunctionalLinear(nn.Module):
    """test_conv_linear: F.linear with a weight parameter and no bias."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(10, 5) - 0.5)

    def forward(self, x):
        return F.linear(x, self.weight)


class BNRelu(nn.Module):
    """test_qbatch_norm / test_qbatch_norm_relu: a standalone batch norm, optionally with relu."""

    def __init__(self, dim, relu):
        super().__init__()
        self.bn = {2: nn.BatchNorm2d, 3: nn.BatchNorm3d}[dim](3)
        self.relu = relu

    def forward(self, x):
        x = self.bn(x)
        if self.relu == 'module':
            return F.relu(x)
        if self.relu == 'inplace':
            return F.relu(x, True)
        return x


class Norm(nn.Module):
    """test_layer_norm / test_instance_norm / test_group_norm: module or functional."""

    def __init__(self, module, functional):
        super().__init__()
        self.op, self.functional = module, functional

    def forward(self, x):
        return self.functional(x) if self.functional is not None else self.op(x)


class Activation(nn.Module):
    """_test_activation_impl: the module or the functional op, in place or not."""

    def __init__(self, module, functional, inplace):
        super().__init__()
        self.op = module(inplace=inplace) if module is not None else None
        self.functional, self.inplace = functional, inplace

    def forward(self, x):
        return self.op(x) if self.op is not None else self.functional(x, inplace=self.inplace)


class Clamp(nn.Module):
    """test_clamp: relu6, clamp and hardtanh after a conv."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 2)
        self.relu6, self.hardtanh = nn.ReLU6(), nn.Hardtanh()

    def forward(self, x):
        x = self.conv(x)
        x = F.relu6(self.relu6(x))
        x = x.clamp(-2.5, 2.5)
        x = torch.clamp(x, -3, 3)
        return F.hardtanh(self.hardtanh(x))


class CatAddMatmul(nn.Module):
    """test_cat / test_matmul / test_bmm: values from two convs joined."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(2, 2, 1), nn.Conv2d(2, 2, 1)

    def forward(self, x):
        a, b = self.conv1(x), self.conv2(x)
        c = torch.cat([a, b], 1)
        m = torch.matmul(a, b)
        n = torch.bmm(a.reshape(4, 4, 4), b.reshape(4, 4, 4)).reshape(2, 2, 4, 4)
        return c, m * n + a


class AssertWarn(nn.Module):
    """A forward with torch._assert (FX records it) and warnings.warn (FX drops it)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)

    def forward(self, x):
        torch._assert(x.dim() == 4, 'expected a batch of images')
        warnings.warn('the suite warns here')
        return self.conv(x)


class ResizeShuffleOps(nn.Module):
    """F.interpolate (nearest, bilinear), pixel and channel shuffles, masked_fill, narrow, repeat_interleave."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(4, 4, 1), nn.Conv2d(4, 4, 1)

    def forward(self, x):
        x = self.conv1(x)
        x = F.interpolate(x, scale_factor=2.0, mode='nearest')
        x = F.interpolate(x, size=(6, 6), mode='bilinear', align_corners=False)
        x = F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2)
        x = torch.channel_shuffle(x, 2)
        x = x.masked_fill(x > 0.5, 0.5).narrow(2, 0, 4).repeat_interleave(2, 3)
        return self.conv2(x)


class WindowOps(nn.Module):
    """Swin's window ops: sizes by % and //, F.pad, torch.roll, x.new_zeros, a
    table indexed by a buffer; with `assign`, a mask built by slice assignment
    (which 1.13's FX cannot trace: a Proxy takes no item assignment)."""

    def __init__(self, assign):
        super().__init__()
        self.assign = assign
        self.conv1, self.conv2 = nn.Conv2d(3, 4, 1), nn.Conv2d(4, 4, 1)
        self.table = nn.Parameter(torch.randn(9, 4))
        self.register_buffer('index', torch.tensor([[0, 1, 2], [3, 4, 5], [6, 7, 8]]))

    def forward(self, x):
        x = self.conv1(x)
        h, w = x.size(-2), x.size(-1)
        pad = (3 - w % 3) % 3 + h // 8  # scripted: aten::remainder and aten::floordiv on ints
        x = F.pad(x, (0, pad, 0, pad))
        x = torch.roll(x, shifts=(-1, -1), dims=(2, 3))
        mask = x.new_zeros((h + pad, w + pad))
        if self.assign:
            mask[0:-3, 0:-3] = 1.0
            mask[-3:, 1:] = 2.0
        x = x + mask.masked_fill(mask != 0, -1.0)
        bias = self.table[self.index].permute(2, 0, 1).sum(0)
        return self.conv2(x) + bias.mean()


class IntPower(nn.Module):
    """Size arithmetic with `**`: Python's int ** int is an int, TorchScript's a float."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, x):
        x = self.conv(x)
        n = x.size(1) ** 2
        return torch.flatten(x, 1)[:, :n] * 2


class Attention(nn.Module):
    """nn.MultiheadAttention between linears: FX keeps it whole (a torch.nn leaf), float."""

    def __init__(self):
        super().__init__()
        self.fc1, self.attn, self.fc2 = nn.Linear(8, 8), nn.MultiheadAttention(8, 2), nn.Linear(8, 4)

    def forward(self, x):
        x = self.fc1(x)
        return self.fc2(self.attn(x, x, x)[0])


class Encoder(nn.Module):
    """A 2-layer nn.TransformerEncoder with a linear head."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(self.encoder(x))


class RecurrentOutput(nn.Module):
    """The word language model's use: only an LSTM's / GRU's output (a trace returns it alone)."""

    def __init__(self, cls):
        super().__init__()
        self.rnn, self.fc = cls(4, 6, num_layers=2), nn.Linear(6, 3)

    def forward(self, x):
        return self.fc(self.rnn(x)[0])


class MaxPool3d(nn.Module):
    """Conv3d, MaxPool3d, F.max_pool3d: 1.13's lowered model runs max_pool3d on a quantized tensor, which
    LibTorch has no kernel for."""

    def __init__(self):
        super().__init__()
        self.conv1, self.pool, self.conv2 = nn.Conv3d(3, 4, 1), nn.MaxPool3d(2), nn.Conv3d(4, 4, 1)

    def forward(self, x):
        return self.conv2(F.max_pool3d(self.pool(self.conv1(x)), 1))


class CellPart(nn.Module):
    """An LSTMCell whose caller reads only its h (part 0) or only its c (part 1): the trace returns that one."""

    def __init__(self, part):
        super().__init__()
        self.part = part
        self.cell, self.fc = nn.LSTMCell(4, 6), nn.Linear(6, 3)

    def forward(self, x, h, c):
        return self.fc(self.cell(x, (h, c))[self.part])


class Cells(nn.Module):
    """An LSTMCell and a GRUCell stepped twice from given states, between linears."""

    def __init__(self):
        super().__init__()
        self.fc1, self.lstm, self.gru, self.fc2 = nn.Linear(4, 4), nn.LSTMCell(4, 6), nn.GRUCell(4, 6), nn.Linear(6, 3)

    def forward(self, x, h, c):
        x = self.fc1(x)
        state = self.lstm(x, (h, c))
        state = self.lstm(x, (state[0], state[1]))
        g = self.gru(x, self.gru(x, h))
        return self.fc2(state[0] + g), state[1]


class StaticLSTM(nn.Module):
    """test_quantize_fx.py's test_static_lstm: an LSTM quantized statically as a custom module
    (torch.ao.nn.quantizable.LSTM observed, torch.ao.nn.quantized.LSTM after convert), each of its
    outputs read by a linear."""

    def __init__(self, with_state=True, **options):
        super().__init__()
        directions = 2 if options.get('bidirectional') else 1
        self.fc = nn.Linear(4, 4)
        self.lstm = nn.LSTM(4, 6, **options)
        self.linear1, self.linear2, self.linear3 = nn.Linear(6 * directions, 3), nn.Linear(6, 3), nn.Linear(6, 3)
        self.with_state = with_state

    def forward(self, x, h0, c0):
        x = self.fc(x)
        result = self.lstm(x, (h0, c0)) if self.with_state else self.lstm(x)
        state = result[1]
        return self.linear1(result[0]), self.linear2(state[0]), self.linear3(state[1])


class LSTMStateInBuffers(nn.Module):
    """An LSTM whose initial state is held in buffers (a trace takes it before the input)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.lstm, self.fc2 = nn.Linear(4, 4), nn.LSTM(4, 6, num_layers=2), nn.Linear(6, 3)
        self.register_buffer('h0', torch.rand(2, 2, 6))
        self.register_buffer('c0', torch.rand(2, 2, 6))

    def forward(self, x):
        return self.fc2(self.lstm(self.fc1(x), (self.h0, self.c0))[0])


def cell_inputs(g):
    return torch.rand(3, 4, generator=g), torch.rand(3, 6, generator=g), torch.rand(3, 6, generator=g)


class Recurrent(nn.Module):
    """nn.LSTM / GRU / RNN between two linears, with or without an initial state."""

    def __init__(self, cls, with_state, **options):
        super().__init__()
        self.fc1 = nn.Linear(4, 4)
        self.rnn = cls(4, 6, **options)
        self.fc2 = nn.Linear(6 * (2 if options.get('bidirectional') else 1), 3)
        self.with_state = with_state

    def forward(self, x, h0, c0):
        # results indexed, not unpacked: 1.13's FX cannot unpack a Proxy under Python 3.11
        x = self.fc1(x)
        lstm = isinstance(self.rnn, nn.LSTM)
        if self.with_state:
            result = self.rnn(x, (h0, c0) if lstm else h0)
        else:
            result = self.rnn(x)
        out, state = result[0], result[1]
        if lstm:
            h, c = state[0], state[1]
            return self.fc2(out), h, c
        return self.fc2(out), state


def recurrent_inputs(layers, directions, batch_first):
    def make(g):
        x = torch.rand(2, 5, 4, generator=g) if batch_first else torch.rand(5, 2, 4, generator=g)
        return (x, torch.rand(layers * directions, 2, 6, generator=g), torch.rand(layers * directions, 2, 6, generator=g))
    return make


class Nested(nn.Module):
    """qconfig by module name, regex and object type: two submodules of linears."""

    def __init__(self):
        super().__init__()
        self.sub1 = cq.LinearReluModel()
        self.sub2 = cq.TwoLayerLinearModel()
        self.fc3 = nn.Linear(5, 5)

    def forward(self, x):
        return self.fc3(self.sub2(self.sub1(x)))


class TypeOrder(nn.Module):
    """test_qconfig_module_name_object_type_order: the n-th add of a module."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(1, 1), nn.Linear(1, 1)

    def forward(self, x):
        x = self.fc1(x)
        x = x + x
        x = x + x
        return self.fc2(x)


# --- the cases ----------------------------------------------------------------

def rand(*shape):
    return lambda g: torch.rand(*shape, generator=g)


def rands(*shapes):
    return lambda g: tuple(torch.rand(*s, generator=g) for s in shapes)


def onednn():
    return get_default_qconfig_mapping('onednn')


def qnnpack():
    return get_default_qconfig_mapping('qnnpack')


def global_qconfig(qconfig):
    return lambda: QConfigMapping().set_global(qconfig)


def per_tensor_transposed():
    """PyTorch rejects per-channel weight observers for ConvTranspose."""
    mapping = get_default_qconfig_mapping('onednn')
    for cls in (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d):
        mapping.set_object_type(cls, get_default_qconfig('qnnpack'))
    return mapping


def module_name_mapping():
    return (QConfigMapping().set_module_name('sub1', default_qconfig).set_module_name('fc3', default_qconfig))


def regex_mapping():
    return QConfigMapping().set_module_name_regex('sub2.fc.*', default_qconfig)


def object_type_mapping():
    return (QConfigMapping().set_global(default_qconfig).set_object_type(nn.ReLU, None)
            .set_module_name('sub2.fc2', None))


def type_order_mapping():
    return (QConfigMapping().set_global(default_qconfig)
            .set_module_name_object_type_order('', torch.add, 1, None)
            .set_module_name_object_type_order('', __import__('operator').add, 1, None))


def weight_only_embeddings():
    return QConfigMapping().set_object_type(nn.EmbeddingBag, float_qparams_weight_only_qconfig)


def embedding_with_linear():
    return get_default_qconfig_mapping('onednn').set_object_type(nn.EmbeddingBag, float_qparams_weight_only_qconfig)


def qat_onednn():
    return get_default_qat_qconfig_mapping('onednn')


def indices_offsets(g):
    return (torch.randint(0, 10, (12,), generator=g), torch.tensor([0, 4, 8, 12]), torch.rand(12, generator=g))


def sparse_inputs(g):
    return (torch.randint(0, 10, (12,), generator=g), torch.tensor([0, 4, 8]), torch.rand(3, 4, generator=g))


IMG2 = rand(2, 3, 8, 8)
IMG3 = rand(2, 3, 4, 6, 6)

# (case, model constructor, input maker, mode, mapping maker, backend)
CASES = [
    # common_quantization.py's models under the default onednn mapping
    ('single_layer_linear', cq.SingleLayerLinearModel, rand(4, 5), 'static', onednn, 'native'),
    ('linear_add', cq.LinearAddModel, rand(4, 5), 'static', onednn, 'native'),
    ('conv', cq.ConvModel, rand(2, 3, 5, 5), 'static', onednn, 'native'),
    ('conv_transpose', cq.ConvTransposeModel, rand(2, 3, 5, 5), 'static', per_tensor_transposed, 'native'),
    ('conv_bn', cq.ConvBnModel, rand(2, 3, 5, 5), 'static', onednn, 'native'),
    ('conv_bn_relu', cq.ConvBnReLUModel, rand(2, 3, 5, 5), 'static', onednn, 'native'),
    ('two_layer_conv', cq.TwoLayerConvModel, rand(2, 3, 5, 5), 'static', onednn, 'native'),
    ('two_layer_linear', cq.TwoLayerLinearModel, rand(4, 5), 'static', onednn, 'native'),
    ('linear_with_submodule', cq.LinearModelWithSubmodule, rand(4, 5), 'static', onednn, 'native'),
    ('activations', cq.ActivationsTestModel, rand(2, 2, 5, 5), 'static', onednn, 'native'),
    ('linear_relu', cq.LinearReluModel, rand(4, 5), 'static', onednn, 'native'),
    ('linear_relu_linear', cq.LinearReluLinearModel, rand(4, 5), 'static', onednn, 'native'),
    ('linear_relu_add', cq.LinearReluAddModel, rand(4, 5), 'static', onednn, 'native'),
    ('conv_relu', cq.ConvReluModel, rand(2, 3, 5, 5), 'static', onednn, 'native'),
    ('conv_relu_conv', cq.ConvReluConvModel, rand(2, 3, 5, 5), 'static', onednn, 'native'),
    ('conv_relu_add', cq.ConvReluAddModel, rand(2, 3, 5, 5), 'static', onednn, 'native'),
    ('normalization', cq.NormalizationTestModel, rand(2, 5), 'static', onednn, 'native'),
    ('nested', cq.NestedModel, rand(4, 5), 'static', onednn, 'native'),
    ('functional_linear', cq.SingleLayerFunctionalLinearModel, rand(4, 5), 'static', onednn, 'native'),
    ('two_layer_functional_linear', cq.TwoLayerFunctionalLinearModel, rand(4, 5), 'static', onednn, 'native'),
    ('functional_linear_add', cq.FunctionalLinearAddModel, rand(4, 5), 'static', onednn, 'native'),
    ('functional_linear_relu', cq.FunctionalLinearReluModel, rand(4, 5), 'static', onednn, 'native'),
    ('functional_linear_relu_linear', cq.FunctionalLinearReluLinearModel, rand(4, 5), 'static', onednn, 'native'),
    ('functional_conv', cq.SingleLayerFunctionalConvModel, rand(2, 3, 5, 5), 'static', onednn, 'native'),
    ('two_layer_functional_conv', cq.TwoLayerFunctionalConvModel, rand(2, 3, 5, 5), 'static', onednn, 'native'),
    ('functional_conv_relu', cq.FunctionalConvReluModel, rand(2, 3, 5, 5), 'static', onednn, 'native'),
    ('functional_conv_relu_conv', cq.FunctionalConvReluConvModel, rand(2, 3, 5, 5), 'static', onednn, 'native'),
    ('sequential_fusion', cq.ModelWithSequentialFusion, rand(2, 3, 10, 10), 'static', onednn, 'native'),
    ('fusion_with_bias', cq.ModelForFusionWithBias, rand(2, 3, 10, 10), 'static', onednn, 'native'),
    ('linear_bn_fusion', cq.ModelForLinearBNFusion, rand(4, 20), 'static', onednn, 'native'),
    ('conv_transpose_bn', cq.ModelForConvTransposeBNFusion, rand(2, 3, 5), 'static', per_tensor_transposed,
     'native'),
    ('resnet_base', cq.ResNetBase, rand(2, 3, 8, 8), 'static', onednn, 'native'),
    ('multiple_ops', cq.ModelMultipleOps, rand(2, 3, 10, 10), 'static', onednn, 'native'),
    ('multiple_ops_no_avg_pool', cq.ModelMultipleOpsNoAvgPool, rand(2, 3, 10, 10), 'static', onednn, 'native'),
    ('sparse_nn', cq.SparseNNModel, sparse_inputs, 'static', embedding_with_linear, 'native'),
    ('two_layer_linear_qnnpack', cq.TwoLayerLinearModel, rand(4, 5), 'static', qnnpack, 'qnnpack'),
    ('resnet_base_qnnpack', cq.ResNetBase, rand(2, 3, 8, 8), 'static', qnnpack, 'qnnpack'),
    # test_quantize_fx.py's modules
    ('add', lambda: BinaryOp(torch.add, False), rands((1, 1, 4, 4), (1, 1, 4, 4)), 'static', onednn, 'native'),
    ('add_operator', lambda: BinaryOp(__import__('operator').add, False), rands((1, 1, 4, 4), (1, 1, 4, 4)),
     'static', onednn, 'native'),
    ('add_scalar', lambda: BinaryOp(torch.add, True), rands((1, 1, 4, 4), (1, 1, 4, 4)), 'static', onednn,
     'native'),
    ('mul', lambda: BinaryOp(torch.mul, False), rands((1, 1, 4, 4), (1, 1, 4, 4)), 'static', onednn, 'native'),
    ('mul_scalar', lambda: BinaryOp(__import__('operator').mul, True), rands((1, 1, 4, 4), (1, 1, 4, 4)),
     'static', onednn, 'native'),
    ('add_relu', lambda: BinaryOpRelu(torch.add, False), rands((1, 1, 4, 4), (1, 1, 4, 4)), 'static', onednn,
     'native'),
    ('add_functional_relu', lambda: BinaryOpRelu(__import__('operator').add, True),
     rands((1, 1, 4, 4), (1, 1, 4, 4)), 'static', onednn, 'native'),
    ('mul_relu', lambda: BinaryOpRelu(torch.mul, True), rands((1, 1, 4, 4), (1, 1, 4, 4)), 'static', onednn,
     'native'),
    ('general_shape_ops', ShapeOps, rand(1, 3, 10, 10), 'static', onednn, 'native'),
    ('general_value_ops', ValueOps, rand(1, 3, 10, 10), 'static', onednn, 'native'),
    ('fixed_qparams_ops', FixedQParamsOps, rand(2, 3, 6, 6), 'static', onednn, 'native'),
    ('resize_shuffle_ops', ResizeShuffleOps, rand(1, 4, 4, 4), 'static', onednn, 'native'),
    ('conv1d', lambda: ConvNd(nn.Conv1d, 1), rand(2, 3, 10), 'static', onednn, 'native'),
    ('conv3d', lambda: ConvNd(nn.Conv3d, 3), IMG3, 'static', onednn, 'native'),
    ('max_pool3d', MaxPool3d, IMG3, 'static', onednn, 'native'),
    ('conv_transpose1d', lambda: ConvNd(nn.ConvTranspose1d, 1), rand(2, 3, 10), 'static', per_tensor_transposed,
     'native'),
    ('functional_conv1d', lambda: FunctionalConvNd(F.conv1d, 1), rand(2, 3, 10), 'static', onednn, 'native'),
    ('functional_conv2d', lambda: FunctionalConvNd(F.conv2d, 2), IMG2, 'static', onednn, 'native'),
    ('functional_conv3d', lambda: FunctionalConvNd(F.conv3d, 3), IMG3, 'static', onednn, 'native'),
    ('functional_conv_transpose1d', lambda: FunctionalConvNd(F.conv_transpose1d, 1), rand(2, 3, 10), 'static',
     onednn, 'native'),
    ('functional_conv_transpose2d', lambda: FunctionalConvNd(F.conv_transpose2d, 2), IMG2, 'static', onednn,
     'native'),
    ('functional_linear_no_bias', FunctionalLinear, rand(8, 5), 'static', onednn, 'native'),
    ('batch_norm2d', lambda: BNRelu(2, None), IMG2, 'static', onednn, 'native'),
    ('batch_norm3d', lambda: BNRelu(3, None), IMG3, 'static', onednn, 'native'),
    ('batch_norm2d_relu', lambda: BNRelu(2, 'module'), IMG2, 'static', onednn, 'native'),
    ('batch_norm3d_relu_inplace', lambda: BNRelu(3, 'inplace'), IMG3, 'static', onednn, 'native'),
    ('layer_norm', lambda: Norm(nn.LayerNorm([3, 8, 8]), None), IMG2, 'static', onednn, 'native'),
    ('functional_layer_norm', lambda: Norm(None, lambda x: F.layer_norm(x, [3, 8, 8])), IMG2, 'static', onednn,
     'native'),
    ('instance_norm1d', lambda: Norm(nn.InstanceNorm1d(3), None), rand(2, 3, 10), 'static', onednn, 'native'),
    ('instance_norm2d', lambda: Norm(nn.InstanceNorm2d(3), None), IMG2, 'static', onednn, 'native'),
    ('instance_norm3d', lambda: Norm(nn.InstanceNorm3d(3), None), IMG3, 'static', onednn, 'native'),
    ('functional_instance_norm', lambda: Norm(None, F.instance_norm), IMG2, 'static', onednn, 'native'),
    ('group_norm', lambda: Norm(nn.GroupNorm(1, 3), None), IMG2, 'static', onednn, 'native'),
    ('hardswish', lambda: Activation(nn.Hardswish, None, False), IMG2, 'static', onednn, 'native'),
    ('functional_hardswish', lambda: Activation(None, F.hardswish, False), IMG2, 'static', onednn, 'native'),
    ('elu', lambda: Activation(nn.ELU, None, False), IMG2, 'static', onednn, 'native'),
    ('functional_elu_inplace', lambda: Activation(None, F.elu, True), IMG2, 'static', onednn, 'native'),
    ('leaky_relu_inplace', lambda: Activation(nn.LeakyReLU, None, True), IMG2, 'static', onednn, 'native'),
    ('functional_hardsigmoid_inplace', lambda: Activation(None, F.hardsigmoid, True), IMG2, 'static', onednn,
     'native'),
    ('prelu', lambda: Norm(nn.PReLU(3), None), IMG2, 'static', onednn, 'native'),
    ('clamp', Clamp, rand(2, 2, 5, 5), 'static', onednn, 'native'),
    ('cat_matmul_bmm', CatAddMatmul, rand(2, 2, 4, 4), 'static', onednn, 'native'),
    ('assert_warn', AssertWarn, IMG2, 'static', onednn, 'native'),
    ('window_ops', lambda: WindowOps(False), rand(1, 3, 5, 5), 'static', onednn, 'native'),
    ('window_mask_assignment', lambda: WindowOps(True), rand(1, 3, 5, 5), 'static', onednn, 'native'),
    ('int_power', IntPower, rand(1, 3, 5, 5), 'static', onednn, 'native'),
    # transformers: MultiheadAttention stays whole and float, as in FX; qfx traces through the encoder
    ('multihead_attention', Attention, rand(5, 2, 8), 'static', onednn, 'native'),
    ('dynamic_multihead_attention', Attention, rand(5, 2, 8), 'dynamic', global_qconfig(default_dynamic_qconfig),
     'native'),
    ('transformer_encoder', Encoder, rand(5, 2, 8), 'static', onednn, 'native'),
    ('dynamic_transformer_encoder', Encoder, rand(5, 2, 8), 'dynamic', global_qconfig(default_dynamic_qconfig),
     'native'),
    # recurrent modules (float under a static qconfig, as in 1.13)
    ('lstm', lambda: Recurrent(nn.LSTM, False), recurrent_inputs(1, 1, False), 'static', onednn, 'native'),
    ('lstm_state_2_layers_bidirectional_batch_first',
     lambda: Recurrent(nn.LSTM, True, num_layers=2, bidirectional=True, batch_first=True),
     recurrent_inputs(2, 2, True), 'static', onednn, 'native'),
    ('gru_state', lambda: Recurrent(nn.GRU, True, num_layers=2), recurrent_inputs(2, 1, False), 'static', onednn,
     'native'),
    ('rnn_relu_bidirectional', lambda: Recurrent(nn.RNN, False, nonlinearity='relu', bidirectional=True),
     recurrent_inputs(1, 2, False), 'static', onednn, 'native'),
    # qconfigs by module name, regex, object type and type order
    ('qconfig_module_name', Nested, rand(4, 5), 'static', module_name_mapping, 'native'),
    ('qconfig_regex', Nested, rand(4, 5), 'static', regex_mapping, 'native'),
    ('qconfig_object_type', Nested, rand(4, 5), 'static', object_type_mapping, 'native'),
    ('qconfig_type_order', TypeOrder, rand(4, 1), 'static', type_order_mapping, 'native'),
    # weight-only and dynamic
    ('embedding', cq.EmbeddingModule, lambda g: torch.randint(0, 10, (3, 5), generator=g), 'weight_only',
     lambda: QConfigMapping().set_object_type(nn.Embedding, float_qparams_weight_only_qconfig), 'native'),
    ('embedding_bag_offsets', cq.EmbeddingBagModule, indices_offsets, 'weight_only', weight_only_embeddings,
     'native'),
    ('dynamic_linear', cq.SingleLayerLinearDynamicModel, rand(4, 5), 'dynamic',
     global_qconfig(default_dynamic_qconfig), 'native'),
    ('dynamic_two_layer_linear', cq.TwoLayerLinearModel, rand(4, 5), 'dynamic',
     global_qconfig(default_dynamic_qconfig), 'native'),
    ('dynamic_per_channel', cq.TwoLayerLinearModel, rand(4, 5), 'dynamic', global_qconfig(per_channel_dynamic_qconfig),
     'native'),
    ('dynamic_fp16', cq.LinearReluLinearModel, rand(4, 5), 'dynamic', global_qconfig(float16_dynamic_qconfig),
     'native'),
    ('dynamic_functional_linear', FunctionalLinear, rand(8, 5), 'dynamic', global_qconfig(default_dynamic_qconfig),
     'native'),
    ('dynamic_lstm', lambda: cq.RNNDynamicModel('LSTM'), rand(3, 2, 2), 'dynamic',
     global_qconfig(default_dynamic_qconfig), 'native'),
    ('dynamic_lstm_state_2_layers_bidirectional_batch_first',
     lambda: Recurrent(nn.LSTM, True, num_layers=2, bidirectional=True, batch_first=True),
     recurrent_inputs(2, 2, True), 'dynamic', global_qconfig(default_dynamic_qconfig), 'native'),
    ('dynamic_lstm_per_channel', lambda: Recurrent(nn.LSTM, False), recurrent_inputs(1, 1, False), 'dynamic',
     global_qconfig(per_channel_dynamic_qconfig), 'native'),
    ('dynamic_gru', lambda: cq.RNNDynamicModel('GRU'), rand(3, 2, 2), 'dynamic',
     global_qconfig(default_dynamic_qconfig), 'native'),
    ('dynamic_gru_state_2_layers_bidirectional_batch_first',
     lambda: Recurrent(nn.GRU, True, num_layers=2, bidirectional=True, batch_first=True),
     recurrent_inputs(2, 2, True), 'dynamic', global_qconfig(default_dynamic_qconfig), 'native'),
    ('dynamic_gru_per_channel', lambda: Recurrent(nn.GRU, False), recurrent_inputs(1, 1, False), 'dynamic',
     global_qconfig(per_channel_dynamic_qconfig), 'native'),
    ('dynamic_gru_output', lambda: RecurrentOutput(nn.GRU), rand(5, 2, 4), 'dynamic',
     global_qconfig(default_dynamic_qconfig), 'native'),
    ('dynamic_gru_cell', lambda: cq.RNNCellDynamicModel('GRUCell'), rand(3, 2), 'dynamic',
     global_qconfig(default_dynamic_qconfig), 'native'),
    ('dynamic_lstm_cell', lambda: cq.RNNCellDynamicModel('LSTMCell'), rand(3, 2), 'dynamic',
     global_qconfig(default_dynamic_qconfig), 'native'),
    ('dynamic_rnn_relu_cell', lambda: cq.RNNCellDynamicModel('RNNReLU'), rand(3, 2), 'dynamic',
     global_qconfig(default_dynamic_qconfig), 'native'),
    ('dynamic_rnn_tanh_cell', lambda: cq.RNNCellDynamicModel('RNNTanh'), rand(3, 2), 'dynamic',
     global_qconfig(default_dynamic_qconfig), 'native'),
    ('dynamic_cells_with_state', Cells, cell_inputs, 'dynamic', global_qconfig(per_channel_dynamic_qconfig),
     'native'),
    ('cells_static', Cells, cell_inputs, 'static', onednn, 'native'),
    ('dynamic_lstm_cell_h_only', lambda: CellPart(0), cell_inputs, 'dynamic', global_qconfig(default_dynamic_qconfig),
     'native'),
    ('dynamic_lstm_cell_c_only', lambda: CellPart(1), cell_inputs, 'dynamic', global_qconfig(default_dynamic_qconfig),
     'native'),
    ('dynamic_lstm_output', lambda: RecurrentOutput(nn.LSTM), rand(5, 2, 4), 'dynamic',
     global_qconfig(default_dynamic_qconfig), 'native'),
    ('gru_output', lambda: RecurrentOutput(nn.GRU), rand(5, 2, 4), 'static', onednn, 'native'),
    ('static_lstm', StaticLSTM, recurrent_inputs(1, 1, False), 'static', onednn, 'native'),
    ('static_lstm_2_layers_bidirectional_batch_first',
     lambda: StaticLSTM(num_layers=2, bidirectional=True, batch_first=True), recurrent_inputs(2, 2, True), 'static',
     onednn, 'native'),
    ('static_lstm_without_state', lambda: StaticLSTM(with_state=False), recurrent_inputs(1, 1, False), 'static',
     onednn, 'native'),
    ('static_lstm_state_in_buffers', LSTMStateInBuffers, rand(5, 2, 4), 'static', onednn, 'native'),
    ('dynamic_lstm_state_in_buffers', LSTMStateInBuffers, rand(5, 2, 4), 'dynamic',
     global_qconfig(default_dynamic_qconfig), 'native'),
    # QAT
    ('qat_conv_bn_relu', cq.ConvBnReLUModel, rand(2, 3, 5, 5), 'qat', qat_onednn, 'native'),
    ('qat_two_layer_linear', cq.TwoLayerLinearModel, rand(4, 5), 'qat', qat_onednn, 'native'),
    ('qat_resnet_base', cq.ResNetBase, rand(2, 3, 8, 8), 'qat', qat_onednn, 'native'),
    ('qat_linear_bn', cq.ModelForLinearBNFusion, rand(4, 20), 'qat', qat_onednn, 'native'),
]

# Cases whose trace keeps less than FX records, so that the traced file's
# graph cannot be PyTorch's (the scripted file's can): the traced variant is
# checked for soundness only.
IDENTITY_DROPPED = 'torch.jit.trace keeps no call of an nn.Identity (its input flows past it)'
# Cases where TorchScript itself (traced or scripted) cannot tell apart two
# spellings that 1.13's BackendConfig configures differently: both variants
# are checked for soundness only.
TORCHSCRIPT_LOSSES = {
    'sequential_fusion': 'torch.reshape(x, s) and x.reshape(s) are one op in TorchScript, and 1.13 lists only '
                         'the method as sharing its input observer',
}
RNN_RESULT_FLATTENED = 'torch.jit.trace flattens the returned (output, state) tuple into getitems FX does not record'
# (A scripted encoder branches on its input: qfx keeps it whole, as FX does.)
ENCODER_TRACED = ('qfx traces through a traced nn.TransformerEncoder(Layer), whose Linear layers then quantize, '
                  'where FX keeps every torch.nn module whole and float (docs/divergences.md)')
CELL_STATE_UNPACKED = ('torch.jit.trace unpacks an LSTMCell\'s (h, c) where the call returns it; FX indexes it '
                       'where it is read (the same getitems, in another order)')
TRACE_LOSSES = {
    'transformer_encoder': ENCODER_TRACED,
    'dynamic_transformer_encoder': ENCODER_TRACED,
    'dynamic_cells_with_state': CELL_STATE_UNPACKED,
    'cells_static': CELL_STATE_UNPACKED,
    'dynamic_lstm_cell': 'torch.jit.trace unpacks the returned (h, c) tuple into getitems FX does not record',
    'multihead_attention': 'torch.jit.trace keeps only the attention output the model reads, not the (output, '
                           'weights) tuple FX indexes',
    'dynamic_multihead_attention': 'torch.jit.trace keeps only the attention output the model reads, not the '
                                   '(output, weights) tuple FX indexes',
    'dynamic_lstm': RNN_RESULT_FLATTENED,
    'dynamic_gru': RNN_RESULT_FLATTENED,
    'assert_warn': 'torch.jit.trace evaluates a torch._assert while tracing and keeps no record of it',
    'resnet_base': IDENTITY_DROPPED,
    'resnet_base_qnnpack': IDENTITY_DROPPED,
    'qat_resnet_base': IDENTITY_DROPPED,
    'multiple_ops': IDENTITY_DROPPED,
    'multiple_ops_no_avg_pool': IDENTITY_DROPPED,
}

# Where qfx quantizes more than FX by design: checked for soundness only.
GRU_DYNAMIC = ('1.13 has no reference GRU and keeps nn.GRU float; qfx quantizes it dynamically as PyTorch 2.x '
               'and eager quantize_dynamic do, checked against quantize_dynamic (docs/divergences.md)')
QFX_DIFFERS = {'dynamic_gru': GRU_DYNAMIC, 'dynamic_gru_state_2_layers_bidirectional_batch_first': GRU_DYNAMIC,
               'dynamic_gru_per_channel': GRU_DYNAMIC, 'dynamic_gru_output': GRU_DYNAMIC}
# Scripted files qfx cannot take, and why.
NOT_SCRIPTED = {
    'int_power': 'TorchScript types `int ** int` as float (aten::pow.int), which a slice bound refuses: '
                 'the model does not script',
}

# Cases quantizing nn.LSTM statically as PyTorch's custom module LSTM.
STATIC_LSTM_CASES = ('static_lstm', 'static_lstm_2_layers_bidirectional_batch_first', 'static_lstm_without_state',
                     'static_lstm_state_in_buffers')
STATIC_LSTM_CONFIGS = {
    'prepare_custom_config': {'float_to_observed_custom_module_class':
                              {'static': {'torch.nn.LSTM': 'torch.ao.nn.quantizable.LSTM'}}},
    'convert_custom_config': {'observed_to_quantized_custom_module_class':
                              {'static': {'torch.ao.nn.quantizable.LSTM': 'torch.ao.nn.quantized.LSTM'}}},
}
STATIC_LSTM_NODES = ('FX splits the custom module LSTM\'s result with getitem and tuple nodes of its own around the '
                     'DeQuantStubs; qfx puts the stubs after the model\'s getitems (the same values, other names)')


def custom_configs(case):
    """PrepareCustomConfig and ConvertCustomConfig of a case (empty ones for most)."""
    if case not in STATIC_LSTM_CASES:
        return PrepareCustomConfig(), ConvertCustomConfig()
    import torch.ao.nn.quantizable as nnqa
    import torch.ao.nn.quantized as nnq
    return (PrepareCustomConfig().set_float_to_observed_mapping(nn.LSTM, nnqa.LSTM),
            ConvertCustomConfig().set_observed_to_quantized_mapping(nnqa.LSTM, nnq.LSTM))


def lstm_qparams(lowered):
    """Per cell of each quantized LSTM (layer by layer, forward then reverse), the output qparams of
    igates, hgates, gates, fgate_cx, igate_cgate, fgate_cx_igate_cgate, ogate_cy."""
    cells = []
    for module in lowered.modules():
        if type(module).__name__ != 'LSTM' or not hasattr(module, 'layers'):
            continue
        for layer in module.layers:
            for single in [layer.layer_fw] + ([layer.layer_bw] if layer.bidirectional else []):
                cell = single.cell
                parts = [cell.igates, cell.hgates, cell.gates, cell.fgate_cx, cell.igate_cgate,
                         cell.fgate_cx_igate_cgate, cell.ogate_cy]
                cells.append([[float(p.scale), int(p.zero_point)] for p in parts])
    return cells


BACKENDS = {'native': get_native_backend_config, 'qnnpack': get_qnnpack_backend_config}
OUT = None


def example_inputs(cls, make_input, g):
    if make_input is None:
        return cls().get_example_inputs()
    value = make_input(g)
    return value if isinstance(value, tuple) else (value,)


def save_inputs(case, inputs):
    name = f'suite/{case}.input.pt'
    torch.save(list(inputs) if len(inputs) > 1 else inputs[0], os.path.join(OUT, name))
    return name


def save_output(case, stage, value):
    name = f'suite/{case}.{stage}.pt'
    torch.save(value, os.path.join(OUT, name))
    return name


def write_model_files(case, model, inputs):
    """The traced file, and the scripted one where torch.jit.script takes the model."""
    record = {'model': f'suite/{case}.pt'}
    torch.jit.trace(copy.deepcopy(model), inputs, check_trace=False).save(os.path.join(OUT, record['model']))
    if case in NOT_SCRIPTED:
        record['not_scripted'] = NOT_SCRIPTED[case]
        return record
    try:
        torch.jit.script(copy.deepcopy(model)).save(os.path.join(OUT, f'suite/{case}.scripted.pt'))
        record['scripted'] = f'suite/{case}.scripted.pt'
    except Exception:  # not scriptable (lambdas, dynamic attributes): the trace alone
        pass
    return record


def nodes_json(gm):
    """Nodes as (name, op, target), functions by the names qfx gives them
    (torch.nn.functional.linear for torch._C._nn.linear, as users write it)."""
    def target(n):
        return object_type_name(n.target) if n.op == 'call_function' else str(n.target)
    return [{'name': n.name, 'op': n.op, 'target': target(n)} for n in gm.graph.nodes]


def fresh(inputs):
    """The inputs anew for each run: an in-place op on a graph input changes it."""
    return copy.deepcopy(inputs)


def lowered_json(case, prepared, backend, inputs):
    """convert_fx on the current engine: nodes, output and its quantization step."""
    lowered = convert_fx(copy.deepcopy(prepared), backend_config=backend, convert_custom_config=custom_configs(case)[1])
    record = {'nodes': nodes_json(lowered)}
    if case in STATIC_LSTM_CASES:
        record['lstm_qparams'] = lstm_qparams(lowered)
    try:
        output = lowered(*fresh(inputs))
    except (RuntimeError, NotImplementedError) as e:  # a lowered op without a quantized kernel
        record['error'] = str(e).splitlines()[0]
        return record
    record['output'] = save_output(case, 'lowered', output)
    record['output_step'] = flow_fixtures.output_step(lowered, fresh(inputs))
    return record


def pytorch_flow(case, model, inputs, mode, mapping, backend):
    """prepare, one forward, reference and lowered convert, as test_quantize_fx's checkGraphModeFxOp."""
    record, stage = {}, 'prepare'
    prepare_custom, convert_custom = custom_configs(case)
    try:
        if mode == 'qat':
            prepared = prepare_qat_fx(copy.deepcopy(model).train(), mapping, fresh(inputs), backend_config=backend)
        else:
            prepared = prepare_fx(copy.deepcopy(model), mapping, fresh(inputs), backend_config=backend,
                                  prepare_custom_config=prepare_custom)
        record['nodes'] = nodes_json(prepared)
        stage = 'calibrate'
        prepared(*fresh(inputs))
        prepared.eval()
        record['observed_node_names'] = sorted(prepared._observed_node_names)
        record['observers'] = flow_fixtures.observer_records(prepared)
        stage = 'convert_to_reference_fx'
        reference = convert_to_reference_fx(copy.deepcopy(prepared), backend_config=backend,
                                            convert_custom_config=convert_custom)
        record['reference'] = {'output': save_output(case, 'reference', reference(*fresh(inputs)))}
        stage = 'convert_fx'
        record['lowered'] = lowered_json(case, prepared, backend, inputs)
    except Exception as e:  # PyTorch 1.13 itself fails: qfx's model must be sound
        message = (str(e).splitlines() or ['(no message)'])[0][:300]
        record = {'pytorch_error': f'{stage}: {type(e).__name__}: {message}'}
    return record


def eager_dynamic_output(case, model, inputs, mapping):
    """quantize_dynamic's model (eager mode) under the mapping's global qconfig, run on the inputs."""
    qconfig = mapping.global_qconfig
    spec = {cls: qconfig for cls in (nn.Linear, nn.LSTM, nn.GRU, nn.LSTMCell, nn.GRUCell, nn.RNNCell)}
    quantized = torch.ao.quantization.quantize_dynamic(copy.deepcopy(model), spec, dtype=torch.qint8)
    with torch.no_grad():
        return save_output(case, 'eager_dynamic', quantized(*fresh(inputs)))


def write_case(case, cls, make_input, mode, make_mapping, backend_name):
    torch.manual_seed(0)
    model = cls().eval()
    model_fixtures.randomize_stats(model)
    inputs = example_inputs(cls, make_input, torch.Generator().manual_seed(2))
    engine = 'qnnpack' if backend_name == 'qnnpack' else 'onednn'
    mapping = make_mapping()
    record = {'case': case, 'mode': mode, 'backend': backend_name, 'engine': engine,
              'qconfig_mapping': qconfig_mapping_json(mapping), 'input': save_inputs(case, inputs)}
    record.update(write_model_files(case, model, fresh(inputs)))
    if case in TRACE_LOSSES:
        record['traced_differs'] = TRACE_LOSSES[case]
    if case in TORCHSCRIPT_LOSSES:
        record['torchscript_differs'] = TORCHSCRIPT_LOSSES[case]
    if case in QFX_DIFFERS:
        record['qfx_differs'] = QFX_DIFFERS[case]
    if case in STATIC_LSTM_CASES:
        record.update(STATIC_LSTM_CONFIGS)
        record['nodes_differ'] = STATIC_LSTM_NODES
    if QFX_DIFFERS.get(case) == GRU_DYNAMIC:
        record['eager_dynamic_output'] = eager_dynamic_output(case, model, inputs, mapping)
    with torch.no_grad():
        record['float_output'] = save_output(case, 'float', model(*fresh(inputs)))
    torch.backends.quantized.engine = engine
    try:
        record.update(pytorch_flow(case, model, inputs, mode, mapping, BACKENDS[backend_name]()))
    finally:
        torch.backends.quantized.engine = 'onednn'
    return record


def write_all(out):
    global OUT
    OUT = out
    os.makedirs(os.path.join(out, 'suite'), exist_ok=True)
    # the divergences the other flow fixtures patch into the oracle (docs/divergences.md)
    import qat_fixtures
    import quant_fixtures
    qat_fixtures.patch_qat_object_types()
    from torch.ao.quantization import observer as ob
    ob.HistogramObserver.forward = quant_fixtures.FixedHistogramObserver.forward
    flow_fixtures.patch_reference_conv_padding()
    flow_fixtures.patch_prelu_lowering()
    flow_fixtures.patch_max_pool3d_lowering()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # the models' own (AssertWarn) and PyTorch's deprecations
        records = [write_case(*case) for case in CASES]
    with open(os.path.join(out, 'suite.json'), 'w') as f:
        json.dump(records, f, indent=1)
