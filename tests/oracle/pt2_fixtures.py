"""The TorchScript twins of the committed .pt2 fixtures (tests/pt2/fixtures,
made by PyTorch 2): the same model class (tests/pt2/models.py) with the same
weights, traced by PyTorch 1.13, as pt2_NAME.pt. qfx must read both files into
the same graph and quantize them to the same numbers."""
import os
import sys

import numpy as np
import torch

PT2 = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'pt2')
sys.path.insert(0, PT2)
import models  # noqa: E402

DEMO = os.path.join(PT2, '..', '..', 'examples', 'fashion_mnist', 'fashion_cnn.pt')


def weights(name):
    if name == 'fashion_cnn':
        return torch.jit.load(DEMO).state_dict()
    with np.load(os.path.join(PT2, 'fixtures', f'{name}.weights.npz')) as saved:
        return {k: torch.from_numpy(saved[k].copy()) for k in saved.files}


def write_all(out):
    for name in (n for n, row in models.MODELS.items() if row[3]):
        model = models.build(name)
        model.load_state_dict(weights(name))
        traced = torch.jit.trace(model, (models.example_input(name),))
        traced.save(os.path.join(out, f'pt2_{name}.pt'))
