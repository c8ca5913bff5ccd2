#!/usr/bin/env python3
"""Test oracle: makes the fixtures qfx's tests compare against, with PyTorch.

Run with Debian's python3 (the interpreter that has python3-torch 1.13):
    make_fixtures.py OUTDIR

model_fixtures.py writes models, their TorchScript files and what torch.fx
makes of them; quant_fixtures.py writes observer, fake-quantize and
QConfigMapping cases;
backend_fixtures.py writes BackendConfigs and batch-norm folding cases;
flow_fixtures.py what PyTorch's FX passes make of models; suite_fixtures.py
what they make of PyTorch's own quantization test models. Each writer's
fixtures are rebuilt only when it or a script it imports changes (a stamp per
writer holds their hash).
"""
import hashlib
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import backend_fixtures  # noqa: E402
import compare_fixtures  # noqa: E402
import custom_config_fixtures  # noqa: E402
import data_fixtures  # noqa: E402
import flow_fixtures  # noqa: E402
import from_float_fixtures  # noqa: E402
import model_fixtures  # noqa: E402
import pt2_fixtures  # noqa: E402
import qat_fixtures  # noqa: E402
import quant_fixtures  # noqa: E402
import suite_fixtures  # noqa: E402

# Each writer and the scripts whose changes make its fixtures stale, in the
# order they run (later writers read earlier writers' files).
WRITERS = [
    (model_fixtures, ['model_fixtures.py']),
    (quant_fixtures, ['quant_fixtures.py', 'pytorch_names.py']),
    (backend_fixtures, ['backend_fixtures.py', 'pytorch_names.py']),
    (flow_fixtures, ['flow_fixtures.py', 'model_fixtures.py', 'quant_fixtures.py', 'backend_fixtures.py',
                     'pytorch_names.py']),
    (custom_config_fixtures, ['custom_config_fixtures.py', 'flow_fixtures.py', 'model_fixtures.py',
                              'quant_fixtures.py', 'backend_fixtures.py', 'pytorch_names.py']),
    (from_float_fixtures, ['from_float_fixtures.py', 'quant_fixtures.py', 'pytorch_names.py']),
    (data_fixtures, ['data_fixtures.py']),
    (compare_fixtures, ['compare_fixtures.py', 'quant_fixtures.py']),
    (qat_fixtures, ['qat_fixtures.py', 'flow_fixtures.py', 'model_fixtures.py', 'quant_fixtures.py',
                    'backend_fixtures.py', 'pytorch_names.py']),
    (pt2_fixtures, ['pt2_fixtures.py', '../pt2/models.py']),
    (suite_fixtures, ['suite_fixtures.py', 'flow_fixtures.py', 'model_fixtures.py', 'quant_fixtures.py',
                      'backend_fixtures.py', 'pytorch_names.py']),
]


def digest(scripts):
    h = hashlib.sha256()
    for name in scripts + ['make_fixtures.py']:
        h.update(open(os.path.join(HERE, name), 'rb').read())
    return h.hexdigest()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_grad_enabled(False)
    for module, scripts in WRITERS:
        name = module.__name__
        stamp = os.path.join(out, f'{name}.stamp')
        if os.path.exists(stamp) and open(stamp).read() == digest(scripts):
            print(f'{name}: up to date')
            continue
        module.write_all(out)
        with open(stamp, 'w') as f:
            f.write(digest(scripts))
        print(f'{name}: written to {out}')


if __name__ == '__main__':
    main()
