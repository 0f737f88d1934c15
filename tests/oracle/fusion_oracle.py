"""Fusion oracle (issue 27): the modules whose ONNX export PyTorch writes as chains of small
ops, against the same modules run eagerly by PyTorch 1.13.

    /usr/bin/python3 tests/oracle/fusion_oracle.py OUT_DIR [CASE ...]

Each family — torchvision's VisionTransformer, Swin Transformer, ConvNeXt (GELU, LayerNorm),
EfficientNet (SiLU) and MobileNetV3 (Hardswish, Hardsigmoid), nn.TransformerEncoder (ReLU
post-norm; GELU pre-norm with a causal mask), a causal GPT block (masked_fill, the hand-written
tanh GELU) and the remaining activation forms (Mish, GELU's tanh approximation, hand-written
hardswish and hardsigmoid), each with its nn.Linear on three or more dimensions (MatMul + Add
in the export, fused back into linear), and F.glu after 1-D convolutions (Wav2Letter, a
Conformer's convolution module) — is exported at opsets 13 and 17 in training mode, in float64,
as samples/export_onnx.py exports. OUT_DIR/<case>/ holds model.onnx, input.npy, output.npy,
grad__<param>.npy and case.json:
  saved        what the eager module keeps for backward (saved_tensors_hooks in a separate
               forward): distinct storages, parameters and buffers excluded, each with its
               bytes, shape, dtype and the module that saved it;
  fused        the engine ops the importer must make from the export's subgraphs, counted;
  differences  the bytes the engine keeps beyond (+) or short of (-) the eager module, each
               with why (none: to the byte);
  grads        whether gradients are compared (not with dropout: its masks are drawn apart).
OUT_DIR/index.txt lists the cases.
"""
import json
import math
import os
import sys
import warnings

import numpy
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.dont_write_bytecode = True
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "..", "samples"))
from export_onnx import export_training  # noqa: E402
from llama_family import LlamaDecoder, token_ids  # noqa: E402
from onnx_oracle import comparable  # noqa: E402

warnings.filterwarnings("ignore")


