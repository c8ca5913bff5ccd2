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


# name -> (class, input shape, dynamic batch)
MODELS = {
    "fashion_cnn": (FashionCNN, (4, 1, 28, 28), True),
    "residual": (ResidualNet, (2, 3, 32, 32), True),
    "mlp": (MlpNet, (3, 3, 4), True),
}


def build(name, seed=0):
    """The model `name` with seeded weights and non-trivial BatchNorm statistics, in eval mode."""
    cls, shape, _ = MODELS[name]
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
