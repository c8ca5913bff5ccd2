#!/usr/bin/env python3
"""The .pt2 coverage run (make test-pt2): each model of coverage_models.py
exported by PyTorch 2 (torch.export.save), then read by qfx: its float run
against ep.module() (max relative error), and quantized (onednn default
mapping on qnnpack, calibrated on the example input, nodes whose kernels fail
left float) with the SQNR of the int8 model's output against float, run by
PyTorch 1.13. Models of coverage_models.DYNAMIC export with a dynamic batch
(and sequence length) and run again, float and int8, on an input of other
sizes. Writes coverage.json and coverage.md (the table of
docs/coverage.md); with --check, exits 1 when a row is not what
coverage_expected.json says ("ok": read within 1e-5 of ep.module() and
quantized; else the start of its error).

    coverage.py QFX OUTDIR [--check EXPECTED.json] [NAME ...]
"""
import json
import math
import os
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import coverage_models  # noqa: E402


def sqnr(ref, x):
    noise = (ref - x).float().pow(2).sum().item()
    return math.inf if noise == 0 else 10 * math.log10(ref.float().pow(2).sum().item() / noise)


def qfx(binary, *args):
    """qfx's exit status and its error line."""
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    errors = [line for line in r.stderr.splitlines() if line.startswith('qfx: error: ')]
    return r.returncode, (errors[-1][len('qfx: error: '):] if errors else r.stderr.strip()[-300:])


RUN_INT8 = """
import sys, torch
torch.backends.quantized.engine = sys.argv[4] if len(sys.argv) > 4 else 'qnnpack'
y = torch.jit.load(sys.argv[1])(torch.load(sys.argv[2]))
while not isinstance(y, torch.Tensor):
    y = next(iter(y.values())) if isinstance(y, dict) else y[0]
torch.save(y, sys.argv[3])
"""


TRACE_113 = """
import sys, numpy, torch, torchvision
torch.manual_seed(0)
name, weights, example, out = sys.argv[1:]
fn = getattr(torchvision.models, name, None) or getattr(torchvision.models.segmentation, name, None) \\
    or getattr(torchvision.models.video, name)
kwargs = {'weights_backbone': None} if 'segmentation' in fn.__module__ else {}
model = fn(weights=None, **kwargs).eval()
with numpy.load(weights) as w:
    model.load_state_dict({k: torch.from_numpy(w[k].copy()) for k in w.files})
torch.jit.trace(model, (torch.load(example),), strict=False).save(out)
"""


def agreement(binary, out, name, model):
    """The same torchvision model and weights traced by PyTorch 1.13 (Debian's torchvision 0.14): qfx reads the
    trace and the .pt2 into the same code, float outputs and quantized outputs."""
    weights = os.path.join(out, f'{name}.weights.npz')
    import numpy
    numpy.savez(weights, **{k: v.detach().numpy() for k, v in model.state_dict().items()})
    traced = os.path.join(out, f'{name}.pt')
    r = subprocess.run(['/usr/bin/python3', '-c', TRACE_113, name, weights, os.path.join(out, f'{name}.input.pt'),
                        traced], capture_output=True, text=True)
    if r.returncode:
        errors = [line for line in r.stderr.splitlines() if 'Error' in line]
        return 'PyTorch 1.13 cannot trace it: ' + (errors[-1] if errors else r.stderr.strip()[-100:])[:100]
    printed = [subprocess.run([binary, 'print', f], capture_output=True, text=True)
               for f in (traced, os.path.join(out, f'{name}.pt2'))]
    if printed[0].returncode:
        return 'the trace is not read: ' + printed[0].stderr.strip().splitlines()[-1][len('qfx: error: '):][:100]
    if printed[0].stdout != printed[1].stdout:
        return 'graphs differ'
    for suffix in ('float', 'int8'):
        files = []
        for f in (traced, os.path.join(out, f'{name}.pt2')):
            target = f + f'.{suffix}.out'
            if suffix == 'float':
                qfx(binary, 'run', f, '--input', os.path.join(out, f'{name}.input.pt'), '-o', target, '--force')
            else:
                q = f + '.int8.pt'
                engine = coverage_models.ENGINE.get(name, 'qnnpack')
                qfx(binary, 'quantize', f, '-o', q, '--engine', engine, '--backend',
                    'qnnpack' if engine == 'qnnpack' else 'native', '--calib', os.path.join(out, f'{name}.input.pt'),
                    '-q', '--force', '--fallback-on-failure')
                subprocess.run(['/usr/bin/python3', '-c', RUN_INT8, q, os.path.join(out, f'{name}.input.pt'), target,
                                engine])
            files.append(first_tensor(torch.load(target)) if os.path.exists(target) else None)
        if files[0] is None or files[1] is None or not torch.equal(files[0], files[1]):
            return f'{suffix} outputs differ'
    return 'bit-identical'


