"""ckptlab_capture: record a PyTorch model's training forward as PyTorch runs it, for Checkpoint Lab.

    import ckptlab_capture
    ckptlab_capture.capture(model, (x,), "model.capture.json")

    python3 -m ckptlab_capture pkg.module:factory --input 8x3x224x224 -o model.capture.json

One training-mode forward (and the loss, when one is given) runs under a TorchDispatchMode, which
sees every ATen op as PyTorch dispatched it, after autograd's decompositions: the ops whose
backward autograd records, with their inputs, outputs, shapes, strides, dtypes and storages. By
default the run is on meta tensors (no memory, no arithmetic: a 70B-parameter model costs nothing);
with weights=True it runs on the model's own tensors and stores the values of the parameters,
buffers and inputs, so that Checkpoint Lab's gradients can be compared with PyTorch's.

The file's format is docs/capture_format.md of Checkpoint Lab ("format": "ckptlab-capture",
"version": 1). This file needs nothing but torch; it runs on PyTorch 1.13 and 2.x, whose
differences are kept in the one section marked "Compatibility" below.
"""

import argparse
import base64
import contextlib
import importlib
import inspect
import json
import math
import os
import shutil
import subprocess
import sys

import torch

FORMAT = "ckptlab-capture"
VERSION = 1

__all__ = ["capture", "CaptureError", "FORMAT", "VERSION"]


class CaptureError(Exception):
    """A capture that cannot be written: unsupported ops (check=True), or bad arguments."""


# --------------------------------------------------------------------------------------------
# Compatibility: PyTorch 1.13 and 2.x. Every difference between them that this file meets is
# here, named; nothing below this section asks which version runs.
# --------------------------------------------------------------------------------------------
_TORCH_MAJOR = int(torch.__version__.split(".")[0])

# 1.13 and 2.x: the dispatch mode's base class lives in the same private module (the one
# MemTracker and the SAC estimator use in 2.x).
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils._pytree import tree_flatten  # noqa: E402


def _functional_call(module, tensors, args, kwargs):
    """2.x: torch.func.functional_call; 1.13: torch.nn.utils.stateless.functional_call."""
    if hasattr(torch, "func") and hasattr(torch.func, "functional_call"):
        return torch.func.functional_call(module, tensors, tuple(args), kwargs)
    from torch.nn.utils import stateless
    return stateless.functional_call(module, tensors, tuple(args), kwargs)


_FACTORIES = ("empty", "zeros", "ones", "full", "rand", "randn", "randint", "arange", "linspace",
              "eye", "tensor", "empty_strided", "zeros_like", "ones_like", "empty_like",
              "full_like", "rand_like", "randn_like", "as_tensor", "logspace", "tril_indices",
              "triu_indices")


