#!/usr/bin/env python3
"""Writes the seed inputs of qfx's fuzz targets (tests/fuzz/targets/) into
CORPUS/TARGET/, each file named by the SHA-1 of its bytes, as libFuzzer
names what it finds. Run by Debian's python3 (it has torch):

    /usr/bin/python3 tests/fuzz/make_seeds.py build/bin/qfx tests/fuzz/corpus

Seeds: the example configs, slices of the built-in BackendConfigs and
QConfigMappings (from `qfx ... dump`), graphs stated in the tests and printed
by torch.fx, Fashion-MNIST's first items as IDX, small PNG and JPEG images of
several kinds, TorchScript models and torch.save files as records and as
archives, and the committed .pt2 fixtures (tests/pt2/fixtures) as records."""
import gzip
import hashlib
import io
import json
import pathlib
import re
import subprocess
import sys
import zipfile

import torch
import torch.fx
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parents[2]
FASHION = pathlib.Path("/usr/share/datasets/fashion-mnist")


def write(corpus, target, data):
    folder = corpus / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


def json_seeds(qfx):
    docs = [p.read_bytes() for p in sorted((ROOT / "examples").rglob("*.json"))]
    for backend in ["onednn", "qnnpack", "onnxruntime", "tensorrt", "executorch"]:
        dump = json.loads(subprocess.check_output([qfx, "backend-config", "dump", backend]))
        configs = dump["configs"]
        for start in range(0, len(configs), max(1, len(configs) // 4)):
            docs.append(json.dumps({"name": backend, "configs": configs[start:start + 3]}).encode())
    for args in [[], ["--qat"]]:
        mapping = json.loads(subprocess.check_output([qfx, "qconfig", "dump", "onednn"] + args))
        docs.append(json.dumps(mapping).encode())
        docs.append(json.dumps(mapping.get("", mapping)).encode())  # one QConfig
    docs += [
        b'"default:qnnpack"',
        b'{"": "default_dynamic_qconfig", "object_type": [["torch.nn.LSTM", "default_dynamic_qconfig"]]}',
        b'{"": null, "module_name_regex": [["features\\\\.(0|1)", "default:onednn"]], '
        b'"module_name_object_type_order": [["", "torch.nn.Conv2d", 0, null]]}',
        b'{"name": "MinMaxObserver", "args": {"dtype": "torch.qint8", "qscheme": "torch.per_tensor_symmetric"}}',
        b'{"name": "FakeQuantize", "args": {"observer": {"name": "MovingAverageMinMaxObserver"}, "quant_min": 0}}',
        b'{"name": "HistogramObserver", "args": {"bins": 256, "reduce_range": true}}',
        b'{"non_traceable_module_name": ["decoder"], "input_quantized_idxs": [0], "output_quantized_idxs": [0], '
        b'"preserved_attributes": ["classes"], "float_to_observed_custom_module_class": '
        b'{"static": {"torch.nn.LSTM": "torch.ao.nn.quantizable.LSTM"}}}',
        b'{"standalone_module_name": [["block", "default:qnnpack", null, {"input_quantized_idxs": [0]}, "qnnpack"]]}',
        b'{"observed_to_quantized_custom_module_class": {"static": {"torch.ao.nn.quantizable.LSTM": '
        b'"torch.ao.nn.quantized.LSTM"}}, "preserved_attributes": ["a"]}',
    ]
    return docs


def ir_seeds():
    texts = []
    for source in sorted((ROOT / "tests").rglob("*_test.cpp")):
        texts += re.findall(r'R"\((graph\(\):.*?)\)"', source.read_text(), flags=re.S)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.lin = torch.nn.Linear(4, 2)

        def forward(self, x, y: float = 2.0):
            x = torch.relu(self.conv(x)) + y
            x = x.mean([2, 3]).reshape(-1, 4)
            return self.lin(x)[:, 0:1], x.size(0)

    texts.append(str(torch.fx.symbolic_trace(Block()).graph))
    return [t.encode() for t in dict.fromkeys(texts)]


def idx_seeds():
    images = gzip.decompress((FASHION / "t10k-images-idx3-ubyte.gz").read_bytes())
    labels = gzip.decompress((FASHION / "t10k-labels-idx1-ubyte.gz").read_bytes())
    seeds = []
    for count, flags in [(3, 0), (5, 4), (4, 4 | 8), (6, 1 | 4 | 32), (2, 16), (3, 2)]:
        image_bytes = images[:4] + count.to_bytes(4, "big") + images[8:16] + images[16:16 + count * 784]
        label_bytes = labels[:4] + count.to_bytes(4, "big") + labels[8:8 + count]
        if flags & 2:  # named .gz, given gzipped
            image_bytes = gzip.compress(image_bytes)
        body = image_bytes + (label_bytes if flags & 4 else b"")
        seeds.append(bytes([flags, 2, len(image_bytes) & 0xFF, len(image_bytes) >> 8]) + body)
    return seeds


def image_seeds():
    seeds = []
    gradient = Image.linear_gradient("L").resize((12, 9))
    kinds = [
        ("RGB", "PNG", {}), ("L", "PNG", {}), ("RGBA", "PNG", {}), ("P", "PNG", {}),
        ("RGB", "PNG", {"interlace": 1}), ("I;16", "PNG", {}), ("RGB", "JPEG", {"quality": 80}),
        ("L", "JPEG", {}), ("RGB", "JPEG", {"progressive": True}),
    ]
    for mode, fmt, options in kinds:
        image = Image.merge("RGB", [gradient, gradient.rotate(90), gradient.transpose(0)])
        image = image.convert("L").convert("I") if mode == "I;16" else image.convert(mode)
        out = io.BytesIO()
        image.save(out, fmt, **options)
        flags = (0 if fmt == "PNG" else 2) | (1 if mode == "L" else 0) | (4 if mode == "P" else 0)
        seeds.append(bytes([flags, 16, 8]) + out.getvalue())
    return seeds


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 3)
        self.bn = torch.nn.BatchNorm2d(2)
        self.fc = torch.nn.Linear(2, 3)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


class Recurrent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(4, 3, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0].sum(1)


class Branchy(torch.nn.Module):
    def forward(self, x, xs: list[torch.Tensor]):
        return torch.cat([x] + xs, 1).softmax(1) * 2 - x.mean()


def archives():
    models = [torch.jit.trace(Net().eval(), torch.rand(1, 1, 5, 5)),
              torch.jit.script(Recurrent().eval()), torch.jit.script(Branchy())]
    files = []
    for model in models:
        out = io.BytesIO()
        torch.jit.save(model, out)
        files.append((0, out.getvalue()))
    for data in [torch.rand(6, 1, 4, 4), [torch.rand(2, 3), torch.rand(2, 3)],
                 [(torch.rand(2, 4), torch.ones(2, dtype=torch.long))]]:
        out = io.BytesIO()
        torch.save(data, out)
        files.append((2, out.getvalue()))
    return files


def as_records(archive):
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        parts = []
        for info in z.infolist():
            name = info.filename.split("/", 1)[1]
            parts.append(b"#qfx-record " + name.encode() + b"\n" + z.read(info))
        return b"\n".join(parts)


def main(qfx, corpus):
    corpus = pathlib.Path(corpus)
    for doc in json_seeds(qfx):
        write(corpus, "json_configs", doc)
    for text in ir_seeds():
        write(corpus, "ir_text", text)
    for seed in idx_seeds():
        write(corpus, "idx_data", seed)
    for seed in image_seeds():
        write(corpus, "image_data", seed)
    for kind, archive in archives():
        write(corpus, "archives", bytes([kind]) + as_records(archive))
        write(corpus, "archives", bytes([kind | 1]) + archive)
    for pt2 in sorted((ROOT / "tests" / "pt2" / "fixtures").glob("*.pt2")):
        write(corpus, "pt2_programs", as_records(pt2.read_bytes()))


if __name__ == "__main__":
    main(*sys.argv[1:])
