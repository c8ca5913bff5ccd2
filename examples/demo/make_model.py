#!/usr/bin/env python3
"""Makes the demo's bundled files (run with Debian's python3, which has torch):

    examples/demo/make_model.py examples/demo

- fashion_cnn.pt: a small Fashion-MNIST CNN (conv-bn-relu-pool x2, linear),
  random weights from a fixed seed, saved with torch.jit.trace;
- fashion_test16.pt: the first 16 Fashion-MNIST test images, normalized,
  as torch.save writes them (read from Debian's dataset-fashion-mnist).
"""
import gzip
import os
import sys

import torch
import torch.nn as nn

DATA = '/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz'


class FashionCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Linear(32 * 7 * 7, 10)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def test_images(count):
    with gzip.open(DATA, 'rb') as f:
        raw = f.read()
    pixels = torch.frombuffer(bytearray(raw[16:16 + count * 28 * 28]), dtype=torch.uint8)
    return ((pixels.float() / 255.0 - 0.2860) / 0.3530).reshape(count, 1, 28, 28)


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    model = FashionCNN().eval()
    images = test_images(16)
    torch.jit.trace(model, images).save(os.path.join(out, 'fashion_cnn.pt'))
    torch.save(images, os.path.join(out, 'fashion_test16.pt'))


if __name__ == '__main__':
    main()
