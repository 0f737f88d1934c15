#!/usr/bin/python3
"""Exports the ONNX samples: a tiny DenseNet and a tiny ResNet, in training mode.

    /usr/bin/python3 samples/export_onnx.py [--opset N] [--out DIR] [--weights]
    /usr/bin/python3 samples/export_onnx.py --torchvision resnet18 [--batch N] [--size S] --out DIR
    /usr/bin/python3 samples/export_onnx.py --torchvision deeplabv3_resnet50 --classes 21 --out DIR
    /usr/bin/python3 samples/export_onnx.py --transformer-encoder [--batch N] [--seq S] --out DIR

Training mode (`training=torch.onnx.TrainingMode.TRAINING`) with `do_constant_folding=False` is
what keeps BatchNorm as BatchNormalization and every parameter as an initializer under its
PyTorch name (features.conv0.weight); an eval-mode export folds BatchNorm into the convolutions
and renames weights. The modules follow torchvision's layout (features.denseblock1.denselayer1,
layer1.0.conv1), so the ONNX node scopes give the same module tree.

PyTorch 2.9 made the torch.export-based exporter the default, which deprecates training-mode
export and writes BatchNorm in its inference form: under PyTorch 2.x this script asks for the
TorchScript exporter (dynamo=False) while it exists, and says so; the way in for 2.x is
ckptlab_capture (README, "Bring your model"), which records the model as PyTorch runs it.

With --weights, also writes <name>.npz next to each model: the input, the output and every
parameter's gradient of sum(output), for the oracle test.

Every export names the module's registered buffers (rotary tables, masks, BatchNorm's running
statistics) and its parameters with requires_grad=False in the file's metadata_props under
`ckptlab.buffers` (a JSON list of initializer names; `mark_buffers`): ONNX writes them as
initializers like the weights, and Checkpoint Lab would otherwise train them and keep tensors
for their gradients. Use `mark_buffers(model, path)` after your own `torch.onnx.export`.
"""
import argparse
import json
import os
import re
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

# PyTorch 2.x: the TorchScript exporter this script relies on (training mode, BatchNorm kept),
# no longer the default from 2.9; 1.13 has no such argument.
import inspect  # noqa: E402
import sys  # noqa: E402

LEGACY_EXPORTER = ({"dynamo": False}
                   if "dynamo" in inspect.signature(torch.onnx.export).parameters else {})
if LEGACY_EXPORTER:
    print("export_onnx.py: PyTorch %s: exporting with the deprecated TorchScript exporter "
          "(dynamo=False), the one that keeps training mode; with PyTorch 2.x use "
          "ckptlab_capture instead (README, \"Bring your model\")" % torch.__version__,
          file=sys.stderr)


class DenseLayer(nn.Module):
    def __init__(self, num_input_features, growth_rate, bn_size):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU()
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU()
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, 3, padding=1, bias=False)

    def forward(self, *features):
        out = self.conv1(self.relu1(self.norm1(torch.cat(features, 1))))
        return self.conv2(self.relu2(self.norm2(out)))


class DenseBlock(nn.ModuleDict):
    def __init__(self, num_layers, num_input_features, growth_rate, bn_size):
        super().__init__()
        for i in range(num_layers):
            self.add_module(f"denselayer{i + 1}",
                            DenseLayer(num_input_features + i * growth_rate, growth_rate, bn_size))

    def forward(self, x):
        features = [x]
        for layer in self.values():
            features.append(layer(*features))
        return torch.cat(features, 1)


class Transition(nn.Sequential):
    def __init__(self, num_input_features, num_output_features):
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU()
        self.conv = nn.Conv2d(num_input_features, num_output_features, 1, bias=False)
        self.pool = nn.AvgPool2d(2, 2)


class TinyDenseNet(nn.Module):
    """torchvision's DenseNet layout, scaled down: growth 8, blocks (3, 3), 16 initial features."""

    def __init__(self, growth_rate=8, block_config=(3, 3), num_init_features=16, bn_size=2,
                 num_classes=10):
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(3, num_init_features, 3, padding=1, bias=False)),
            ("norm0", nn.BatchNorm2d(num_init_features)),
            ("relu0", nn.ReLU()),
            ("pool0", nn.MaxPool2d(3, 2, 1)),
        ]))
        n = num_init_features
        for i, layers in enumerate(block_config):
            self.features.add_module(f"denseblock{i + 1}", DenseBlock(layers, n, growth_rate, bn_size))
            n += layers * growth_rate
            if i != len(block_config) - 1:
                self.features.add_module(f"transition{i + 1}", Transition(n, n // 2))
                n //= 2
        self.features.add_module("norm5", nn.BatchNorm2d(n))
        self.classifier = nn.Linear(n, num_classes)

    def forward(self, x):
        out = F.relu(self.features(x))
        out = F.adaptive_avg_pool2d(out, (1, 1))
        return self.classifier(torch.flatten(out, 1))


class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                            nn.BatchNorm2d(planes))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + identity)


