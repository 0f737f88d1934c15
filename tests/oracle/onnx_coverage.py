#!/usr/bin/python3
"""Which ONNX op types do real models need that the engine does not translate?

    /usr/bin/python3 tests/oracle/onnx_coverage.py [--opsets 13 17] [--all] [--segmentation]
                                                   [--only NAME ...] [--cli build/app/cli/ckptlab-cli]

Exports every torchvision 0.14 classification model (one or two of each family by default,
every size with --all) and a few nn.Transformer / nn.TransformerEncoder / nn.MultiheadAttention
models with torch.onnx.export in training mode, as samples/export_onnx.py does, collects each
graph's op types and prints those the engine's op table does not have. With --segmentation, the
models are torchvision's segmentation models instead (FCN, DeepLabV3, LR-ASPP; no auxiliary
head, the 'out' tensor, as samples/export_onnx.py --torchvision exports them) at 2x3x64x64. The engine's list is
samples/README.md's "Supported op types" (test_engine_op_table keeps it equal to
OpTable::onnx_types()). With --cli, each export is also loaded by `ckptlab-cli modules` (a dry
run of one forward and backward) and the last column says whether it loads, or why not.

Input sizes are the smallest that each architecture accepts in training mode (printed per model):
most run at 32x32; AlexNet and VGG need 224x224 (their adaptive pools to 6x6 and 7x7 export only
when the plane is a multiple of it), GoogLeNet a multiple of 64 (its auxiliary heads pool the
stride-16 plane to 4x4), Inception v3 299x299 (its auxiliary head's 5x5 pool and 5x5 convolution need a 17x17 plane),
ViT and MaxViT 224x224 (ViT's position embedding is sized for it; MaxViT's window partitions need
224 / 32 = 7), Swin 64x64 (its windows are padded to 7x7). Models with stochastic depth
(EfficientNet, ConvNeXt, Swin, MaxViT) export with it off: PyTorch 1.13 has no ONNX form of its
bernoulli_ in training mode.
Exit status 0 always: this is a report, not a test.
"""
import argparse
import io
import os
import re
import subprocess
import sys
import tempfile
import warnings

import onnx
import torch
import torch.nn as nn
import torchvision

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# name -> input side; the defaults cover each family (their sizes share op types).
DEFAULT = {
    "alexnet": 224, "vgg11": 224, "vgg11_bn": 224, "resnet18": 32, "resnet50": 32,
    "resnext50_32x4d": 32, "wide_resnet50_2": 32, "densenet121": 32, "mobilenet_v2": 32,
    "mobilenet_v3_small": 32, "mobilenet_v3_large": 32, "squeezenet1_0": 32, "squeezenet1_1": 32,
    "efficientnet_b0": 32, "efficientnet_v2_s": 32, "shufflenet_v2_x0_5": 32, "mnasnet0_5": 32,
    "googlenet": 64, "inception_v3": 299, "convnext_tiny": 32, "regnet_x_400mf": 32,
    "regnet_y_400mf": 32, "vit_b_16": 224, "swin_t": 64, "swin_v2_t": 64, "maxvit_t": 224,
}
# Too big to export in one protobuf (over 2 GB) or too slow on a 2-core machine.
SKIP_IN_ALL = {"vit_h_14", "regnet_y_128gf", "vit_l_16", "vit_l_32", "regnet_y_32gf"}


def torchvision_models(everything):
    if not everything:
        return dict(DEFAULT)
    names = torchvision.models.list_models(module=torchvision.models)
    sizes = {}
    for n in names:
        if n in SKIP_IN_ALL:
            continue
        family = re.sub(r"[_]?(\d.*|b\d|v2_[sml]|x\d.*)$", "", n)
        sizes[n] = DEFAULT.get(n, next((s for d, s in DEFAULT.items() if d.startswith(family)), 32))
    return sizes


class MhaModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 4, dropout=0.1, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


class EncoderModel(nn.Module):
    def __init__(self, norm_first, activation):
        super().__init__()
        layer = nn.TransformerEncoderLayer(16, 4, 32, 0.1, activation, batch_first=True,
                                           norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16))

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.encoder(x, mask=mask)


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = nn.Transformer(16, 4, 1, 1, 32, 0.1, batch_first=True)

    def forward(self, src, tgt):
        mask = self.t.generate_square_subsequent_mask(tgt.shape[1])
        return self.t(src, tgt, tgt_mask=mask)


