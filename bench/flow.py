#!/usr/bin/env python3
"""PyTorch side of bench/run.sh: the same flow as bench_flow with PyTorch
1.13's FX graph mode quantization: prepare_fx (native backend config,
get_default_qconfig_mapping('onednn')), calibration on the list of batches,
convert_fx (median of repeats, each on a fresh copy of the model); then
latency of the converted GraphModule and of the float model at batch 1 and 8
with 1 and 2 threads, the int8 output's SQNR against float, the int8
state_dict's size and peak memory; and the float forward over the
calibration batches, the baseline of observer overhead.

    flow.py MODEL_NAME FLOAT.pt CALIB.pt EVAL.pt REPEATS

REPEATS is the least number of runs; more follow until the median settles.

MODEL_NAME is a torchvision model (random weights, seed 0, the same weights
as FLOAT.pt, which run.sh traced from it) or fashion_cnn (the demo model, its
weights read from FLOAT.pt). Prints JSON."""
import copy
import io
import json
import resource
import statistics
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx


class FashionCNN(nn.Module):
    """examples/fashion_mnist/train.cpp's model."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


def traceable_channel_shuffle(x, groups):
    """torchvision's channel_shuffle without unpacking x.size(), which
    symbolic tracing cannot iterate (prepare_fx fails on shufflenet_v2 as it
    is written)."""
    batchsize, num_channels, height, width = x.size(0), x.size(1), x.size(2), x.size(3)
    x = x.view(batchsize, groups, num_channels // groups, height, width)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(batchsize, -1, height, width)


def traceable_inverted_residual_forward(self, x):
    """InvertedResidual.forward with chunk's halves indexed, not unpacked."""
    if self.stride == 1:
        halves = x.chunk(2, dim=1)
        out = torch.cat((halves[0], self.branch2(halves[1])), dim=1)
    else:
        out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
    return traceable_channel_shuffle(out, 2)


def make_model(name, float_file):
    if name == 'fashion_cnn':
        model = FashionCNN()
        params = dict(torch.jit.load(float_file).named_parameters())
        model.load_state_dict({k: v.detach() for k, v in params.items()})
        return model.eval()
    if name.startswith('shufflenet'):  # the same computation, in a form symbolic tracing accepts
        torchvision.models.shufflenetv2.InvertedResidual.forward = traceable_inverted_residual_forward
    torch.manual_seed(0)
    return getattr(torchvision.models, name)().eval()


def summary(times):
    """The median (the upper of the two middle values for an even count, as
    bench_flow's), min and max."""
    return {'median': statistics.median_high(times), 'min': min(times), 'max': max(times)}


def latency(fn):
    """Seconds per run of fn after 3 warm-up runs, in rounds of 10 runs until
    the last three rounds' medians lie within 5% of each other (at least 3
    rounds, at most 8); bench_flow's latency() does the same."""
    for _ in range(3):
        fn()
    rounds = []
    while len(rounds) < 8:
        times = []
        for _ in range(10):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        rounds.append(statistics.median_high(times))
        if len(rounds) >= 3:
            last = summary(rounds[-3:])
            if last['max'] - last['min'] < 0.05 * last['median']:
                break
    return dict(summary(rounds), rounds=len(rounds))


def main():
    name, float_file, calib_file, eval_file, repeats = sys.argv[1:6]
    warnings.simplefilter('ignore')
    torch.backends.quantized.engine = 'onednn'
    model = make_model(name, float_file)
    calib, x = torch.load(calib_file), torch.load(eval_file)
    mapping = get_default_qconfig_mapping('onednn')
    times = {'prepare': [], 'calibrate': [], 'convert': []}
    min_repeats, previous = int(repeats), 0.0
    with torch.no_grad():
        # at least REPEATS runs, then until the median of prepare + convert
        # moves by less than 5% from one run to the next (at most 3 x REPEATS)
        for r in range(3 * min_repeats):
            fresh = copy.deepcopy(model)
            start = time.perf_counter()
            prepared = prepare_fx(fresh, mapping, (calib[0],))
            times['prepare'].append(time.perf_counter() - start)
            start = time.perf_counter()
            for batch in calib:
                prepared(batch)
            times['calibrate'].append(time.perf_counter() - start)
            start = time.perf_counter()
            quantized = convert_fx(prepared)
            times['convert'].append(time.perf_counter() - start)
            median = statistics.median_high(p + c for p, c in zip(times['prepare'], times['convert']))
            if r + 1 >= min_repeats and abs(median - previous) < 0.05 * median:
                break
            previous = median
        result = {k: summary(v) for k, v in times.items()}
        for batch in calib:  # the float forward over the calibration batches
            model(batch)
        forward = []
        for _ in range(3):
            start = time.perf_counter()
            for batch in calib:
                model(batch)
            forward.append(time.perf_counter() - start)
        result['float_forward'] = summary(forward)
        result['nodes'] = len(quantized.graph.nodes)
        result['repeats'] = len(times['prepare'])
        result['latency'] = {'int8_graph_module': {}, 'float': {}}
        # each batch size and thread count on a copy of its own (weights
        # prepacked anew): LibTorch 1.13's onednn quantized convolution
        # reorders its packed weights in place for the input shape and thread
        # count of its first run and, on CPUs with AVX-512 VNNI, can fail on
        # another (bench_flow does the same)
        for threads in (1, 2):
            for batch in (1, 8):
                own = copy.deepcopy(quantized)
                torch.set_num_threads(threads)
                xb = x[:batch].contiguous()
                key = f'b{batch}_t{threads}'
                result['latency']['int8_graph_module'][key] = latency(lambda: own(xb))
                result['latency']['float'][key] = latency(lambda: model(xb))
        reference, out = model(x), quantized(x)
        result['sqnr_db'] = float(20 * torch.log10(reference.norm() / (reference - out).norm()))
    buffer = io.BytesIO()
    torch.save(quantized.state_dict(), buffer)
    result['size_int8_state_dict'] = buffer.getbuffer().nbytes
    result['peak_rss_mb'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


if __name__ == '__main__':
    main()
