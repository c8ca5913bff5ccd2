"""Every quantized kernel qfx lowers to, on both engines, against the reference
model's computation on the same quantized inputs: dequantize, the float op,
quantize with the kernel's output qparams. Inputs contiguous and
channels_last, batch 1 and 3, odd spatial sizes, zero points 0 and not 0.
The error is in quantization steps (integer difference of the outputs).

    kernel_audit.py OUT.json [--markdown] [--check]

The clamp family is also run on qfx's workaround for qnnpack
(ir/kernel_workarounds.h): the op on the memory-order view of a
channels_last tensor; the average pools qnnpack gets wrong on qfx's (pool in
ceil mode, keep the floor mode's size); an InstanceNorm with running stats on
quantized::batch_norm. --check fails (exit 1, one line per finding) unless
every kernel and every workaround is within one step, except the known faults
of KNOWN_FAULTS.

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


def memory_order_view(op):
    """qfx's workaround: `op` on the view in which the tensor's memory is contiguous."""
    return lambda q: op(q.unsqueeze(-1).unsqueeze(-1).transpose(1, -1)).transpose(1, -1).squeeze(-1).squeeze(-1)


def floor_size(length, kernel, stride, padding):
    return (length + 2 * padding - kernel) // stride + 1


def avg_pool_in_ceil_mode(dims, kernel, stride, padding, **options):
    """qfx's workaround for qnnpack (ir/kernel_workarounds.h): pool in ceil mode,
    which honours count_include_pad=False and divisor_override, and keep the
    floor mode's output size."""
    pool = F.avg_pool1d if dims == 1 else F.avg_pool2d

    def run(x):
        y = pool(x, kernel, stride, padding, ceil_mode=True, **options)
        for d in range(2, 2 + dims):
            y = y.narrow(d, 0, floor_size(x.shape[d], kernel, stride, padding))
        return y
    return run


def pool1d(op):
    """A 1-d op on the rows of the (N, C, H, W) input: (N, C * H, W)."""
    return lambda x: op(x.reshape(x.shape[0], -1, x.shape[-1]))


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


def full_range(shape):
    """Per-channel qint8 weights that use their whole range, as observed weights do."""
    w = torch.randn(shape)
    scales = w.abs().flatten(1).max(1).values / 127
    return torch.quantize_per_channel(w, scales, torch.zeros(shape[0], dtype=torch.long), 0, torch.qint8)


def rectified(q):
    """Activations after a ReLU over the whole uint8 range, in `q`'s layout."""
    r = torch.quantize_per_tensor(torch.rand(q.shape) * 255 * SCALE, SCALE, 0, torch.quint8)
    return r.contiguous(memory_format=torch.channels_last) if q.is_contiguous(memory_format=torch.channels_last) else r


def full_range_conv(q):
    q = rectified(q)
    w, b = full_range((6, 8, 3, 3)), torch.randn(6) * 0.1
    packed = torch.ops.quantized.conv2d_prepack(w, b, [1, 1], [1, 1], [1, 1], 1)
    y = F.conv2d(q.dequantize(), w.dequantize(), b, 1, 1)
    scale = y.abs().max().item() / 100
    return torch.ops.quantized.conv2d(q, packed, scale, 128), torch.quantize_per_tensor(y, scale, 128, torch.quint8)


def full_range_linear(q):
    x = rectified(q).contiguous().reshape(-1, q.shape[-1])
    w, b = full_range((5, x.shape[1])), torch.randn(5) * 0.1
    packed = torch.ops.quantized.linear_prepack(w, b)
    y = F.linear(x.dequantize(), w.dequantize(), b)
    scale = y.abs().max().item() / 100
    return torch.ops.quantized.linear(x, packed, scale, 128), torch.quantize_per_tensor(y, scale, 128, torch.quint8)


def onednn_saturates():
    """Whether onednn's int8 kernels add u8 x s8 product pairs in 16 bits (a CPU
    without VNNI): 255 x 127 twice needs 17 (qfx: ir::onednn_saturates)."""
    previous = torch.backends.quantized.engine
    torch.backends.quantized.engine = 'onednn'
    x = torch.quantize_per_tensor(torch.full((8, 64), 255.0), 1.0, 0, torch.quint8)
    w = torch.quantize_per_tensor(torch.full((16, 64), 127.0), 1.0, 0, torch.qint8)
    y = torch.ops.quantized.linear(x, torch.ops.quantized.linear_prepack(w, None), 16384.0, 0)
    torch.backends.quantized.engine = previous
    exact = torch.quantize_per_tensor(F.linear(x.dequantize(), w.dequantize()), 16384.0, 0, torch.quint8)
    return steps(y, exact) > 1


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


