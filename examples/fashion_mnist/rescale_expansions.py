"""The same function, harder to quantize: each inverted residual block's
expansion channels scaled by a factor of their own (batch norm's weight and
bias times s, the depthwise conv's filter of that channel divided by s;
ReLU commutes with s > 0). Per-tensor int8 then gives the small channels a
few levels or none; cross-layer equalization (--equalize) undoes the scales.

    rescale_expansions.py IN.pt OUT.pt [SEED]

IN.pt: a TorchScript export of models.h's "mobilenet" (ReLU). The scales are
2^u, u uniform in [-5, 5], from torch.Generator seeded with SEED (default 0).
"""
import sys

import torch


def main():
    source, target = sys.argv[1], sys.argv[2]
    generator = torch.Generator().manual_seed(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
    model = torch.jit.load(source)
    params = dict(model.named_parameters())
    blocks = sorted({name.split('_expand_')[0] for name in params if '_expand_' in name})
    assert blocks, f'{source}: no expansion convs (blocks_N_expand_*): not models.h\'s mobilenet'
    with torch.no_grad():
        for block in blocks:
            gamma, beta = params[block + '_expand_bn.weight'], params[block + '_expand_bn.bias']
            depthwise = params[block + '_depthwise_conv.weight']
            scale = 2.0 ** (torch.rand(gamma.shape, generator=generator) * 10 - 5)
            gamma.mul_(scale)
            beta.mul_(scale)
            depthwise.div_(scale.view(-1, 1, 1, 1))
    model.save(target)
    print(f'{target}: {len(blocks)} blocks rescaled')


if __name__ == '__main__':
    main()
