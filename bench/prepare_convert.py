#!/usr/bin/env python3
"""PyTorch side of bench/prepare_convert.sh: prepare_fx and
convert_fx (native backend config, get_default_qconfig_mapping)
with one untimed calibration forward between them; median of repeats, each
on a fresh copy of the model.

    prepare_convert.py MODEL_NAME INPUT.pt BACKEND REPEATS

Prints JSON: seconds (median, min, max) of prepare and convert, and the
reference graph's node count."""
import copy
import json
import statistics
import sys
import time
import warnings

import torch
import torchvision
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx


def summary(times):
    return {'median': statistics.median_high(times), 'min': min(times), 'max': max(times)}


def main():
    name, input_file, backend, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    warnings.simplefilter('ignore')
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)().eval()
    x = torch.load(input_file)
    mapping = get_default_qconfig_mapping(backend)
    prepare_times, convert_times = [], []
    with torch.no_grad():
        for _ in range(repeats):
            fresh = copy.deepcopy(model)
            start = time.perf_counter()
            prepared = prepare_fx(fresh, mapping, (x,))
            prepare_times.append(time.perf_counter() - start)
            prepared(x)
            start = time.perf_counter()
            reference = convert_fx(prepared)
            convert_times.append(time.perf_counter() - start)
    print(json.dumps({'prepare': summary(prepare_times), 'convert': summary(convert_times),
                      'nodes': len(reference.graph.nodes)}))


if __name__ == '__main__':
    main()
