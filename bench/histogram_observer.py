#!/usr/bin/env python3
"""PyTorch side of bench/histogram_observer.sh: HistogramObserver forward on
8 batches of 1x64x112x112 plus calculate_qparams, median of repeats.

    histogram_observer.py INPUTS.pt THREADS REPEATS

Prints JSON: seconds (median, min, max) of stock 1.13 and the qparams of the
1.13 class with the upstream histc range fix (qfx's reference)."""
import json
import os
import statistics
import sys
import time

import torch
from torch.ao.quantization.observer import HistogramObserver

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'oracle'))
from quant_fixtures import FixedHistogramObserver  # noqa: E402


def run(cls, batches):
    obs = cls()
    start = time.perf_counter()
    for b in batches:
        obs(b)
    scale, zero_point = obs.calculate_qparams()
    return time.perf_counter() - start, scale, zero_point


def main():
    batches = torch.load(sys.argv[1])
    torch.set_num_threads(int(sys.argv[2]))
    repeats = int(sys.argv[3])
    times = [run(HistogramObserver, batches)[0] for _ in range(repeats)]
    _, scale, zero_point = run(FixedHistogramObserver, batches)
    print(json.dumps({'median': statistics.median_high(times), 'min': min(times), 'max': max(times),
                      'scale': scale.item(), 'zero_point': int(zero_point.item())}))


if __name__ == '__main__':
    main()