def transformer_models():
    x = lambda: torch.randn(2, 6, 16)
    return {
        "nn.MultiheadAttention": (MhaModel, lambda: (x(),)),
        "nn.TransformerEncoder (post-LN, relu)": (lambda: EncoderModel(False, "relu"), lambda: (x(),)),
        "nn.TransformerEncoder (pre-LN, gelu)": (lambda: EncoderModel(True, "gelu"), lambda: (x(),)),
        "nn.Transformer": (Seq2Seq, lambda: (x(), torch.randn(2, 5, 16))),
    }


def without_stochastic_depth(model):
    for m in model.modules():
        if isinstance(m, torchvision.ops.StochasticDepth):
            m.p = 0.0
    return model


def supported_ops():
    with open(os.path.join(ROOT, "samples", "README.md")) as f:
        doc = f.read()
    at = doc.index("Supported op types: ")
    listed = doc[at:doc.index(". A file", at)]
    return set(re.findall(r"\b([A-Z][A-Za-z]+)\b(?=[,. ]|$)", listed)) - {"Supported", "PyTorch"}


def op_types(model, args, opset, cli):
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, buf, opset_version=opset,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    graph = onnx.load_from_string(buf.getvalue()).graph
    return {n.op_type for n in graph.node}, loads(buf.getvalue(), cli) if cli else ""


def loads(data, cli):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.onnx")
        with open(path, "wb") as f:
            f.write(data)
        r = subprocess.run([cli, "modules", path], capture_output=True, text=True)
    if r.returncode == 0:
        return "  [loads]"
    why = (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
    return "  [does not load: " + why.replace(path, "model.onnx")[:160] + "]"


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--opsets", type=int, nargs="+", default=[13, 17])
    parser.add_argument("--all", action="store_true", help="every torchvision classifier")
    parser.add_argument("--segmentation", action="store_true",
                        help="torchvision's segmentation models instead")
    parser.add_argument("--only", nargs="+", help="these models only (names as printed)")
    parser.add_argument("--cli", help="ckptlab-cli: also load each export (modules, a dry run)")
    args = parser.parse_args()
    supported = supported_ops()
    jobs = {}
    if args.segmentation:
        sys.path.insert(0, os.path.join(ROOT, "samples"))
        import export_onnx
        names = torchvision.models.list_models(module=torchvision.models.segmentation)
        for name in names:
            jobs[name] = ("[2, 3, 64, 64]",
                          lambda n=name: export_onnx.segmentation_model(n, 21),
                          lambda: (torch.randn(2, 3, 64, 64),))
    for name, side in {} if args.segmentation else torchvision_models(args.all).items():
        factory = getattr(torchvision.models, name)
        jobs[name] = (f"[2, 3, {side}, {side}]",
                      lambda f=factory: f(num_classes=10),
                      lambda s=side: (torch.randn(2, 3, s, s),))
    for name, (make, inputs) in {} if args.segmentation else transformer_models().items():
        jobs[name] = ("[2, 6, 16]" + (", [2, 5, 16]" if name == "nn.Transformer" else ""),
                      make, inputs)
    missing_all = {}
    print(f"{'model':40s} {'input':22s} opset  missing op types")
    for name, (shape, make, inputs) in jobs.items():
        if args.only and name not in args.only:
            continue
        for opset in args.opsets:
            torch.manual_seed(0)
            note = ""
            try:
                try:
                    ops, loaded = op_types(make().train(), inputs(), opset, args.cli)
                except RuntimeError as e:
                    # StochasticDepth's bernoulli_(p) has no ONNX export in training mode: the
                    # model exports with it switched off (as export_onnx.py --torchvision does).
                    if "Bernoulli" not in str(e):
                        raise
                    ops, loaded = op_types(without_stochastic_depth(make().train()), inputs(),
                                           opset, args.cli)
                    note = " (stochastic_depth_prob=0)"
            except Exception as e:  # noqa: BLE001 - the report names any failure
                print(f"{name:40s} {shape:22s} {opset:5d}  export failed: {str(e)[:90]}")
                continue
            missing = sorted(ops - supported)
            for op in missing:
                missing_all.setdefault(op, set()).add(name)
            print(f"{name:40s} {shape:22s} {opset:5d}  {', '.join(missing) or '-'}{note}{loaded}",
                  flush=True)
    print("\nmissing op type: models that need it")
    for op, models in sorted(missing_all.items()):
        print(f"  {op}: {', '.join(sorted(models))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
