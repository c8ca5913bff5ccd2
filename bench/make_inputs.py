"""The files bench/run.sh and bench/before_after.sh measure a model on:
MODEL.pt (a torchvision model with seeded random weights, traced; or the
demo's fashion_cnn.pt), calib.pt (8 batches of 4) and eval.pt (a batch of 8).

    make_inputs.py MODEL WORK_DIR DEMO_MODEL.pt
"""
import shutil
import sys
import warnings

import torch
import torchvision

warnings.simplefilter('ignore')
name, work, demo = sys.argv[1:4]
shape = (1, 28, 28) if name == 'fashion_cnn' else (3, 224, 224)
g = torch.Generator().manual_seed(1)
torch.save([torch.rand(4, *shape, generator=g) for _ in range(8)], f'{work}/calib.pt')
torch.save(torch.rand(8, *shape, generator=g), f'{work}/eval.pt')
if name == 'fashion_cnn':
    shutil.copy(demo, f'{work}/{name}.pt')
else:
    torch.manual_seed(0)
    m = getattr(torchvision.models, name)().eval()
    torch.jit.trace(m, torch.rand(1, *shape, generator=g)).save(f'{work}/{name}.pt')
