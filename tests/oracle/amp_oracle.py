#!/usr/bin/python3
"""Mixed-precision runs against PyTorch 1.13's CPU autocast (issue 31).

    amp_oracle.py export DIR   writes DIR/resnet18.onnx: torchvision's ResNet-18 (10 classes) at
                               2 x 3 x 32 x 32, exported in training mode (weights by name)
    amp_oracle.py run DIR      for every case DIR/<case>/ the engine wrote (case.json, the
                               parameters and inputs as .npy, code.py for a native sample): the
                               same model, weights and inputs in PyTorch, forward and loss under
                               torch.autocast("cpu", dtype=torch.bfloat16), backward outside it;
                               writes result.json and loss.npy, grad_<i>.npy

result.json holds what the engine's run is checked against:
  saved_bytes   bytes saved for backward when the forward ends, by distinct storage, parameters,
                buffers and model inputs excluded (the engine's "saved for backward" figure)
  saved         those storages as [dtype, numel], sorted
  casts         every aten._to_copy of the forward and loss (autocast's casts and `.float()`),
                as [from dtype, to dtype, numel], sorted
"""
import importlib.util
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

sys.dont_write_bytecode = True

DTYPES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16",
          torch.float64: "float64", torch.int64: "int64", torch.bool: "bool"}


class Casts(TorchDispatchMode):
    """Records every _to_copy below autocast: what it casts, to what, how many elements."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.ops.aten._to_copy.default:
            self.calls.append([DTYPES[args[0].dtype], DTYPES[out.dtype], args[0].numel()])
        return out


def export(out):
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10).train()
    x = torch.randn(2, 3, 32, 32)
    torch.onnx.export(model, (x,), os.path.join(out, "resnet18.onnx"), opset_version=13,
                      input_names=["input"], output_names=["output"],
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)


def build(d, case):
    if case["model"] == "torchvision:resnet18":
        import torchvision
        return torchvision.models.resnet18(num_classes=10)
    spec = importlib.util.spec_from_file_location("generated", os.path.join(d, "code.py"))
    generated = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generated)
    return generated.build_model()


def load(d, case):
    model = build(d, case)
    state = {name: torch.from_numpy(np.load(os.path.join(d, f"param_{i}.npy")))
             for i, name in enumerate(case["parameters"])}
    missing = model.load_state_dict(state, strict=False).missing_keys
    missing = [k for k in missing if not k.endswith("num_batches_tracked")]
    if missing:
        raise RuntimeError(f"{d}: no weights for {missing}")
    return model.train()


def loss_of(case, outs, inputs):
    if case["loss"] == "cross_entropy":
        return F.cross_entropy(outs[0], inputs[-1])
    if len(outs) == 1:
        return outs[0].float().sum()
    return sum(o.float().sum() for o in outs)


def save_step(d, case, model, loss, suffix=""):
    """loss<suffix>.npy and grad<suffix>_<i>.npy per parameter of the case that got a gradient."""
    np.save(os.path.join(d, f"loss{suffix}.npy"), loss.detach().numpy())
    params = dict(model.named_parameters())
    for i, name in enumerate(case["parameters"]):
        p = params.get(name)
        if p is not None and p.grad is not None:
            np.save(os.path.join(d, f"grad{suffix}_{i}.npy"), p.grad.numpy())


def float32_reference(d, case, inputs):
    """The same step without autocast: grad32_<i>.npy and loss32.npy (a reference for values
    where PyTorch's own bfloat16 ones are not one)."""
    model = load(d, case)
    model_inputs = [t for t, s in zip(inputs, case["inputs"]) if not s["target"]]
    out = model(*model_inputs)
    loss = loss_of(case, out if isinstance(out, tuple) else (out,), inputs)
    loss.backward()
    save_step(d, case, model, loss, "32")


def run_case(d):
    case = json.load(open(os.path.join(d, "case.json")))
    torch.set_num_threads(1)
    model = load(d, case)
    inputs = [torch.from_numpy(np.load(os.path.join(d, f"input_{i}.npy")))
              for i in range(len(case["inputs"]))]
    model_inputs = [t for t, s in zip(inputs, case["inputs"]) if not s["target"]]
    excluded = {t.storage().data_ptr() for t in list(model.parameters()) + list(model.buffers())}
    excluded |= {t.storage().data_ptr() for t in inputs}
    packed = {}

    def pack(t):
        key = t.storage().data_ptr()
        if key not in excluded:
            packed.setdefault(key, (t.storage().nbytes(), DTYPES[t.dtype], t.storage().size()))
        return t

    casts = Casts()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), casts:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(*model_inputs)
            loss = loss_of(case, out if isinstance(out, tuple) else (out,), inputs)
    loss.backward()
    save_step(d, case, model, loss)
    float32_reference(d, case, inputs)
    result = {"saved_bytes": sum(b for b, _, _ in packed.values()),
              "saved": sorted([dt, n] for _, dt, n in packed.values()),
              "casts": sorted(casts.calls)}
    json.dump(result, open(os.path.join(d, "result.json"), "w"))


def run(out):
    for name in open(os.path.join(out, "index.txt")).read().split():
        run_case(os.path.join(out, name))


if __name__ == "__main__":
    {"export": export, "run": run}[sys.argv[1]](sys.argv[2])
