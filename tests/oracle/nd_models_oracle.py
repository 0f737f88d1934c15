"""Speech, audio and video networks (1-D and 3-D convolutions, issue 38) against the same modules
run eagerly by PyTorch 1.13.

    /usr/bin/python3 tests/oracle/nd_models_oracle.py OUT_DIR [CASE ...]

Each family is exported by PyTorch 1.13's TorchScript exporter in training mode, in float64,
at opsets 13 and 17 (as fusion_oracle.py exports): torchvision's video ResNets' own blocks
(R3D: Conv3DSimple, MC3: Conv3DSimple then Conv3DNoTemporal, R(2+1)D: Conv2Plus1D with its
stem) at widths 8 to 64 and a 2 x 3 x 4 x 32 x 32 clip; wav2vec 2.0's convolutional feature
extractor in both its modes ("layer_norm": seven strided Conv1d, LayerNorm over channels,
GELU; "group_norm", wav2vec2-base's: GroupNorm after the first Conv1d only) at width 32 on
0.1 s of 16 kHz audio; a Wav2Letter-style Conv1d stack on 40 mel bands; a
temporal convolutional network (causal dilated Conv1d, the causal padding chomped, residual
1x1); a 1-D U-Net (MaxPool1d, ConvTranspose1d, skip connections by cat); and F.pad's
reflect and replicate modes between Conv1d layers; Conv3d with nn.InstanceNorm3d;
ESPCN's sub-pixel convolution (PixelShuffle, PixelUnshuffle); a 3-D U-Net (trilinear, nearest
and 1-D linear interpolation). The full-size
torchvision video models are measured by category_grads.py (docs/model_coverage.md).
OUT_DIR/<case>/ holds model.onnx, input.npy, output.npy, grad__<param>.npy and case.json:
  saved        what the eager module keeps for backward (fusion_oracle.eager_saved);
  differences  the bytes the engine keeps beyond (+) or short of (-) it, each with why;
  block        a module to checkpoint (both variants must give the plain run's gradients).
OUT_DIR/index.txt lists the cases.
"""
import json
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
from fusion_oracle import eager_saved, write_cases  # noqa: E402

warnings.filterwarnings("ignore")


# --- video: torchvision's VideoResNet, narrow ------------------------------------------------

class VideoNet(nn.Module):
    """torchvision.models.video.resnet.VideoResNet with widths (8, 16, 32, 64) instead of
    (64, 128, 256, 512), one BasicBlock per stage, and the stems' channels scaled alike: the
    same modules (BasicBlock, Conv3DSimple, Conv3DNoTemporal, Conv2Plus1D) and names."""

    def __init__(self, kind, widths=(8, 16, 32, 64), classes=10):
        super().__init__()
        from torchvision.models.video.resnet import (BasicBlock, Conv2Plus1D, Conv3DNoTemporal,
                                                     Conv3DSimple)
        w0 = widths[0]
        if kind == "r2plus1d":
            mid = 6
            self.stem = nn.Sequential(
                nn.Conv3d(3, mid, (1, 7, 7), (1, 2, 2), (0, 3, 3), bias=False),
                nn.BatchNorm3d(mid), nn.ReLU(inplace=True),
                nn.Conv3d(mid, w0, (3, 1, 1), (1, 1, 1), (1, 0, 0), bias=False),
                nn.BatchNorm3d(w0), nn.ReLU(inplace=True))
            makers = [Conv2Plus1D] * 4
        else:
            self.stem = nn.Sequential(
                nn.Conv3d(3, w0, (3, 7, 7), (1, 2, 2), (1, 3, 3), bias=False),
                nn.BatchNorm3d(w0), nn.ReLU(inplace=True))
            makers = ([Conv3DSimple] * 4 if kind == "r3d"
                      else [Conv3DSimple] + [Conv3DNoTemporal] * 3)
        inplanes = w0
        for i, (maker, planes) in enumerate(zip(makers, widths)):
            stride = 1 if i == 0 else 2
            downsample = None
            if stride != 1 or inplanes != planes:
                ds = maker.get_downsample_stride(stride)
                downsample = nn.Sequential(nn.Conv3d(inplanes, planes, 1, ds, bias=False),
                                           nn.BatchNorm3d(planes))
            setattr(self, f"layer{i + 1}", nn.Sequential(
                BasicBlock(inplanes, planes, maker, stride, downsample)))
            inplanes = planes
        self.avgpool = nn.AdaptiveAvgPool3d((1, 1, 1))
        self.fc = nn.Linear(inplanes, classes)

    def forward(self, x):
        x = self.stem(x)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


# --- speech and audio -------------------------------------------------------------------------

