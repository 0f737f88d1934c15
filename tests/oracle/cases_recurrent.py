"""Oracle cases for nn.LSTM, nn.GRU and nn.RNN through ONNX (issue 27).

Each case runs the torch.nn module itself (its parameters replaced by the case's declared
tensors, so that they are excluded from the saved bytes and receive the gradients) and exports
the same module, with the same weights, to ONNX at test time (training mode, constant folding
off, as samples/export_onnx.py does) at opset 13 or 17. The C++ half (cases_recurrent.cpp)
loads that file with the ONNX importer and runs it: outputs (y, h_n and c_n), gradients and the
bytes saved for backward must be PyTorch 1.13's on the CPU.

PyTorch exports each layer as its own LSTM/GRU/RNN node with its weights reordered by Slice and
Concat; batch_first as a Transpose around them; initial states as Slices of h0 and c0; a packed
batch (pack_padded_sequence) as sequence_lens. The packed batch is the one case whose saved
bytes differ, and the case says why (recurrent_packed below).
"""

import os

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from oracle_harness import case, inv_sqrt

STEPS, BATCH, FEATURES, HIDDEN = 6, 3, 5, 4


class Layer(nn.Module):
    """The module under test as `rnn`, returning its output and final states."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, *state):
        hx = None if not state else state[0] if len(state) == 1 else tuple(state)
        y, h = self.rnn(x, hx)
        return (y, *h) if isinstance(h, tuple) else (y, h)


class PackedLayer(nn.Module):
    """A padded batch with its lengths, packed around the module as users write it."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, lengths):
        y, (h, c) = self.rnn(pack_padded_sequence(x, lengths, enforce_sorted=True))
        return pad_packed_sequence(y, total_length=x.shape[0])[0], h, c


def declare(c, module):
    """The module's parameters as declared tensors (PyTorch's own uniform(±1/√H) init), put in
    the module's place; returns them by name."""
    k = inv_sqrt(module.hidden_size)
    weights = {}
    for name, p in list(module.named_parameters()):
        t = c.param(f"rnn.{name}", list(p.shape), init="uniform", low=-k, high=k)
        del module._parameters[name]
        setattr(module, name, t)  # RNNBase.__setattr__ updates _flat_weights
        weights[name] = t
    return weights


def export(c, wrapper, kind, kwargs, weights, args, input_names, opset):
    """A fresh module with the same weights, exported to <case dir>/model.onnx."""
    fresh = wrapper(getattr(nn, kind)(FEATURES, HIDDEN, **kwargs))
    path = os.path.join(c.out_dir, "model.onnx")
    with torch.no_grad():
        for name, p in fresh.rnn.named_parameters():
            p.copy_(weights[name])
        torch.onnx.export(fresh, tuple(a.detach() for a in args), path, opset_version=opset,
                          input_names=input_names, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
    c.attr("onnx", path)


def run_recurrent(c, kind, opset, layers=1, bidirectional=False, batch_first=False,
                  states=False, **extra):
    kwargs = dict(num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, **extra)
    module = getattr(nn, kind)(FEATURES, HIDDEN, **kwargs)
    weights = declare(c, module)
    x = c.input("x", [BATCH, STEPS, FEATURES] if batch_first else [STEPS, BATCH, FEATURES])
    args, names = [x], ["x"]
    if states:
        shape = [layers * (2 if bidirectional else 1), BATCH, HIDDEN]
        for name in ("h0", "c0") if kind == "LSTM" else ("h0",):
            args.append(c.input(name, shape))
            names.append(name)
    export(c, Layer, kind, kwargs, weights, args, names, opset)
    return Layer(module)(*args)


# One factory per family, so that each case's name starts with its op kind.
def lstm_case(variant, **kw):
    @case(f"lstm@{variant}")
    def f(c):
        return run_recurrent(c, "LSTM", **kw)


def gru_case(variant, **kw):
    @case(f"gru@{variant}")
    def f(c):
        return run_recurrent(c, "GRU", **kw)


def rnn_case(variant, **kw):
    @case(f"rnn@{variant}")
    def f(c):
        return run_recurrent(c, "RNN", **kw)


for opset in (13, 17):
    for family in (lstm_case, gru_case, rnn_case):
        family(f"two_layers_bidirectional_opset{opset}", opset=opset, layers=2,
               bidirectional=True)
        family(f"states_batch_first_opset{opset}", opset=opset, batch_first=True, states=True)
rnn_case("relu_states_opset13", opset=13, states=True, nonlinearity="relu")
lstm_case("no_bias_bidirectional_states_opset17", opset=17, layers=2, bidirectional=True,
          states=True, bias=False)


def saved_bytes(forward, excluded):
    """What `forward()` saves for backward: distinct storages, `excluded` left out."""
    seen = {}

    def pack(t):
        seen.setdefault(t.storage().data_ptr(), t.storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        forward()
    return sum(n for ptr, n in seen.items() if ptr not in excluded)


@case("lstm@packed_opset13", compare_saved=False)
def recurrent_packed(c):
    """A padded batch packed by lengths: ONNX's sequence_lens. The outputs, final states and
    gradients are PyTorch's; the bytes are not, and cannot be from the ONNX file. PyTorch's
    packed path runs each step on the sequences still going (a shrinking batch) and keeps the
    packed copy of the input, its batch sizes and index tensors; the export has none of that,
    only an LSTM node over the padded batch with sequence_lens, which the engine runs as nn.LSTM
    runs the padded batch. The C++ half checks that its bytes are exactly PyTorch's for the
    padded batch (reported here as padded_saved_bytes), and the manifest holds the packed
    path's for comparison."""
    module = nn.LSTM(FEATURES, HIDDEN)
    weights = declare(c, module)
    x = c.input("x", [STEPS, BATCH, FEATURES])
    lengths = c.const("lengths", torch.tensor([STEPS, 4, 2]))
    export(c, PackedLayer, "LSTM", {}, weights, [x, lengths], ["x", "lengths"], 13)
    c.attr("padded", True)
    excluded = {t.data_ptr() for t in weights.values()}
    c.report("padded_saved_bytes", saved_bytes(lambda: module(x), excluded))
    return PackedLayer(module)(x, lengths)


def onnx_layout_model(path, kind, directions, hidden, with_state):
    """One LSTM or GRU node whose W, R and B are initializers in ONNX's layout (as another
    exporter writes them, or PyTorch's with constant folding on): no Slice to read back, so the
    engine takes direction d's rows where they are, in ONNX's gate order."""
    import onnx
    from onnx import TensorProto, helper

    gates = 4 if kind == "LSTM" else 3
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [STEPS, BATCH, FEATURES])]
    node_inputs = ["x", "W", "R", "B", "", "h0" if with_state else ""]
    if with_state:
        inputs.append(helper.make_tensor_value_info("h0", TensorProto.FLOAT,
                                                    [directions, BATCH, hidden]))
    outputs = ["y", "y_h"] + (["y_c"] if kind == "LSTM" else [])
    attrs = dict(hidden_size=hidden, direction="bidirectional" if directions == 2 else "forward")
    if kind == "GRU":
        attrs["linear_before_reset"] = 1
    node = helper.make_node(kind, node_inputs, outputs, name=f"/rnn/{kind}", **attrs)
    shapes = {"W": [directions, gates * hidden, FEATURES], "R": [directions, gates * hidden, hidden],
              "B": [directions, 2 * gates * hidden]}
    inits = [helper.make_tensor(n, TensorProto.FLOAT, s, [0.0] * int(torch.Size(s).numel()))
             for n, s in shapes.items()]
    graph = helper.make_graph([node], "onnx_layout", inputs,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                               for o in outputs], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                ir_version=7), path)
    return shapes