class GptBlock(nn.Module):
    """nanoGPT's Block: a causal mask from a tril buffer by masked_fill, the scale on the
    product, its own tanh GELU written out (torch.pow(x, 3.0)). The buffer is bool, not
    nanoGPT's float: a float buffer exports as an initializer, which the importer takes for a
    trainable parameter (ONNX does not tell them apart)."""

    def __init__(self, dim=16, heads=2, block=6):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(dim)
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.ln_2 = nn.LayerNorm(dim)
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.mlp_proj = nn.Linear(4 * dim, dim)
        self.register_buffer("bias", torch.tril(torch.ones(block, block, dtype=torch.bool))
                             .view(1, 1, block, block))

    @staticmethod
    def new_gelu(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(self.new_gelu(self.c_fc(self.ln_2(x))))


class Activations(nn.Module):
    """The activations no family above has, nn.Mish and nn.GELU(approximate='tanh'), and a
    hardswish and a hardsigmoid written out with relu6 (older MobileNetV3 code), which PyTorch
    runs decomposed and the importer leaves so."""

    def __init__(self, dim=12):
        super().__init__()
        self.fc = nn.ModuleList(nn.Linear(dim, dim) for _ in range(5))
        self.mish = nn.Mish()
        self.gelu = nn.GELU(approximate="tanh")

    def forward(self, x):
        x = self.mish(self.fc[0](x))
        x = self.gelu(self.fc[1](x))
        x = self.fc[2](x)
        x = x * F.relu6(x + 3) / 6
        x = self.fc[3](x)
        x = F.relu6(x + 3) / 6
        return self.fc[4](x)


class CausalEncoder(nn.Module):
    """nn.TransformerEncoder, pre-norm, GELU, causal: the float mask is made in the forward from
    a bool buffer (opset 13 cannot export torch.triu; and a float buffer would be an initializer
    the importer takes for a trainable parameter), so the export folds it into a constant."""

    def __init__(self, dropout=0.0, dim=16, heads=2, hidden=32, length=6):
        super().__init__()
        layer = nn.TransformerEncoderLayer(dim, heads, hidden, dropout, "gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(dim))
        self.register_buffer("hidden", torch.ones(length, length, dtype=torch.bool).triu(1))

    def forward(self, x):
        mask = torch.zeros(self.hidden.shape, dtype=x.dtype).masked_fill(self.hidden,
                                                                         float("-inf"))
        return self.encoder(x, mask=mask)


class GluConv(nn.Module):
    """F.glu after convolutions: Wav2Letter's gated Conv1d, a Conformer's convolution module
    (pointwise Conv1d to twice the channels, nn.GLU over them, depthwise Conv1d, BatchNorm1d,
    SiLU, pointwise Conv1d) and a GLU over the last dim. Exported as Split, Sigmoid and Mul."""

    def __init__(self, channels=6):
        super().__init__()
        self.conv1 = nn.Conv1d(3, 2 * channels, 5, padding=2)
        self.pointwise = nn.Conv1d(channels, 2 * channels, 1)
        self.glu = nn.GLU(dim=1)
        self.depthwise = nn.Conv1d(channels, channels, 3, padding=1, groups=channels)
        self.norm = nn.BatchNorm1d(channels)
        self.out = nn.Conv1d(channels, 4, 1)

    def forward(self, x):
        h = F.glu(self.conv1(x), dim=1)
        h = self.glu(self.pointwise(h))
        h = F.silu(self.norm(self.depthwise(h)))
        return F.glu(self.out(h), dim=-1)


def families():
    """name -> (make model, input, {engine op: count fused at 13, at 17}, gradients compared)."""
    import torchvision
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    from torchvision.models.efficientnet import EfficientNet, MBConvConfig
    from torchvision.models.swin_transformer import SwinTransformer
    from torchvision.models.vision_transformer import VisionTransformer

    def vit():
        m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                              hidden_dim=32, mlp_dim=64, num_classes=10)
        torch.nn.init.normal_(m.heads.head.weight, 0, 0.02)  # zero would zero every gradient
        return m

    def swin():
        return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2],
                               window_size=[4, 4], stochastic_depth_prob=0.0, num_classes=10)

    def convnext():
        return ConvNeXt([CNBlockConfig(16, 32, 2), CNBlockConfig(32, None, 1)],
                        stochastic_depth_prob=0.0, num_classes=10)

    def efficientnet():
        setting = [MBConvConfig(1, 3, 1, 16, 8, 1), MBConvConfig(4, 3, 2, 8, 16, 2)]
        return EfficientNet(setting, 0.0, last_channel=32, num_classes=10)

    def mobilenet_v3():
        return torchvision.models.mobilenet_v3_small(num_classes=10, dropout=0.0, width_mult=0.25)

    def encoder(activation, norm_first):
        layer = nn.TransformerEncoderLayer(16, 2, 32, 0.0, activation, batch_first=True,
                                           norm_first=norm_first)
        return nn.TransformerEncoder(layer, 2)

    img = lambda side: torch.randn(2, 3, side, side, dtype=torch.float64)  # noqa: E731
    seq = lambda: torch.randn(2, 6, 16, dtype=torch.float64)  # noqa: E731
    return {
        # 2 blocks: 2 GELU, 5 LayerNorm (2 per block and the last), 2 attention, 6 nn.Linear on
        # [B, L, D] exported as MatMul + Add (the in-projection and the MLP's two; the
        # out-projection and the head are 2-D, one Gemm each).
        "vit": (vit, lambda: img(32),
                {13: {"gelu": 2, "layer_norm": 5, "scaled_dot_product_attention": 2, "linear": 6},
                 17: {"gelu": 2, "scaled_dot_product_attention": 2, "linear": 6}}, True),
        # 4 blocks and a patch merging: the unshifted blocks' attention (the shifted ones add
        # their window mask through reshapes, which the attention pattern does not span); each
        # block's four nn.Linear on windows (qkv, proj, the MLP's two).
        "swin": (swin, lambda: img(40),
                 {13: {"gelu": 4, "layer_norm": 11, "scaled_dot_product_attention": 2,
                       "linear": 16},
                  17: {"gelu": 4, "scaled_dot_product_attention": 2, "linear": 16}}, True),
        # Each CNBlock's two nn.Linear on [N, H, W, C].
        "convnext": (convnext, lambda: img(32),
                     {13: {"gelu": 3, "layer_norm": 6, "linear": 6},
                      17: {"gelu": 3, "linear": 6}}, True),
        # The stem, each MBConv's expansion, depthwise and squeeze-excitation, the head.
        "efficientnet": (efficientnet, lambda: img(32),
                         {13: {"silu": 10}, 17: {"silu": 10}}, True),
        # Hardswish is its own ONNX op from opset 14: only opset 13 needs the pattern.
        "mobilenet_v3": (mobilenet_v3, lambda: img(32), {13: {"hardswish": 19}, 17: {}}, True),
        # Each layer's in-projection (on the transposed input: its folded copy is kept) and
        # feed-forward pair are nn.Linear on 3-D.
        "encoder_relu_postnorm": (lambda: encoder("relu", False), seq,
                                  {13: {"layer_norm": 4, "scaled_dot_product_attention": 2,
                                        "linear": 6},
                                   17: {"scaled_dot_product_attention": 2, "linear": 6}}, True),
        "encoder_gelu_prenorm_causal": (CausalEncoder, seq,
                                        {13: {"gelu": 2, "layer_norm": 5,
                                              "scaled_dot_product_attention": 2, "linear": 6},
                                         17: {"gelu": 2, "scaled_dot_product_attention": 2,
                                              "linear": 6}},
                                        True),
        # Dropout 0.1 everywhere: the masks are drawn apart, so only the bytes are compared.
        "encoder_dropout": (lambda: CausalEncoder(dropout=0.1), seq,
                            {13: {"gelu": 2, "layer_norm": 5, "scaled_dot_product_attention": 2,
                                  "linear": 6},
                             17: {"gelu": 2, "scaled_dot_product_attention": 2, "linear": 6}},
                            False),
        # new_gelu is written out, so it stays decomposed, as PyTorch runs it.
        "gpt_block": (GptBlock, seq,
                      {13: {"layer_norm": 2, "scaled_dot_product_attention": 1, "linear": 4},
                       17: {"scaled_dot_product_attention": 1, "linear": 4}}, True),
        "activations": (Activations, lambda: torch.randn(4, 12, dtype=torch.float64),
                        {13: {"mish": 1, "gelu": 1}, 17: {"mish": 1, "gelu": 1}}, True),
        # Issue 38: the GLUs (the Split's second output is the Sigmoid's), and the Conformer's
        # SiLU.
        "glu_conv": (GluConv, lambda: torch.randn(2, 3, 20, dtype=torch.float64),
                     {13: {"glu": 3, "silu": 1}, 17: {"glu": 3, "silu": 1}}, True),
        # Issue 38: RMSNorm, rotary tables and the causal mask as buffers (named in the file's
        # metadata by export_training), grouped-query attention, SwiGLU.
        "llama": (LlamaDecoder, token_ids, {13: LLAMA_FUSED, 17: LLAMA_FUSED}, True),
    }


