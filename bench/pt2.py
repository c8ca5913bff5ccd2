#!/usr/bin/env python3
"""The .pt2 door, one run side by side (run by bench/pt2.sh in the PyTorch 2
virtual environment): for each model, exported once by torch.export (random
weights, batch 1),

  load:             torch.export.load  vs  qfx's .pt2 import
  prepare+convert:  torchao PT2E (prepare_pt2e + convert_pt2e, X86InductorQuantizer)
                    vs  qfx prepare_fx + convert_fx (onednn default mapping)
  calibration:      both on the same 8 batches

qfx's times are its quantize report's (import_s, prepare_s, calibrate_s,
convert_s; one process, export to TorchScript excluded). Prints a JSON line
per model and a Markdown table.

    pt2.py QFX WORKDIR [MODEL ...]
"""
import json
import os
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'pt2'))
import coverage_models  # noqa: E402

MODELS = ['resnet18', 'resnet50', 'mobilenet_v2', 'vit_b_16', 'bert_base']
BATCHES = 8


def build(name):
    if name == 'bert_base':  # BERT-base as configured by default: 12 layers, 768 wide
        import transformers as t
        torch.manual_seed(0)
        cfg = t.BertConfig()
        return coverage_models.Logits(t.BertModel(cfg)).eval(), torch.randint(0, cfg.vocab_size, (1, 128))
    return coverage_models.build(name)


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def pt2e(path, batches):
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
        X86InductorQuantizer, get_default_x86_inductor_quantization_config)
    ep, load_s = timed(lambda: torch.export.load(path))
    quantizer = X86InductorQuantizer().set_global(get_default_x86_inductor_quantization_config())
    prepared, prepare_s = timed(lambda: prepare_pt2e(ep.module(), quantizer))

    def calibrate():
        with torch.no_grad():
            for x in batches:
                prepared(x)
    _, calibrate_s = timed(calibrate)
    _, convert_s = timed(lambda: convert_pt2e(prepared))
    return {'load_s': load_s, 'prepare_s': prepare_s, 'calibrate_s': calibrate_s, 'convert_s': convert_s}


def qfx(binary, path, calib, work):
    report = os.path.join(work, 'report.json')
    subprocess.run([binary, 'quantize', path, '-o', os.path.join(work, 'int8.pt'), '--calib', calib, '--batch-size',
                    '1', '--report', report, '-q', '--force'], check=True, capture_output=True)
    t = json.load(open(report))['timings']
    return {'load_s': t['import_s'], 'prepare_s': t['prepare_s'], 'calibrate_s': t['calibrate_s'],
            'convert_s': t['convert_s']}


def main():
    binary, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rows = []
    for name in sys.argv[3:] or MODELS:
        model, x = build(name)
        path = os.path.join(work, f'{name}.pt2')
        torch.export.save(torch.export.export(model, (x,)), path)
        torch.manual_seed(1)
        batches = [x if x.dtype == torch.long and i == 0 else
                   (torch.randint_like(x, 0, 30000) if x.dtype == torch.long else torch.randn_like(x))
                   for i in range(BATCHES)]
        calib = os.path.join(work, f'{name}.calib.pt')
        torch.save(torch.cat(batches), calib)
        row = {'model': name, 'qfx': qfx(binary, path, calib, work)}
        try:
            row['pt2e'] = pt2e(path, batches)
        except Exception as e:  # noqa: BLE001 - PT2E refusing a model is a row too
            row['pt2e_error'] = f'{type(e).__name__}: {str(e).splitlines()[0][:120]}'
            row['pt2e'] = {'load_s': timed(lambda: torch.export.load(path))[1]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print('\n| model | load: torch.export.load / qfx | prepare + convert: PT2E / qfx | calibration, 8 batches: '
          'PT2E / qfx |')
    print('|---|---|---|---|')
    for r in rows:
        p, q = r['pt2e'], r['qfx']
        pc_q = q['prepare_s'] + q['convert_s']
        if 'pt2e_error' in r:
            print(f"| {r['model']} | {p['load_s']:.3f} / {q['load_s']:.3f} s ({p['load_s'] / q['load_s']:.1f}x) | "
                  f"PT2E fails ({r['pt2e_error']}) / {pc_q:.3f} s | – / {q['calibrate_s']:.2f} s |")
            continue
        pc_p = p['prepare_s'] + p['convert_s']
        print(f"| {r['model']} | {p['load_s']:.3f} / {q['load_s']:.3f} s ({p['load_s'] / q['load_s']:.1f}x) | "
              f"{pc_p:.2f} / {pc_q:.3f} s ({pc_p / pc_q:.0f}x) | "
              f"{p['calibrate_s']:.2f} / {q['calibrate_s']:.2f} s ({p['calibrate_s'] / q['calibrate_s']:.1f}x) |")


if __name__ == '__main__':
    main()
