"""A bad-input campaign against the qfx CLI: generated cases (mutated model
archives, calibration and data files, images, JSON configs, options and output
paths), each run once, each outcome classified:

  clean-error   exit 1 or 2, stderr one `qfx: error:` line (after any
                `qfx: warning:` lines) that names what it is about (a file of
                the command, with its JSON path where one applies; an option;
                a node), nothing on stdout, no output file
  no-context    a clean-error line that names none of these
  ok            exit 0, and every model written loads in PyTorch and runs
  unusable      exit 0, but a model written does not load or run
  unclean-error non-zero exit with more than one error line, no `qfx: error:`
                prefix, a C++ stack trace, or an output file left behind
  signal        killed by a signal (a crash)
  hang          still running after the time limit

    bad_inputs.py QFX [--cases N] [--seed S] [--jobs J] [--timeout T] [--json OUT] [--keep DIR]

Exit status 1 when any case ends in unusable, unclean-error, signal or hang.
The same seed gives the same cases."""
import argparse
import collections
import concurrent.futures
import gzip
import io
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile

import numpy as np
import torch

BAD = ('unusable', 'unclean-error', 'no-context', 'signal', 'hang')
FASHION = '/usr/share/datasets/fashion-mnist'
PT2 = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'pt2', 'fixtures', 'residual.pt2')


# --- the valid inputs the cases start from --------------------------------------------------------------------

class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4 * 26 * 26, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))


class Lstm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(28, 16, batch_first=True)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        out, _ = self.lstm(x.flatten(1, 2))
        return self.fc(out[:, -1])


def png_bytes(pixels):
    """A valid 8-bit grey PNG of a 2-D uint8 array (zlib, CRCs)."""
    import zlib
    h, w = pixels.shape
    raw = b''.join(b'\0' + pixels[r].tobytes() for r in range(h))

    def chunk(kind, data):
        return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 0, 0, 0, 0)) +
            chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))


def make_base(base):
    """Models, data and configs in `base`: every case mutates one of them."""
    torch.manual_seed(0)
    x = torch.rand(8, 1, 28, 28)
    torch.jit.trace(Cnn().eval(), x).save(f'{base}/cnn.pt')
    torch.jit.trace(Lstm().eval(), x).save(f'{base}/lstm.pt')
    torch.save(torch.rand(32, 1, 28, 28), f'{base}/calib.pt')
    shutil.copy(PT2, f'{base}/residual.pt2')  # made by PyTorch 2 (tests/pt2/make_fixtures.py)
    torch.save(torch.rand(8, 3, 32, 32), f'{base}/calib3.pt')
    torch.save([torch.rand(8, 1, 28, 28) for _ in range(3)], f'{base}/calib_list.pt')
    with gzip.open(f'{FASHION}/t10k-images-idx3-ubyte.gz') as f:
        images = f.read()[:16 + 256 * 784]
    with gzip.open(f'{FASHION}/t10k-labels-idx1-ubyte.gz') as f:
        labels = f.read()[:8 + 256]
    images = images[:4] + struct.pack('>I', 256) + images[8:]
    labels = labels[:4] + struct.pack('>I', 256) + labels[8:]
    for name, data in (('small-images-idx3-ubyte', images), ('small-labels-idx1-ubyte', labels)):
        open(f'{base}/{name}', 'wb').write(data)
        with gzip.open(f'{base}/{name}.gz', 'wb') as f:
            f.write(data)
    pixels = np.frombuffer(images, np.uint8, offset=16).reshape(-1, 28, 28)
    for c in range(2):
        os.makedirs(f'{base}/images/class{c}', exist_ok=True)
        for i in range(3):
            open(f'{base}/images/class{c}/{i}.png', 'wb').write(png_bytes(pixels[c * 3 + i]))
    qconfig = {'': 'default:onednn', 'object_type': [['torch.nn.Linear', {
        'activation': {'type': 'HistogramObserver', 'args': {'bins': 256, 'reduce_range': False}},
        'weight': {'type': 'PerChannelMinMaxObserver', 'args': {'dtype': 'torch.qint8',
                                                                'qscheme': 'torch.per_channel_symmetric'}}}]],
        'module_name_regex': [['conv.*', 'default:qnnpack']]}
    json.dump(qconfig, open(f'{base}/qconfig.json', 'w'))
    backend = {'name': 'mine', 'configs': [{
        'pattern': 'torch.nn.Linear', 'observation_type': 'OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT',
        'dtype_configs': [{'input_dtype': 'torch.quint8', 'output_dtype': 'torch.quint8',
                           'weight_dtype': 'torch.qint8', 'bias_dtype': 'torch.float'}],
        'root_module': 'torch.nn.Linear', 'reference_quantized_module_for_root':
            'torch.ao.nn.quantized.reference.Linear', 'qat_module': 'torch.ao.nn.qat.Linear'}]}
    json.dump(backend, open(f'{base}/backend.json', 'w'))
    json.dump({'non_traceable_module_name': ['bn'], 'preserved_attributes': ['training']},
              open(f'{base}/prepare.json', 'w'))
    json.dump({'type': 'HistogramObserver', 'args': {'bins': 64}}, open(f'{base}/observer.json', 'w'))


