#!/usr/bin/python3
"""Video and speech networks, forward + backward: the engine against PyTorch 1.13 on the same
machine, the same threads and the same weights (issue 38). Printed, never asserted.

    /usr/bin/python3 tests/bench/bench_nd.py --cli build/app/cli/ckptlab-cli
        [--models r3d_18 wav2vec_fe] [--threads 1,2] [--iters 3] [--warmup 1]
        [--batch 8 --frames 16 --size 112] [--seconds 10]

r3d_18: torchvision's R3D-18 (400 classes) on batch x 3 x frames x size x size clips
(default 8 x 3 x 16 x 112 x 112, as it is trained). wav2vec_fe: wav2vec 2.0's convolutional
feature extractor at its own width (512, seven Conv1d, LayerNorm over the channels and GELU:
the "layer_norm" mode of wav2vec2-large) on `seconds` of 16 kHz audio (default 10 s), batch 1.
Each model is exported to ONNX in float32, training mode (as samples/export_onnx.py does);
PyTorch runs the module itself, sum(output).backward(); the engine runs the file through
`ckptlab-cli run --loss sum --no-baseline --json` and reports its own forward and backward wall
times (its dry run before and the load are not timed). Medians over --iters after --warmup.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy
import torch

sys.dont_write_bytecode = True
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "oracle"))
warnings.filterwarnings("ignore")


def build(name, args):
    torch.manual_seed(0)
    if name == "r3d_18":
        import torchvision.models.video
        model = torchvision.models.video.r3d_18(weights=None)
        x = torch.randn(args.batch, 3, args.frames, args.size, args.size)
        what = f"R3D-18, {args.batch} x 3 x {args.frames} x {args.size} x {args.size}"
    elif name == "wav2vec_fe":
        from nd_models_oracle import Wav2VecFeatureExtractor
        model = Wav2VecFeatureExtractor(width=512)
        x = torch.randn(1, int(16000 * args.seconds))
        what = f"wav2vec 2.0 feature extractor (width 512), {args.seconds:g} s of 16 kHz audio"
    else:
        raise SystemExit(f"bench_nd: unknown model {name!r}")
    return model.train(), x, what


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])


def torch_ms(model, x, threads, warmup, iters):
    torch.set_num_threads(threads)
    times = []
    for i in range(warmup + iters):
        for p in model.parameters():
            p.grad = None
        t = time.perf_counter()
        model(x).sum().backward()
        if i >= warmup:
            times.append(1e3 * (time.perf_counter() - t))
    return median(times)


def engine_ms(cli, path, x_path, threads, warmup, iters):
    times = []
    for i in range(warmup + iters):
        r = subprocess.run([cli, "run", path, "--input", x_path, "--loss", "sum", "--no-baseline",
                            "--threads", str(threads), "--json"], capture_output=True, text=True)
        if r.returncode != 0:
            lines = (r.stderr.strip() or r.stdout.strip()).splitlines() or [f"exit {r.returncode}"]
            raise RuntimeError(lines[-1][:300])
        t = json.loads(r.stdout)["times_ms"]
        if i >= warmup:
            times.append(t["forward"] + t["backward"])
    return median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--models", nargs="+", default=["r3d_18", "wav2vec_fe"])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--frames", type=int, default=16)
    ap.add_argument("--size", type=int, default=112)
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",") if t]
    print("bench_nd: forward + backward, median of", args.iters, "after", args.warmup, "warm-up")
    load = os.getloadavg()[0]
    print(f"machine load {load:.2f} on {os.cpu_count()} cores (a loaded machine distorts both)")
    with tempfile.TemporaryDirectory() as d:
        for name in args.models:
            model, x, what = build(name, args)
            path, x_path = os.path.join(d, name + ".onnx"), os.path.join(d, name + ".npy")
            state = {k: v.clone() for k, v in model.state_dict().items()}
            torch.onnx.export(model, (x,), path, opset_version=13, input_names=["input"],
                              training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False)
            model.load_state_dict(state)  # the export ran the model: BatchNorm's updates undone
            numpy.save(x_path, x.numpy())
            print(what)
            for t in threads:
                try:
                    ours = engine_ms(args.cli, path, x_path, t, args.warmup, args.iters)
                except RuntimeError as e:
                    print(f"  {t} thread(s): engine failed: {e}")
                    continue
                theirs = torch_ms(model, x, t, args.warmup, args.iters)
                print(f"  {t} thread(s): engine {ours:10.1f} ms   PyTorch {theirs:10.1f} ms   "
                      f"ratio {ours / theirs:5.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
