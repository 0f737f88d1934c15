"""Capture bench (issue 37): printed, never asserted.

    /usr/bin/python3 tests/bench/capture_bench.py --cli build/app/cli/ckptlab-cli
        ResNet-50 and ViT-B/16 at 8 x 3 x 224 x 224, and a Llama-family decoder at Llama 3 8B's
        sizes at 1 x 8,192 tokens, each captured on meta by `python3 -m ckptlab_capture` (a fresh
        process: its wall time and peak RSS), the file's size, and `ckptlab-cli run --dry-run`
        on it (open plus dry run: wall time, peak RSS, the dry run's peak).
    /usr/bin/python3 tests/bench/capture_bench.py --cli ... --saved [MODEL ...]
        docs/model_coverage.md's capture column: every torchvision classifier and nn.Transformer
        model of tests/oracle/category_grads.py (or those named: also segmentation.NAME and
        video.NAME; big ones one at a time), captured on meta from PyTorch
        1.13: the engine's activations at the end of the forward over what the eager module keeps
        for backward (category_grads.eager_saved_bytes: parameters, buffers and inputs excluded),
        or the load error.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..", "..")
sys.path.insert(0, os.path.join(root, "resources", "python"))
sys.path.insert(0, os.path.join(root, "tests", "oracle"))


def timed(cmd, env=None):
    """(seconds, peak RSS in bytes, stdout, stderr) of a child process."""
    t = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out, err = p.communicate()
    seconds = time.time() - t
    # The peak RSS of this child alone: ru_maxrss of the children so far is their maximum, so
    # run each measured command in a process of its own through /usr/bin/time when present.
    return seconds, p.returncode, out, err


def measure(cmd, env=None):
    if os.path.exists("/usr/bin/time"):
        seconds, rc, out, err = timed(["/usr/bin/time", "-f", "CKPTLAB_RSS_KB %M"] + cmd, env)
        rss = [int(line.split()[1]) * 1024 for line in err.splitlines()
               if line.startswith("CKPTLAB_RSS_KB")]
        return seconds, rc, out, err, rss[-1] if rss else 0
    seconds, rc, out, err = timed(cmd, env)
    return seconds, rc, out, err, 0


def mib(n):
    return "%.0f MiB" % (n / 2**20)


def sizes(cli, work):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(root, "resources", "python"),
                                         os.path.join(root, "tests", "oracle"),
                                         env.get("PYTHONPATH", "")])
    cases = [("ResNet-50", "torchvision.models:resnet50", ["--input", "8x3x224x224"]),
             ("ViT-B/16", "torchvision.models:vit_b_16", ["--input", "8x3x224x224"]),
             ("Llama 8B decoder", "capture_models:llama_8b", ["--input-int", "1x8192:128256"])]
    print("%-18s %10s %10s %10s %12s %10s %14s" % ("model", "capture", "RSS", "file", "open+dry",
                                                  "RSS", "dry peak"))
    for title, factory, inputs in cases:
        path = os.path.join(work, factory.split(":")[1] + ".capture.json")
        s, rc, out, err, rss = measure([sys.executable, "-m", "ckptlab_capture", factory] +
                                       inputs + ["-o", path], env)
        if rc != 0:
            print("%-18s capture failed: %s" % (title, err.strip().splitlines()[-1]))
            continue
        s2, rc2, out2, err2, rss2 = measure([cli, "run", path, "--dry-run", "--no-baseline",
                                             "--json"])
        peak = json.loads(out2)["peak"]["bytes"] if rc2 == 0 else 0
        print("%-18s %9.2fs %10s %9.0fK %11.2fs %10s %14s" % (
            title, s, mib(rss), os.path.getsize(path) / 1024, s2, mib(rss2),
            "{:,}".format(peak) if rc2 == 0 else "failed"), flush=True)


def saved(cli, work, names):
    import torch
    import category_grads
    import ckptlab_capture
    torch.set_num_threads(1)
    names = names or category_grads.all_models()
    rows = []
    for name in names:
        try:
            model, shapes = category_grads.build(name)
            torch.manual_seed(1)
            xs = [torch.randn(*s) for s in shapes]
            state = category_grads.saved_state(model)
            path = os.path.join(work, name + ".capture.json")
            ckptlab_capture.capture(model, tuple(xs), path)
            model.load_state_dict(state)
            eager = category_grads.eager_saved_bytes(model, xs)
            ours = category_grads.engine_saved_bytes(cli, path, 600)
            cell = "%.3f" % (ours / eager) if eager else "-"
        except Exception as e:  # a load error is the answer for that model
            cell = "error: " + str(e).splitlines()[-1][:160]
            ours = eager = 0
        rows.append((name, "x".join(map(str, shapes[0])) if shapes else "", cell))
        print(json.dumps({"model": name, "engine": ours, "eager": eager, "capture": cell}),
              flush=True)
    print("\n| model | input | saved, capture / eager |\n|---|---|---|")
    for r in rows:
        print("| %s | %s | %s |" % r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--saved", nargs="*", default=None)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        if a.saved is None:
            sizes(os.path.abspath(a.cli), work)
        else:
            saved(os.path.abspath(a.cli), work, a.saved)


if __name__ == "__main__":
    main()