class TinyResNet(nn.Module):
    """torchvision's ResNet layout (conv1, bn1, layer1..3, fc), scaled down."""

    def __init__(self, widths=(8, 16, 32), num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU()
        inplanes = widths[0]
        for i, w in enumerate(widths):
            stride = 1 if i == 0 else 2
            self.add_module(f"layer{i + 1}", nn.Sequential(BasicBlock(inplanes, w, stride),
                                                           BasicBlock(w, w)))
            inplanes = w
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(inplanes, num_classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


MODELS = {"tiny_densenet": TinyDenseNet, "tiny_resnet": TinyResNet}

# The metadata_props key Checkpoint Lab reads (engine/model/load_notes.hpp).
BUFFERS_KEY = "ckptlab.buffers"


def mark_buffers(model, path):
    """Writes into the ONNX file at `path` which of its initializers `model` does not train
    (model.named_buffers(), and parameters with requires_grad=False), as a JSON list under
    metadata_props["ckptlab.buffers"]. Buffers the exporter folded into constants are not
    initializers and are left out. External data files are left as they are. Returns the
    names written."""
    import onnx
    proto = onnx.load(path, load_external_data=False)
    initializers = {t.name for t in proto.graph.initializer}
    untrained = [n for n, _ in model.named_buffers()]
    untrained += [n for n, p in model.named_parameters() if not p.requires_grad]
    names = sorted(n for n in set(untrained) if n in initializers)
    for prop in list(proto.metadata_props):
        if prop.key == BUFFERS_KEY:
            proto.metadata_props.remove(prop)
    entry = proto.metadata_props.add()
    entry.key = BUFFERS_KEY
    entry.value = json.dumps(names)
    onnx.save(proto, path)
    return names


def export_training(model, args, path, opset, **kwargs):
    """torch.onnx.export in training mode, every weight an initializer under its PyTorch name,
    then mark_buffers. PyTorch 2.9 and later export with the torch.export-based exporter by
    default (dynamo=True), which ignores the training flag, writes BatchNorm in its inference
    form and renames weights: the TorchScript exporter (dynamo=False) is asked for wherever
    export() takes the argument."""
    for key, value in LEGACY_EXPORTER.items():
        kwargs.setdefault(key, value)
    kwargs.setdefault("input_names", ["input"])
    kwargs.setdefault("output_names", ["output"])
    torch.onnx.export(model, args, path, opset_version=opset,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      **kwargs)
    return mark_buffers(model, path)


def export(name, path, opset, weights, batch=2, size=16, seed=0):
    torch.manual_seed(seed)
    model = MODELS[name]()
    model.train()
    x = torch.randn(batch, 3, size, size)
    export_training(model, (x,), path, opset)
    if weights:
        # A fresh copy: the export ran the model, which moved its BatchNorm running statistics.
        torch.manual_seed(seed)
        model = MODELS[name]()
        model.train()
        out = model(x)
        out.sum().backward()
        arrays = {"input": x.numpy(), "output": out.detach().numpy()}
        for pname, p in model.named_parameters():
            arrays["grad:" + pname] = p.grad.numpy()
        import numpy
        numpy.savez(os.path.splitext(path)[0] + ".npz", **arrays)


# The smallest input side each torchvision family exports at in training mode (see
# tests/oracle/onnx_coverage.py): adaptive pools export only to a divisor of the plane, auxiliary
# heads and window partitions need planes of their own sizes. Others run at 32.
MIN_SIZES = {"alexnet": 224, "vgg": 224, "googlenet": 64, "inception": 299, "vit": 224,
             "maxvit": 224, "swin": 64}


def segmentation_model(name, num_classes):
    """torchvision.models.segmentation.NAME (fcn_resnet50, deeplabv3_resnet50,
    deeplabv3_mobilenet_v3_large, lraspp_mobilenet_v3_large, ...), untrained, without the
    auxiliary head, its forward returning the 'out' tensor of the dict torchvision returns (the
    export's one output). The forward is replaced on the instance, so parameters keep
    torchvision's names (backbone.conv1.weight, classifier.4.weight)."""
    import inspect
    import types
    import torchvision
    factory = getattr(torchvision.models.segmentation, name, None)
    if factory is None or not callable(factory):
        return None
    kwargs = {"weights": None, "weights_backbone": None, "num_classes": num_classes}
    if "aux_loss" in inspect.signature(factory).parameters:
        kwargs["aux_loss"] = False
    model = factory(**kwargs)
    forward = type(model).forward
    model.forward = types.MethodType(lambda self, x: forward(self, x)["out"], model)
    return model


def export_torchvision(name, path, opset, batch, size, num_classes):
    """Any torchvision classification or segmentation model, as a user would export their own
    network."""
    import torchvision
    torch.manual_seed(0)
    model = segmentation_model(name, num_classes)
    if model is None:
        factory = getattr(torchvision.models, name, None)
        if factory is None or not callable(factory):
            raise SystemExit(f"export_onnx.py: torchvision.models has no model '{name}'")
        model = factory(num_classes=num_classes)
    model.train()
    # StochasticDepth's bernoulli_ has no ONNX form in PyTorch 1.13's training-mode export.
    dropped = [m for m in model.modules() if isinstance(m, torchvision.ops.StochasticDepth)]
    for m in dropped:
        m.p = 0.0
    if dropped:
        print(f"export_onnx.py: {name}: stochastic depth switched off in the export "
              f"({len(dropped)} blocks): PyTorch 1.13 cannot export it in training mode")
    x = torch.randn(batch, 3, size, size)
    try:
        export_training(model, (x,), path, opset)
    except (RuntimeError, ValueError) as e:
        need = MIN_SIZES.get(re.match(r"[a-z]*", name).group(), 32)
        raise SystemExit(f"export_onnx.py: PyTorch cannot run {name} in training mode on an "
                         f"input of [{batch}, 3, {size}, {size}] (try --size {need}): {e}")


def transformer_encoder():
    """The nn.TransformerEncoder of the GPU oracle (../shared/reference/gpu-oracle): six
    TransformerEncoderLayer(512, 8, 2048, dropout=0.1, activation="gelu", batch_first=True)."""
    layer = nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.1, activation="gelu",
                                       batch_first=True)
    return nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)


