"""ONNX oracle: PyTorch models exported to ONNX, with PyTorch's own results on the same weights.

    /usr/bin/python3 tests/oracle/onnx_oracle.py OUT_DIR

For every case OUT_DIR/<case>/ holds model.onnx, input.npy, output.npy and grad__<param>.npy
(the gradient of sum(output) for every parameter, named as the ONNX initializer), and
OUT_DIR/index.txt lists the cases. Cases: the tiny DenseNet and ResNet of samples/export_onnx.py
exported now at several opsets (BatchNormalization's two training forms, opset 11 to 17), a
small transformer block (decomposed GELU and LayerNorm below opset 17, LayerNormalization at 17,
and the int64 shape arithmetic of a reshape into heads), a tiny U-Net (Resize, Pad, LeakyRelu,
Elu, Softplus, Abs, ReduceMax, Split, Max), a tiny segmentation network (ConvTranspose, Resize
linear in both coordinate modes, Tile), a causal nn.TransformerEncoder (Trilu), and the committed samples/*.onnx with
their own weights, and torchvision's ResNet-18, MobileNetV2, DenseNet-121, MobileNetV3, a small
VisionTransformer, a small Swin Transformer, a small MaxViT (Einsum), one model of each other
torchvision family (SqueezeNet, ShuffleNetV2, MNASNet, EfficientNet, RegNet, ConvNeXt, GoogLeNet
with its auxiliary heads' three outputs, Inception v3), and the segmentation models
FCN-ResNet50, DeepLabV3-ResNet50, DeepLabV3-MobileNetV3 and LR-ASPP-MobileNetV3 when
python3-torchvision is installed; nn.MultiheadAttention with boolean masks (Or) and an
nn.Transformer with padding masks (two inputs: input.npy, input1.npy).
"""
import math
import os
import sys

import numpy
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.dont_write_bytecode = True
here = os.path.dirname(os.path.abspath(__file__))
samples = os.path.join(here, "..", "..", "samples")
sys.path.insert(0, samples)
import export_onnx  # noqa: E402


class TinyTransformer(nn.Module):
    def __init__(self, dim=16, heads=2, hidden=32):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        b, s, d = x.shape
        h = self.ln1(x)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        q = q.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
        k = k.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
        v = v.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // self.heads), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class TinyUNet(nn.Module):
    """A segmentation network's parts: an encoder, nearest upsampling, a skip concatenation,
    an odd-sized input padded on one side, and the activations such networks use."""

    def __init__(self, width=8, classes=3):
        super().__init__()
        self.down = nn.Conv2d(3, width, 3, padding=1)
        self.mid = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.fuse = nn.Conv2d(3 * width, width, 3, padding=1)
        self.head = nn.Conv2d(width, classes, 1)

    def forward(self, x):
        x = F.pad(x, (0, 1, 0, 1))  # 15x15 -> 16x16, as a U-Net pads odd inputs
        skip = F.leaky_relu(self.down(x), 0.1)
        left, right = torch.split(skip, [3, 5], dim=1)  # ONNX Split
        skip = torch.cat([torch.maximum(left, right[:, :3]), right], 1)  # ONNX Max
        h = F.elu(self.mid(F.max_pool2d(skip, 2)))
        h = h * torch.sigmoid(torch.amax(h, dim=(2, 3), keepdim=True))  # CBAM-like gate
        h = torch.cat([self.up(h), skip], 1)
        return self.head(F.softplus(self.fuse(h))).abs()


