#!/usr/bin/python3
"""The optimizer oracle (issue 31): torch.optim in PyTorch 1.13 against the engine's optimizer.

    optim_oracle.py steps DIR    writes step cases: parameters, three steps' gradients, and the
                                 parameters and state torch.optim leaves after each step
    optim_oracle.py check DIR    checks training steps the engine ran (DIR/<case>/: settings,
                                 parameters before, gradients, parameters and state after) by
                                 running torch.optim's step on the same parameters and gradients;
                                 writes DIR/<case>/result.json

Each case is a directory of .npy files and a manifest.json. The for-loop implementation is what
PyTorch 1.13 runs by default (foreach=None); foreach=True is the implementation PyTorch 2.x runs
by default on CUDA (1.13's differs from 2.x's in Adam's first moment only in rounding: mul_ and
add_ there, lerp_ in 2.x).
"""
import json
import os
import sys

import numpy as np
import torch

KINDS = ("sgd", "momentum", "adam", "adamw")
STATE_NAMES = ("momentum_buffer", "exp_avg", "exp_avg_sq", "step")


def make_optimizer(kind, params, lr, weight_decay, foreach):
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=weight_decay, foreach=foreach)
    if kind == "momentum":
        return torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=weight_decay,
                               foreach=foreach)
    if kind == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, foreach=foreach)
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, foreach=foreach)


def save(path, t):
    np.save(path, t.detach().to(torch.float32).contiguous().numpy()
            if t.dtype in (torch.float16, torch.bfloat16) else t.detach().contiguous().numpy())


def save_state(d, prefix, opt, params):
    for i, p in enumerate(params):
        for name, v in opt.state[p].items():
            if torch.is_tensor(v):
                save(os.path.join(d, f"{prefix}.state{i}.{name}.npy"), v)


def steps(out):
    torch.manual_seed(31)
    shapes = [[4, 3], [5], [2, 3, 2], [1]]
    cases = []
    for kind in KINDS:
        for impl in ("for_loop", "foreach"):
            for wd in (None, 0.05):
                name = f"{kind}_{impl}" + ("" if wd is None else "_wd")
                lr = {"sgd": 0.1, "momentum": 0.05, "adam": 0.01, "adamw": 0.02}[kind]
                d = os.path.join(out, name)
                os.makedirs(d, exist_ok=True)
                params = [torch.randn(s, dtype=torch.float32, requires_grad=True) for s in shapes]
                for i, p in enumerate(params):
                    save(os.path.join(d, f"param{i}.npy"), p)
                weight_decay = wd if wd is not None else (0.01 if kind == "adamw" else 0.0)
                opt = make_optimizer(kind, params, lr, weight_decay, impl == "foreach")
                for s in range(3):
                    for i, p in enumerate(params):
                        g = torch.randn(p.shape)
                        if i == 2:  # a strided gradient: the engine reads any layout
                            g = torch.randn(list(reversed(p.shape))).permute(2, 1, 0)
                        p.grad = g
                        save(os.path.join(d, f"step{s}.grad{i}.npy"), g)
                    opt.step()
                    for i, p in enumerate(params):
                        save(os.path.join(d, f"step{s}.param{i}.npy"), p)
                    save_state(d, f"step{s}", opt, params)
                json.dump({"kind": kind, "implementation": impl, "lr": lr,
                           "weight_decay": wd, "params": len(params), "steps": 3},
                          open(os.path.join(d, "manifest.json"), "w"))
                cases.append(name)
    open(os.path.join(out, "index.txt"), "w").write("\n".join(cases) + "\n")


def worst(ours, theirs, atol, rtol):
    a = ours.astype(np.float64).reshape(-1)
    b = theirs.astype(np.float64).reshape(-1)
    if a.shape != b.shape:
        return float("inf")
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b) / (atol + rtol * np.abs(b))))


def check(out):
    for name in open(os.path.join(out, "index.txt")).read().split():
        d = os.path.join(out, name)
        m = json.load(open(os.path.join(d, "manifest.json")))
        params, names = [], m["parameters"]
        for i, _ in enumerate(names):
            params.append(torch.tensor(np.load(os.path.join(d, f"before{i}.npy")), requires_grad=True))
        opt = make_optimizer(m["kind"], params, m["lr"], m["weight_decay"], False)
        for i, p in enumerate(params):
            gp = os.path.join(d, f"grad{i}.npy")
            if os.path.exists(gp):
                p.grad = torch.tensor(np.load(gp))
        opt.step()
        result = {"worst": 0.0, "compared": 0, "failures": []}
        for i, p in enumerate(params):
            got = np.load(os.path.join(d, f"after{i}.npy"))
            w = worst(got, p.detach().numpy(), 1e-7, 1e-5)
            result["compared"] += 1
            result["worst"] = max(result["worst"], w)
            if w > 1:
                result["failures"].append(f"{names[i]}: worst {w:.3g}")
            # Plain SGD keeps momentum_buffer None: no state.
            state = {k: v for k, v in opt.state.get(p, {}).items() if v is not None}
            for sname in STATE_NAMES:
                path = os.path.join(d, f"state{i}.{sname}.npy")
                if sname in state and not os.path.exists(path):
                    result["failures"].append(f"{names[i]}: the engine has no state '{sname}'")
                if os.path.exists(path) and sname not in state:
                    result["failures"].append(f"{names[i]}: PyTorch has no state '{sname}'")
                if sname in state and os.path.exists(path):
                    w = worst(np.load(path), state[sname].detach().reshape(-1).numpy()
                              if sname != "step" else state[sname].reshape(()).numpy(), 1e-7, 1e-5)
                    result["compared"] += 1
                    result["worst"] = max(result["worst"], w)
                    if w > 1:
                        result["failures"].append(f"{names[i]}.{sname}: worst {w:.3g}")
        json.dump(result, open(os.path.join(d, "result.json"), "w"))


if __name__ == "__main__":
    {"steps": steps, "check": check}[sys.argv[1]](sys.argv[2])
