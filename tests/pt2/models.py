"""Models of the .pt2 fixtures, plain torch.nn code that PyTorch 1.13 traces
and PyTorch 2 exports: the same class and the same weights on both sides."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class FashionCNN(nn.Module):
    """The demo's classifier (examples/fashion_mnist/models.cpp: fashion_cnn)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.pool2 = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.relu3 = nn.ReLU()
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.pool1(self.relu1(self.conv1(x)))
        x = self.pool2(self.relu2(self.conv2(x)))
        x = torch.flatten(x, 1)
        return self.fc2(self.relu3(self.fc1(x)))


class ConvBnBlock(nn.Module):
    def __init__(self, cin, cout, stride=1, groups=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class ResidualNet(nn.Module):
    """Conv-BN-ReLU blocks, a residual add, a depthwise conv, Hardswish,
    adaptive pooling, a module called twice and a functional activation."""

    def __init__(self):
        super().__init__()
        self.stem = ConvBnBlock(3, 8, stride=2)
        self.body = nn.Sequential(ConvBnBlock(8, 8), ConvBnBlock(8, 8, groups=8))
        self.proj = nn.Conv2d(8, 16, 1)
        self.hs = nn.Hardswish()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout(0.1)
        self.fc = nn.Linear(16, 16)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.body(x)
        x = self.hs(self.proj(x))
        x = torch.flatten(self.pool(x), 1)
        x = F.relu(self.fc(self.drop(x)))
        x = F.relu(self.fc(x))
        return self.head(x)


class MlpNet(nn.Module):
    """Linear layers, LayerNorm, GELU, SiLU, a view with the dynamic batch, cat and mul."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 24)
        self.norm = nn.LayerNorm(24)
        self.gelu = nn.GELU()
        self.fc2 = nn.Linear(24, 24)
        self.silu = nn.SiLU()
        self.out = nn.Linear(48, 6)

    def forward(self, x):
        h = self.gelu(self.norm(self.fc1(x.view(x.size(0), -1))))
        g = self.silu(self.fc2(h)) * h
        return self.out(torch.cat([h, g], 1))


class LstmNet(nn.Module):
    """A two-layer LSTM whose output and final state feed a Linear."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True)
        self.fc = nn.Linear(32, 4)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return self.fc(torch.cat([y[:, -1], h[-1]], 1))


class UpsampleNet(nn.Module):
    """Upsampling, average pooling, channel slices and a select."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
        self.conv2 = nn.Conv2d(6, 6, 3, padding=1)
        self.pool = nn.AvgPool2d(2)

    def forward(self, x):
        y = F.interpolate(self.conv1(x), scale_factor=2.0, mode='nearest')
        y = self.pool(F.relu(self.conv2(y)))
        return torch.cat([y[:, :3], y[:, 3:] * y[:, 0:1]], 1)


class AttentionNet(nn.Module):
    """F.scaled_dot_product_attention (PyTorch 2's; 1.13 has none) between Linear projections."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(16, 48)
        self.out = nn.Linear(16, 16)

    def forward(self, x):
        q, k, v = self.qkv(x).view(x.size(0), x.size(1), 3, 2, 8).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(x.size(0), x.size(1), 16))


class PositionNet(nn.Module):
    """Positions (an int64 arange, shifted as GPT-2 shifts them) embedded and added; Swin's way of
    building a mask: slice assignments into a new tensor; a reshape by a product of sizes."""

    def __init__(self):
        super().__init__()
        self.pos = nn.Embedding(8, 6)
        self.fc = nn.Linear(6, 6)

    def forward(self, x):
        positions = torch.arange(x.size(1)) + 0
        mask = x.new_zeros((6, 6))
        mask[0:3, 3:] = 1.0
        mask[3:, :3] = 2.0
        h = self.fc(x + self.pos(positions))
        rows = h.reshape(x.size(0) * x.size(1), 6)  # arithmetic on the dynamic batch
        return rows.view(x.size(0), 6, 6) + mask


# name -> (class, input shape, dynamic batch, PyTorch 1.13 traces it too)
MODELS = {
    "fashion_cnn": (FashionCNN, (4, 1, 28, 28), True, True),
    "residual": (ResidualNet, (2, 3, 32, 32), True, True),
    "mlp": (MlpNet, (3, 3, 4), True, True),
    "lstm": (LstmNet, (2, 5, 8), True, True),
    "upsample": (UpsampleNet, (2, 3, 8, 8), True, True),
    "attention": (AttentionNet, (2, 6, 16), True, False),
    "positions": (PositionNet, (2, 6, 6), True, False),
}


def build(name, seed=0):
    """The model `name` with seeded weights and non-trivial BatchNorm statistics, in eval mode."""
    cls = MODELS[name][0]
    torch.manual_seed(seed)
    model = cls()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.5, 0.5)
    return model.eval()


def example_input(name, seed=1):
    torch.manual_seed(seed)
    return torch.randn(*MODELS[name][1])


def write_versions(path):
    """What made the fixtures: torch, numpy and Python versions, as JSON at `path`."""
    import json
    import platform
    import numpy as np
    with open(path, 'w') as f:
        json.dump({'torch': torch.__version__, 'numpy': np.__version__, 'python': platform.python_version()}, f,
                  indent=1)
        f.write('\n')
