"""Applies an exported checkpoint plan to torchvision's model in PyTorch 1.13 and measures it.

usage: test_plan_export.py PLAN.py MODEL_NAME BATCH SIZE CLASSES
Prints one JSON object: the bytes saved for backward with the plan applied (saved_tensors_hooks,
distinct storages, parameters and buffers left out), the same without it, and whether the
gradients are identical.
"""
import copy
import importlib.util
import json
import sys

import torch
import torchvision


def saved_bytes(model, x):
    state = {t.data_ptr() for t in list(model.parameters()) + list(model.buffers())}
    packed = {}

    def pack(t):
        ptr = t.storage().data_ptr()
        if ptr not in state:
            packed.setdefault(ptr, t.storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x)
    return out, sum(packed.values())


def main():
    plan_file, name, batch, size, classes = sys.argv[1:6]
    spec = importlib.util.spec_from_file_location("plan", plan_file)
    plan = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plan)
    torch.manual_seed(0)  # as samples/export_onnx.py --torchvision makes the model
    plain = getattr(torchvision.models, name)(num_classes=int(classes))
    plain.train()
    planned = plan.apply_plan(copy.deepcopy(plain))
    x = torch.randn(int(batch), 3, int(size), int(size))
    results = {}
    grads = {}
    for label, model in (("plain", plain), ("planned", planned)):
        out, nbytes = saved_bytes(model, x)
        out.sum().backward()
        results[label + "_saved_bytes"] = nbytes
        grads[label] = [p.grad.clone() for p in model.parameters()]
    results["gradients_identical"] = all(
        torch.equal(a, b) for a, b in zip(grads["plain"], grads["planned"]))
    results["parameters"] = len(grads["plain"])
    print(json.dumps(results))


if __name__ == "__main__":
    main()
