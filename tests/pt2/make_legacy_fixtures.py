#!/usr/bin/env python3
"""Makes the committed .pt2 fixtures of the flat layout PyTorch 2.3, 2.4 and
2.5 wrote (schemas 5.1, 5.3 and 7), run in a virtual environment of that
version (scripts/install-pt2.sh VENV tests/pt2/requirements-2.X.txt):

    make_legacy_fixtures.py OUTDIR

For each model of LEGACY, with XY the running torch's version (25 for 2.5.1):
NAME.ptXY.pt2 (torch.export.save; strict export, its default; a dynamic
batch), with the weights of NAME.weights.npz (the same as NAME.pt2's), and
NAME.ptXY.io.pt (the example input and ep.module()'s output on it).
versions-2.X.json records what made them. The residual model's batch is
bounded (Dim max=4096); the MLP's is not, which 2.3 and 2.5 write as a range
up to Python's `Infinity` (not JSON), 2.4 up to sys.maxsize - 1. Of 2.3's
files only residual.pt23.pt2 is committed: qfx refuses schema 5.1, and a
test checks it says so.
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import models  # noqa: E402

LEGACY = ('residual', 'mlp')


TAG = 'pt' + ''.join(torch.__version__.split('.')[:2])  # pt25
VERSION = '.'.join(torch.__version__.split('.')[:2])  # 2.5


def export(name, out):
    model = models.build(name)
    weights = np.load(os.path.join(out, f'{name}.weights.npz'))
    model.load_state_dict({k: torch.from_numpy(weights[k]) for k in weights.files})
    x = models.example_input(name)
    batch = torch.export.Dim('batch', min=1, max=4096) if name == 'residual' else torch.export.Dim('batch')
    dynamic = {'x': {0: batch}} if models.MODELS[name][2] else None
    ep = torch.export.export(model, (x,), dynamic_shapes=dynamic)
    path = os.path.join(out, f'{name}.{TAG}.pt2')
    torch.export.save(ep, path)
    with torch.no_grad():
        y = torch.export.load(path).module()(x)
    torch.save((x, y), os.path.join(out, f'{name}.{TAG}.io.pt'))


def main():
    out = sys.argv[1]
    for name in LEGACY:
        export(name, out)
        print(f'{name}: written to {out}')
    models.write_versions(os.path.join(out, f'versions-{VERSION}.json'))


if __name__ == '__main__':
    main()