def first_tensor(y):
    """A model's first output tensor (segmenters return {'out': ..., 'aux': ...}, transformers tuples)."""
    while not isinstance(y, torch.Tensor):
        y = next(iter(y.values())) if isinstance(y, dict) else y[0]
    return y


def row(binary, out, name):
    model, x = coverage_models.build(name)
    result = {'model': name}
    start = time.time()
    try:
        ep = torch.export.export(model, (x,), dynamic_shapes=coverage_models.dynamic_shapes(name))
    except Exception as e:  # noqa: BLE001 - PyTorch's own export failing is a row too
        result['export_error'] = str(e).splitlines()[0][:200]
        return result
    path = os.path.join(out, f'{name}.pt2')
    torch.export.save(ep, path)
    with torch.no_grad():
        y = ep.module()(x)
    y = first_tensor(y)
    torch.save(x, os.path.join(out, f'{name}.input.pt'))
    result['export_s'] = round(time.time() - start, 2)
    code, error = qfx(binary, 'run', path, '--input', os.path.join(out, f'{name}.input.pt'), '-o',
                      os.path.join(out, f'{name}.float.pt'), '--force')
    if code:
        result['error'] = error
        return result
    got = first_tensor(torch.load(os.path.join(out, f'{name}.float.pt')))
    result['float_rel_error'] = ((got - y).abs().max() / y.abs().max().clamp_min(1e-12)).item()
    engine = coverage_models.ENGINE.get(name, 'qnnpack')
    code, error = qfx(binary, 'quantize', path, '-o', os.path.join(out, f'{name}_int8.pt'), '--engine', engine,
                      '--backend', 'qnnpack' if engine == 'qnnpack' else 'native', '--calib',
                      os.path.join(out, f'{name}.input.pt'), '-q', '--force', '--fallback-on-failure')
    if code:
        result['quantize_error'] = error
        return result
    # the int8 TorchScript file, run by PyTorch 1.13 (Debian's python3-torch)
    r = subprocess.run(['/usr/bin/python3', '-c', RUN_INT8, os.path.join(out, f'{name}_int8.pt'),
                        os.path.join(out, f'{name}.input.pt'), os.path.join(out, f'{name}.int8.pt'), engine],
                       capture_output=True, text=True)
    if r.returncode:
        result['run_int8_error'] = r.stderr.strip().splitlines()[-1][:200]
        return result
    q = first_tensor(torch.load(os.path.join(out, f'{name}.int8.pt')))
    result['sqnr_db'] = round(sqnr(y, q), 2)
    if name in coverage_models.DYNAMIC:
        dynamic(binary, out, name, ep, x, result)
    if name in coverage_models.TORCHVISION:
        result['torchscript'] = agreement(binary, out, name, model)
    return result


