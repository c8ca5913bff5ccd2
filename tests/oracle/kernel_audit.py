"""Every quantized kernel qfx lowers to, on both engines, against the reference
model's computation on the same quantized inputs: dequantize, the float op,
quantize with the kernel's output qparams. Inputs contiguous and
channels_last, batch 1 and 3, odd spatial sizes, zero points 0 and not 0.
The error is in quantization steps (integer difference of the outputs).

    kernel_audit.py OUT.json [--markdown]

Run with Debian's python3-torch: the kernels are LibTorch 1.13's, the ones
qfx's lowered models and exported files run.
"""
import json
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(0)
SHAPES = {'batch 1': (1, 8, 7, 9), 'batch 3': (3, 8, 7, 9)}
LAYOUTS = ('contiguous', 'channels_last')
ZERO_POINTS = (0, 37)
SCALE = 0.05


def quantized(x, zero_point, layout):
    q = torch.quantize_per_tensor(x, SCALE, zero_point, torch.quint8)
    return q.contiguous(memory_format=torch.channels_last) if layout == 'channels_last' else q


def requantize(y, q):
    """The reference's output: `y` (float) quantized with `q`'s qparams."""
    return torch.quantize_per_tensor(y, q.q_scale(), q.q_zero_point(), q.dtype)


def steps(ours, reference):
    return (ours.int_repr().int() - reference.int_repr().int()).abs().max().item()


def same_qparams(op):
    """An op whose output shares its input's qparams: the kernel, and the float op."""
    return lambda q: (op(q), requantize(op(q.dequantize()), q))


def fixed_qparams(op, scale, zero_point):
    return lambda q: (op(q), torch.quantize_per_tensor(op(q.dequantize()), scale, zero_point, torch.quint8))


def given_qparams(kernel, op, scale=0.07, zero_point=11):
    return lambda q: (kernel(q, scale, zero_point),
                      torch.quantize_per_tensor(op(q.dequantize()), scale, zero_point, torch.quint8))


def binary(kernel, op):
    def run(q):
        other = torch.quantize_per_tensor(torch.randn(q.shape) * 2, 0.04, 21, torch.quint8)
        if q.is_contiguous(memory_format=torch.channels_last):
            other = other.contiguous(memory_format=torch.channels_last)
        out = kernel(q, other, 0.09, 13)
        return out, torch.quantize_per_tensor(op(q.dequantize(), other.dequantize()), 0.09, 13, torch.quint8)
    return run


def cat(q):
    other = torch.quantize_per_tensor(torch.randn(q.shape) * 2, 0.04, 21, torch.quint8)
    out = torch.ops.quantized.cat([q, other], 1, 0.09, 13)
    return out, torch.quantize_per_tensor(torch.cat([q.dequantize(), other.dequantize()], 1), 0.09, 13, torch.quint8)


def conv(relu):
    def run(q):
        w = torch.quantize_per_channel(torch.randn(6, 8, 3, 3) * 0.1, torch.rand(6) * 0.01 + 0.002,
                                       torch.zeros(6, dtype=torch.long), 0, torch.qint8)
        b = torch.randn(6) * 0.1
        packed = torch.ops.quantized.conv2d_prepack(w, b, [1, 1], [1, 1], [1, 1], 1)
        out = (torch.ops.quantized.conv2d_relu if relu else torch.ops.quantized.conv2d)(q, packed, 0.08, 9)
        y = F.conv2d(q.dequantize(), w.dequantize(), b, 1, 1)
        return out, torch.quantize_per_tensor(F.relu(y) if relu else y, 0.08, 9, torch.quint8)
    return run


def linear(relu):
    def run(q):
        x = q.reshape(-1, q.shape[-1]) if q.is_contiguous() else q.contiguous().reshape(-1, q.shape[-1])
        w = torch.quantize_per_channel(torch.randn(5, x.shape[1]) * 0.1, torch.rand(5) * 0.01 + 0.002,
                                       torch.zeros(5, dtype=torch.long), 0, torch.qint8)
        b = torch.randn(5) * 0.1
        packed = torch.ops.quantized.linear_prepack(w, b)
        out = (torch.ops.quantized.linear_relu if relu else torch.ops.quantized.linear)(x, packed, 0.08, 9)
        y = F.linear(x.dequantize(), w.dequantize(), b)
        return out, torch.quantize_per_tensor(F.relu(y) if relu else y, 0.08, 9, torch.quint8)
    return run


def norm(kind):
    def run(q):
        c = q.shape[1]
        weight, bias = torch.rand(c) + 0.5, torch.randn(c) * 0.1
        if kind == 'batch_norm':
            mean, var = torch.randn(c) * 0.1, torch.rand(c) + 0.5
            out = torch.ops.quantized.batch_norm2d(q, weight, bias, mean, var, 1e-5, 0.07, 11)
            y = F.batch_norm(q.dequantize(), mean, var, weight, bias, False, 0.0, 1e-5)
        elif kind == 'layer_norm':
            shape = list(q.shape[1:])
            weight, bias = torch.rand(shape) + 0.5, torch.randn(shape) * 0.1
            out = torch.ops.quantized.layer_norm(q, shape, weight, bias, 1e-5, 0.07, 11)
            y = F.layer_norm(q.dequantize(), shape, weight, bias, 1e-5)
        else:
            out = torch.ops.quantized.instance_norm(q, weight, bias, 1e-5, 0.07, 11)
            y = F.instance_norm(q.dequantize(), weight=weight, bias=bias, eps=1e-5)
        return out, torch.quantize_per_tensor(y, 0.07, 11, torch.quint8)
    return run


