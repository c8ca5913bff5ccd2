"""Coverage beyond the test suite: torchvision classification, segmentation
and video models, an LSTM language model and a TransformerEncoder, each
quantized by qfx (static, onednn's default mapping, and --dynamic), run in
Python from the exported file, and compared with the float model (SQNR); and
the same models through PyTorch 1.13's own prepare_fx/convert_fx.

The static quantization is also written as ONNX QDQ (`qfx quantize -o
X.onnx`) and run in ONNX Runtime (tools/ort/qfx_ort.js, optimizations on):
its SQNR against the float model, and its largest difference from qfx's
TorchScript int8 output.

Usage: run.py QFX WORKDIR [MODEL ...]   (prints docs/coverage.md's table)

Weights are random (no downloads); calibration is 4 random batches, the SQNR
is measured on a fifth. SQNR = 10 log10(|float|^2 / |float - quantized|^2).
"""
import copy
import json
import math
import subprocess
import sys
import time
import traceback
from pathlib import Path

import torch
import torch.nn as nn
import torchvision
from torch.ao.quantization import QConfigMapping, default_dynamic_qconfig, get_default_qconfig_mapping

torch.manual_seed(0)


class SegmentationOut(nn.Module):
    """A segmentation model's `out` tensor (its forward returns a dict)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class LSTMLanguageModel(nn.Module):
    """The word-language-model tutorial's shape: embedding, 2-layer LSTM, decoder."""

    def __init__(self, tokens=1000, embed=128, hidden=256, layers=2):
        super().__init__()
        self.encoder = nn.Embedding(tokens, embed)
        self.rnn = nn.LSTM(embed, hidden, layers)
        self.decoder = nn.Linear(hidden, tokens)

    def forward(self, x):
        output = self.rnn(self.encoder(x))[0]  # indexed: 1.13's FX cannot unpack a Proxy under Python 3.11
        return self.decoder(output)


class StaticLSTMLanguageModel(LSTMLanguageModel):
    """The same with a given initial state (buffers), as PyTorch 1.13's static custom module LSTM needs."""

    def __init__(self):
        super().__init__()
        self.register_buffer("h0", torch.zeros(2, 2, 256))
        self.register_buffer("c0", torch.zeros(2, 2, 256))

    def forward(self, x):
        return self.decoder(self.rnn(self.encoder(x), (self.h0, self.c0))[0])


class TransformerClassifier(nn.Module):
    """A 4-layer nn.TransformerEncoder with a linear head."""

    def __init__(self, d_model=128, heads=4, ff=256, layers=4, classes=10):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d_model, classes)

    def forward(self, x):
        return self.head(self.encoder(x))


def vit_b_16():
    """torchvision's ViT with a random head (its own starts at zero: every output would be 0)."""
    model = torchvision.models.vit_b_16()
    nn.init.normal_(model.heads.head.weight, std=0.02)
    return model


def images(shape):
    return lambda: torch.randn(shape)


seg = torchvision.models.segmentation
MODELS = {
    "resnet18": (lambda: torchvision.models.resnet18(), images((1, 3, 224, 224))),
    "mobilenet_v3_large": (lambda: torchvision.models.mobilenet_v3_large(), images((1, 3, 224, 224))),
    "vit_b_16": (vit_b_16, images((1, 3, 224, 224))),
    "swin_t": (lambda: torchvision.models.swin_t(), images((1, 3, 224, 224))),
    "deeplabv3_mobilenet_v3_large": (lambda: SegmentationOut(seg.deeplabv3_mobilenet_v3_large(weights_backbone=None)),
                                     images((1, 3, 224, 224))),
    "lraspp_mobilenet_v3_large": (lambda: SegmentationOut(seg.lraspp_mobilenet_v3_large(weights_backbone=None)),
                                  images((1, 3, 224, 224))),
    "fcn_resnet50": (lambda: SegmentationOut(seg.fcn_resnet50(weights_backbone=None)), images((1, 3, 224, 224))),
    "r3d_18": (lambda: torchvision.models.video.r3d_18(), images((1, 3, 8, 112, 112))),
    "s3d": (lambda: torchvision.models.video.s3d(), images((1, 3, 16, 224, 224))),
    "lstm_language_model": (lambda: LSTMLanguageModel(), lambda: torch.randint(0, 1000, (20, 2))),
    "lstm_language_model, static LSTM": (StaticLSTMLanguageModel, lambda: torch.randint(0, 1000, (20, 2))),
    "transformer_encoder_4": (lambda: TransformerClassifier(), images((10, 2, 128))),
}