def onnx_layout_case(kind):
    @case(f"{kind.lower()}@onnx_layout_bidirectional_opset13", compare_saved=False)
    def f(c):
        """PyTorch needs the rows in its own gate order: it runs nn.LSTM on reordered copies of
        W, R and B (torch.cat, which it then saves), where the engine reads the rows in place;
        saved bytes are compared in C++ against the same case in PyTorch's layout
        (reported: native_saved_bytes)."""
        directions, hidden = 2, HIDDEN
        path = os.path.join(c.out_dir, "model.onnx")
        shapes = onnx_layout_model(path, kind, directions, hidden, with_state=True)
        c.attr("onnx", path)
        c.attr("native", True)
        k = inv_sqrt(hidden)
        w = {n: c.param(n, s, init="uniform", low=-k, high=k) for n, s in shapes.items()}
        x = c.input("x", [STEPS, BATCH, FEATURES])
        h0 = c.input("h0", [directions, BATCH, hidden])
        gates = 4 if kind == "LSTM" else 3
        # PyTorch's block p is ONNX's block order[p]: LSTM i f g o from i o f c; GRU r z n from
        # z r h.
        order = [0, 2, 3, 1] if kind == "LSTM" else [1, 0, 2]

        def rows(t):
            return torch.cat([t[b * hidden:(b + 1) * hidden] for b in order])

        module = getattr(nn, kind)(FEATURES, hidden, bidirectional=True)
        flat = {}
        for d, suffix in enumerate(("", "_reverse")):
            flat[f"weight_ih_l0{suffix}"] = rows(w["W"][d])
            flat[f"weight_hh_l0{suffix}"] = rows(w["R"][d])
            flat[f"bias_ih_l0{suffix}"] = rows(w["B"][d][:gates * hidden])
            flat[f"bias_hh_l0{suffix}"] = rows(w["B"][d][gates * hidden:])
        for name, t in flat.items():
            del module._parameters[name]
            setattr(module, name, t)
        hx = (h0, torch.zeros_like(h0)) if kind == "LSTM" else h0
        c.report("native_saved_bytes",
                 saved_bytes(lambda: module(x, hx), {t.data_ptr() for t in flat.values()}))
        y, h = module(x, hx)
        y = y.view(STEPS, BATCH, directions, hidden).transpose(1, 2)
        return (y, *h) if isinstance(h, tuple) else (y, h)


onnx_layout_case("LSTM")
onnx_layout_case("GRU")