def export_transformer_encoder(path, opset, batch, seq):
    torch.manual_seed(0)
    model = transformer_encoder().train()
    x = torch.randn(batch, seq, 512)
    export_training(model, (x,), path, opset)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--opset", type=int, default=13)
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--weights", action="store_true")
    parser.add_argument("--only", choices=sorted(MODELS))
    parser.add_argument("--torchvision", metavar="NAME",
                        help="export torchvision.models.NAME instead (resnet18, densenet121, "
                             "mobilenet_v2, ..., or a segmentation model: fcn_resnet50, "
                             "deeplabv3_resnet50, deeplabv3_mobilenet_v3_large, "
                             "lraspp_mobilenet_v3_large) to OUT/NAME.onnx")
    parser.add_argument("--transformer-encoder", action="store_true",
                        help="export the GPU oracle's nn.TransformerEncoder (6 layers of width "
                             "512, 8 heads, GELU, dropout 0.1, batch_first) to "
                             "OUT/transformer_encoder.onnx")
    parser.add_argument("--seq", type=int, default=256,
                        help="with --transformer-encoder: sequence length (default 256)")
    parser.add_argument("--batch", type=int, default=2,
                        help="with --torchvision or --transformer-encoder (default 2)")
    parser.add_argument("--size", type=int, default=64,
                        help="with --torchvision: input height and width (default 64; AlexNet "
                             "and VGG need 224, GoogLeNet a multiple of 64, Inception v3 299, ViT and MaxViT "
                             "224, Swin 64)")
    parser.add_argument("--classes", type=int, default=1000,
                        help="with --torchvision: output classes (default 1000)")
    args = parser.parse_args()
    if args.transformer_encoder:
        path = os.path.join(args.out, "transformer_encoder.onnx")
        export_transformer_encoder(path, args.opset, args.batch, args.seq)
        print(f"{path}: {os.path.getsize(path)} bytes, opset {args.opset}, input "
              f"[{args.batch}, {args.seq}, 512]")
        return
    if args.torchvision:
        path = os.path.join(args.out, args.torchvision + ".onnx")
        export_torchvision(args.torchvision, path, args.opset, args.batch, args.size, args.classes)
        print(f"{path}: {os.path.getsize(path)} bytes, opset {args.opset}, input "
              f"[{args.batch}, 3, {args.size}, {args.size}]")
        return
    for name in MODELS:
        if args.only and name != args.only:
            continue
        path = os.path.join(args.out, name + ".onnx")
        export(name, path, args.opset, args.weights)
        print(f"{path}: {os.path.getsize(path)} bytes, opset {args.opset}")


if __name__ == "__main__":
    main()