# --- mutations ------------------------------------------------------------------------------------------------

def random_bytes(rng, n):
    return bytes(rng.randrange(256) for _ in range(n))


def flip_bytes(data, rng, count):
    data = bytearray(data)
    for _ in range(count):
        if data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def mutate_bytes(data, rng):
    """A random damage to a byte string: flips, a cut, a splice, zeros, or repeats."""
    kind = rng.choice(['flip', 'flip', 'cut', 'splice', 'zero', 'grow', 'empty'])
    if kind == 'flip':
        return flip_bytes(data, rng, rng.choice([1, 2, 8, 64]))
    if kind == 'cut':
        return data[:rng.randrange(len(data) + 1)]
    if kind == 'splice':
        at = rng.randrange(len(data) + 1)
        return data[:at] + random_bytes(rng, rng.randrange(1, 64)) + data[at:]
    if kind == 'zero':
        at = rng.randrange(len(data) + 1)
        return data[:at] + bytes(rng.randrange(1, 256)) + data[at + 256:]
    if kind == 'grow':
        return data + data[:rng.randrange(len(data) + 1)]
    return b''


def mutate_archive(path, rng):
    """A zip archive (TorchScript model, torch.save file) with one record damaged,
    dropped or swapped, or the whole file damaged."""
    data = open(path, 'rb').read()
    if rng.random() < 0.3:
        return mutate_bytes(data, rng)
    with zipfile.ZipFile(path) as z:
        records = [(i.filename, z.read(i.filename)) for i in z.infolist()]
    kind = rng.choice(['record', 'record', 'drop', 'swap', 'rename'])
    at = rng.randrange(len(records))
    name, payload = records[at]
    if kind == 'record':
        records[at] = (name, mutate_bytes(payload, rng))
    elif kind == 'drop':
        del records[at]
    elif kind == 'swap':
        other = rng.randrange(len(records))
        records[at], records[other] = (name, records[other][1]), (records[other][0], payload)
    else:
        records[at] = (name + rng.choice(['x', '/', '.py', '']) if name else 'x', payload)
    out = io.BytesIO()
    with zipfile.ZipFile(out, 'w') as z:
        for name, payload in records:
            z.writestr(name, payload)
    return out.getvalue()


