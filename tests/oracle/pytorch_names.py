"""PyTorch objects in qfx's JSON form (docs/config-format.md): observer
constructors (`Cls.with_args(...)`) as {"type", "args"}, QConfigs as
{"activation", "weight"}, QConfigMappings with PyTorch's to_dict() keys, and
object types (classes, functions, method names) by their PyTorch names."""
import importlib
import inspect

import torch
import torch.fx.node
import torch.nn.functional as F
from torch.ao.quantization.observer import _PartialWrapper


def class_name(cls):
    return f'{cls.__module__}.{cls.__qualname__}'


# Public packages of module classes: qfx's (PyTorch 2.x's) name, and the
# package that holds the classes in PyTorch 1.13.
_MODULE_PACKAGES = [
    ('torch.nn', 'torch.nn'),
    ('torch.ao.nn.intrinsic.qat', 'torch.nn.intrinsic.qat'),
    ('torch.ao.nn.intrinsic.quantized.dynamic', 'torch.nn.intrinsic.quantized.dynamic'),
    ('torch.ao.nn.intrinsic.quantized', 'torch.nn.intrinsic.quantized'),
    ('torch.ao.nn.intrinsic', 'torch.nn.intrinsic'),
    ('torch.ao.nn.qat', 'torch.nn.qat'),
    ('torch.ao.nn.quantized.reference', 'torch.nn.quantized._reference'),
    ('torch.ao.nn.quantized.dynamic', 'torch.nn.quantized.dynamic'),
    ('torch.ao.nn.quantized', 'torch.nn.quantized'),
]


def module_class_name(cls):
    """torch.nn.Conv2d, torch.ao.nn.intrinsic.ConvReLU2d, or a user class's qualified name."""
    if hasattr(cls, 'qfx_name'):  # stand-ins for classes PyTorch 1.13 lacks
        return cls.qfx_name
    for public, package in _MODULE_PACKAGES:
        if getattr(importlib.import_module(package), cls.__name__, None) is cls:
            return f'{public}.{cls.__name__}'
    return torch._jit_internal._qualified_name(cls).replace('__torch__.', '', 1)


def object_type_name(obj):
    """torch.nn.Conv2d, torch.nn.functional.relu, operator.add, a user class, or a method name."""
    if isinstance(obj, str):
        return obj
    if inspect.isclass(obj):
        return module_class_name(obj)
    # F.conv2d is torch.conv2d, F.linear is torch._C._nn.linear, ...: qfx names
    # such functions by their torch.nn.functional spelling, the one users write.
    for name in dir(F):
        if not name.startswith('_') and getattr(F, name) is obj:
            return f'torch.nn.functional.{name}'
    name = torch.fx.node._get_qualified_name(obj)
    return name.replace('_operator.', 'operator.', 1)


def _value_json(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (torch.dtype, torch.qscheme)):
        return str(value)
    return spec_json(value)


def spec_json(ctor):
    """An observer or fake-quantize constructor: a class or a with_args partial."""
    keywords = {}
    while isinstance(ctor, _PartialWrapper):
        assert not ctor.callable_args, 'callable args have no JSON form'
        keywords = {**ctor.p.keywords, **keywords}
        assert not ctor.p.args
        ctor = ctor.p.func
    return {'type': class_name(ctor), 'args': {k: _value_json(v) for k, v in keywords.items()}}


def qconfig_json(qconfig):
    if qconfig is None:
        return None
    return {'activation': spec_json(qconfig.activation), 'weight': spec_json(qconfig.weight)}


def qconfig_mapping_json(mapping):
    d = mapping.to_dict()
    return {
        '': qconfig_json(d['']),
        'object_type': [[object_type_name(t), qconfig_json(q)] for t, q in d['object_type']],
        'module_name_regex': [[r, qconfig_json(q)] for r, q in d['module_name_regex']],
        'module_name': [[n, qconfig_json(q)] for n, q in d['module_name']],
        'module_name_object_type_order': [[n, object_type_name(t), i, qconfig_json(q)]
                                          for n, t, i, q in d['module_name_object_type_order']],
    }