@contextlib.contextmanager
def _default_device(device):
    """Tensors made inside are made on `device` unless their maker names one. 2.x: the documented
    `with torch.device(...)`; 1.13 has no such context, so a TorchFunctionMode gives the factory
    functions the device."""
    if _TORCH_MAJOR >= 2:
        with torch.device(device):
            yield
        return
    from torch.overrides import TorchFunctionMode

    class _Factories(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if getattr(func, "__name__", "") in _FACTORIES and kwargs.get("device") is None:
                kwargs["device"] = device
            return func(*args, **kwargs)

    with _Factories():
        yield


def _fake_cuda_mode():
    """2.x, a capture standing for CUDA without weights: a FakeTensorMode
    (torch._subclasses.fake_tensor.FakeTensorMode, the mode torch.export and the SAC estimator
    run models under), in which tensors made with device="cuda" are fake CUDA tensors. Ops then
    dispatch as on CUDA — F.scaled_dot_product_attention to the fused kernel sdp_utils picks
    (_scaled_dot_product_efficient_attention, _flash_, _cudnn_), or the math path's ops — with
    meta arithmetic and no GPU memory. Written against the documented API; not run here (no 2.x
    is installed). 1.13 has no such path: None, and the capture runs on meta as for the CPU."""
    if _TORCH_MAJOR < 2:
        return None
    from torch._subclasses.fake_tensor import FakeTensorMode
    return FakeTensorMode(allow_non_fake_inputs=True)


def _holds_values(t):
    """Whether a tensor has values to store: not meta, and not a 2.x fake tensor."""
    if t.device.type == "meta":
        return False
    if _TORCH_MAJOR >= 2:
        from torch._subclasses.fake_tensor import FakeTensor
        return not isinstance(t, FakeTensor)
    return True


def _without_meta_kernel(func, args, kwargs):
    """An op with no meta kernel in 1.13 (max_pool3d_with_indices): run on CPU zeros of the same
    shapes, its outputs replaced by meta tensors of theirs. Costs that op's CPU memory once. Not
    for ops whose output shape depends on values (repeat_interleave without output_size, which
    1.13's meta refuses with a RuntimeError: the capture stops there)."""
    from torch.utils._pytree import tree_map

    def to_cpu(t):
        if not isinstance(t, torch.Tensor):
            return t
        return torch.zeros(t.shape, dtype=t.dtype)

    def to_meta(t):
        if not isinstance(t, torch.Tensor):
            return t
        return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")

    kwargs = dict(kwargs)
    if "device" in kwargs:
        kwargs["device"] = torch.device("cpu")
    return tree_map(to_meta, func(*tree_map(to_cpu, list(args)), **tree_map(to_cpu, kwargs)))


def _int(value):
    """A size: a Python int (2.x may hand a SymInt)."""
    return int(value)


def _arg_default(argument):
    """A schema argument's default, or _MISSING. 1.13 and 2.x: has_default_value() and
    default_value on torch._C.Argument."""
    if argument.has_default_value():
        return argument.default_value
    return _MISSING


def _alias_sets(info):
    """The alias sets of a schema's alias annotation ("Tensor(a!)"): before_set in both."""
    return set(info.before_set) if info is not None else set()


# --------------------------------------------------------------------------------------------
# The recording.
# --------------------------------------------------------------------------------------------
_MISSING = object()
# The most elements of a constant (a tensor the forward made on the CPU, or took from outside)
# whose values a capture without weights stores.
_CONSTANT_VALUES_MAX = 65536


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


class _Recorder(TorchDispatchMode):
    def __init__(self, names, module_stack, weights, target="meta"):
        super().__init__()
        self.target = torch.device(target)  # where a capture without weights runs its ops
        self.names = names  # id(tensor) -> ("parameter"|"buffer"|"input", name)
        self.module_stack = module_stack
        self.weights = weights
        self.values = []  # the tensors table
        self.value_of = {}  # id(tensor) -> value id (the latest version of an in-place tensor)
        self.storage_of = {}  # value id -> storage id
        self.keep = []  # every tensor seen, so that ids are not reused during the capture
        self.ops = []
        self.sources = {"parameter": [], "buffer": [], "input": [], "constant": []}
        self.next_storage = 0
        self.twins = {}  # id(non-meta tensor) -> (it, its meta twin), on a capture on meta

    def _new_value(self, t, storage):
        vid = len(self.values)
        self.values.append({
            "id": vid,
            "shape": [_int(s) for s in t.shape],
            "stride": [_int(s) for s in t.stride()],
            "offset": _int(t.storage_offset()),
            "dtype": _dtype_name(t.dtype),
            "storage": storage,
            "requires_grad": bool(t.requires_grad),
        })
        self.value_of[id(t)] = vid
        self.storage_of[vid] = storage
        self.keep.append(t)
        return vid

    def _fresh_storage(self):
        self.next_storage += 1
        return self.next_storage - 1

    def value(self, t):
        """The value id of a tensor read by an op: one made earlier, or a source seen now."""
        vid = self.value_of.get(id(t))
        if vid is not None:
            return vid
        vid = self._new_value(t, self._fresh_storage())
        kind, name = self.names.get(id(t), ("constant", "constant_%d" % len(self.sources["constant"])))
        entry = {"name": name, "value": vid}
        if kind == "parameter":
            entry["requires_grad"] = bool(t.requires_grad)
        if self.weights or (kind == "constant" and _holds_values(t) and
                            t.numel() <= _CONSTANT_VALUES_MAX):
            entry["data"] = _encode_data(t)
        elif kind == "constant" and _holds_values(t):
            # A capture without weights runs dry only: a big constant's shape is enough, and the
            # file says that its values were left out.
            entry["data_omitted"] = "%d elements (more than %d)" % (t.numel(), _CONSTANT_VALUES_MAX)
        self.sources[kind].append(entry)
        return vid

    def encode(self, x):
        if isinstance(x, torch.Tensor):
            return {"t": self.value(x)}
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, int):
            return x
        if isinstance(x, float):
            return x if math.isfinite(x) else {"float": repr(x)}
        if isinstance(x, (list, tuple)):
            return [self.encode(v) for v in x]
        if isinstance(x, torch.dtype):
            return {"dtype": _dtype_name(x)}
        if isinstance(x, torch.device):
            return {"device": str(x)}
        try:
            return _int(x)  # a SymInt (2.x)
        except (TypeError, ValueError):
            return {"enum": str(x)}

    def _twin(self, t):
        """A meta tensor standing for `t`, a tensor not on meta that meets the capture's meta
        tensors (one the forward made on the CPU with torch.tensor, or took from outside): the
        same value id, and `t`'s values recorded in the file as a constant's."""
        if not isinstance(t, torch.Tensor) or not _holds_values(t):
            return t
        seen = self.twins.get(id(t))
        if seen is not None and seen[0] is t:
            return seen[1]
        vid = self.value(t)
        twin = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=self.target)
        self.value_of[id(twin)] = vid
        self.keep.append(twin)
        self.twins[id(t)] = (t, twin)
        return twin

    def _on_meta(self, func, args, kwargs):
        """A capture on meta tensors runs every op on meta: a factory the forward calls without
        a device (nn.Transformer.generate_square_subsequent_mask's torch.full, a padding mask's
        torch.zeros) makes a meta tensor, and a tensor from elsewhere is swapped for its twin.
        The file records the arguments as the forward gave them."""
        args = [self._twin(a) if isinstance(a, torch.Tensor) else
                [self._twin(x) for x in a] if isinstance(a, (list, tuple)) and a and
                isinstance(a[0], torch.Tensor) else a for a in args]
        kwargs = {k: self._twin(v) for k, v in kwargs.items()}
        if any(a.name == "device" for a in func._schema.arguments):
            kwargs["device"] = self.target
        return args, kwargs

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.weights:
            out = func(*args, **kwargs)
        else:
            run_args, run_kwargs = self._on_meta(func, args, kwargs)
            try:
                out = func(*run_args, **run_kwargs)
            except NotImplementedError:
                if self.target.type != "meta":
                    raise
                out = _without_meta_kernel(func, run_args, run_kwargs)
        schema = func._schema
        name = schema.name
        named = {}
        alias_source = {}  # alias set -> value id of the argument that carries it
        for i, a in enumerate(schema.arguments):
            if i < len(args) and not a.kwarg_only:
                v = args[i]
            elif a.name in kwargs:
                v = kwargs[a.name]
            else:
                v = _arg_default(a)
                if v is _MISSING:
                    continue
            named[a.name] = self.encode(v)
            if isinstance(v, torch.Tensor):
                for s in _alias_sets(a.alias_info):
                    alias_source[s] = self.value_of[id(v)]
            elif isinstance(v, (list, tuple)) and v and isinstance(v[0], torch.Tensor):
                for s in _alias_sets(a.alias_info):
                    alias_source[s] = self.value_of[id(v[0])]
        results, _ = tree_flatten(out)
        returns = list(schema.returns)
        out_ids = []
        for k, r in enumerate(results):
            if not isinstance(r, torch.Tensor):
                out_ids.append(None)
                continue
            ret = returns[min(k, len(returns) - 1)] if returns else None
            storage = None
            for s in _alias_sets(ret.alias_info if ret is not None else None):
                if s in alias_source:
                    storage = self.storage_of[alias_source[s]]
            out_ids.append(self._new_value(r, self._fresh_storage() if storage is None else storage))
        self.ops.append({
            "op": name,
            "overload": func._overloadname,
            "module": self.module_stack[-1],
            "args": named,
            "outputs": out_ids,
        })
        return out