ODD_TENSORS = [
    lambda: torch.zeros(0, 1, 28, 28), lambda: torch.rand(4, 3, 28, 28), lambda: torch.rand(4, 28, 28),
    lambda: torch.rand(4, 1, 28), lambda: torch.rand(4, 1, 1, 1), lambda: torch.rand(4, 1, 0, 28),
    lambda: torch.randint(0, 255, (4, 1, 28, 28)), lambda: torch.rand(4, 1, 28, 28) > 0.5,
    lambda: torch.rand(4, 1, 28, 28, dtype=torch.float64), lambda: torch.rand(4, 1, 28, 28).half(),
    lambda: torch.complex(torch.rand(4, 1, 28, 28), torch.rand(4, 1, 28, 28)),
    lambda: torch.full((4, 1, 28, 28), float('nan')), lambda: torch.full((4, 1, 28, 28), float('inf')),
    lambda: torch.full((4, 1, 28, 28), 1e38), lambda: torch.tensor(3.0), lambda: torch.rand(1, 1, 28, 28)[:, :, ::2],
    lambda: torch.rand(4, 1, 56, 56)[:, :, ::2, ::2], lambda: torch.rand(2, 4, 1, 28, 28),
    lambda: torch.quantize_per_tensor(torch.rand(4, 1, 28, 28), 0.1, 0, torch.quint8),
]
ODD_CONTAINERS = [
    lambda t: [t], lambda t: (t,), lambda t: [[t]], lambda t: {'x': t}, lambda t: [t, t], lambda t: [],
    lambda t: [t, 'text'], lambda t: [None], lambda t: 7, lambda t: 'a string', lambda t: [t, t.reshape(-1)[:1]],
]


def odd_data(rng):
    tensor = rng.choice(ODD_TENSORS)()
    value = rng.choice(ODD_CONTAINERS)(tensor) if rng.random() < 0.4 else tensor
    out = io.BytesIO()
    torch.save(value, out)
    return out.getvalue()


def mutate_idx(data, rng):
    """An IDX file with its header or items damaged."""
    kind = rng.choice(['magic', 'count', 'dims', 'cut', 'bytes'])
    data = bytearray(data)
    if kind == 'magic':
        data[rng.randrange(4)] = rng.randrange(256)
    elif kind in ('count', 'dims'):
        at = 4 if kind == 'count' else rng.choice([8, 12])
        value = rng.choice([0, 1, 255, 2 ** 16, 2 ** 31, 2 ** 32 - 1, rng.randrange(2 ** 32)])
        data[at:at + 4] = struct.pack('>I', value)
    elif kind == 'cut':
        return bytes(data[:rng.randrange(len(data))])
    else:
        return mutate_bytes(bytes(data), rng)
    return bytes(data)


def mutate_png(data, rng):
    kind = rng.choice(['bytes', 'size', 'chunk_length'])
    data = bytearray(data)
    if kind == 'size':  # IHDR width/height (the CRC then fails too, unless fixed)
        import zlib
        data[16:24] = struct.pack('>II', rng.choice([0, 1, 28, 65535, 1000000, 2 ** 31 - 1]),
                                  rng.choice([0, 1, 28, 65535, 1000000]))
        if rng.random() < 0.5:
            data[29:33] = struct.pack('>I', zlib.crc32(bytes(data[12:29])))
    elif kind == 'chunk_length':
        data[33:37] = struct.pack('>I', rng.choice([0, 2 ** 31, 2 ** 32 - 1, rng.randrange(2 ** 32)]))
    else:
        return mutate_bytes(bytes(data), rng)
    return bytes(data)


JSON_ODD_VALUES = [None, True, False, 0, -1, 1.5, 1e308, -1e308, 2 ** 63, -2 ** 63 - 1, 2 ** 64, '', 'x' * 100000,
                   'torch.quint9', 'MinMaxObserver', [], {}, [[]], [None], {'type': None}, 'default:tpu', '(a+)+$',
                   '(' * 1000, 'conv.*', '\u0000', '..', 'torch.nn.Linear']


DEEP = '<nested lists>'