def instance_norm_running_stats(workaround):
    """An InstanceNorm with running stats in eval: PyTorch 1.13 lowers it to
    quantized::instance_norm (the input's statistics); qfx to
    quantized::batch_norm with the running stats."""
    def run(q):
        c = q.shape[1]
        weight, bias = torch.rand(c) + 0.5, torch.randn(c) * 0.1
        mean, var = torch.randn(c) * 0.5, torch.rand(c) + 0.5
        if workaround:
            out = torch.ops.quantized.batch_norm2d(q, weight, bias, mean, var, 1e-5, 0.07, 11)
        else:
            out = torch.ops.quantized.instance_norm(q, weight, bias, 1e-5, 0.07, 11)
        y = F.instance_norm(q.dequantize(), mean, var, weight, bias, use_input_stats=False, eps=1e-5)
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
    'relu6 (workaround)': same_qparams(memory_order_view(F.relu6)),
    'hardtanh (workaround)': same_qparams(memory_order_view(lambda x: F.hardtanh(x, -1.0, 2.0))),
    'clamp (workaround)': same_qparams(memory_order_view(lambda x: torch.clamp(x, -0.5, 3.0))),
    'max_pool2d': same_qparams(lambda x: F.max_pool2d(x, 3, 2, 1)),
    'avg_pool2d': same_qparams(lambda x: F.avg_pool2d(x, 3, 2, 1)),
    'avg_pool2d count_include_pad=False': same_qparams(lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False)),
    'avg_pool2d divisor_override': same_qparams(lambda x: F.avg_pool2d(x, 3, 2, 1, divisor_override=4)),
    'avg_pool1d count_include_pad=False': same_qparams(pool1d(lambda x: F.avg_pool1d(x, 3, 2, 1,
                                                                                    count_include_pad=False))),
    'avg_pool2d count_include_pad=False (workaround)':
        same_qparams(avg_pool_in_ceil_mode(2, 3, 2, 1, count_include_pad=False)),
    'avg_pool2d divisor_override (workaround)': same_qparams(avg_pool_in_ceil_mode(2, 3, 2, 1, divisor_override=4)),
    'avg_pool1d count_include_pad=False (workaround)':
        same_qparams(pool1d(avg_pool_in_ceil_mode(1, 3, 2, 1, count_include_pad=False))),
    'adaptive_avg_pool2d': same_qparams(lambda x: F.adaptive_avg_pool2d(x, (3, 4))),
    'mean': same_qparams(lambda x: torch.mean(x, (2, 3), True)),
    'interpolate_nearest': same_qparams(lambda x: F.interpolate(x, scale_factor=2.0, mode='nearest')),
    'interpolate_bilinear': same_qparams(lambda x: F.interpolate(x, scale_factor=2.0, mode='bilinear',
                                                                 align_corners=False)),
    'batch_norm': norm('batch_norm'),
    'layer_norm': norm('layer_norm'),
    'instance_norm': norm('instance_norm'),
    'instance_norm running stats': instance_norm_running_stats(False),
    'instance_norm running stats (workaround)': instance_norm_running_stats(True),
    'conv2d': conv(False),
    'conv2d_relu': conv(True),
    'conv2d, full-range weights': full_range_conv,
    'linear, full-range weights': full_range_linear,
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


# LibTorch 1.13's kernels known to be wrong (docs/divergences.md): (op, engine, layout).
KNOWN_FAULTS = ({(op, 'qnnpack', 'channels_last') for op in ('relu6', 'hardtanh', 'clamp')} |
                {(op, 'qnnpack', layout) for layout in LAYOUTS
                 for op in ('avg_pool2d count_include_pad=False', 'avg_pool2d divisor_override',
                            'avg_pool1d count_include_pad=False')} |
                {('instance_norm running stats', engine, layout) for engine in ('qnnpack', 'onednn')
                 for layout in LAYOUTS})
# On a CPU without VNNI, onednn's convolutions and linears saturate (docs/divergences.md).
SATURATING = {(op, 'onednn', layout) for layout in LAYOUTS
              for op in ('conv2d, full-range weights', 'linear, full-range weights')}
# Kernels whose float output is compared in the weights' steps / 100 (embedding_bag): within 1.
ALLOWED_STEPS = 1


def findings(table, known_faults):
    """What --check rejects: a kernel off by more than rounding that is not a known
    fault, a known fault that is fixed, a workaround that is not exact, an error."""
    out = []
    for op, engines in table.items():
        for engine, cells in engines.items():
            if 'error' in cells:
                out.append(f'{op} on {engine}: {cells["error"]}')
            for layout in LAYOUTS:
                worst = cells.get(layout)
                if worst is None:
                    continue
                known = (op, engine, layout) in known_faults
                if known and worst <= ALLOWED_STEPS:
                    out.append(f'{op} on {engine}, {layout}: no longer a fault ({worst} steps): update KNOWN_FAULTS')
                elif not known and worst > ALLOWED_STEPS:
                    out.append(f'{op} on {engine}, {layout}: {worst} steps from the reference')
    return out


def main():
    rows = audit('qnnpack') + audit('onednn')
    table = summary(rows)
    json.dump({'rows': rows, 'summary': table}, open(sys.argv[1], 'w'), indent=1)
    if '--check' in sys.argv:
        problems = findings(table, KNOWN_FAULTS | (SATURATING if onednn_saturates() else set()))
        for line in problems:
            print('kernel_audit: ' + line, file=sys.stderr)
        if problems:
            sys.exit(1)
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
