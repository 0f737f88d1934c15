"""The PyTorch side of the oracle tests (run by /usr/bin/python3 with Debian's torch 1.13).

A case is a small function written once here and once in C++ (same name, see
oracle_harness.hpp). It declares its tensors through the context `c` — parameters, buffers,
inputs and constants, generated from a fixed seed — and returns its output tensor(s). The
harness then writes, into <out>/<case>/:

  manifest.json          roles, dtypes, tolerances, saved-tensor report, attributes
  <tensor>.npy           every declared tensor as it was before the forward
  out.<i>.npy            the outputs; grad_out.<i>.npy the gradients fed to backward
  grad.<tensor>.npy      the gradient of every tensor that requires grad (absent: None)
  after.<buffer>.npy     buffers after the run (running statistics updated in place)

Saved for backward: every tensor packed through saved_tensors_hooks during the forward,
deduplicated by storage (data_ptr), parameters and buffers excluded, with storage bytes.

A case name "family@variant" is run by the C++ case "family" (read variants from attributes).
"""

import json
import math
import os

import numpy as np
import torch

CASES = {}


def case(name, rtol=1e-4, atol=1e-5, seed=0, compare_saved=True, expect_error=False,
         compare_values=True):
    """Registers a case function f(c) -> output tensor or tuple of output tensors.

    compare_saved=False: the saved bytes are reported but not compared (for cases where an
    outer saved_tensors_hooks cannot see what PyTorch keeps, e.g. inside a checkpoint).
    expect_error=True: the case must raise, in its forward or in backward; the engine must
    throw in the same phase with a message containing PyTorch's.
    compare_values=False: outputs, gradients and buffers are not compared (which tensors have
    gradients, and the saved bytes, still are): for a case whose PyTorch values are no
    reference (the case says why).
    """

    def register(f):
        if name in CASES:
            raise ValueError(f"oracle case {name!r} defined twice")
        CASES[name] = (f, dict(rtol=rtol, atol=atol, seed=seed, compare_saved=compare_saved,
                               expect_error=expect_error, compare_values=compare_values))
        return f

    return register


class Context:
    def __init__(self, name, seed, out_dir):
        self.name = name
        self.out_dir = out_dir
        self.gen = torch.Generator().manual_seed(seed)
        self.tensors = {}  # name -> (tensor, role)
        self.attrs = {}
        self.reports = {}
        self.forward_seed = seed + 1

    # --- declarations -----------------------------------------------------------------
    def _make(self, shape, init, scale, low, high, dtype):
        shape = tuple(shape)
        if init == "randn":
            return torch.randn(shape, generator=self.gen, dtype=dtype) * scale
        if init == "uniform":
            return torch.rand(shape, generator=self.gen, dtype=dtype) * (high - low) + low
        if init == "ones":
            return torch.ones(shape, dtype=dtype)
        if init == "zeros":
            return torch.zeros(shape, dtype=dtype)
        raise ValueError(f"unknown init {init!r}")

    def _declare(self, name, t, role, requires_grad):
        if name in self.tensors:
            raise ValueError(f"{self.name}: tensor {name!r} declared twice")
        if not name.replace("_", "").replace(".", "").isalnum():
            raise ValueError(f"{self.name}: tensor name {name!r} must be alphanumeric")
        t = t.detach().clone()
        _save(os.path.join(self.out_dir, f"{name}.npy"), t)
        if requires_grad:
            t.requires_grad_(True)
        self.tensors[name] = (t, role)
        return t

    def param(self, name, shape, init="randn", scale=1.0, low=-1.0, high=1.0,
              dtype=torch.float32, requires_grad=True):
        """A trainable parameter (excluded from the saved bytes, like model state)."""
        return self._declare(name, self._make(shape, init, scale, low, high, dtype), "param",
                             requires_grad)

    def param_from(self, name, value, requires_grad=True):
        return self._declare(name, torch.as_tensor(value), "param", requires_grad)

    def buffer(self, name, value):
        """Model state without gradient (BatchNorm running stats); compared after the run."""
        return self._declare(name, torch.as_tensor(value), "buffer", False)

    def input(self, name, shape, init="randn", scale=1.0, low=-1.0, high=1.0,
              dtype=torch.float32, requires_grad=True):
        """A model input (counted in the saved bytes when an op saves it)."""
        return self._declare(name, self._make(shape, init, scale, low, high, dtype), "input",
                             requires_grad)

    def input_from(self, name, value, requires_grad=False):
        return self._declare(name, torch.as_tensor(value), "input", requires_grad)

    def const(self, name, value):
        """Data that is not differentiated: integer targets, indices."""
        return self._declare(name, torch.as_tensor(value), "input", False)

    def attr(self, key, value):
        """A scalar or list the C++ side reads (variants of a family of cases)."""
        self.attrs[key] = value
        return value

    def report(self, key, value):
        """A number measured in PyTorch that the C++ case checks itself (c.reported(key))."""
        self.reports[key] = float(value)


