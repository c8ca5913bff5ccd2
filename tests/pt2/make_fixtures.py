#!/usr/bin/env python3
"""Makes the committed .pt2 fixtures with PyTorch 2 (run in the PyTorch 2
virtual environment, scripts/install-pt2.sh):

    make_fixtures.py OUTDIR

For each model of models.py: NAME.pt2 (torch.export.save of the model, a
dynamic batch; fashion_cnn.pt2 goes to examples/fashion_mnist/), NAME.weights.npz (its state dict, from which PyTorch 1.13
traces the same model: tests/oracle/pt2_fixtures.py) and NAME.io.pt (a tuple:
the example input and ep.module()'s output on it); for the models of FLAT also
NAME.flat.pt2, the same program in the layout PyTorch 2.6 and 2.7 wrote. fashion_cnn carries the demo's
trained weights (examples/fashion_mnist/fashion_cnn.pt). versions.json records
what made them.
"""
import os
import sys
import zipfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import models  # noqa: E402

FLAT = ('residual', 'lstm')  # also written in the 2.6/2.7 flat layout: NAME.flat.pt2
DEMO_WEIGHTS = os.path.join(HERE, '..', '..', 'examples', 'fashion_mnist', 'fashion_cnn.pt')


def save_flat(ep, path):
    """ep in the flat layout torch.export.save wrote up to PyTorch 2.7 (its
    2.6/2.7 form, schema major 8), which torch.export.load still reads."""
    from torch._export.serde.schema import SCHEMA_VERSION
    from torch._export.serde.serialize import serialize
    artifact = serialize(ep)
    records = [('serialized_exported_program.json', artifact.exported_program),
               ('serialized_state_dict.pt', artifact.state_dict), ('serialized_constants.pt', artifact.constants),
               ('serialized_example_inputs.pt', artifact.example_inputs),
               ('version', '.'.join(map(str, SCHEMA_VERSION)))]
    with zipfile.ZipFile(path, 'w') as z:
        for name, data in records:  # no time stamps: the same program makes the same file
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)


def check_flat(path, x, y):
    """torch.export.load reads the flat file back to the same outputs."""
    with torch.no_grad():
        torch.testing.assert_close(torch.export.load(path).module()(x), y, rtol=0, atol=0)


def export(name, out):
    model = models.build(name)
    if name == 'fashion_cnn':
        model.load_state_dict(torch.jit.load(DEMO_WEIGHTS).state_dict())
    x = models.example_input(name)
    dynamic = {'x': {0: torch.export.Dim('batch', min=1, max=4096)}} if models.MODELS[name][2] else None
    ep = torch.export.export(model, (x,), dynamic_shapes=dynamic)
    # the demo's .pt2 beside its TorchScript file (make demo, README)
    torch.export.save(ep, os.path.join(os.path.dirname(DEMO_WEIGHTS) if name == 'fashion_cnn' else out, f'{name}.pt2'))
    with torch.no_grad():
        y = ep.module()(x)
    torch.save((x, y), os.path.join(out, f'{name}.io.pt'))
    if name in FLAT:
        save_flat(ep, os.path.join(out, f'{name}.flat.pt2'))
        check_flat(os.path.join(out, f'{name}.flat.pt2'), x, y)
    if name != 'fashion_cnn':  # its weights are the demo's TorchScript file's
        np.savez(os.path.join(out, f'{name}.weights.npz'),
                 **{k: v.detach().numpy() for k, v in model.state_dict().items()})


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in models.MODELS:
        export(name, out)
        print(f'{name}: written to {out}')
    models.write_versions(os.path.join(out, 'versions.json'))


if __name__ == '__main__':
    main()