def _encode_data(t):
    t = t.detach()
    if t.dtype not in (torch.float32, torch.float64, torch.int64, torch.bool):
        raise CaptureError("weights=True stores float32, float64, int64 and bool values; a %s "
                           "tensor of shape %s is %s: capture without weights for a dry run" % (
                               "source", list(t.shape), _dtype_name(t.dtype)))
    return base64.b64encode(t.contiguous().cpu().numpy().tobytes()).decode("ascii")


class _ModuleTree:
    """Forward pre- and post-hooks: a stack of module instances. Each call of a module is its own
    instance, named by its state_dict path, "_<k>" after its k-th call within the same parent.
    Containers that are never called (ModuleList, ModuleDict) are listed as the path's steps."""

    def __init__(self, model):
        self.stack = [""]
        self.definition_of = {"": ""}  # instance path -> definition
        self.instances = []
        self.calls = {}  # (parent instance, definition) -> calls so far
        self.handles = []
        self.modules = dict(model.named_modules())
        # The class as the user wrote it (functional_call may swap classes while it runs).
        self.classes = {n: type(m).__name__ for n, m in self.modules.items()}
        for definition, module in self.modules.items():
            if definition == "":
                continue
            self.handles.append(module.register_forward_pre_hook(self._enter(definition)))
            self.handles.append(module.register_forward_hook(self._leave))

    def _list(self, path, definition, instance):
        self.definition_of[path] = definition
        self.instances.append({"path": path, "definition": definition,
                               "class": self.classes.get(definition, "Module"),
                               "instance": instance})

    def _enter(self, definition):
        def hook(mod, inputs):
            parent = self.stack[-1]
            parent_definition = self.definition_of[parent]
            inside = parent_definition and definition.startswith(parent_definition + ".")
            local = definition[len(parent_definition) + 1:] if inside else definition
            steps = local.split(".")
            path, step_definition = parent, parent_definition if inside else ""
            for step in steps[:-1]:
                path = path + "." + step if path else step
                step_definition = step_definition + "." + step if step_definition else step
                if path not in self.definition_of:
                    self._list(path, step_definition, 0)
            k = self.calls.get((parent, definition), 0)
            self.calls[(parent, definition)] = k + 1
            last = steps[-1] + ("_%d" % k if k else "")
            path = path + "." + last if path else last
            self._list(path, definition, k)
            self.stack.append(path)
        return hook

    def _leave(self, mod, inputs, output):
        self.stack.pop()

    def remove(self):
        for h in self.handles:
            h.remove()