class Wav2VecConvLayer(nn.Module):
    """One layer of wav2vec 2.0's ConvFeatureExtractionModel, mode "layer_norm" (wav2vec2-large's):
    Conv1d (bias), LayerNorm over the channels (between two transposes), GELU."""

    def __init__(self, cin, cout, k, s):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, k, s)
        self.norm = nn.LayerNorm(cout)

    def forward(self, x):
        return F.gelu(self.norm(self.conv(x).transpose(-2, -1)).transpose(-2, -1))


class Wav2VecGroupNormLayer(nn.Module):
    """The first layer of wav2vec 2.0's default ("group_norm") extractor, wav2vec2-base's:
    Conv1d without bias, GroupNorm with one group per channel, GELU. The later layers have no
    norm."""

    def __init__(self, cin, cout, k, s, norm):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, k, s, bias=False)
        self.norm = nn.GroupNorm(cout, cout) if norm else None

    def forward(self, x):
        x = self.conv(x)
        return F.gelu(self.norm(x) if self.norm is not None else x)


class Wav2VecFeatureExtractor(nn.Module):
    """wav2vec 2.0's feature extractor: 7 layers, kernels and strides (10, 5), (3, 2) x 4,
    (2, 2) x 2: one frame per 320 samples (20 ms at 16 kHz); mode "layer_norm" or
    "group_norm"."""

    def __init__(self, width=32, layers=((10, 5),) + ((3, 2),) * 4 + ((2, 2),) * 2,
                 mode="layer_norm"):
        super().__init__()
        if mode == "layer_norm":
            self.conv_layers = nn.ModuleList(Wav2VecConvLayer(1 if i == 0 else width, width, k, s)
                                             for i, (k, s) in enumerate(layers))
        else:
            self.conv_layers = nn.ModuleList(
                Wav2VecGroupNormLayer(1 if i == 0 else width, width, k, s, i == 0)
                for i, (k, s) in enumerate(layers))

    def forward(self, wav):
        x = wav.unsqueeze(1)
        for layer in self.conv_layers:
            x = layer(x)
        return x


class Wav2Letter(nn.Module):
    """Wav2Letter's stack (torchaudio.models.Wav2Letter's layout, narrow): strided Conv1d, 7-wide
    Conv1ds, 1-wide ones, ReLU after each, 29 output symbols."""

    def __init__(self, mels=40, width=32, classes=29):
        super().__init__()
        self.acoustic_model = nn.Sequential(
            nn.Conv1d(mels, width, 11, 2, 5), nn.ReLU(inplace=True),
            nn.Conv1d(width, width, 7, 1, 3), nn.ReLU(inplace=True),
            nn.Conv1d(width, width, 7, 1, 3), nn.ReLU(inplace=True),
            nn.Conv1d(width, 2 * width, 15, 1, 7, dilation=1), nn.ReLU(inplace=True),
            nn.Conv1d(2 * width, 2 * width, 1), nn.ReLU(inplace=True),
            nn.Conv1d(2 * width, classes, 1), nn.ReLU(inplace=True))

    def forward(self, x):
        return F.log_softmax(self.acoustic_model(x), dim=1)


class TemporalBlock(nn.Module):
    """Bai et al.'s TCN block: two causal dilated Conv1d (padded both sides, the right end
    chomped), ReLU, a 1x1 Conv1d on the residual when the width changes."""

    def __init__(self, cin, cout, k, dilation):
        super().__init__()
        self.pad = (k - 1) * dilation
        self.conv1 = nn.Conv1d(cin, cout, k, padding=self.pad, dilation=dilation)
        self.conv2 = nn.Conv1d(cout, cout, k, padding=self.pad, dilation=dilation)
        self.downsample = nn.Conv1d(cin, cout, 1) if cin != cout else None

    def forward(self, x):
        h = F.relu(self.conv1(x)[:, :, :-self.pad])
        h = F.relu(self.conv2(h)[:, :, :-self.pad])
        return F.relu(h + (x if self.downsample is None else self.downsample(x)))


class Tcn(nn.Module):
    def __init__(self, cin=8, width=16, levels=3, k=3):
        super().__init__()
        self.network = nn.Sequential(*[TemporalBlock(cin if i == 0 else width, width, k, 2 ** i)
                                       for i in range(levels)])
        self.head = nn.Conv1d(width, 4, 1)

    def forward(self, x):
        return self.head(self.network(x))