# LibTorch 1.13's quantized mean fails on a channels_last_3d tensor whose
# reduced dims are all 1 ("required rank 5 tensor to use channels_last_3d
# format"), which s3d's classifier gives for 16 frames; PyTorch's FX model
# fails the same way. Those models keep `mean` float, in qfx and in PyTorch.
FLOAT_MEAN = {"s3d"}
# Models whose LSTM is quantized statically (PyTorch's custom module LSTM).
STATIC_LSTM = {"lstm_language_model, static LSTM"}
STATIC_LSTM_PREPARE = {"float_to_observed_custom_module_class":
                       {"static": {"torch.nn.LSTM": "torch.ao.nn.quantizable.LSTM"}}}
STATIC_LSTM_CONVERT = {"observed_to_quantized_custom_module_class":
                       {"static": {"torch.ao.nn.quantizable.LSTM": "torch.ao.nn.quantized.LSTM"}}}


def static_lstm_args(work):
    """qfx quantize's custom config files for a static LSTM."""
    prepare, convert = work / "static_lstm_prepare.json", work / "static_lstm_convert.json"
    prepare.write_text(json.dumps(STATIC_LSTM_PREPARE))
    convert.write_text(json.dumps(STATIC_LSTM_CONVERT))
    return ["--prepare-custom-config", str(prepare), "--convert-custom-config", str(convert)]


def static_lstm_configs():
    """The same as PyTorch's PrepareCustomConfig and ConvertCustomConfig."""
    import torch.ao.nn.quantizable as nnqa
    import torch.ao.nn.quantized as nnq
    from torch.ao.quantization.fx.custom_config import ConvertCustomConfig, PrepareCustomConfig
    return {"prepare_custom_config": PrepareCustomConfig().set_float_to_observed_mapping(nn.LSTM, nnqa.LSTM),
            "convert_custom_config": ConvertCustomConfig().set_observed_to_quantized_mapping(nnqa.LSTM, nnq.LSTM)}


def float_mean_mapping(mapping):
    return mapping.set_object_type(torch.mean, None).set_object_type("mean", None)


def float_mean_qconfig(qfx, work):
    """The onednn default QConfigMapping with `mean` float, as a qfx JSON file."""
    path = work / "onednn_float_mean.json"
    mapping = json.loads(subprocess.run([qfx, "qconfig", "dump", "onednn"], capture_output=True, text=True,
                                        check=True).stdout)
    mapping["object_type"] += [["mean", None], ["torch.mean", None]]
    path.write_text(json.dumps(mapping))
    return ["--qconfig", str(path)]


def sqnr(reference, actual):
    noise = (reference - actual).pow(2).sum().item()
    signal = reference.pow(2).sum().item()
    return math.inf if noise == 0 else 10 * math.log10(signal / noise)


def fmt(db):
    return "∞" if math.isinf(db) else f"{db:.1f} dB"


def qfx_quantize(qfx, model_file, calib_file, out_file, extra):
    started = time.time()
    run = subprocess.run([qfx, "quantize", str(model_file), "-o", str(out_file), "--calib", str(calib_file), "-q",
                          *extra], capture_output=True, text=True)
    if run.returncode != 0:
        return None, run.stderr.strip().splitlines()[-1], 0.0
    return torch.jit.load(str(out_file)), "", time.time() - started


ORT_SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "ort" / "qfx_ort.js"


def onnx_runtime_cell(qfx, model_file, calib_file, work, stem, x, expected, int8_output, extra):
    """The static int8 model as ONNX QDQ, run by ONNX Runtime: SQNR against float, and against qfx's TorchScript."""
    onnx_file, x_file, out_file = work / f"{stem}.onnx", work / f"{stem}.x.bin", work / f"{stem}.ort.bin"
    run = subprocess.run([qfx, "quantize", str(model_file), "-o", str(onnx_file), "--calib", str(calib_file), "-q",
                          *extra], capture_output=True, text=True)
    if run.returncode != 0:
        return "fails: " + run.stderr.strip().splitlines()[-1][:110]
    integer = x.dtype != torch.float32  # token ids: int64
    (x.long() if integer else x).contiguous().numpy().tofile(x_file)
    shape = ",".join(str(d) for d in x.shape) + (":int64" if integer else "")
    ort = subprocess.run(["node", str(ORT_SCRIPT), "run", str(onnx_file), str(out_file), f"{x_file}:{shape}"],
                         capture_output=True, text=True)
    if ort.returncode != 0:
        return "ONNX Runtime fails: " + ort.stderr.strip().splitlines()[-1][:100]
    out = torch.from_file(str(out_file), size=expected.numel(), dtype=torch.float32).reshape(expected.shape)
    cell = fmt(sqnr(expected, out))
    if int8_output is not None:
        cell += f", max \\|ORT − qfx .pt\\| {(out - int8_output).abs().max():.3g}"
    return cell


