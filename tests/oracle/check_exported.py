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


# (threads, batch): the sequence of tests/io/oracle_export_host_test.cpp.
HOST_SEQUENCE = [(1, 1), (1, 8), (2, 1), (2, 8), (1, 1), (2, 1), (1, 8), (2, 8), (1, 1)]


def host_sequence_output(model, samples):
    """Each sample's output under HOST_SEQUENCE, which must not change (bit for bit)."""
    first = [None] * len(samples)
    threads = torch.get_num_threads()
    try:
        for count, batch in HOST_SEQUENCE:
            torch.set_num_threads(count)
            out = model(samples[:batch])
            for i in range(batch):
                if first[i] is None:
                    first[i] = out[i].clone()
                elif not torch.equal(out[i], first[i]):
                    raise ValueError(f"sample {i} changed at threads {count}, batch {batch}")
    finally:
        torch.set_num_threads(threads)
    return torch.stack(first)


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
        try:
            if record.get("host_sequence"):
                output = host_sequence_output(model, inputs[0])
            else:
                output = model(*inputs)
            worst = error(output, expected, record["relative"])
        except (RuntimeError, ValueError) as e:
            print(f"FAIL {record['model']} ({record['engine']}): {str(e).strip().splitlines()[-1]}")
            failures += 1
            continue
        ok = worst <= record["tolerance"]
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {record['model']} ({record['engine']}): "
              f"max {'relative ' if record['relative'] else ''}error {worst:.3g} <= {record['tolerance']}")
    print(f"{len(records)} exported models checked, {failures} failed")
    if failures or len(records) < min_count:
        sys.exit(1)


if __name__ == "__main__":
    main()
