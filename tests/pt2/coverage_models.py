"""The coverage table's models (docs/coverage.md), built in PyTorch 2 with
random weights (nothing is downloaded): torchvision's classifiers and
segmenters, an LSTM language model, a TransformerEncoder, and transformers'
models built from their configs. Each: (model in eval mode, example input,
dynamic shapes for torch.export)."""
import torch
import torch.nn as nn


class LstmLm(nn.Module):
    def __init__(self, vocab=100, dim=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, num_layers=2, batch_first=True)
        self.out = nn.Linear(dim, vocab)

    def forward(self, tokens):
        y, _ = self.lstm(self.embed(tokens))
        return self.out(y)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(32, 8)

    def forward(self, x):
        return self.head(self.encoder(x))


def settle_batch_norm(model, x):
    """BatchNorm statistics of random data, as a trained model has them for its data: with the initial ones
    (mean 0, variance 1), a random MobileNet's activations vanish layer by layer and its outputs are ~1e-9."""
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(4, *x.shape[1:]))


def torchvision_model(name, shape):
    import torchvision
    fn = getattr(torchvision.models, name, None) or getattr(torchvision.models.segmentation, name, None) \
        or getattr(torchvision.models.video, name)
    import inspect
    backbone = 'weights_backbone' in inspect.signature(fn).parameters  # segmenters: no pretrained backbone either
    model = fn(weights=None, weights_backbone=None) if backbone else fn(weights=None)
    return model, torch.randn(*shape)


class Logits(nn.Module):
    """A transformers model's first output (its logits or last hidden state)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)[0]


def transformers_model(name):
    import transformers as t
    if name == 'bert':
        cfg = t.BertConfig(num_hidden_layers=2)
        return Logits(t.BertModel(cfg)), torch.randint(0, cfg.vocab_size, (2, 16))
    if name == 'distilbert':
        cfg = t.DistilBertConfig(n_layers=2)
        return Logits(t.DistilBertModel(cfg)), torch.randint(0, cfg.vocab_size, (2, 16))
    if name == 'gpt2':
        cfg = t.GPT2Config(n_layer=2)
        return Logits(t.GPT2Model(cfg)), torch.randint(0, cfg.vocab_size, (2, 16))
    if name == 'vit':
        cfg = t.ViTConfig(num_hidden_layers=2)
        return Logits(t.ViTModel(cfg)), torch.randn(2, 3, 224, 224)
    if name == 'whisper_encoder':
        cfg = t.WhisperConfig(encoder_layers=2, decoder_layers=2)
        return Logits(t.WhisperModel(cfg).encoder), torch.randn(2, cfg.num_mel_bins, 3000)
    raise KeyError(name)


TORCHVISION = {
    'resnet18': (1, 3, 224, 224), 'resnet50': (1, 3, 224, 224), 'mobilenet_v2': (1, 3, 224, 224),
    'mobilenet_v3_large': (1, 3, 224, 224), 'efficientnet_b0': (1, 3, 224, 224), 'convnext_tiny': (1, 3, 224, 224),
    'regnet_y_400mf': (1, 3, 224, 224), 'vit_b_16': (1, 3, 224, 224), 'swin_t': (1, 3, 224, 224),
    'deeplabv3_mobilenet_v3_large': (1, 3, 224, 224), 'lraspp_mobilenet_v3_large': (1, 3, 224, 224),
    'fcn_resnet50': (1, 3, 224, 224), 'r3d_18': (1, 3, 8, 112, 112),
}
# What each model exports with a dynamic dimension (export's Dim: batch, sequence length where the model
# allows it) and a second input of other sizes: {name: ({dim: (dim name, max)}, sizes of the second input)}.
DYNAMIC = {
    'lstm_lm': ({0: ('batch', 64)}, (3, 12)),  # export specializes an LSTM's sequence length
    'transformer_encoder': ({0: ('batch', 64), 1: ('seq', 4096)}, (3, 17, 32)),
    'bert': ({0: ('batch', 64), 1: ('seq', 512)}, (3, 23)),
    'distilbert': ({0: ('batch', 64), 1: ('seq', 512)}, (3, 23)),
    'gpt2': ({0: ('batch', 64), 1: ('seq', 1024)}, (3, 23)),
    'vit': ({0: ('batch', 64)}, (3, 3, 224, 224)),
    'whisper_encoder': ({0: ('batch', 64)}, (3, 80, 3000)),  # its positional embedding fixes the frames
}


def dynamic_shapes(name):
    """export's dynamic_shapes for the model's input, or None."""
    if name not in DYNAMIC:
        return None
    return ({d: torch.export.Dim(n, min=2 if d else 1, max=m) for d, (n, m) in DYNAMIC[name][0].items()},)


def second_input(name, x):
    """An input of other sizes along the dynamic dimensions: random tokens for token models."""
    torch.manual_seed(1)
    sizes = DYNAMIC[name][1]
    return torch.randint(0, int(x.max()) + 1, sizes) if not x.is_floating_point() else torch.randn(sizes)


# Models quantized for another engine than qnnpack: qnnpack cannot save a quantized Conv3d (LibTorch 1.13
# packs it but cannot unpack it), onednn can (on a CPU without VNNI its int8 convolutions saturate).
ENGINE = {'r3d_18': 'onednn'}

OTHERS = ['lstm_lm', 'transformer_encoder', 'bert', 'distilbert', 'gpt2', 'vit', 'whisper_encoder']
NAMES = list(TORCHVISION) + OTHERS


def build(name):
    torch.manual_seed(0)
    if name in TORCHVISION:
        model, x = torchvision_model(name, TORCHVISION[name])
        settle_batch_norm(model, x)
    elif name == 'lstm_lm':
        model, x = LstmLm(), torch.randint(0, 100, (2, 12))
    elif name == 'transformer_encoder':
        model, x = Encoder(), torch.randn(2, 10, 32)
    else:
        model, x = transformers_model(name)
    for m in model.modules():  # zero-initialized heads (torchvision's ViT) would make every output 0
        if isinstance(m, nn.Linear) and not m.weight.any():
            nn.init.normal_(m.weight, std=0.02)
    return model.eval(), x