def pytorch_fx(model, calib, x, mapping, custom=None):
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx
    custom = custom or {}
    try:
        prepared = prepare_fx(copy.deepcopy(model), mapping, (x,),
                              prepare_custom_config=custom.get("prepare_custom_config"))
        with torch.no_grad():
            for batch in calib:
                prepared(batch)
            return convert_fx(prepared, convert_custom_config=custom.get("convert_custom_config"))(x), ""
    except Exception as error:  # noqa: BLE001 — the table reports what PyTorch raised
        return None, f"{type(error).__name__}: {str(error).splitlines()[0][:90]}"


def measure(name, qfx, work):
    torch.backends.quantized.engine = "onednn"
    make_model, make_input = MODELS[name]
    model = make_model().eval()
    calib = [make_input() for _ in range(4)]
    x = make_input()
    with torch.no_grad():
        traced = torch.jit.trace(model, x, check_trace=False)
        expected = model(x)
    stem = name.replace(", ", "_").replace(" ", "_")
    model_file, calib_file = work / f"{stem}.pt", work / f"{stem}.calib.pt"
    traced.save(str(model_file))
    torch.save(calib, str(calib_file))
    row = {"model": name}
    outputs = {}
    static = float_mean_qconfig(qfx, work) if name in FLOAT_MEAN else []
    if name in STATIC_LSTM:
        static = static_lstm_args(work)
    for mode, extra in (("static", static), ("dynamic", ["--dynamic"])):
        quantized, error, seconds = qfx_quantize(qfx, model_file, calib_file, work / f"{stem}.{mode}.pt", extra)
        if quantized is None:
            row[mode] = f"fails: {error}"
            continue
        with torch.no_grad():
            outputs[mode] = quantized(x)
        row[mode] = f"{fmt(sqnr(expected, outputs[mode]))} ({seconds:.1f} s)"
    row["onnx"] = onnx_runtime_cell(qfx, model_file, calib_file, work, stem, x, expected, outputs.get("static"), static)
    mappings = {"static": get_default_qconfig_mapping("onednn"),
                 "dynamic": QConfigMapping().set_global(default_dynamic_qconfig)}
    if name in FLOAT_MEAN:
        mappings["static"] = float_mean_mapping(mappings["static"])
    for mode, mapping in mappings.items():
        custom = static_lstm_configs() if name in STATIC_LSTM and mode == "static" else None
        fx_out, fx_error = pytorch_fx(model, calib, x, mapping, custom)
        key = "pytorch_fx_" + mode
        row[key] = fmt(sqnr(expected, fx_out)) if fx_out is not None else f"fails: {fx_error}"
        if fx_out is not None and mode in outputs:
            same = torch.equal(fx_out, outputs[mode])
            row[key] += ", = qfx" if same else f", max \\|qfx − FX\\| {(fx_out - outputs[mode]).abs().max():.3g}"
    return row


def main():
    qfx, work = sys.argv[1], Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    names = sys.argv[3:] or list(MODELS)
    print("| model | qfx static (onednn) | qfx --dynamic | qfx static as ONNX QDQ in ONNX Runtime | "
          "PyTorch 1.13 FX static | PyTorch 1.13 FX dynamic |")
    print("|---|---|---|---|---|---|")
    for name in names:
        try:
            row = measure(name, qfx, work)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            row = {"model": name, "static": "script error", "dynamic": "", "onnx": "", "pytorch_fx_static": "",
                   "pytorch_fx_dynamic": ""}
        cells = [row[k] for k in ("model", "static", "dynamic", "onnx", "pytorch_fx_static", "pytorch_fx_dynamic")]
        print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