class TinySegNet(nn.Module):
    """A segmentation decoder as users write one: strided ConvTranspose2d up-convolutions (one
    with output_padding and groups), bilinear upsampling by a scale (nn.Upsample) and to a size
    with align_corners (F.interpolate), and a learned prior repeated over the batch (Tile)."""

    def __init__(self, width=8, classes=3):
        super().__init__()
        self.down1 = nn.Conv2d(3, width, 3, padding=1)
        self.down2 = nn.Conv2d(width, 2 * width, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(2 * width)
        self.bottom = nn.Conv2d(2 * width, 2 * width, 3, stride=2, padding=1)
        self.up_t = nn.ConvTranspose2d(2 * width, 2 * width, 2, stride=2)
        self.up_b = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.up_g = nn.ConvTranspose2d(2 * width, width, 3, stride=2, padding=1, output_padding=1,
                                       groups=2, bias=False)
        self.prior = nn.Parameter(torch.randn(1, 2, 16, 16) * 0.1)
        self.fuse = nn.Conv2d(6 * width + 2, width, 3, padding=1)
        self.head = nn.Conv2d(width, classes, 1)

    def forward(self, x):
        s1 = F.relu(self.down1(x))  # 16x16
        s2 = F.relu(self.bn(self.down2(s1)))  # 8x8
        b = F.relu(self.bottom(s2))  # 4x4
        u = self.up_t(b) + s2  # 8x8
        h = torch.cat([self.up_b(u), self.up_g(u),
                       F.interpolate(b, size=x.shape[-2:], mode="bilinear", align_corners=True),
                       s1, self.prior.repeat(x.shape[0], 1, 1, 1)], 1)
        return self.head(F.relu(self.fuse(h)))


class CausalEncoder(nn.Module):
    """nn.TransformerEncoder as users write a causal one: pre-LN, GELU, the mask made in the
    forward by generate_square_subsequent_mask (torch.triu: ONNX Trilu, opset 14 on)."""

    def __init__(self, dim=16, heads=2, hidden=32, layers=2):
        super().__init__()
        layer = nn.TransformerEncoderLayer(dim, heads, hidden, 0.0, "gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(dim))

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1]).to(x.dtype)
        return self.encoder(x, mask=mask)


# (model, opset) of torchvision.models.segmentation checked against PyTorch. The MobileNetV3
# ones run at opset 17: below 14 PyTorch exports Hardswish as x * HardSigmoid(x), whose gradient
# (with HardSigmoid's float32 slope 1/6, as PyTorch computes it) differs from Hardswish's own by
# 3e-8 of x, which these networks carry over the float64 tolerance
# (tests/oracle/segmentation_grads.py measures both opsets).
SEGMENTATION_CASES = [("fcn_resnet50", 13), ("deeplabv3_resnet50", 17),
                      ("deeplabv3_mobilenet_v3_large", 17), ("lraspp_mobilenet_v3_large", 17)]


