#!/usr/bin/env python3
"""Test oracle: makes the fixtures qfx's tests compare against, with PyTorch.

Run with Debian's python3 (the interpreter that has python3-torch 1.13):
    make_fixtures.py OUTDIR

model_fixtures.py writes models, their TorchScript files and what torch.fx
makes of them; quant_fixtures.py writes observer, fake-quantize and
QConfigMapping cases;
backend_fixtures.py writes BackendConfigs and batch-norm folding cases. Fixtures are rebuilt only when a script of this folder
changes (a stamp holds their hash).
"""
import glob
import hashlib
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import backend_fixtures  # noqa: E402
import model_fixtures  # noqa: E402
import quant_fixtures  # noqa: E402


def digest():
    h = hashlib.sha256()
    for path in sorted(glob.glob(os.path.join(HERE, '*.py'))):
        h.update(open(path, 'rb').read())
    return h.hexdigest()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    stamp = os.path.join(out, 'stamp')
    if os.path.exists(stamp) and open(stamp).read() == digest():
        print('oracle fixtures are up to date')
        return
    torch.set_grad_enabled(False)
    model_fixtures.write_all(out)
    quant_fixtures.write_all(out)
    backend_fixtures.write_all(out)
    with open(stamp, 'w') as f:
        f.write(digest())
    print(f'oracle fixtures written to {out}')


if __name__ == '__main__':
    main()
