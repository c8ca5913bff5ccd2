"""Data fixtures: what Python reads from Debian's Fashion-MNIST test set
(gzip + the IDX layout by hand), for the qfx IDX reader to match.

fashion_mnist.json: the images file, the number of items, the first 16
labels, and for the first 4 images the sum and the first 8 bytes of pixels.
"""
import gzip
import json
import os
import struct

IMAGES = '/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz'
LABELS = '/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz'


def write_all(out):
    with gzip.open(IMAGES, 'rb') as f:
        magic, count, rows, cols = struct.unpack('>IIII', f.read(16))
        images = [f.read(rows * cols) for _ in range(4)]
    with gzip.open(LABELS, 'rb') as f:
        struct.unpack('>II', f.read(8))
        labels = list(f.read(16))
    record = {'images': IMAGES, 'count': count, 'rows': rows, 'cols': cols, 'labels': labels,
              'pixel_sums': [sum(img) for img in images], 'first_pixels': [list(img[:8]) for img in images]}
    with open(os.path.join(out, 'fashion_mnist.json'), 'w') as f:
        json.dump(record, f, indent=1)