def write_case(out_dir, name, model, x, onnx_path=None, opset=13):
    """x: the input, or a tuple of inputs (input.npy, input1.npy, ...). A model with several
    outputs (GoogLeNet's auxiliary heads) is compared on the sum of all of them, as the
    engine's `sum` loss; output.npy is the first."""
    xs = x if isinstance(x, tuple) else (x,)
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    if onnx_path is None:
        sd = model.state_dict()
        state = type(sd)((k, v.clone()) for k, v in sd.items())
        state._metadata = getattr(sd, "_metadata", None)  # MNASNet's loader reads its version
        torch.onnx.export(model, xs, path, opset_version=opset, input_names=None if len(xs) > 1
                          else ["input"], output_names=None if len(xs) > 1 else ["output"],
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
        model.load_state_dict(state)  # the export ran the model: undo its BatchNorm updates
    else:
        with open(onnx_path, "rb") as src, open(path, "wb") as dst:
            dst.write(src.read())
        # The committed file's weights into the PyTorch model, by name.
        weights = {t.name: torch.from_numpy(onnx.numpy_helper.to_array(t).copy())
                   for t in onnx.load(path).graph.initializer}
        missing = model.load_state_dict(weights, strict=False).missing_keys
        missing = [k for k in missing if not k.endswith("num_batches_tracked")]
        if missing:
            raise RuntimeError(f"{onnx_path}: no initializer for {missing}")
    model.train()
    xs = tuple(t.clone() for t in xs)
    out = model(*xs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    sum(o.sum() for o in outs).backward()
    for i, t in enumerate(xs):
        numpy.save(os.path.join(d, "input.npy" if i == 0 else f"input{i}.npy"), t.numpy())
    numpy.save(os.path.join(d, "output.npy"), outs[0].detach().numpy())
    initializers = {t.name for t in onnx.load(path).graph.initializer}
    for pname, p in model.named_parameters():
        if pname in initializers:
            numpy.save(os.path.join(d, "grad__" + pname + ".npy"), p.grad.numpy())
    return name


def comparable(model):
    """float64, no dropout or stochastic depth (no mask to share), BatchNorm's eps the float32
    value the ONNX attribute holds."""
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        if isinstance(m, nn.MultiheadAttention):
            m.dropout = 0.0
        if type(m).__name__ == "StochasticDepth":
            m.p = 0.0
        if isinstance(m, nn.BatchNorm2d):
            m.eps = float(numpy.float32(m.eps))
    return model.double()


class PaddingInputAttention(nn.Module):
    """nn.MultiheadAttention whose key padding mask is a model input of type bool (as a data
    loader gives it): the mask is not known at load time, so Where and the reshapes run on a
    bool tensor, and WhereBackward0 keeps it (one byte an element)."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 4, dropout=0.0, batch_first=True)

    def forward(self, x, pad):
        return self.attn(x, x, x, key_padding_mask=pad, need_weights=False)[0]


class MaskedAttention(nn.Module):
    """nn.MultiheadAttention with a boolean causal mask (a buffer: no torch.triu, so opset 13
    exports it) and a key padding mask, merged by the exporter with Or; attention weights too."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 4, batch_first=False)
        self.register_buffer("causal", torch.ones(6, 6).triu(1).bool())

    def forward(self, x):
        pad = torch.zeros(x.shape[1], x.shape[0], dtype=torch.bool)
        pad[1, -2:] = True
        out, weights = self.attn(x, x, x, attn_mask=self.causal, key_padding_mask=pad)
        return out + weights.sum()


class Seq2Seq(nn.Module):
    """nn.Transformer as users train one: a causal target mask, source padding masks."""

    def __init__(self):
        super().__init__()
        self.t = nn.Transformer(16, 2, 1, 1, 32, 0.0, batch_first=True)

    def forward(self, src, tgt):
        mask = self.t.generate_square_subsequent_mask(tgt.shape[1]).to(src.dtype)
        pad = torch.zeros(src.shape[0], src.shape[1], dtype=torch.bool)
        pad[0, -1] = True
        return self.t(src, tgt, tgt_mask=mask, src_key_padding_mask=pad,
                      memory_key_padding_mask=pad)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    names = []
    for model_name in ("tiny_densenet", "tiny_resnet"):
        for opset in (11, 13, 14, 17):
            torch.manual_seed(opset)
            model = export_onnx.MODELS[model_name]()
            x = torch.randn(2, 3, 16, 16)
            names.append(write_case(out_dir, f"{model_name}_opset{opset}", model, x, opset=opset))
    for opset in (13, 17):
        torch.manual_seed(100 + opset)
        names.append(write_case(out_dir, f"transformer_opset{opset}", TinyTransformer(),
                                torch.randn(2, 5, 16), opset=opset))
    for opset in (14, 17):
        torch.manual_seed(300 + opset)
        names.append(write_case(out_dir, f"causal_encoder_opset{opset}", CausalEncoder().double(),
                                torch.randn(2, 6, 16, dtype=torch.float64), opset=opset))
    for opset in (11, 13, 17):
        torch.manual_seed(200 + opset)
        names.append(write_case(out_dir, f"unet_opset{opset}", TinyUNet().double(),
                                torch.randn(2, 3, 15, 15, dtype=torch.float64), opset=opset))
    for opset in (11, 13, 17):
        torch.manual_seed(400 + opset)
        names.append(write_case(out_dir, f"segnet_opset{opset}", TinySegNet().double(),
                                torch.randn(2, 3, 16, 16, dtype=torch.float64), opset=opset))
    for model_name in ("tiny_densenet", "tiny_resnet"):
        committed = os.path.join(samples, model_name + ".onnx")
        torch.manual_seed(7)
        names.append(write_case(out_dir, f"committed_{model_name}", export_onnx.MODELS[model_name](),
                                torch.randn(2, 3, 16, 16), onnx_path=committed))
    # Models people use, exactly as torchvision defines them (10 classes, 4 x 3 x 64 x 64
    # inputs, so that the check stays fast), in float64 on both sides: in float32 a deep ReLU
    # network's gradients are not comparable element by element, because a pre-activation within
    # float32 rounding of zero (DenseNet-121 has one at 4e-6) falls on either side of the ReLU
    # depending on the order of the convolution's sums, and flips a whole gradient element.
    try:
        import torchvision
    except ImportError:
        torchvision = None
        print("onnx_oracle: python3-torchvision is not installed; no torchvision cases")
    if torchvision is not None:
        for name, make in (
                ("resnet18", lambda: torchvision.models.resnet18(num_classes=10)),
                ("mobilenet_v2", lambda: torchvision.models.mobilenet_v2(num_classes=10,
                                                                         dropout=0.0)),
                ("densenet121", lambda: torchvision.models.densenet121(num_classes=10))):
            torch.manual_seed(11)
            model = make().double()
            names.append(write_case(out_dir, f"torchvision_{name}", model,
                                    torch.randn(4, 3, 64, 64, dtype=torch.float64), opset=13))
        # HardSwish exists from opset 14; MobileNetV3 also has HardSigmoid (its SE blocks).
        torch.manual_seed(12)
        model = torchvision.models.mobilenet_v3_small(num_classes=10, dropout=0.0).double()
        names.append(write_case(out_dir, "torchvision_mobilenet_v3_small", model,
                                torch.randn(4, 3, 64, 64, dtype=torch.float64), opset=14))
        # torchvision's VisionTransformer, small: its shape assertion (Equal, Where) and the
        # class token's Expand fold at load time; opset 17 exports LayerNormalization whole.
        from torchvision.models.vision_transformer import VisionTransformer
        for opset in (13, 17):
            torch.manual_seed(13 + opset)
            model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                      hidden_dim=32, mlp_dim=64, num_classes=10).double()
            # Its head starts at zero, which makes every other gradient 0: random instead.
            torch.nn.init.normal_(model.heads.head.weight, 0, 0.02)
            names.append(write_case(out_dir, f"torchvision_vit_opset{opset}", model,
                                    torch.randn(4, 3, 32, 32, dtype=torch.float64), opset=opset))
        # torchvision's Swin Transformer, small: 40x40 makes a 10x10 patch grid, padded to 12x12
        # for its 4x4 windows (Pad), shifted by 2 (roll: Slice and Concat) with the shifted-window
        # mask built on known values (ScatterND, Equal, Not, Where), relative position bias
        # gathered from its table (an embedding). Stochastic depth off: PyTorch 1.13 cannot
        # export its bernoulli_ in training mode.
        from torchvision.models.swin_transformer import SwinTransformer
        for opset in (13, 17):
            torch.manual_seed(31 + opset)
            model = SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2],
                                    num_heads=[2, 2], window_size=[4, 4],
                                    stochastic_depth_prob=0.0, num_classes=10).double()
            names.append(write_case(out_dir, f"torchvision_swin_opset{opset}", model,
                                    torch.randn(2, 3, 40, 40, dtype=torch.float64), opset=opset))
        # torchvision's MaxViT, small: its attention is written with einsum (ONNX Einsum), its
        # MBConv downsamples through a padded AvgPool2d, relative position bias as in Swin.
        from torchvision.models.maxvit import MaxVit
        torch.manual_seed(50)
        model = MaxVit(input_size=(32, 32), stem_channels=8, partition_size=2,
                       block_channels=[16, 32], block_layers=[1, 1], head_dim=8,
                       stochastic_depth_prob=0.0, num_classes=10).double()
        names.append(write_case(out_dir, "torchvision_maxvit", model,
                                torch.randn(2, 3, 32, 32, dtype=torch.float64), opset=17))
        # torchvision's segmentation models (no auxiliary head, the 'out' tensor): bilinear
        # Resize to the input's size in every head, DeepLabV3's ASPP pooling branch upsampled
        # from 1x1, LR-ASPP's sigmoid gate; dilated ResNet-50 and MobileNetV3 backbones.
        # Their heads' dropout is off (no shared mask); BatchNorm's eps is the float32 value
        # the ONNX attribute holds (0.001 vs 0.0010000000475 moves the MobileNetV3 backbone's
        # output by 1e-7 in float64, over the tolerance).
        for name, opset in SEGMENTATION_CASES:
            torch.manual_seed(60 + opset)
            model = export_onnx.segmentation_model(name, 5).double()
            for m in model.modules():
                if isinstance(m, nn.Dropout):
                    m.p = 0.0
                if isinstance(m, nn.BatchNorm2d):
                    m.eps = float(numpy.float32(m.eps))
            names.append(write_case(out_dir, f"torchvision_{name}_opset{opset}", model,
                                    torch.randn(2, 3, 64, 64, dtype=torch.float64), opset=opset))
        # One of each torchvision family not above (issue 15; tests/oracle/category_grads.py
        # runs every model at opsets 13 and 17): 2 x 3 x 64 x 64, so that the last stage's
        # batch norms normalise eight values (at 32 x 32, two: rounding decides both sides).
        for name, kwargs, side, opset in (
                ("squeezenet1_1", {}, 64, 13),
                ("shufflenet_v2_x0_5", {}, 64, 17),  # channel shuffle: Reshape, Transpose
                ("mnasnet0_5", {}, 64, 13),
                ("efficientnet_b0", {}, 64, 17),  # SiLU, squeeze-excitation
                ("regnet_y_400mf", {}, 64, 13),  # grouped convolutions, SE
                ("convnext_tiny", {}, 32, 17),  # LayerNorm2d by permutes, layer scale
                ("googlenet", {"init_weights": True}, 64, 13),  # three outputs (aux heads)
                ("inception_v3", {"aux_logits": False, "init_weights": True}, 107, 17)):
            torch.manual_seed(70 + opset)
            model = comparable(getattr(torchvision.models, name)(num_classes=10, **kwargs))
            names.append(write_case(out_dir, f"torchvision_{name}_opset{opset}", model,
                                    torch.randn(2, 3, side, side, dtype=torch.float64),
                                    opset=opset))
    # nn.MultiheadAttention with boolean masks (Or) and nn.Transformer with padding masks and
    # two inputs, sequence-first and batch-first.
    torch.manual_seed(90)
    names.append(write_case(out_dir, "mha_bool_masks_opset13", comparable(MaskedAttention()),
                            torch.randn(6, 2, 16, dtype=torch.float64), opset=13))
    torch.manual_seed(92)
    pad = torch.tensor([[False, False, False, False, True, True],
                        [False, False, False, False, False, True]])
    names.append(write_case(out_dir, "mha_bool_padding_input_opset17",
                            comparable(PaddingInputAttention()),
                            (torch.randn(2, 6, 16, dtype=torch.float64), pad), opset=17))
    torch.manual_seed(91)
    names.append(write_case(out_dir, "transformer_padding_opset17", comparable(Seq2Seq()),
                            (torch.randn(2, 6, 16, dtype=torch.float64),
                             torch.randn(2, 5, 16, dtype=torch.float64)), opset=17))
    with open(os.path.join(out_dir, "index.txt"), "w") as fh:
        fh.write("\n".join(names) + "\n")


if __name__ == "__main__":
    main()