def mutate_json(value, rng, depth=0):
    """A JSON value with one node replaced, dropped, duplicated or nested deep."""
    if isinstance(value, (dict, list)) and value and (depth == 0 or rng.random() < 0.7):
        keys = list(value.keys()) if isinstance(value, dict) else list(range(len(value)))
        key = rng.choice(keys)
        kind = rng.random()
        if kind < 0.15:
            if isinstance(value, dict):
                del value[key]
            else:
                value.pop(key)
        elif kind < 0.25 and isinstance(value, dict):
            value[rng.choice(['extra', 'colour', key + '_'])] = rng.choice(JSON_ODD_VALUES)
        else:
            value[key] = mutate_json(value[key], rng, depth + 1)
        return value
    kind = rng.random()
    if kind < 0.1:  # nested lists, written out by json_text (json.dumps recurses)
        return f'{DEEP}{rng.choice([10, 70, 1000, 50000])}'
    return rng.choice(JSON_ODD_VALUES)


def json_text(value, rng):
    text = re.sub(f'"{DEEP}(\\d+)"', lambda m: '[' * int(m.group(1)) + '0' + ']' * int(m.group(1)), json.dumps(value))
    if rng.random() < 0.1:  # broken syntax, numbers JSON cannot hold
        return rng.choice([text[:rng.randrange(len(text) + 1)], text.replace('256', '1e999'),
                           text.replace('256', 'NaN'), text + ',', text.replace('"', "'", 1)])
    return text


def mutate_pt2(path, rng):
    """A .pt2 archive with its program's JSON or a tensor config mutated, or damaged as any archive."""
    if rng.random() < 0.4:
        return mutate_archive(path, rng)
    with zipfile.ZipFile(path) as z:
        records = [(i.filename, z.read(i.filename)) for i in z.infolist()]
    targets = [i for i, (name, _) in enumerate(records) if name.endswith('.json')]
    at = rng.choice(targets)
    name, payload = records[at]
    records[at] = (name, json_text(mutate_json(json.loads(payload), rng), rng).encode())
    out = io.BytesIO()
    with zipfile.ZipFile(out, 'w') as z:
        for name, payload in records:
            z.writestr(name, payload)
    return out.getvalue()


# --- cases ----------------------------------------------------------------------------------------------------

def model_case(base, case, rng):
    source = rng.choice(['cnn', 'lstm', 'residual.pt2'])
    model = f'{case}/model.pt'
    if source.endswith('.pt2'):
        model += '2'
        open(model, 'wb').write(mutate_pt2(f'{base}/{source}', rng))
        calib = f'{base}/calib3.pt'
        command = rng.choice(['print', 'quantize', 'run'])
        if command == 'print':
            return ['print', model], []
        if command == 'run':
            return ['run', model, '--input', calib, '-o', f'{case}/out.pt'], []
        return ['quantize', model, '-o', f'{case}/out.pt', '--calib', calib, '-q'], [f'{case}/out.pt']
    open(model, 'wb').write(mutate_archive(f'{base}/{source}.pt', rng))
    command = rng.choice(['print', 'quantize', 'quantize-dynamic', 'eval', 'run', 'export'])
    if command == 'print':
        return ['print', model], []
    if command == 'quantize':
        return ['quantize', model, '-o', f'{case}/out.pt', '--calib', f'{base}/calib.pt', '-q'], [f'{case}/out.pt']
    if command == 'quantize-dynamic':
        return ['quantize', model, '-o', f'{case}/out.pt', '--dynamic', '-q'], [f'{case}/out.pt']
    if command == 'eval':
        return ['eval', model, '--data', f'{base}/small-images-idx3-ubyte.gz', '--limit-batches', '2', '-q'], []
    if command == 'run':
        return ['run', model, '--input', f'{base}/calib.pt', '-o', f'{case}/out.pt'], []
    return ['export', model, '-o', f'{case}/out.onnx', '--input-shape', '1,1,28,28'], []


