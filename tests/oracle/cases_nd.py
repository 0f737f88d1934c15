"""Oracle cases for the ops over 1 and 3 spatial dimensions (issue 38): the same op rows as the
2-D cases, at the other ranks. Each case: forward, backward and the bytes saved for backward.
"""

import torch
import torch.nn.functional as F

from oracle_harness import case

CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def per_dim(v, dims):
    return [v] * dims if isinstance(v, int) else list(v)


def conv_case(name, x_shape, w_shape, bias=True, stride=1, padding=0, dilation=1, groups=1,
              input_grad=True):
    dims = len(w_shape) - 2

    @case(f"conv@{name}")
    def f(c):
        x = c.input("x", x_shape, requires_grad=input_grad)
        w = c.param("w", w_shape, scale=0.3)
        b = c.param("b", [w_shape[0]]) if bias else None
        c.attr("bias", bias)
        c.attr("stride", per_dim(stride, dims))
        c.attr("padding", per_dim(padding, dims))
        c.attr("dilation", per_dim(dilation, dims))
        c.attr("groups", groups)
        return CONV[dims](x, w, b, stride, padding, dilation, groups)


# 1-D: speech front ends (wav2vec's strided feature extractor, Wav2Letter, TCNs' dilations).
conv_case("1d_basic", [2, 3, 16], [4, 3, 3], padding=1)
conv_case("1d_wav2vec_stride5", [2, 1, 400], [8, 1, 10], stride=5, bias=False)
conv_case("1d_dilated_tcn", [2, 4, 20], [4, 4, 3], padding=4, dilation=4)
conv_case("1d_depthwise", [2, 6, 17], [6, 1, 5], stride=2, padding=2, groups=6)
conv_case("1d_grouped_pointwise", [3, 8, 9], [4, 8, 1], bias=False)
conv_case("1d_long_per_image", [1, 4, 600], [6, 2, 3], padding=1, groups=2)
conv_case("1d_input_nograd", [2, 3, 30], [4, 3, 7], stride=3, padding=3, input_grad=False)
# 3-D: video (R3D's 3x3x3 and 3x7x7 stem, R(2+1)D's factorised 1x3x3 and 3x1x1, MC3).
conv_case("3d_basic", [2, 3, 4, 6, 6], [4, 3, 3, 3, 3], padding=1)
conv_case("3d_r3d_stem", [1, 3, 4, 16, 16], [8, 3, 3, 7, 7], stride=(1, 2, 2),
          padding=(1, 3, 3), bias=False)
conv_case("3d_spatial_1x3x3", [2, 4, 3, 8, 8], [6, 4, 1, 3, 3], stride=(1, 2, 2),
          padding=(0, 1, 1), bias=False)
conv_case("3d_temporal_3x1x1", [2, 4, 5, 4, 4], [4, 4, 3, 1, 1], stride=(2, 1, 1),
          padding=(1, 0, 0), bias=False)
conv_case("3d_dilated_grouped", [1, 4, 6, 7, 7], [6, 2, 2, 3, 3], dilation=(2, 1, 2),
          padding=(1, 1, 2), groups=2)
conv_case("3d_pointwise_strided", [2, 8, 4, 6, 6], [4, 8, 1, 1, 1], stride=2, bias=False)


def conv_transpose_case(name, x_shape, w_shape, bias=True, stride=1, padding=0,
                        output_padding=0, dilation=1, groups=1):
    dims = len(w_shape) - 2

    @case(f"conv_transpose@{name}")
    def f(c):
        x = c.input("x", x_shape)
        w = c.param("w", w_shape, scale=0.3)
        b = c.param("b", [w_shape[1] * groups]) if bias else None
        c.attr("bias", bias)
        c.attr("stride", per_dim(stride, dims))
        c.attr("padding", per_dim(padding, dims))
        c.attr("output_padding", per_dim(output_padding, dims))
        c.attr("dilation", per_dim(dilation, dims))
        c.attr("groups", groups)
        return CONV_T[dims](x, w, b, stride, padding, output_padding, groups, dilation)


conv_transpose_case("1d_upsample", [2, 4, 9], [4, 3, 4], stride=2, padding=1)
conv_transpose_case("1d_grouped_output_padding", [1, 4, 7], [4, 2, 3], stride=2, padding=1,
                    output_padding=1, groups=2, bias=False)
conv_transpose_case("3d_upsample", [1, 4, 2, 3, 3], [4, 2, 2, 2, 2], stride=2)
conv_transpose_case("3d_dilated", [2, 2, 3, 3, 2], [2, 3, 3, 2, 2], stride=(1, 2, 1),
                    padding=(1, 0, 1), dilation=(1, 1, 2))