def _input_names(model, count):
    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[:count]]
    return names + ["input_%d" % i for i in range(len(names), count)]


def _supported_ops(check):
    """The ATen ops Checkpoint Lab translates: from a file of names (one a line), or from
    `ckptlab-cli capture-ops` ($CKPTLAB_CLI, else on PATH)."""
    if isinstance(check, (str, os.PathLike)) and os.path.isfile(check):
        with open(check) as fh:
            return {line.strip() for line in fh if line.strip()}
    cli = os.environ.get("CKPTLAB_CLI") or shutil.which("ckptlab-cli")
    if not cli:
        raise CaptureError("check=True needs ckptlab-cli (on PATH or in $CKPTLAB_CLI), or give "
                           "check= a file listing the supported ATen ops (ckptlab-cli capture-ops)")
    text = subprocess.run([cli, "capture-ops"], check=True, capture_output=True, text=True).stdout
    return {line.strip() for line in text.splitlines() if line.strip()}


def capture(model, args, path, kwargs=None, *, device=None, weights=False, loss=None, check=False):
    """Run one training-mode forward of `model` on `args` (a tensor or a tuple of them) and
    `kwargs`, plus `loss(output)` when given, and write what PyTorch dispatched to `path`.

    device   the device the capture stands for ("cpu", "cuda"); default: the parameters'.
    weights  False: run on meta tensors (nothing computed, any size); True: run on the model's
             own tensors and store parameter, buffer and input values.
    loss     a function of the output returning a scalar; None: the sum of the output, the
             loss Checkpoint Lab uses by default (nothing of it is recorded).
    check    True (or a file of names): raise CaptureError listing the ops Checkpoint Lab cannot
             translate, before writing anything.
    Returns the capture as a dict."""
    if not isinstance(args, tuple):
        args = (args,)
    kwargs = dict(kwargs or {})
    state = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    first = next(iter(list(state.values()) + list(buffers.values())), None)
    if device is None:
        device = first.device.type if first is not None and first.device.type != "meta" else "cpu"

    # Without weights the ops run on meta tensors, or on fake CUDA tensors where 2.x can stand
    # for CUDA (the kernels CUDA picks are then the ones recorded).
    fake = _fake_cuda_mode() if not weights and str(device).startswith("cuda") else None
    target = "cuda" if fake is not None else "meta"
    entered = fake if fake is not None else contextlib.nullcontext()

    def prepare(t, requires_grad):
        if weights:
            if t.device.type == "meta":
                raise CaptureError("weights=True needs a model with real tensors, not meta ones")
            return t
        with entered:
            m = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=target)
        return m.requires_grad_(requires_grad) if t.is_floating_point() else m

    tensors, names = {}, {}
    for n, p in state.items():
        tensors[n] = prepare(p, p.requires_grad)
        names[id(tensors[n])] = ("parameter", n)
    for n, b in buffers.items():
        tensors[n] = prepare(b.detach().clone() if weights else b, False)  # the model's own stay
        names[id(tensors[n])] = ("buffer", n)
    flat_args, spec = tree_flatten((args, kwargs))
    run_args = [prepare(a, a.requires_grad) if isinstance(a, torch.Tensor) else a
                for a in flat_args]
    tensor_args = [a for a in run_args if isinstance(a, torch.Tensor)]
    for a, name in zip(tensor_args, _input_names(model, len(tensor_args))):
        names[id(a)] = ("input", name)
    from torch.utils._pytree import tree_unflatten
    run_args, run_kwargs = tree_unflatten(run_args, spec)

    was_training = model.training
    model.train()
    tree = _ModuleTree(model)
    recorder = _Recorder(names, tree.stack, weights, target)
    try:
        with torch.enable_grad():
            for a in tensor_args:  # every input is a source, in the order of the arguments
                recorder.value(a)
            with entered, recorder:
                output = _functional_call(model, tensors, run_args, run_kwargs)
                loss_value = loss(output) if loss is not None else None
            outputs = [t for t in tree_flatten(output)[0] if isinstance(t, torch.Tensor)]
            output_ids = [recorder.value_of.get(id(t), None) for t in outputs]
            if any(v is None for v in output_ids):
                output_ids = [recorder.value(t) for t in outputs]
            loss_entry = {"kind": "sum"}
            if loss_value is not None:
                loss_entry = {"kind": "model", "value": recorder.value(loss_value)}
    finally:
        tree.remove()
        model.train(was_training)

    doc = {
        "format": FORMAT,
        "version": VERSION,
        "torch": torch.__version__,
        "device": str(device),
        "captured_on": "real" if weights else "fake" if fake is not None else "meta",
        "model": type(model).__name__,
        "inputs": recorder.sources["input"],
        "parameters": recorder.sources["parameter"],
        "buffers": recorder.sources["buffer"],
        "constants": recorder.sources["constant"],
        "modules": tree.instances,
        "values": recorder.values,
        "ops": recorder.ops,
        "outputs": output_ids,
        "loss": loss_entry,
    }
    # Parameters and buffers the forward never read are still the model's state.
    read = {e["name"] for e in doc["parameters"] + doc["buffers"]}
    for n, t in tensors.items():
        if n not in read:
            kind = "parameter" if n in state else "buffer"
            vid = recorder._new_value(t, recorder._fresh_storage())
            entry = {"name": n, "value": vid}
            if kind == "parameter":
                entry["requires_grad"] = bool(t.requires_grad)
            if weights:
                entry["data"] = _encode_data(t)
            doc[kind + "s"].append(entry)
    if check:
        supported = _supported_ops(check)
        missing = {}
        for op in doc["ops"]:
            if op["op"] not in supported:
                missing.setdefault(op["op"], op["module"] or "<root>")
        if missing:
            raise CaptureError("Checkpoint Lab cannot translate these ATen ops (PyTorch %s): %s" % (
                torch.__version__, ", ".join("%s (first in %s)" % kv for kv in sorted(missing.items()))))
    with open(path, "w") as fh:
        json.dump(doc, fh, separators=(",", ":"))
    return doc