class UNet1d(nn.Module):
    """A 1-D U-Net (audio source separation's shape): two down stages (Conv1d, BatchNorm1d,
    ReLU, MaxPool1d), a bottleneck, two up stages (ConvTranspose1d, cat with the skip)."""

    def __init__(self, cin=2, width=8):
        super().__init__()

        def block(a, b):
            return nn.Sequential(nn.Conv1d(a, b, 5, padding=2), nn.BatchNorm1d(b), nn.ReLU())

        self.down1, self.down2 = block(cin, width), block(width, 2 * width)
        self.bottleneck = block(2 * width, 4 * width)
        self.up2 = nn.ConvTranspose1d(4 * width, 2 * width, 4, 2, 1)
        self.dec2 = block(4 * width, 2 * width)
        self.up1 = nn.ConvTranspose1d(2 * width, width, 4, 2, 1)
        self.dec1 = block(2 * width, width)
        self.out = nn.Conv1d(width, cin, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(F.max_pool1d(d1, 2))
        b = self.bottleneck(F.max_pool1d(d2, 2))
        u2 = self.dec2(torch.cat([self.up2(b), d2], 1))
        u1 = self.dec1(torch.cat([self.up1(u2), d1], 1))
        return self.out(u1)


class Padding(nn.Module):
    """F.pad's other modes in an audio-style Conv1d stack: reflect (HiFi-GAN's and Demucs'
    ReflectionPad1d) and replicate, exported as Pad with modes reflect and edge. Circular is
    CircularPadding's."""

    def __init__(self, width=8):
        super().__init__()
        self.reflect = nn.ReflectionPad1d(3)
        self.conv1 = nn.Conv1d(2, width, 7)
        self.replicate = nn.ReplicationPad1d((2, 0))
        self.conv2 = nn.Conv1d(width, width, 3)
        self.conv3 = nn.Conv1d(width, 2, 3)

    def forward(self, x):
        h = torch.tanh(self.conv1(self.reflect(x)))
        h = torch.tanh(self.conv2(self.replicate(h)))
        return self.conv3(F.pad(h, (2, 1), mode="reflect"))


class CircularPadding(nn.Module):
    """Circular padding (periodic signals, Fourier neural operators' grids): Conv1d and Conv2d
    with padding_mode="circular", and F.pad(mode="circular") on both sides, on the left only and
    on the right only. PyTorch 1.13 exports each padded dim as Concat(Slice(x, -(r + 1), -1), x,
    Slice(x, 0, l)): the pads swapped and the left slice one element early (for a pad of
    (1, 2), [3, 4, 0..5, 0] where the module computes [5, 0..5, 0, 1]); the importer reads the
    chain as the module's pad (engine/ops/pad_patterns.cpp)."""

    def __init__(self, width=4):
        super().__init__()
        self.conv1 = nn.Conv1d(2, width, 5, padding=2, padding_mode="circular")
        self.conv2 = nn.Conv2d(1, 2, 3, padding=(1, 2), padding_mode="circular")
        self.conv3 = nn.Conv1d(2 * width, 2, 3)

    def forward(self, x):
        h = torch.tanh(self.conv1(x))
        h = F.pad(h, (1, 2), mode="circular")
        h = F.pad(h, (2, 0), mode="circular")
        h = F.pad(h, (0, 3), mode="circular")
        h = torch.tanh(self.conv2(h.unsqueeze(1)))
        return self.conv3(h.flatten(1, 2))


class InstanceNormNet(nn.Module):
    """3-D convolutions with nn.InstanceNorm3d, without affine (the default: exported with a
    scale of ones and a bias of zeros the module does not have) and with."""

    def __init__(self, width=4):
        super().__init__()
        self.conv1 = nn.Conv3d(2, width, 3, padding=1)
        self.norm1 = nn.InstanceNorm3d(width)
        self.conv2 = nn.Conv3d(width, width, 3, padding=1)
        self.norm2 = nn.InstanceNorm3d(width, affine=True)

    def forward(self, x):
        # tanh at the end: the sum of a normalised output does not depend on its input.
        return torch.tanh(self.norm2(self.conv2(F.relu(self.norm1(self.conv1(x))))))


class SubPixel(nn.Module):
    """ESPCN's sub-pixel upsampling (Conv2d to C * r * r channels, nn.PixelShuffle), then
    nn.PixelUnshuffle back (exported as DepthToSpace, and Reshape/Transpose/Reshape)."""

    def __init__(self, width=8, r=2):
        super().__init__()
        self.feature = nn.Conv2d(1, width, 5, padding=2)
        self.to_subpixels = nn.Conv2d(width, r * r, 3, padding=1)
        self.shuffle = nn.PixelShuffle(r)
        self.unshuffle = nn.PixelUnshuffle(r)
        self.head = nn.Conv2d(r * r, 2, 3, padding=1)

    def forward(self, x):
        up = self.shuffle(self.to_subpixels(torch.tanh(self.feature(x))))
        return self.head(self.unshuffle(torch.tanh(up)))


class UNet3d(nn.Module):
    """A 3-D U-Net's shape (medical volumes): Conv3d, MaxPool3d, a bottleneck, nn.Upsample
    trilinear (scale 2) and a nearest F.interpolate to the skip's size, cat, Conv3d."""

    def __init__(self, width=4):
        super().__init__()
        self.enc = nn.Conv3d(1, width, 3, padding=1)
        self.bottleneck = nn.Conv3d(width, 2 * width, 3, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="trilinear", align_corners=False)
        self.dec = nn.Conv3d(3 * width + 1, width, 3, padding=1)
        self.head = nn.Conv1d(width, 2, 1)

    def forward(self, x):
        e = torch.tanh(self.enc(x))
        b = torch.tanh(self.bottleneck(F.max_pool3d(e, 2)))
        coarse = F.interpolate(F.avg_pool3d(x, 2), size=x.shape[2:], mode="nearest")
        d = torch.tanh(self.dec(torch.cat([self.up(b), e, coarse], 1)))
        # A 1-D head over the flattened volume: linear interpolation along it.
        flat = F.interpolate(d.flatten(2), scale_factor=0.5, mode="linear")
        return self.head(flat)


def families():
    """name -> (make model, make input, module to checkpoint)."""
    clip = lambda: torch.randn(2, 3, 4, 32, 32, dtype=torch.float64)  # noqa: E731
    return {
        "r3d": (lambda: VideoNet("r3d"), clip, "layer2"),
        "mc3": (lambda: VideoNet("mc3"), clip, "layer3"),
        "r2plus1d": (lambda: VideoNet("r2plus1d"), clip, "layer2"),
        "wav2vec_fe": (Wav2VecFeatureExtractor,
                       lambda: torch.randn(2, 1600, dtype=torch.float64), "conv_layers.1"),
        "wav2vec_fe_group_norm": (lambda: Wav2VecFeatureExtractor(mode="group_norm"),
                                  lambda: torch.randn(2, 1600, dtype=torch.float64),
                                  "conv_layers.1"),
        "wav2letter": (Wav2Letter, lambda: torch.randn(2, 40, 48, dtype=torch.float64),
                       "acoustic_model.2"),
        "tcn": (Tcn, lambda: torch.randn(2, 8, 40, dtype=torch.float64), "network.1"),
        "unet1d": (UNet1d, lambda: torch.randn(2, 2, 64, dtype=torch.float64), "down2"),
        "instance_norm": (InstanceNormNet, lambda: torch.randn(2, 2, 4, 6, 5, dtype=torch.float64),
                          "conv2"),
        "unet3d": (UNet3d, lambda: torch.randn(2, 1, 4, 6, 6, dtype=torch.float64), "bottleneck"),
        "subpixel": (SubPixel, lambda: torch.randn(2, 1, 6, 8, dtype=torch.float64),
                     "to_subpixels"),
        "padding": (Padding, lambda: torch.randn(2, 2, 30, dtype=torch.float64), "conv2"),
        "circular_padding": (CircularPadding, lambda: torch.randn(2, 2, 12, dtype=torch.float64),
                             "conv2"),
    }


# The bytes the engine keeps beyond (+) or short of (-) the eager module, by family (any
# opset), and why. Everything else is equal to the byte.
DIFFERENCES = {}


def write_case(out_dir, family, opset):
    make, make_input, block = families()[family]
    name = f"{family}_opset{opset}"
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(5 + opset)
    model = make().double().train()
    x = make_input()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    path = os.path.join(d, "model.onnx")
    torch.onnx.export(model, (x,), path, opset_version=opset, input_names=["input"],
                      output_names=["output"], training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    model.load_state_dict(state)  # the export ran the model: undo BatchNorm's updates
    saved = eager_saved(model, x, opset)
    model.load_state_dict(state)
    out = model(x.clone())
    out.sum().backward()
    numpy.save(os.path.join(d, "input.npy"), x.numpy())
    numpy.save(os.path.join(d, "output.npy"), out.detach().numpy())
    for pname, p in model.named_parameters():
        if p.grad is not None:
            numpy.save(os.path.join(d, "grad__" + pname + ".npy"), p.grad.numpy())
    diffs = [{"bytes": b, "why": why} for b, why in DIFFERENCES.get(family, [])]
    with open(os.path.join(d, "case.json"), "w") as fh:
        json.dump({"family": family, "opset": opset, "saved": saved, "differences": diffs,
                   "block": block}, fh, indent=1)
    return name


def main():
    write_cases(sys.argv[1:], families(), write_case)


if __name__ == "__main__":
    main()