# PyTorch's legacy rule: a 1-D empty tensor takes no part (a streaming model's empty cache).
@case("cat@legacy_empty_first")
def cat_empty_first(c):
    cache = c.input("cache", [0])
    chunk = c.input("chunk", [2, 3, 4])
    return torch.cat([cache, chunk, c.input("more", [2, 2, 4])], 1) * 1.5


# --- pooling over 1, 2 and 3 spatial dimensions --------------------------------------------
MAX_POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
AVG_POOL = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}
ADAPTIVE_AVG = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}
ADAPTIVE_MAX = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}


def pool_body(kind, c, x_shape, kernel, stride, padding, dilation, ceil_mode, count_include_pad):
    dims = len(kernel)
    x = c.input("x", x_shape)
    c.attr("dims", dims)
    c.attr("kernel", list(kernel))
    c.attr("stride", list(stride) if stride else [])
    c.attr("padding", per_dim(padding, dims))
    c.attr("dilation", per_dim(dilation, dims))
    c.attr("ceil_mode", ceil_mode)
    c.attr("count_include_pad", count_include_pad)
    k, s, p = tuple(kernel), tuple(stride) if stride else None, tuple(per_dim(padding, dims))
    if kind == "max_pool":
        return MAX_POOL[dims](x, k, s, p, tuple(per_dim(dilation, dims)), ceil_mode)
    return AVG_POOL[dims](x, k, s, p, ceil_mode, count_include_pad)


def pool_case(kind, name, x_shape, kernel, stride=None, padding=0, dilation=1, ceil_mode=False,
              count_include_pad=True):
    args = (x_shape, kernel, stride, padding, dilation, ceil_mode, count_include_pad)
    if kind == "max_pool":
        @case(f"max_pool@{name}")
        def f(c):
            return pool_body("max_pool", c, *args)
    else:
        @case(f"avg_pool@{name}")
        def g(c):
            return pool_body("avg_pool", c, *args)


pool_case("max_pool", "1d_k3s2p1", [2, 3, 15], (3,), (2,), padding=1)
pool_case("max_pool", "1d_ceil_dilation", [1, 4, 16], (3,), (2,), dilation=2, ceil_mode=True)
pool_case("max_pool", "2d_k3s2p1", [2, 3, 9, 8], (3, 3), (2, 2), padding=1)
pool_case("max_pool", "3d_r3d_1x3x3", [2, 3, 4, 8, 8], (1, 3, 3), (1, 2, 2), padding=(0, 1, 1))
pool_case("max_pool", "3d_k2", [1, 2, 4, 6, 6], (2, 2, 2))
pool_case("max_pool", "3d_ceil_dilation", [1, 2, 5, 7, 6], (3, 2, 2), (2, 2, 1), padding=1,
          dilation=(1, 2, 1), ceil_mode=True)
pool_case("avg_pool", "1d_k4s2p2", [2, 3, 15], (4,), (2,), padding=2)
pool_case("avg_pool", "1d_exclude_pad_ceil", [1, 2, 11], (3,), (2,), padding=1, ceil_mode=True,
          count_include_pad=False)
pool_case("avg_pool", "3d_k2", [2, 3, 4, 6, 6], (2, 2, 2))
pool_case("avg_pool", "3d_exclude_pad_ceil", [1, 2, 5, 6, 7], (3, 3, 2), (2, 2, 2), padding=1,
          ceil_mode=True, count_include_pad=False)


def adaptive_body(table, c, x_shape, size):
    c.attr("dims", len(size))
    c.attr("size", list(size))
    return table[len(size)](c.input("x", x_shape), tuple(size))


def adaptive_case(kind, name, x_shape, size):
    if kind == "adaptive_avg_pool":
        @case(f"adaptive_avg_pool@{name}")
        def f(c):
            return adaptive_body(ADAPTIVE_AVG, c, x_shape, size)
    else:
        @case(f"adaptive_max_pool@{name}")
        def g(c):
            return adaptive_body(ADAPTIVE_MAX, c, x_shape, size)


adaptive_case("adaptive_avg_pool", "1d_global", [2, 4, 13], (1,))
adaptive_case("adaptive_avg_pool", "1d_5", [2, 4, 13], (5,))
adaptive_case("adaptive_avg_pool", "3d_global_r3d", [2, 4, 2, 4, 4], (1, 1, 1))
adaptive_case("adaptive_avg_pool", "3d_2x3x2", [1, 3, 5, 7, 4], (2, 3, 2))
adaptive_case("adaptive_max_pool", "1d_4", [2, 3, 11], (4,))
adaptive_case("adaptive_max_pool", "2d_3x2", [2, 3, 7, 5], (3, 2))
adaptive_case("adaptive_max_pool", "3d_2x2x3", [1, 2, 5, 6, 7], (2, 2, 3))