def data_case(base, case, rng):
    data = f'{case}/data.pt'
    kind = rng.random()
    if kind < 0.5:
        open(data, 'wb').write(odd_data(rng))
    else:
        open(data, 'wb').write(mutate_archive(f'{base}/{rng.choice(["calib", "calib_list"])}.pt', rng))
    model = f'{base}/{rng.choice(["cnn", "lstm"])}.pt'
    command = rng.choice(['quantize', 'run', 'observe'])
    if command == 'quantize':
        return ['quantize', model, '-o', f'{case}/out.pt', '--calib', data, '-q'], [f'{case}/out.pt']
    if command == 'run':
        return ['run', model, '--input', data, '-o', f'{case}/out.pt'], []
    return ['observe', '--observer', f'{base}/observer.json', '--input', data], []


def idx_case(base, case, rng):
    gz = rng.random() < 0.5
    images = open(f'{base}/small-images-idx3-ubyte', 'rb').read()
    labels = open(f'{base}/small-labels-idx1-ubyte', 'rb').read()
    if rng.random() < 0.7:
        images = mutate_idx(images, rng)
    else:
        labels = mutate_idx(labels, rng)
    suffix = '.gz' if gz else ''
    for name, data in (('c-images-idx3-ubyte', images), ('c-labels-idx1-ubyte', labels)):
        if gz:
            data = gzip.compress(data) if rng.random() < 0.8 else mutate_bytes(gzip.compress(data), rng)
        open(f'{case}/{name}{suffix}', 'wb').write(data)
    data = f'{case}/c-images-idx3-ubyte{suffix}'
    seed = ['--seed', '3'] if rng.random() < 0.3 else []
    if rng.random() < 0.5:
        return ['eval', f'{base}/cnn.pt', '--data', data, '-q', *seed], []
    return ['quantize', f'{base}/cnn.pt', '-o', f'{case}/out.pt', '--calib', data, '-q', *seed], [f'{case}/out.pt']


def image_case(base, case, rng):
    shutil.copytree(f'{base}/images', f'{case}/images')
    kind = rng.random()
    target = f'{case}/images/class{rng.randrange(2)}/{rng.randrange(3)}.png'
    if kind < 0.7:
        open(target, 'wb').write(mutate_png(open(target, 'rb').read(), rng))
    elif kind < 0.8:
        os.remove(target)
        open(target.replace('.png', '.jpg'), 'wb').write(random_bytes(rng, rng.randrange(0, 2000)))
    elif kind < 0.9:
        for c in range(2):
            shutil.rmtree(f'{case}/images/class{c}')
            os.makedirs(f'{case}/images/class{c}')
    else:
        os.makedirs(f'{case}/images/empty_class')
    size = ['--resize', '28', '--crop', '28']
    if rng.random() < 0.5:
        return ['eval', f'{base}/cnn.pt', '--data', f'{case}/images', *size, '-q'], []
    return (['quantize', f'{base}/cnn.pt', '-o', f'{case}/out.pt', '--calib', f'{case}/images', *size, '-q'],
            [f'{case}/out.pt'])


def json_case(base, case, rng):
    which, option = rng.choice([('qconfig', '--qconfig'), ('backend', '--backend'),
                                ('prepare', '--prepare-custom-config'), ('observer', None)])
    value = mutate_json(json.load(open(f'{base}/{which}.json')), rng)
    path = f'{case}/{which}.json'
    open(path, 'w').write(json_text(value, rng))
    if option is None:
        return ['observe', '--observer', path, '--input', f'{base}/calib_list.pt'], []
    return (['quantize', f'{base}/cnn.pt', '-o', f'{case}/out.pt', '--calib', f'{base}/calib.pt', option, path, '-q'],
            [f'{case}/out.pt'])


NUMBERS = ['0', '-1', '1', '-5', '2', '7', '1e999', 'inf', '-inf', 'nan', '0.5', '9223372036854775807',
           '99999999999999999999', '-9223372036854775808', 'x', '', '1e-300', '3.0']


