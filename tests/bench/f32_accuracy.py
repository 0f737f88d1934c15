#!/usr/bin/python3
"""Float32 gradients against PyTorch's own float32 error, per parameter (issue 15).

    /usr/bin/python3 tests/bench/f32_accuracy.py --cli build/app/cli/ckptlab-cli \
        [--model resnext50_32x4d] [--size 32] [--batch 2] [--worst 8]

Exports the torchvision model in float32 (training mode, as samples/export_onnx.py does), runs
one forward and backward of sum(output) in the engine (ckptlab-cli run --dump) and in PyTorch in
float32 and float64 on the same weights and input, and prints, per parameter,
    ratio = |g_engine32 - g_torch64| / |g_torch32 - g_torch64|      (L2 norms over the tensor)
The goal is ratio <= 10 for every parameter: the engine no further from the exact gradient than
a few times PyTorch's own float32 rounding. Where a ReLU's pre-activation lies within float32
rounding of 0 (DenseNet, VGG, ResNet-34 at small inputs), which side it falls on depends on the
summation order, and PyTorch's own float32 gradients by its other CPU paths (oneDNN off,
channels_last) are as far off; the last line divides by the worst of those instead. Parameters whose PyTorch float32 error is 0 (exact in
both) are skipped. Prints the worst ratios and the count above 10; exit status 0 always.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy
import torch
import torchvision


def torch_grads(model, x, dtype):
    m = model.to(dtype)
    m.train()
    for p in m.parameters():
        p.grad = None
    m(x.to(dtype)).sum().backward()
    return {n: p.grad.detach().double().numpy() for n, p in m.named_parameters()}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--model", default="resnext50_32x4d")
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--worst", type=int, default=8)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(num_classes=10)
    x = torch.randn(args.batch, 3, args.size, args.size)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.onnx")
        torch.onnx.export(model.train(), (x,), path, opset_version=13, input_names=["input"],
                          output_names=["output"], training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        model.load_state_dict(state)  # the export ran the model: undo its BatchNorm updates
        numpy.save(os.path.join(d, "input.npy"), x.numpy())
        dump = os.path.join(d, "dump")
        subprocess.run([args.cli, "run", path, "--input", os.path.join(d, "input.npy"),
                        "--loss", "sum", "--no-baseline", "--threads", "1", "--dump", dump],
                       check=True, stdout=subprocess.DEVNULL)
        ours = {f[:-4]: numpy.load(os.path.join(dump, f)).astype(numpy.float64)
                for f in os.listdir(dump) if f.endswith(".npy")}
    g32 = torch_grads(model, x, torch.float32)
    model.load_state_dict(state)
    # PyTorch's other float32 CPU paths: a ReLU whose pre-activation is within float32 rounding
    # of 0 goes either way depending on the summation order, and moves whole gradients.
    with torch.backends.mkldnn.flags(enabled=False):
        alts = [torch_grads(model, x, torch.float32)]
    model.load_state_dict(state)
    alts.append(torch_grads(model.to(memory_format=torch.channels_last),
                            x.contiguous(memory_format=torch.channels_last), torch.float32))
    model.load_state_dict(state)
    g64 = torch_grads(model, x, torch.float64)
    rows = []
    for name, exact in g64.items():
        key = name.replace("/", "_")
        if key not in ours:
            print(f"f32_accuracy: the engine gave no gradient for {name}", file=sys.stderr)
            continue
        theirs = numpy.linalg.norm(g32[name] - exact)
        if theirs == 0:
            continue
        worst_path = max([theirs] + [numpy.linalg.norm(a[name] - exact) for a in alts])
        rows.append((numpy.linalg.norm(ours[key] - exact) / theirs, name,
                     theirs / max(numpy.linalg.norm(exact), 1e-300),
                     numpy.linalg.norm(ours[key] - exact) / worst_path))
    rows.sort(reverse=True)
    print(f"{args.model}, [{args.batch}, 3, {args.size}, {args.size}], {len(rows)} parameters")
    print(f"{'ratio':>8}  {'torch f32 rel. error':>20}  parameter")
    for ratio, name, rel, _ in rows[:args.worst]:
        print(f"{ratio:8.2f}  {rel:20.3e}  {name}")
    over = sum(1 for r in rows if r[0] > 10)
    median = rows[len(rows) // 2][0] if rows else float("nan")
    print(f"worst {rows[0][0]:.2f}, median {median:.2f}, {over} of {len(rows)} over 10")
    worst_path = max(rows, key=lambda r: r[3])
    print(f"against PyTorch's worst float32 path (default, oneDNN off, channels_last): worst "
          f"{worst_path[3]:.2f} ({worst_path[1]}), {sum(1 for r in rows if r[3] > 10)} over 10")
    return 0


if __name__ == "__main__":
    sys.exit(main())