# --------------------------------------------------------------------------------------------
# The command line: a model built by a function.
# --------------------------------------------------------------------------------------------
def _shape(text):
    try:
        return [int(s) for s in text.lower().split("x")]
    except ValueError:
        raise argparse.ArgumentTypeError("a shape is sizes joined by x, as 8x3x224x224: " + text)


def _int_input(text):
    shape, _, high = text.partition(":")
    if not high:
        raise argparse.ArgumentTypeError("an integer input is SHAPE:HIGH, as 1x8192:128256")
    return _shape(shape), int(high)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m ckptlab_capture",
                                description="Capture a model built by FACTORY for Checkpoint Lab.")
    p.add_argument("factory", help="pkg.module:function returning an nn.Module")
    p.add_argument("--input", action="append", type=_shape, default=[],
                   help="a float input's shape, as 8x3x224x224 (repeatable, in order)")
    p.add_argument("--input-int", action="append", type=_int_input, default=[],
                   help="an integer input SHAPE:HIGH, values in [0, HIGH), as 1x8192:128256")
    p.add_argument("-o", "--output", required=True, help="the capture file to write")
    p.add_argument("--device", default=None, help="the device the capture stands for")
    p.add_argument("--weights", action="store_true",
                   help="build the model on the CPU and store its weights (small models)")
    p.add_argument("--check", action="store_true",
                   help="list the ops Checkpoint Lab cannot translate before writing")
    a = p.parse_args(argv)
    module_name, _, function = a.factory.partition(":")
    if not function:
        p.error("FACTORY is pkg.module:function")
    sys.path.insert(0, os.getcwd())
    make = getattr(importlib.import_module(module_name), function)
    if a.weights:
        model = make()
        inputs = [torch.randn(*s) for s in a.input] + [torch.randint(0, h, s) for s, h in a.input_int]
    else:
        with _default_device("meta"):  # the model is never materialised
            model = make()
        inputs = [torch.empty(*s, device="meta") for s in a.input] + [
            torch.empty(*s, dtype=torch.int64, device="meta") for s, _ in a.input_int]
    if not inputs:
        p.error("give the model's inputs with --input and --input-int")
    try:
        doc = capture(model, tuple(inputs), a.output, device=a.device, weights=a.weights,
                      check=a.check)
    except CaptureError as e:
        print("ckptlab_capture: " + str(e), file=sys.stderr)
        return 1
    if a.input_int:
        ints = [e for e in doc["inputs"] if doc["values"][e["value"]]["dtype"] == "int64"]
        for entry, (_, high) in zip(ints, a.input_int):
            entry["classes"] = high
        with open(a.output, "w") as fh:
            json.dump(doc, fh, separators=(",", ":"))
    print("%s: %d ops, %d modules, %d parameters (PyTorch %s)" % (
        a.output, len(doc["ops"]), len(doc["modules"]), len(doc["parameters"]), torch.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
