#!/usr/bin/python3
"""torchvision's segmentation models through the engine against PyTorch, in float64.

    /usr/bin/python3 tests/oracle/segmentation_grads.py --cli build/app/cli/ckptlab-cli
                     [--models NAME ...] [--opsets 13 17] [--size 64] [--batch 2]

Each model (samples/export_onnx.py's segmentation_model: untrained, no auxiliary head, the 'out'
tensor) is exported in training mode, run by `ckptlab-cli run --dump` (sum of the output, one
thread) and by PyTorch on the same weights and input, and compared. Dropout is off (no shared
mask) and BatchNorm's eps is the float32 value that the ONNX attribute holds. Per model and
opset it prints the output's largest difference, the largest |g_engine - g_torch| / max |g_torch|
over the parameters (those whose gradient is not 0 but for rounding), and the worst elementwise ratio |g_engine - g_torch| / (1e-7 + 1e-5 |g_torch|)
that test_oracle_onnx holds float64 cases to (<= 1 passes). A report; exit status 0 always.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import warnings

import numpy
import torch

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "samples"))
import export_onnx  # noqa: E402

MODELS = ["fcn_resnet50", "deeplabv3_resnet50", "deeplabv3_mobilenet_v3_large",
          "lraspp_mobilenet_v3_large"]


def compare(name, opset, cli, batch, size):
    torch.manual_seed(1)
    model = export_onnx.segmentation_model(name, 5).double().train()
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
        if isinstance(m, torch.nn.BatchNorm2d):
            m.eps = float(numpy.float32(m.eps))
    x = torch.randn(batch, 3, size, size, dtype=torch.float64)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.onnx")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (x,), path, opset_version=opset, input_names=["input"],
                              output_names=["output"], training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False)
        model.load_state_dict(state)  # the export ran the model: undo its BatchNorm updates
        numpy.save(os.path.join(d, "input.npy"), x.numpy())
        dump = os.path.join(d, "dump")
        subprocess.run([cli, "run", path, "--input", os.path.join(d, "input.npy"), "--loss", "sum",
                        "--no-baseline", "--threads", "1", "--dump", dump], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ours = {f[:-4]: numpy.load(os.path.join(dump, f)) for f in os.listdir(dump)
                if f.endswith(".npy")}
    out = model(x)
    out.sum().backward()
    theirs_out = out.detach().numpy()
    out_diff = numpy.abs(ours["output.output"] - theirs_out).max()
    scale_worst, ratio_worst = (0.0, ""), (0.0, "")
    largest = max(p.grad.abs().max().item() for p in model.parameters())
    for pname, p in model.named_parameters():
        g = p.grad.numpy()
        o = ours[pname.replace("/", "_")]
        diff = numpy.abs(o - g)
        # Parameters whose gradient is 0 but for rounding (a BatchNorm's bias before another
        # BatchNorm) have no scale of their own.
        if numpy.abs(g).max() > 1e-9 * largest:
            scale_worst = max(scale_worst, (diff.max() / numpy.abs(g).max(), pname))
        ratio_worst = max(ratio_worst, ((diff / (1e-7 + 1e-5 * numpy.abs(g))).max(), pname))
    print(f"{name:30s} {opset:5d}  {out_diff:10.2e} ({numpy.abs(theirs_out).max():.1f})  "
          f"{scale_worst[0]:9.2e} {scale_worst[1]:34s}  {ratio_worst[0]:8.3g} {ratio_worst[1]}",
          flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--models", nargs="+", default=MODELS)
    ap.add_argument("--opsets", type=int, nargs="+", default=[13, 17])
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--batch", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"{'model':30s} opset  output diff (max |out|)  "
          f"grad diff / max|g| (worst parameter)          elementwise ratio (worst)")
    for name in args.models:
        for opset in args.opsets:
            compare(name, opset, args.cli, args.batch, args.size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
