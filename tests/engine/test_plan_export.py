"""Applies exported checkpoint plans to torchvision's model in PyTorch 1.13 and measures them.

usage: test_plan_export.py MODEL_NAME BATCH SIZE CLASSES PLAN.py [PLAN.py ...]
Prints one JSON object per line: first the plain model's bytes saved for backward
(saved_tensors_hooks, distinct storages, parameters and buffers left out), then, per plan in the
order given, the same with the plan applied and whether the gradients are identical to the
plain model's.
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


def measure(model, x):
    out, nbytes = saved_bytes(model, x)
    out.sum().backward()
    return nbytes, [p.grad.clone() for p in model.parameters()]


def main():
    name, batch, size, classes = sys.argv[1:5]
    torch.manual_seed(0)  # as samples/export_onnx.py --torchvision makes the model
    plain = getattr(torchvision.models, name)(num_classes=int(classes))
    plain.train()
    x = torch.randn(int(batch), 3, int(size), int(size))
    # Copies made before any backward: every run starts from the same weights and statistics.
    copies = [copy.deepcopy(plain) for _ in sys.argv[5:]]
    plain_bytes, plain_grads = measure(plain, x)
    print(json.dumps({"plain_saved_bytes": plain_bytes,
                      "parameters": len(plain_grads)}), flush=True)
    for plan_file, model in zip(sys.argv[5:], copies):
        spec = importlib.util.spec_from_file_location("plan", plan_file)
        plan = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(plan)
        nbytes, grads = measure(plan.apply_plan(model), x)
        print(json.dumps({"plan": plan_file, "planned_saved_bytes": nbytes,
                          "gradients_identical": all(
                              torch.equal(a, b) for a, b in zip(plain_grads, grads))}),
              flush=True)


if __name__ == "__main__":
    main()