def option_case(base, case, rng):
    option = rng.choice(['--batch-size', '--calib-batches', '--seed', '--mean', '--std', '--engine', '--opset',
                         '--epochs', '--lr', '--max-float-nodes', '--max-drop', '--resize', '--crop',
                         '--input-shape', '--dist-timeout', '--adaround-iters'])
    value = rng.choice(NUMBERS + ['onednn', 'fbgemm', '1,1,28,28', '0,1,28,28', '1,1', '-1,1,28,28'])
    out = f'{case}/out.onnx' if option in ('--opset', '--input-shape') else f'{case}/out.pt'
    args = ['quantize', f'{base}/cnn.pt', '-o', out, '--calib', f'{base}/small-images-idx3-ubyte.gz', '-q',
            '--calib-batches', '2', option, value]
    if option in ('--max-float-nodes', '--max-drop'):
        args += ['--eval', f'{base}/small-images-idx3-ubyte.gz']
    if option in ('--epochs', '--lr'):
        args += ['--qconfig', 'qat', '--train', f'{base}/small-images-idx3-ubyte.gz']
    if option == '--adaround-iters':
        args += ['--adaround']
    return args, [out]


def output_case(base, case, rng):
    kind = rng.choice(['dev_full', 'dir', 'missing_dir', 'input', 'symlink_dir', 'empty', 'long', 'fifo'])
    out = {'dev_full': '/dev/full', 'dir': case, 'missing_dir': f'{case}/no/such/dir/out.pt',
           'input': f'{case}/in.pt', 'symlink_dir': f'{case}/link.pt', 'empty': '', 'long': f'{case}/{"n" * 300}.pt',
           'fifo': f'{case}/fifo.pt'}[kind]
    model = f'{base}/cnn.pt'
    if kind == 'input':
        shutil.copy(model, out)
        model = out
    if kind == 'symlink_dir':
        os.symlink(case, out)
    if kind == 'fifo':
        os.mkfifo(out)
    command = rng.choice(['quantize', 'report', 'json'])
    if command == 'quantize':
        return ['quantize', model, '-o', out, '--calib', f'{base}/calib.pt', '-q'], []
    if command == 'report':
        return ['quantize', model, '-o', f'{case}/ok.pt', '--calib', f'{base}/calib.pt', '--report', out, '-q'], []
    return ['eval', model, '--data', f'{base}/small-images-idx3-ubyte.gz', '--json', out, '-q'], []


FAMILIES = [  # (name, generator, share of the cases)
    ('model archive', model_case, 0.28), ('calibration data', data_case, 0.2), ('IDX file', idx_case, 0.14),
    ('image folder', image_case, 0.1), ('JSON config', json_case, 0.18), ('option value', option_case, 0.07),
    ('output path', output_case, 0.03)]


# --- running and judging --------------------------------------------------------------------------------------

def files_in(directory):
    return {os.path.join(root, f) for root, _, files in os.walk(directory) for f in files}


def names_its_subject(error, args):
    """Whether an error line names a file of the command (or one beside it, as
    IDX labels), an option, or a node."""
    named = [a for a in args if a.startswith('--')] + [os.path.dirname(a) for a in args if '/' in a]
    named += [os.path.basename(a) for a in args if '/' in a and os.path.basename(a)]
    return any(n and n in error for n in named) or re.search(r'%\w|node |--\w', error) is not None


