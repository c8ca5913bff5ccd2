#!/usr/bin/env python3
"""Makes the committed .pt2 fixtures of PyTorch 2.5's flat layout (schema 7),
run in a PyTorch 2.5 virtual environment (scripts/install-pt2.sh VENV
tests/pt2/requirements-2.5.txt):

    make_legacy_fixtures.py OUTDIR

For each model of LEGACY: NAME.pt25.pt2 (torch.export.save of PyTorch 2.5,
strict export as its default, a dynamic batch), with the weights of
NAME.weights.npz (the same as NAME.pt2's), and NAME.pt25.io.pt (the example
input and ep.module()'s output on it). versions-2.5.json records what made them.
The residual model's batch is bounded (Dim max=4096); the MLP's is not, which
PyTorch 2.5 writes as a range up to Python's `Infinity` (not JSON).
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import models  # noqa: E402

LEGACY = ('residual', 'mlp')


def export(name, out):
    model = models.build(name)
    weights = np.load(os.path.join(out, f'{name}.weights.npz'))
    model.load_state_dict({k: torch.from_numpy(weights[k]) for k in weights.files})
    x = models.example_input(name)
    batch = torch.export.Dim('batch', min=1, max=4096) if name == 'residual' else torch.export.Dim('batch')
    dynamic = {'x': {0: batch}} if models.MODELS[name][2] else None
    ep = torch.export.export(model, (x,), dynamic_shapes=dynamic)
    path = os.path.join(out, f'{name}.pt25.pt2')
    torch.export.save(ep, path)
    with torch.no_grad():
        y = torch.export.load(path).module()(x)
    torch.save((x, y), os.path.join(out, f'{name}.pt25.io.pt'))


def main():
    out = sys.argv[1]
    for name in LEGACY:
        export(name, out)
        print(f'{name}: written to {out}')
    models.write_versions(os.path.join(out, 'versions-2.5.json'))


if __name__ == '__main__':
    main()
