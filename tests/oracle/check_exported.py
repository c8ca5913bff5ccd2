"""Runs every TorchScript file the oracle tests exported (QFX_EXPORT_DIR) in
PyTorch 1.13 and checks it gives the qfx interpreter's output.

usage: check_exported.py DIR [MIN_COUNT]
Each DIR/<name>.json names the model, its inputs, the interpreter's output,
the engine and the tolerance. Fails when fewer than MIN_COUNT files are there.
"""
import glob
import json
import os
import sys

import torch


def flat(value):
    if isinstance(value, torch.Tensor):
        return [value.dequantize() if value.is_quantized else value]
    return [t for item in value for t in flat(item)]


def error(ours, theirs, relative):
    a, b = flat(ours), flat(theirs)
    if len(a) != len(b):
        raise ValueError(f"{len(a)} outputs vs {len(b)}")
    worst = 0.0
    for x, y in zip(a, b):
        if x.shape != y.shape:
            raise ValueError(f"shape {tuple(x.shape)} vs {tuple(y.shape)}")
        scale = max(1e-12, y.double().abs().max().item()) if relative else 1.0
        worst = max(worst, (x.double() - y.double()).abs().max().item() / scale)
    return worst


def main():
    directory = sys.argv[1]
    min_count = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    torch.set_grad_enabled(False)
    records = sorted(glob.glob(os.path.join(directory, "*.json")))
    failures = 0
    for path in records:
        with open(path) as f:
            record = json.load(f)
        torch.backends.quantized.engine = record["engine"]
        model = torch.jit.load(os.path.join(directory, record["model"]))
        inputs = torch.load(os.path.join(directory, record["inputs"]))
        expected = torch.load(os.path.join(directory, record["output"]))
        worst = error(model(*inputs), expected, record["relative"])
        ok = worst <= record["tolerance"]
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {record['model']} ({record['engine']}): "
              f"max {'relative ' if record['relative'] else ''}error {worst:.3g} <= {record['tolerance']}")
    print(f"{len(records)} exported models checked, {failures} failed")
    if failures or len(records) < min_count:
        sys.exit(1)


if __name__ == "__main__":
    main()