def judge(code, stdout, stderr, models, left_over, args):
    if code is None:
        return 'hang', 'still running'
    if code < 0:
        return 'signal', f'signal {-code}'
    lines = stderr.decode(errors='replace').splitlines()
    if code == 0:
        shape = (2, 3, 32, 32) if any('calib3' in a for a in args) else (2, 1, 28, 28)  # the .pt2 model's input
        for model in models:
            if model.endswith('.pt') and os.path.exists(model):
                try:
                    m = torch.jit.load(model)
                    m(torch.rand(*shape))
                except Exception as e:  # noqa: BLE001 - any failure of the output is the finding
                    return 'unusable', f'{model}: {str(e).splitlines()[0][:200]}'
        return 'ok', ''
    errors = [line for line in lines if not line.startswith('qfx: warning: ')]
    if len(errors) != 1 or not errors[0].startswith('qfx: error: '):
        return 'unclean-error', (stderr.decode(errors='replace')[:300])
    if 'Exception raised from' in errors[0] or 'frame #' in errors[0]:
        return 'unclean-error', errors[0][:300]
    if stdout:
        return 'unclean-error', 'wrote to stdout: ' + stdout.decode(errors='replace')[:100]
    if left_over:
        return 'unclean-error', 'left ' + ', '.join(sorted(left_over))
    if not names_its_subject(errors[0], args):
        return 'no-context', errors[0][:300]
    return 'clean-error', errors[0][12:][:200]


def run_case(qfx, args, case, timeout):
    before = files_in(case)
    env = dict(os.environ, OMP_NUM_THREADS='1')
    try:
        done = subprocess.run([qfx, *args], stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, env=env)
        code, stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired:
        code, stdout, stderr = None, b'', b''
    return code, stdout, stderr, files_in(case) - before


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('qfx')
    parser.add_argument('--cases', type=int, default=2000)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--jobs', type=int, default=2)
    parser.add_argument('--timeout', type=float, default=60)
    parser.add_argument('--json')
    parser.add_argument('--keep')
    parser.add_argument('--only', type=int, nargs='*', help='run only these cases (of the same seed), verbosely')
    a = parser.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix='qfx-campaign-')
    base = f'{work}/base'
    os.makedirs(base, exist_ok=True)
    make_base(base)
    rng = random.Random(a.seed)
    cases = []
    for i in range(a.cases):
        family, generate, _ = rng.choices(FAMILIES, weights=[f[2] for f in FAMILIES])[0]
        case = f'{work}/case{i:05d}'
        os.makedirs(case, exist_ok=True)
        args, models = generate(base, case, random.Random(rng.random()))
        cases.append((i, family, case, args, models))

    def one(item):
        i, family, case, args, models = item
        code, stdout, stderr, written = run_case(a.qfx, args, case, a.timeout)
        left = written if code not in (0, None) else set()
        outcome, detail = judge(code, stdout, stderr, models, left, args)
        if not a.keep:
            shutil.rmtree(case, ignore_errors=True)
        return {'case': i, 'family': family, 'args': args, 'exit': code, 'outcome': outcome, 'detail': detail}

    if a.only:
        for i, family, case, args, models in (cases[i] for i in a.only):
            code, stdout, stderr, written = run_case(a.qfx, args, case, a.timeout)
            print(f"case {i} ({family}): qfx {' '.join(args)}\nexit {code}\n{stderr.decode(errors='replace')}")
        return 0
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        results = list(pool.map(one, cases))
    counts = collections.Counter(r['outcome'] for r in results)
    by_family = collections.defaultdict(collections.Counter)
    for r in results:
        by_family[r['family']][r['outcome']] += 1
    print(f'{len(results)} cases, seed {a.seed}: ' + ', '.join(f'{k} {v}' for k, v in sorted(counts.items())))
    for family, c in sorted(by_family.items()):
        print(f'  {family}: ' + ', '.join(f'{k} {v}' for k, v in sorted(c.items())))
    for r in results:
        if r['outcome'] in BAD:
            print(f"{r['outcome']}: case {r['case']} ({r['family']}): qfx {' '.join(r['args'])}: {r['detail']}")
    if a.json:
        json.dump({'seed': a.seed, 'counts': counts, 'results': results}, open(a.json, 'w'), indent=1)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if any(counts[b] for b in BAD) else 0


if __name__ == '__main__':
    sys.exit(main())