# --- F.pad's reflect, replicate and circular modes ----------------------------------------
def pad_case(name, x_shape, pads, mode):
    @case(f"pad@{name}")
    def f(c):
        c.attr("pads", list(pads))
        c.attr("mode", mode)
        return F.pad(c.input("x", x_shape) * 1.5, tuple(pads), mode=mode)


pad_case("reflect_1d", [2, 3, 9], (3, 2), "reflect")
pad_case("replicate_1d", [2, 3, 9], (0, 4), "replicate")
pad_case("circular_1d", [2, 3, 9], (2, 5), "circular")
pad_case("reflect_2d", [2, 2, 5, 6], (1, 2, 3, 0), "reflect")
pad_case("replicate_3d", [1, 2, 3, 4, 5], (1, 1, 2, 0, 1, 2), "replicate")
pad_case("reflect_3d", [1, 2, 3, 4, 5], (2, 1, 0, 3, 1, 2), "reflect")
pad_case("circular_3d", [1, 2, 3, 4, 5], (1, 1, 2, 0, 1, 2), "circular")


# --- GroupNorm ---------------------------------------------------------------------------------
def group_norm_case(name, x_shape, groups, affine=True):
    @case(f"group_norm@{name}")
    def f(c):
        channels = x_shape[1]
        c.attr("groups", groups)
        c.attr("affine", affine)
        w = c.param("w", [channels]) if affine else None
        b = c.param("b", [channels]) if affine else None
        return F.group_norm(c.input("x", x_shape) * 1.5, groups, w, b)


group_norm_case("wav2vec_per_channel_1d", [2, 8, 30], 8)
group_norm_case("groups_2d", [2, 6, 5, 4], 3)
group_norm_case("one_group_3d_no_affine", [2, 4, 3, 4, 5], 1, affine=False)


def instance_norm_case(name, x_shape, affine):
    @case(f"instance_norm@{name}")
    def f(c):
        channels = x_shape[1]
        c.attr("affine", affine)
        w = c.param("w", [channels]) if affine else None
        b = c.param("b", [channels]) if affine else None
        return F.instance_norm(c.input("x", x_shape) * 1.5, weight=w, bias=b)


instance_norm_case("1d_affine", [2, 4, 9], True)
instance_norm_case("2d", [2, 3, 5, 4], False)
instance_norm_case("3d_affine", [2, 2, 3, 4, 3], True)


# --- PixelShuffle / PixelUnshuffle ------------------------------------------------------------
@case("pixel_shuffle@r2")
def pixel_shuffle_r2(c):
    c.attr("factor", 2)
    return F.pixel_shuffle(c.input("x", [2, 12, 3, 4]) * 1.5, 2)


@case("pixel_shuffle@r3_extra_batch_dim")
def pixel_shuffle_r3(c):
    c.attr("factor", 3)
    return F.pixel_shuffle(c.input("x", [2, 2, 9, 2, 3]) * 1.5, 3)


@case("pixel_unshuffle@r2")
def pixel_unshuffle_r2(c):
    c.attr("factor", 2)
    return F.pixel_unshuffle(c.input("x", [2, 3, 4, 6]) * 1.5, 2)


# --- interpolation over 1 and 3 spatial dims ---------------------------------------------------
def interpolate_case(kind, name, x_shape, size=None, scale=None, align_corners=None):
    mode = {"upsample_nearest": "nearest"}.get(kind) or {3: "linear", 5: "trilinear"}[len(x_shape)]

    def body(c):
        c.attr("size", list(size) if size else [])
        c.attr("scale_count", len(scale) if scale else 0)
        for i, v in enumerate(scale or []):
            c.attr(f"scale{i}", float(v))
        c.attr("align_corners", bool(align_corners))
        y = F.interpolate(c.input("x", x_shape) * 1.5, size=size, scale_factor=scale, mode=mode,
                          align_corners=align_corners)
        c.attr("out", list(y.shape[2:]))
        return y

    if kind == "upsample_nearest":
        @case(f"upsample_nearest@{name}")
        def f(c):
            return body(c)
    else:
        @case(f"upsample_linear@{name}")
        def g(c):
            return body(c)


interpolate_case("upsample_nearest", "1d_x2", [2, 3, 5], size=(10,))
interpolate_case("upsample_nearest", "3d_uneven", [1, 2, 3, 4, 3], size=(5, 7, 6))
interpolate_case("upsample_linear", "1d_linear", [2, 3, 5], size=(9,), align_corners=False)
interpolate_case("upsample_linear", "1d_align_corners", [2, 3, 5], size=(8,), align_corners=True)
interpolate_case("upsample_linear", "3d_trilinear_scale", [1, 2, 2, 3, 4], scale=(2.0, 1.5, 2.0),
                 align_corners=False)
interpolate_case("upsample_linear", "3d_trilinear_down_align", [1, 2, 4, 5, 6], size=(3, 2, 4),
                 align_corners=True)
