"""Capture oracle (issue 37): models captured by ckptlab_capture from PyTorch 1.13, against the
same models run eagerly.

    /usr/bin/python3 tests/oracle/capture_oracle.py OUT_DIR [CASE ...]

OUT_DIR/<case>/ holds
  model.capture.json  captured with weights=True (float32)
  meta.capture.json   captured on meta tensors (no weights), the same model
  input.npy           the input
  grad64__<param>.npy the gradients of sum(output) in float64 (the same weights and input)
  case.json           saved: what the eager module keeps for backward (saved_tensors_hooks:
                      distinct storages, parameters and buffers excluded, as
                      fusion_oracle.eager_saved counts them); float32_error: per parameter,
                      PyTorch's own float32 distance from float64 (L2; the worst of its CPU paths,
                      tests/bench/f32_accuracy.py's rule); grads: whether gradients are compared
                      (not with dropout, whose masks are drawn apart).
OUT_DIR/index.txt lists the cases.
"""
import json
import os
import sys
import warnings

import numpy
import torch
import torch.nn as nn

sys.dont_write_bytecode = True
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "..", "resources", "python"))
import capture_models  # noqa: E402
import ckptlab_capture  # noqa: E402
from fusion_oracle import eager_saved  # noqa: E402

warnings.filterwarnings("ignore")


def cases():
    """name -> (make model, make input, gradients compared)."""
    import torchvision

    def encoder(dropout):
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout, batch_first=True)
        return nn.TransformerEncoder(layer, 2)

    img = lambda side: torch.randn(2, 3, side, side)  # noqa: E731
    return {
        "small_cnn": (capture_models.SmallCnn, lambda: img(16), True),
        "resnet18": (lambda: torchvision.models.resnet18(num_classes=10), lambda: img(64), True),
        "transformer_encoder": (lambda: encoder(0.0), lambda: torch.randn(2, 6, 16), True),
        "transformer_encoder_dropout": (lambda: encoder(0.1), lambda: torch.randn(2, 6, 16),
                                        False),
        "llama": (capture_models.llama_small, lambda: torch.randint(0, 64, (2, 8)), True),
        # Masks the forward builds (full, triu, zeros, slice assignments, comparisons,
        # masked_fill): a CPU mask meets the meta tensors of a capture without weights.
        "causal_encoder": (capture_models.CausalEncoder, lambda: torch.randn(2, 6, 16), True),
        "mha_bool_padding": (lambda: capture_models.MaskedMha(False), lambda: torch.randn(2, 6, 16),
                             True),
        "mha_float_padding": (lambda: capture_models.MaskedMha(True),
                              lambda: torch.randn(2, 6, 16), True),
        "swin_block": (capture_models.swin_block, lambda: torch.randn(2, 8, 8, 16), True),
        "gpt_block": (capture_models.GptBlock, lambda: torch.randn(2, 8, 16), True),
        # Convolutions and pools over 3 dims (the video networks).
        "video3d": (capture_models.Video3d, lambda: torch.randn(2, 3, 4, 8, 8), True),
    }


def grads(model, x, dtype, memory_format=None):
    m = model.to(dtype)
    xs = x.to(dtype) if x.is_floating_point() else x
    if memory_format is not None:
        m = m.to(memory_format=memory_format)
        xs = xs.contiguous(memory_format=memory_format)
    m.zero_grad()
    m(xs).sum().backward()
    return {n: p.grad.detach().double().numpy().copy() for n, p in m.named_parameters()}


def write_case(out_dir, name):
    make, make_input, compare = cases()[name]
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(37)
    model = make()
    if name == "resnet18":
        nn.init.normal_(model.fc.weight, 0, 0.1)  # zero-initialised residual ends stay so
    model.train()
    x = make_input()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    ckptlab_capture.capture(model, (x,), os.path.join(d, "model.capture.json"), weights=True)
    ckptlab_capture.capture(model, (x,), os.path.join(d, "meta.capture.json"))
    model.load_state_dict(state)
    saved = eager_saved(model, x, 0)
    numpy.save(os.path.join(d, "input.npy"), x.numpy())
    errors = {}
    if compare:
        model.load_state_dict(state)
        g32 = grads(model, x, torch.float32)
        model.load_state_dict(state)
        alt = (grads(model, x, torch.float32, torch.channels_last) if x.dim() == 4 else g32)
        model.load_state_dict(state)
        g64 = grads(model, x, torch.float64)
        for pname, exact in g64.items():
            numpy.save(os.path.join(d, "grad64__" + pname + ".npy"), exact)
            errors[pname] = max(float(numpy.linalg.norm(g32[pname] - exact)),
                                float(numpy.linalg.norm(alt[pname] - exact)))
    with open(os.path.join(d, "case.json"), "w") as fh:
        json.dump({"saved": saved, "float32_error": errors, "grads": compare}, fh, indent=1)
    return name


def check_lists_unsupported_ops(out_dir):
    """capture(check=FILE) names the ops missing from FILE and their first module, and writes
    nothing; with every op listed it writes the capture."""
    names = os.path.join(out_dir, "supported.txt")
    torch.manual_seed(0)
    model, x = capture_models.SmallCnn(), torch.randn(2, 3, 16, 16)
    path = os.path.join(out_dir, "checked.capture.json")
    ops = {op["op"] for op in ckptlab_capture.capture(model, (x,), path)["ops"]}
    os.remove(path)
    with open(names, "w") as fh:
        fh.write("\n".join(sorted(ops - {"aten::convolution"})) + "\n")
    try:
        ckptlab_capture.capture(model, (x,), path, check=names)
        raise AssertionError("check=... accepted an op missing from the list")
    except ckptlab_capture.CaptureError as e:
        assert "aten::convolution (first in stem.0)" in str(e), str(e)
        assert "PyTorch " + torch.__version__ in str(e), str(e)
    assert not os.path.exists(path), "check=... wrote the capture anyway"
    with open(names, "a") as fh:
        fh.write("aten::convolution\n")
    ckptlab_capture.capture(model, (x,), path, check=names)
    assert os.path.exists(path)


def main():
    out_dir = sys.argv[1]
    only = set(sys.argv[2:])
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    check_lists_unsupported_ops(out_dir)
    names = [write_case(out_dir, n) for n in cases() if not only or n in only]
    with open(os.path.join(out_dir, "index.txt"), "w") as fh:
        fh.write("\n".join(names) + "\n")


if __name__ == "__main__":
    main()