def dynamic(binary, out, name, ep, x, result):
    """The float and int8 models on an input of other sizes along the dynamic dimensions: the float one
    against ep.module(), the int8 one (run by PyTorch 1.13) by its SQNR."""
    x2 = coverage_models.second_input(name, x)
    path2 = os.path.join(out, f'{name}.input2.pt')
    torch.save(x2, path2)
    with torch.no_grad():
        y2 = first_tensor(ep.module()(x2))
    result['dynamic'] = 'x'.join(map(str, x2.shape))
    code, error = qfx(binary, 'run', os.path.join(out, f'{name}.pt2'), '--input', path2, '-o',
                      os.path.join(out, f'{name}.float2.pt'), '--force')
    if code:
        result['dynamic_error'] = error
        return
    got = first_tensor(torch.load(os.path.join(out, f'{name}.float2.pt')))
    result['dynamic_rel_error'] = ((got - y2).abs().max() / y2.abs().max().clamp_min(1e-12)).item()
    r = subprocess.run(['/usr/bin/python3', '-c', RUN_INT8, os.path.join(out, f'{name}_int8.pt'), path2,
                        os.path.join(out, f'{name}.int8_2.pt'), coverage_models.ENGINE.get(name, 'qnnpack')],
                       capture_output=True, text=True)
    if r.returncode:
        result['dynamic_error'] = 'the int8 model at ' + result['dynamic'] + ': ' + r.stderr.strip().splitlines()[-1][:160]
        return
    result['dynamic_sqnr_db'] = round(sqnr(y2, first_tensor(torch.load(os.path.join(out, f'{name}.int8_2.pt')))), 2)


def status(r):
    """'ok', or the row's first error."""
    for key in ('export_error', 'error', 'quantize_error', 'run_int8_error', 'dynamic_error'):
        if key in r:
            return r[key]
    worst = max(r['float_rel_error'], r.get('dynamic_rel_error', 0))
    return 'ok' if worst <= 1e-5 else f"float error {worst:.2e}"


def table(rows):
    lines = ['| model | reads | float vs ep.module() | int8 SQNR (dB) | dynamic: other input, float error, int8 SQNR '
             '| same as from TorchScript | status |',
             '|---|---|---|---|---|---|---|']
    for r in rows:
        reads = 'yes' if 'float_rel_error' in r else 'no'
        rel = f"{r['float_rel_error']:.1e}" if 'float_rel_error' in r else ''
        dyn = (f"{r['dynamic']}, {r['dynamic_rel_error']:.1e}, {r.get('dynamic_sqnr_db', '')}"
               if 'dynamic_rel_error' in r else '')
        text = status(r)
        model = r['model'] + (f" ({coverage_models.ENGINE[r['model']]})" if r['model'] in coverage_models.ENGINE else '')
        lines.append(f"| {model} | {reads} | {rel} | {r.get('sqnr_db', '')} | {dyn} | {r.get('torchscript', '')} | "
                     f"{'ok' if text == 'ok' else text.replace('|', '/')[:160]} |")
    return '\n'.join(lines) + '\n'


def main():
    args = sys.argv[1:]
    expected = None
    if '--check' in args:
        at = args.index('--check')
        expected = json.load(open(args[at + 1]))
        del args[at:at + 2]
    binary, out, names = args[0], args[1], args[2:] or coverage_models.NAMES
    os.makedirs(out, exist_ok=True)
    rows = []
    for name in names:
        r = row(binary, out, name)
        rows.append(r)
        print(json.dumps(r), flush=True)
    json.dump(rows, open(os.path.join(out, 'coverage.json'), 'w'), indent=1)
    open(os.path.join(out, 'coverage.md'), 'w').write(table(rows))
    print(table(rows))
    if expected is not None:
        wrong = [(r['model'], status(r)) for r in rows if not status(r).startswith(expected[r['model']])]
        for model, got in wrong:
            print(f'{model}: expected {expected[model]!r}, got {got!r}')
        sys.exit(1 if wrong else 0)


if __name__ == '__main__':
    main()
