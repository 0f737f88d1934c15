"""Runs the PyTorch code Checkpoint Lab wrote for a model, on Checkpoint Lab's weights and inputs.

    /usr/bin/python3 test_model_pytorch_code.py CASE_DIR

CASE_DIR holds code.py (pytorch_code's output), case.json (parameter and input names, loss),
param_<i>.npy and input_<i>.npy. Writes loss.npy, grad_<i>.npy for every parameter that got a
gradient, and warnings.txt (the texts PyTorch warned). With "optimizer" in case.json, the code's
make_optimizer(model) steps once after backward: stepped_<i>.npy is each stepped parameter.
"""
import importlib.util
import json
import os
import sys
import warnings

import numpy
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True


def main():
    d = sys.argv[1]
    case = json.load(open(os.path.join(d, "case.json")))
    spec = importlib.util.spec_from_file_location("generated", os.path.join(d, "code.py"))
    generated = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generated)  # the usage part is under __main__: not run
    torch.set_num_threads(1)
    model = generated.build_model()
    state = {name: torch.from_numpy(numpy.load(os.path.join(d, f"param_{i}.npy")))
             for i, name in enumerate(case["parameters"])}
    model.load_state_dict(state, strict=True)
    model.train()
    # The generated make_optimizer(), made before the forward as a training loop makes it.
    optimizer = generated.make_optimizer(model) if case.get("optimizer") else None
    inputs = []
    for i, spec_in in enumerate(case["inputs"]):
        t = torch.from_numpy(numpy.load(os.path.join(d, f"input_{i}.npy")))
        if spec_in["requires_grad"]:
            t.requires_grad_(True)
        inputs.append(t)
    model_inputs = [t for t, s in zip(inputs, case["inputs"]) if not s["target"]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = model(*model_inputs)
        outs = out if isinstance(out, tuple) else (out,)
        if case["loss"] == "cross_entropy":
            loss = F.cross_entropy(outs[0], inputs[-1])
        elif case["loss"] == "mean":
            loss = outs[0].mean()
        else:
            loss = sum(o.sum() for o in outs)
        loss.backward()
    numpy.save(os.path.join(d, "loss.npy"), loss.detach().numpy())
    params = dict(model.named_parameters())
    for i, name in enumerate(case["parameters"]):
        p = params.get(name)
        if p is not None and p.grad is not None:
            numpy.save(os.path.join(d, f"grad_{i}.npy"), p.grad.numpy())
    if optimizer is not None:
        optimizer.step()
        for i, name in enumerate(case["parameters"]):
            p = params.get(name)
            if p is not None and p.grad is not None:
                numpy.save(os.path.join(d, f"stepped_{i}.npy"), p.detach().numpy())
    with open(os.path.join(d, "warnings.txt"), "w") as fh:
        fh.write("\n".join(str(w.message) for w in caught))


if __name__ == "__main__":
    main()