def _storage_key(t):
    return t.storage().data_ptr()


def _node_report(roots):
    """grad_fn names and saved-attribute shapes, for diagnostics on a mismatch."""
    seen, order, stack = set(), [], [r.grad_fn for r in roots if r.grad_fn is not None]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        saved = []
        for a in sorted(dir(fn)):
            if not a.startswith("_saved_"):
                continue
            v = getattr(fn, a)
            vs = v if isinstance(v, (tuple, list)) else [v]
            for t in vs:
                if torch.is_tensor(t):
                    saved.append({"attr": a[7:], "shape": list(t.shape), "dtype": str(t.dtype)})
        order.append({"name": type(fn).__name__, "saved": saved})
        for nxt, _ in reversed(fn.next_functions):
            stack.append(nxt)
    return order


def _save(path, t):
    a = t.detach().cpu().numpy()
    # (np.ascontiguousarray would turn a 0-d array into a 1-d one)
    np.save(path, a.copy(order="C"))


def _measure_saved(f, opts, name, d):
    """Runs the forward once under saved_tensors_hooks: what is saved, by distinct storage.

    A separate run, because hooks change PyTorch's semantics: with hooks it skips the check
    that a saved tensor was not modified in place. Returns (saved storages, node report).
    """
    c = Context(name, opts["seed"], d)
    torch.manual_seed(c.forward_seed)
    packed = {}

    def pack(t):
        packed.setdefault(_storage_key(t), (t.storage().nbytes(), t))
        return t

    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            result = f(c)
    except Exception:  # noqa: BLE001 - the main run reports it
        return [], []
    outputs = list(result) if isinstance(result, (tuple, list)) else [result]
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        nodes = _node_report(outputs)
    excluded = {_storage_key(t) for t, role in c.tensors.values() if role in ("param", "buffer")}
    saved = [{"bytes": nbytes, "shape": list(t.shape), "dtype": str(t.dtype)}
             for key, (nbytes, t) in packed.items() if key not in excluded]
    return saved, nodes


def run_case(name, out_dir):
    f, opts = CASES[name]
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    saved, nodes = _measure_saved(f, opts, name, d)

    c = Context(name, opts["seed"], d)
    torch.manual_seed(c.forward_seed)
    error = None

    def caught(phase, e):
        if not opts["expect_error"]:
            raise e
        return {"phase": phase, "type": type(e).__name__, "message": str(e)}

    try:
        result = f(c)
    except Exception as e:  # noqa: BLE001 - an expected error is the case's result
        error = caught("forward", e)
        result = []
    outputs = list(result) if isinstance(result, (tuple, list)) else [result]

    grad_outs = []
    g = torch.Generator().manual_seed(opts["seed"] + 2)
    for o in outputs:
        grad_outs.append(torch.randn(o.shape, generator=g, dtype=o.dtype)
                         if o.is_floating_point() else None)
    diff = [(o, go) for o, go in zip(outputs, grad_outs) if o.requires_grad]
    if diff and error is None:
        try:
            torch.autograd.backward([o for o, _ in diff], [go for _, go in diff])
        except Exception as e:  # noqa: BLE001
            error = caught("backward", e)
    if opts["expect_error"] and error is None:
        raise AssertionError(f"{name}: expected an error, PyTorch raised none")

    manifest = {
        "name": name,
        "rtol": opts["rtol"],
        "atol": opts["atol"],
        "seed": c.forward_seed,
        "attrs": c.attrs,
        "reports": c.reports,
        "compare_saved": opts["compare_saved"],
        "compare_values": opts["compare_values"],
        "tensors": [],
        "outputs": [],
        "saved": {"bytes": sum(s["bytes"] for s in saved), "storages": saved},
        "nodes": nodes,
        "torch": torch.__version__,
        "error": error,
    }
    for tname, (t, role) in c.tensors.items():
        entry = {"name": tname, "role": role, "requires_grad": t.requires_grad,
                 "dtype": str(t.dtype), "shape": list(t.shape), "has_grad": False}
        if t.requires_grad and t.grad is not None:
            _save(os.path.join(d, f"grad.{tname}.npy"), t.grad)
            entry["has_grad"] = True
        if role == "buffer":
            _save(os.path.join(d, f"after.{tname}.npy"), t)
        manifest["tensors"].append(entry)
    for i, (o, go) in enumerate(zip(outputs, grad_outs)):
        _save(os.path.join(d, f"out.{i}.npy"), o)
        if go is not None and o.requires_grad:
            _save(os.path.join(d, f"grad_out.{i}.npy"), go)
        manifest["outputs"].append({"shape": list(o.shape), "dtype": str(o.dtype),
                                    "requires_grad": o.requires_grad})
    with open(os.path.join(d, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=1)


def inv_sqrt(n):
    return 1.0 / math.sqrt(n)