def embedding_bag(q):
    weight = torch.quantize_per_channel(torch.randn(10, 12), torch.rand(10) * 0.02 + 0.01,
                                        torch.zeros(10, dtype=torch.float), 0, torch.quint8)
    packed = torch.ops.quantized.embedding_bag_byte_prepack(weight.dequantize())
    indices, offsets = torch.tensor([1, 3, 3, 7, 9, 0]), torch.tensor([0, 2, 5])
    out = torch.ops.quantized.embedding_bag_byte_rowwise_offsets(packed, indices, offsets, mode=0)
    ref = F.embedding_bag(indices, torch.ops.quantized.embedding_bag_byte_unpack(packed), offsets, mode='sum')
    # float outputs: the error in the weights' own steps
    return out, ref


OPS = {
    'relu': same_qparams(F.relu),
    'relu6': same_qparams(F.relu6),
    'hardtanh': same_qparams(lambda x: F.hardtanh(x, -1.0, 2.0)),
    'clamp': same_qparams(lambda x: torch.clamp(x, -0.5, 3.0)),
    'leaky_relu': given_qparams(lambda q, s, z: torch.ops.quantized.leaky_relu(q, 0.01, False, s, z),
                                lambda x: F.leaky_relu(x, 0.01)),
    'hardsigmoid': fixed_qparams(F.hardsigmoid, 1.0 / 256, 0),
    'hardswish': given_qparams(torch.ops.quantized.hardswish, F.hardswish),
    'elu': given_qparams(lambda q, s, z: torch.ops.quantized.elu(q, s, z, 1.0, 1.0, 1.0), F.elu),
    'sigmoid': fixed_qparams(torch.sigmoid, 1.0 / 256, 0),
    'tanh': fixed_qparams(torch.tanh, 2.0 / 256, 128),
    'add': binary(torch.ops.quantized.add, torch.add),
    'add_relu': binary(torch.ops.quantized.add_relu, lambda a, b: F.relu(a + b)),
    'mul': binary(torch.ops.quantized.mul, torch.mul),
    'cat': cat,
    'max_pool2d': same_qparams(lambda x: F.max_pool2d(x, 3, 2, 1)),
    'avg_pool2d': same_qparams(lambda x: F.avg_pool2d(x, 3, 2, 1)),
    'adaptive_avg_pool2d': same_qparams(lambda x: F.adaptive_avg_pool2d(x, (3, 4))),
    'mean': same_qparams(lambda x: torch.mean(x, (2, 3), True)),
    'interpolate_nearest': same_qparams(lambda x: F.interpolate(x, scale_factor=2.0, mode='nearest')),
    'interpolate_bilinear': same_qparams(lambda x: F.interpolate(x, scale_factor=2.0, mode='bilinear',
                                                                 align_corners=False)),
    'batch_norm': norm('batch_norm'),
    'layer_norm': norm('layer_norm'),
    'instance_norm': norm('instance_norm'),
    'conv2d': conv(False),
    'conv2d_relu': conv(True),
    'linear': linear(False),
    'linear_relu': linear(True),
    'embedding_bag': embedding_bag,
}


def audit(engine):
    torch.backends.quantized.engine = engine
    rows = []
    for name, run in OPS.items():
        worst, where, error = 0, '', ''
        for layout in LAYOUTS:
            for batch, shape in SHAPES.items():
                for zp in ZERO_POINTS:
                    x = torch.randn(shape) * 3
                    try:
                        ours, ref = run(quantized(x, zp, layout))
                    except RuntimeError as e:
                        error = str(e).strip().splitlines()[-1][:120]
                        continue
                    if ours.is_quantized:
                        e_steps = steps(ours, ref)
                    else:
                        e_steps = round(((ours - ref).abs().max() / 0.01).item(), 2)
                    rows.append({'op': name, 'engine': engine, 'layout': layout, 'batch': batch,
                                 'zero_point': zp, 'steps': e_steps})
                    if e_steps > worst:
                        worst, where = e_steps, f'{layout}, {batch}, zero point {zp}'
        if error:
            rows.append({'op': name, 'engine': engine, 'error': error})
    return rows


def summary(rows):
    """op -> engine -> layout -> worst steps (or the error)."""
    out = {}
    for r in rows:
        cell = out.setdefault(r['op'], {}).setdefault(r['engine'], {})
        if 'error' in r:
            cell['error'] = r['error']
            continue
        cell[r['layout']] = max(cell.get(r['layout'], 0), r['steps'])
    return out


def main():
    rows = audit('qnnpack') + audit('onednn')
    table = summary(rows)
    json.dump({'rows': rows, 'summary': table}, open(sys.argv[1], 'w'), indent=1)
    if '--markdown' in sys.argv:
        print('| op | qnnpack contiguous | qnnpack channels_last | onednn contiguous | onednn channels_last |')
        print('|---|---|---|---|---|')
        for op, engines in table.items():
            cells = []
            for engine in ('qnnpack', 'onednn'):
                e = engines.get(engine, {})
                for layout in LAYOUTS:
                    cells.append(e['error'] if 'error' in e and layout not in e else str(e.get(layout, '')))
            print(f'| {op} | ' + ' | '.join(cells) + ' |')


if __name__ == '__main__':
    main()
