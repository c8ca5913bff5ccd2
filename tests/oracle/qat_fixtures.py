"""QAT fixtures: prepare_qat_fx on a conv-bn-relu / conv-bn / linear-bn-relu / linear model, SGD steps,
then convert_fx, as PyTorch 1.13 does them.

qat.json: the model file (qat_net.pt, traced in eval mode from the same
weights), the QConfigMapping (qfx JSON), the SGD learning rate, the batches
and targets (qat_data.pt: [inputs, targets]), the loss of each step, what
prepare_qat_fx made (nodes, module tree), each fake-quantize module's scale
and zero point after training, and what convert_fx made of the model in eval
mode (nodes, code, module tree, output on the first batch in
CASE.qat_lowered_output.pt, output_step).
"""
import copy
import json
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.ao.quantization import default_embedding_qat_qconfig, get_default_qat_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_qat_fx

import flow_fixtures
from pytorch_names import qconfig_mapping_json

STEPS = 4
LR = 0.05


class QatNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d((1, 1))  # a trace keeps no record of `1` vs `(1, 1)`
        self.fc = nn.Linear(8, 16)
        self.bn3 = nn.BatchNorm1d(16)
        self.relu2 = nn.ReLU()
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        x = self.relu(self.bn(self.conv(x)))
        x = self.pool(self.bn2(self.conv2(x)))
        return self.fc2(self.relu2(self.bn3(self.fc(torch.flatten(x, 1)))))


class EmbeddingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.fc = nn.Linear(8, 4)

    def forward(self, tokens):
        return self.fc(self.emb(tokens))


def embedding_mapping():
    return get_default_qat_qconfig_mapping('onednn').set_object_type(nn.Embedding, default_embedding_qat_qconfig)


CASES = [
    # (case, model class, inputs and targets from a generator, QConfigMapping)
    ('conv_bn_linear', QatNet,
     lambda g: (torch.randn(STEPS, 4, 3, 8, 8, generator=g), torch.randn(STEPS, 4, 4, generator=g)),
     lambda: get_default_qat_qconfig_mapping('onednn')),
    ('embedding', EmbeddingNet,
     lambda g: (torch.randint(0, 10, (STEPS, 3, 5), generator=g), torch.randn(STEPS, 3, 5, 4, generator=g)),
     embedding_mapping),
]


def write_case(out, case, cls, make_data, make_mapping):
    torch.manual_seed(0)
    model = cls().eval()
    inputs, targets = make_data(torch.Generator().manual_seed(3))
    torch.jit.trace(copy.deepcopy(model), (inputs[0],)).save(os.path.join(out, f'{case}_net.pt'))
    torch.save([inputs, targets], os.path.join(out, f'{case}_data.pt'))
    mapping = make_mapping()
    prepared = prepare_qat_fx(model.train(), mapping, (inputs[0],))
    record = {'case': case, 'model': f'{case}_net.pt', 'data': f'{case}_data.pt', 'lr': LR,
              'qconfig_mapping': qconfig_mapping_json(mapping), 'prepared': flow_fixtures.graph_json(prepared)}
    optimizer = torch.optim.SGD(prepared.parameters(), lr=LR)
    losses = []
    with torch.enable_grad():  # make_fixtures.py turns autograd off
        for step in range(STEPS):
            optimizer.zero_grad()
            loss = F.mse_loss(prepared(inputs[step]), targets[step])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    record['losses'] = losses
    with torch.no_grad():
        record['fake_quants'] = flow_fixtures.observer_records(prepared)
        prepared.eval()
        torch.backends.quantized.engine = 'onednn'
        converted = convert_fx(prepared)
        record['lowered'] = flow_fixtures.graph_json(converted)
        torch.save(converted(inputs[0]), os.path.join(out, f'{case}.qat_lowered_output.pt'))
        record['lowered'].update({'output': f'{case}.qat_lowered_output.pt',
                                  'output_step': flow_fixtures.output_step(converted, (inputs[0],))})
    return record


def patch_qat_object_types():
    """1.13 carries object-type qconfigs over to the QAT classes of its
    default QAT module mappings only, which lack Conv1d, Embedding and
    EmbeddingBag: a QAT Embedding with its own qconfig ends up with the global
    one and converts back to a float Embedding. qfx carries them over for
    every QAT class (docs/divergences.md): so does the patched oracle."""
    import torch.ao.nn.qat as nnqat
    from torch.ao.quantization import quantization_mappings
    quantization_mappings.DEFAULT_QAT_MODULE_MAPPINGS.update(
        {nn.Conv1d: nnqat.Conv1d, nn.Embedding: nnqat.Embedding, nn.EmbeddingBag: nnqat.EmbeddingBag})


def write_all(out):
    patch_qat_object_types()
    records = [write_case(out, *case) for case in CASES]
    with open(os.path.join(out, 'qat.json'), 'w') as f:
        json.dump(records, f, indent=1)