# 2 layers: RMSNorm's rsqrt (two per layer and the last norm), the attention core (scale on the
# product, the causal mask added), each MLP's SiLU.
LLAMA_FUSED = {"rsqrt": 5, "scaled_dot_product_attention": 2, "silu": 2}


# The bytes the engine keeps beyond (+) or short of (-) the eager module, by case (any opset),
# and why. Everything else is equal to the byte.
DIFFERENCES = {
    "gpt_block": [(-36, "masked_fill's mask, bias[:, :, :t, :t] == 0, is a bool tensor made in "
                        "each eager forward and kept by MaskedFillBackward0 (6 x 6 bytes); the "
                        "export folds it at load time into a constant of the model, which the "
                        "engine counts as model state, not as saved activations")],
}


def module_paths(model):
    """A stack of the module being run, kept by forward hooks."""
    names = {m: n for n, m in model.named_modules()}
    stack = [""]
    hooks = []
    for m in model.modules():
        hooks.append(m.register_forward_pre_hook(lambda mod, inp: stack.append(names[mod])))
        hooks.append(m.register_forward_hook(lambda mod, inp, out: (stack.pop(), None)[1]))
    return stack, hooks


def eager_saved(model, x, seed):
    """What the eager module keeps for backward: distinct storages, parameters and buffers
    excluded, in a separate forward (hooks change what PyTorch checks in place)."""
    state = {t.storage().data_ptr() for t in list(model.parameters()) + list(model.buffers())}
    stack, hooks = module_paths(model)
    packed = {}

    def pack(t):
        key = t.storage().data_ptr()
        if key not in state and key not in packed:
            packed[key] = {"bytes": t.storage().nbytes(), "shape": list(t.shape),
                           "dtype": str(t.dtype).replace("torch.", ""), "module": stack[-1]}
        return t

    torch.manual_seed(seed)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x.clone())
    for h in hooks:
        h.remove()
    storages = list(packed.values())
    return {"bytes": sum(s["bytes"] for s in storages), "storages": storages}


def write_case(out_dir, family, opset):
    make, make_input, fused, grads = families()[family]
    name = f"{family}_opset{opset}"
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(11 + opset)
    model = make()
    if grads:
        model = comparable(model)
    else:
        model = model.double()
    model.train()
    x = make_input()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    path = os.path.join(d, "model.onnx")
    export_training(model, (x,), path, opset)
    model.load_state_dict(state)  # the export ran the model: undo BatchNorm's updates
    saved = eager_saved(model, x, opset)
    model.load_state_dict(state)
    torch.manual_seed(opset)
    out = model(x.clone())
    out.sum().backward()
    numpy.save(os.path.join(d, "input.npy"), x.numpy())
    numpy.save(os.path.join(d, "output.npy"), out.detach().numpy())
    for pname, p in model.named_parameters():
        if p.grad is not None:
            numpy.save(os.path.join(d, "grad__" + pname + ".npy"), p.grad.numpy())
    diffs = [{"bytes": b, "why": why} for b, why in DIFFERENCES.get(family, [])]
    with open(os.path.join(d, "case.json"), "w") as fh:
        json.dump({"family": family, "opset": opset, "saved": saved, "fused": fused[opset],
                   "differences": diffs, "grads": grads}, fh, indent=1)
    return name


def write_cases(argv, families, write_case):
    """argv: OUT_DIR [FAMILY ...]. Every family (or those named) at opsets 13 and 17, one case
    folder each, and their names in OUT_DIR/index.txt for the C++ half."""
    out_dir, only = argv[0], set(argv[1:])
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    names = []
    for family in families:
        if only and family not in only:
            continue
        for opset in (13, 17):
            names.append(write_case(out_dir, family, opset))
    with open(os.path.join(out_dir, "index.txt"), "w") as fh:
        fh.write("\n".join(names) + "\n")


def main():
    write_cases(sys.argv[1:], families(), write_case)


if __name__ == "__main__":
    main()
