"""Oracle cases for the neural-network ops (issue 3), each op on its own.

Variants of one op are "op@variant" cases whose attributes the C++ case reads.
"""

import torch
import torch.nn.functional as F

from oracle_harness import case


# --- conv2d -------------------------------------------------------------------------------
def conv_case(name, x_shape, w_shape, bias=True, stride=1, padding=0, dilation=1, groups=1,
              input_grad=True):
    @case(f"conv2d@{name}")
    def f(c):
        x = c.input("x", x_shape, requires_grad=input_grad)
        w = c.param("w", w_shape, scale=0.3)
        b = c.param("b", [w_shape[0]]) if bias else None
        c.attr("bias", bias)
        c.attr("stride", [stride, stride] if isinstance(stride, int) else list(stride))
        c.attr("padding", [padding, padding] if isinstance(padding, int) else list(padding))
        c.attr("dilation", [dilation, dilation] if isinstance(dilation, int) else list(dilation))
        c.attr("groups", groups)
        return F.conv2d(x, w, b, stride, padding, dilation, groups)


conv_case("basic", [2, 3, 8, 8], [4, 3, 3, 3], padding=1)
conv_case("stride2", [2, 3, 9, 8], [5, 3, 3, 3], stride=2, padding=1)
conv_case("dilation_groups", [2, 4, 9, 9], [6, 2, 3, 3], dilation=2, groups=2, padding=2)
conv_case("asymmetric", [1, 2, 7, 9], [3, 2, 3, 2], stride=(1, 2), padding=(2, 1), bias=False)
conv_case("pointwise", [3, 8, 5, 5], [4, 8, 1, 1], bias=False)
conv_case("single_image_1x1", [1, 8, 5, 5], [4, 8, 1, 1])
conv_case("input_nograd", [2, 3, 8, 8], [4, 3, 7, 7], stride=2, padding=3, input_grad=False)


# --- pooling ------------------------------------------------------------------------------
def pool_case(kind, name, x_shape, kernel, stride, padding=0, dilation=1, ceil_mode=False,
              count_include_pad=True):
    @case(f"{kind}@{name}")
    def f(c):
        x = c.input("x", x_shape)
        c.attr("kernel", list(kernel))
        c.attr("stride", list(stride))
        c.attr("padding", list(padding) if not isinstance(padding, int) else [padding] * 2)
        c.attr("dilation", list(dilation) if not isinstance(dilation, int) else [dilation] * 2)
        c.attr("ceil_mode", ceil_mode)
        c.attr("count_include_pad", count_include_pad)
        if kind == "max_pool2d":
            return F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode)
        return F.avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad)


pool_case("max_pool2d", "k2", [2, 3, 8, 8], (2, 2), (2, 2))
pool_case("max_pool2d", "k3s2p1", [2, 3, 9, 8], (3, 3), (2, 2), padding=1)
pool_case("max_pool2d", "ceil_dilation", [1, 2, 9, 7], (3, 2), (2, 2), padding=1, dilation=(2, 1),
          ceil_mode=True)
pool_case("avg_pool2d", "k2", [2, 3, 8, 8], (2, 2), (2, 2))
pool_case("avg_pool2d", "k3s2p1", [2, 3, 9, 8], (3, 3), (2, 2), padding=1)
pool_case("avg_pool2d", "exclude_pad_ceil", [1, 2, 8, 7], (3, 3), (2, 2), padding=1,
          ceil_mode=True, count_include_pad=False)


@case("adaptive_avg_pool2d@global")
def adaptive_global(c):
    c.attr("size", [1, 1])
    return F.adaptive_avg_pool2d(c.input("x", [2, 3, 8, 8]), 1)


@case("adaptive_avg_pool2d@3x2")
def adaptive_3x2(c):
    c.attr("size", [3, 2])
    return F.adaptive_avg_pool2d(c.input("x", [2, 3, 7, 5]), (3, 2))


# --- normalisation ------------------------------------------------------------------------
@case("batch_norm@train")
def bn_train(c):
    c.attr("training", True)
    c.attr("affine", True)
    x = c.input("x", [4, 3, 5, 5], scale=2.0)
    rm = c.buffer("running_mean", torch.randn(3, generator=c.gen))
    rv = c.buffer("running_var", torch.rand(3, generator=c.gen) + 0.5)
    nbt = c.buffer("num_batches_tracked", torch.tensor(3, dtype=torch.int64))
    w = c.param("w", [3], init="uniform", low=0.5, high=1.5)
    b = c.param("b", [3])
    nbt.add_(1)  # what nn.BatchNorm2d does in training
    return F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1, eps=1e-5)


@case("batch_norm@eval")
def bn_eval(c):
    c.attr("training", False)
    c.attr("affine", True)
    x = c.input("x", [2, 3, 4, 4])
    rm = c.buffer("running_mean", torch.randn(3, generator=c.gen))
    rv = c.buffer("running_var", torch.rand(3, generator=c.gen) + 0.5)
    w = c.param("w", [3], init="uniform", low=0.5, high=1.5)
    b = c.param("b", [3])
    return F.batch_norm(x, rm, rv, w, b, training=False)


@case("batch_norm@train_plain")
def bn_plain(c):
    # affine=False, track_running_stats=False, a BatchNorm1d input
    c.attr("training", True)
    c.attr("affine", False)
    return F.batch_norm(c.input("x", [6, 4]), None, None, None, None, training=True)


@case("layer_norm@basic")
def ln_basic(c):
    c.attr("shape", [8])
    x = c.input("x", [2, 3, 8])
    return F.layer_norm(x, (8,), c.param("w", [8], init="uniform", low=0.5, high=1.5),
                        c.param("b", [8]))


@case("layer_norm@two_dims_plain")
def ln_plain(c):
    c.attr("shape", [3, 4])
    return F.layer_norm(c.input("x", [2, 3, 4]), (3, 4))


# --- softmax and losses -------------------------------------------------------------------
@case("softmax")
def softmax_case(c):
    return F.softmax(c.input("x", [3, 4, 5]), 1)


@case("log_softmax")
def log_softmax_case(c):
    return F.log_softmax(c.input("x", [4, 6]), -1)


def ce_case(name, x_shape, target, reduction="mean", ignore_index=-100):
    @case(f"cross_entropy@{name}")
    def f(c):
        x = c.input("x", x_shape)
        t = c.const("target", torch.tensor(target, dtype=torch.int64))
        c.attr("reduction", reduction)
        c.attr("ignore_index", ignore_index)
        return F.cross_entropy(x, t, reduction=reduction, ignore_index=ignore_index)


ce_case("mean", [4, 5], [0, 1, 2, 4])
ce_case("sum_ignore", [4, 5], [0, 3, 2, 3], reduction="sum", ignore_index=3)
ce_case("none", [3, 4], [3, 0, 1], reduction="none")
ce_case("spatial", [2, 3, 2, 2], [[[0, 1], [2, 0]], [[1, 1], [0, 2]]])
ce_case("sequence", [2, 4, 3], [[0, 3, 1], [2, 2, 0]], reduction="none")


@case("nll_loss")
def nll_case(c):
    x = c.input("x", [3, 4])
    t = c.const("target", torch.tensor([1, 0, 3]))
    return F.nll_loss(F.log_softmax(x, 1), t)


@case("mse_loss@mean")
def mse_mean(c):
    c.attr("reduction", "mean")
    return F.mse_loss(c.input("x", [4, 5]), c.input("target", [4, 5], requires_grad=False))


@case("mse_loss@none")
def mse_none(c):
    c.attr("reduction", "none")
    return F.mse_loss(c.input("x", [4, 5]), c.input("target", [4, 5]), reduction="none")


# --- dropout, embedding, unary ------------------------------------------------------------
@case("dropout@half")
def dropout_half(c):
    # The engine's generator reproduces torch's bernoulli_ stream: same mask, same bytes.
    c.attr("p", 0.5)
    c.attr("training", True)
    return F.dropout(c.input("x", [8, 16]), 0.5, True)


@case("dropout@p0")
def dropout_p0(c):
    c.attr("p", 0.0)
    c.attr("training", True)
    return torch.tanh(F.dropout(c.input("x", [4, 5]), 0.0, True))


@case("dropout@eval")
def dropout_eval(c):
    c.attr("p", 0.3)
    c.attr("training", False)
    return torch.sigmoid(F.dropout(c.input("x", [4, 5]), 0.3, False))


@case("embedding")
def embedding_case(c):
    w = c.param("w", [10, 4])
    idx = c.const("idx", torch.tensor([[1, 2, 1], [9, 0, 2]]))
    return F.embedding(idx, w)


@case("clamp")
def clamp_case(c):
    return torch.clamp(c.input("x", [4, 5]), -0.5, 0.5)


@case("relu6")
def relu6_case(c):
    return F.relu6(c.input("x", [4, 5], scale=4.0))


@case("hardswish")
def hardswish_case(c):
    # scale 4: inputs on all three pieces (below -3, between, above 3).
    return F.hardswish(c.input("x", [4, 5], scale=4.0))


@case("hardsigmoid")
def hardsigmoid_case(c):
    return F.hardsigmoid(c.input("x", [4, 5], scale=4.0))


# The activations the ONNX importer recovers from the exporter's chains (issue 27): each saves
# its input.
@case("silu")
def silu_case(c):
    return F.silu(c.input("x", [4, 5], scale=4.0))


@case("mish")
def mish_case(c):
    return F.mish(c.input("x", [4, 5], scale=4.0))


# F.glu (issue 38), which the importer recovers from Split, Sigmoid and Mul: saves its input.
@case("glu")
def glu_case(c):
    c.attr("dim", 1)
    return F.glu(c.input("x", [3, 6, 5], scale=3.0), dim=1)


# RMSNorm's torch.rsqrt, which the importer recovers from Div(1, Sqrt(x)) and Reciprocal(Sqrt(x))
# (issue 38), and torch.reciprocal: each saves its result.
@case("rsqrt")
def rsqrt_case(c):
    return torch.rsqrt(c.input("x", [4, 5], init="uniform", low=0.5, high=2.0))


@case("reciprocal")
def reciprocal_case(c):
    return torch.reciprocal(c.input("x", [4, 5], init="uniform", low=0.5, high=2.0))


@case("gelu@none")
def gelu_none_case(c):
    c.attr("approximate", "none")
    return F.gelu(c.input("x", [4, 5], scale=3.0))


@case("gelu@tanh")
def gelu_tanh_case(c):
    c.attr("approximate", "tanh")
    return F.gelu(c.input("x", [4, 5], scale=3.0), approximate="tanh")


# Attention as PyTorch 1.13 runs it on the CPU (nn.MultiheadAttention's _scaled_dot_product_
# attention, and attention written out by hand): the engine's math kernel keeps what these ops
# keep, to the byte.
@case("scaled_dot_product_attention@query")
def attention_query_case(c):
    c.attr("form", "query")
    q, k, v = (c.input(n, [2, 3, 5, 4]) for n in ("q", "k", "v"))
    return torch.softmax((q / 2.0) @ k.transpose(-2, -1), dim=-1) @ v


@case("scaled_dot_product_attention@scores_masked")
def attention_scores_masked_case(c):
    c.attr("form", "scores_masked")
    q, k, v = (c.input(n, [2, 3, 5, 4]) for n in ("q", "k", "v"))
    mask = c.const("mask", torch.zeros(5, 5).masked_fill(torch.ones(5, 5).triu(1).bool(),
                                                         float("-inf")))
    return torch.softmax((q @ k.transpose(-2, -1)) * 0.5 + mask, dim=-1) @ v


@case("leaky_relu")
def leaky_relu_case(c):
    c.attr("slope", 0.2)
    return F.leaky_relu(c.input("x", [4, 5]), 0.2)


@case("elu")
def elu_case(c):
    c.attr("alpha", 1.5)
    return F.elu(c.input("x", [4, 5], scale=2.0), 1.5)


@case("softplus")
def softplus_case(c):
    # scale 12: a few of the 20 draws beyond PyTorch's threshold of 20, where it is linear.
    return F.softplus(c.input("x", [4, 5], scale=12.0))


@case("sign")
def sign_case(c):
    # sign(x) * x: the product's gradient is sign(x), with sign's own gradient 0.
    x = c.input("x", [4, 5])
    return torch.sign(x) * x


@case("abs")
def abs_case(c):
    return torch.abs(c.input("x", [4, 5]))


def upsample_case(name, size):
    @case(f"upsample_nearest2d@{name}")
    def f(c):
        # Times a random tensor, so that each copy of an input pixel has its own gradient.
        c.attr("size", list(size))
        x = F.interpolate(c.input("x", [2, 3, 4, 3]), size=size, mode="nearest")
        return x * c.input("w", [2, 3, *size])


upsample_case("x2", (8, 6))
upsample_case("uneven", (7, 5))


def bilinear_case(name, size=None, scale=None, align_corners=False, shape=(2, 3, 5, 4)):
    @case(f"upsample_bilinear2d@{name}")
    def f(c):
        x = c.input("x", list(shape))
        y = F.interpolate(x, size=size, scale_factor=scale, mode="bilinear",
                          align_corners=align_corners)
        c.attr("size", list(y.shape[2:]))
        c.attr("align_corners", align_corners)
        c.attr("scale", float(scale or 0.0))  # F.interpolate's scale_factor sets the coordinates
        return y * c.input("w", list(y.shape))


bilinear_case("x2", scale=2)  # nn.Upsample(scale_factor=2, mode="bilinear")
bilinear_case("size", size=(9, 7))  # F.interpolate(size=...): DeepLabV3's and FCN's heads
bilinear_case("scale_1_7", scale=1.7)  # floor(5 * 1.7) = 8 rows read at 1 / 1.7, not 5 / 8
bilinear_case("down", size=(3, 2))
bilinear_case("from_1x1", size=(6, 5), shape=(2, 3, 1, 1))  # ASPP's pooling branch
bilinear_case("align_corners", size=(9, 7), align_corners=True)
bilinear_case("align_corners_x2", scale=2, align_corners=True)


def conv_transpose_case(name, x_shape, w_shape, bias=True, stride=1, padding=0, output_padding=0,
                        dilation=1, groups=1):
    two = lambda v: [v, v] if isinstance(v, int) else list(v)

    @case(f"conv_transpose2d@{name}")
    def f(c):
        x = c.input("x", x_shape)
        w = c.param("w", w_shape, scale=0.3)
        b = c.param("b", [w_shape[1] * groups]) if bias else None
        c.attr("bias", bias)
        c.attr("stride", two(stride))
        c.attr("padding", two(padding))
        c.attr("output_padding", two(output_padding))
        c.attr("dilation", two(dilation))
        c.attr("groups", groups)
        return F.conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation)


conv_transpose_case("up2", [2, 4, 5, 5], [4, 3, 2, 2], stride=2)  # a U-Net's up-convolution
conv_transpose_case("padded", [2, 3, 6, 5], [3, 5, 3, 3], stride=2, padding=1, output_padding=1)
conv_transpose_case("stride1", [1, 3, 7, 7], [3, 2, 3, 3], padding=1, bias=False)
conv_transpose_case("groups_dilation", [2, 4, 5, 4], [4, 3, 3, 2], stride=(2, 1), padding=(1, 0),
                    output_padding=(1, 0), dilation=(1, 2), groups=2)
conv_transpose_case("big_plane", [2, 8, 16, 16], [8, 4, 4, 4], stride=2, padding=1)


def repeat_case(name, shape, repeats):
    @case(f"repeat@{name}")
    def f(c):
        c.attr("repeats", list(repeats))
        y = c.input("x", shape).repeat(*repeats)
        return y * c.input("w", list(y.shape))


repeat_case("same_rank", [2, 3, 4], (2, 1, 3))
repeat_case("more_dims", [3, 2], (2, 2, 1, 3))  # leading dims added, as ONNX export unsqueezes


def amax_case(name, dims, keepdim, ties):
    @case(f"amax@{name}")
    def f(c):
        c.attr("dims", dims)
        c.attr("keepdim", keepdim)
        if ties:  # values on a coarse grid: equal maxima share the gradient
            g = torch.Generator().manual_seed(5)
            x = c.input_from("x", torch.randint(-2, 3, [2, 3, 4, 5], generator=g) / 2.0,
                             requires_grad=True)
        else:
            x = c.input("x", [2, 3, 4, 5])
        return torch.amax(x, dims, keepdim) * 1.5


amax_case("global_pool", [2, 3], True, False)
amax_case("channels", [1], False, True)


def extremum(c, f):
    # On a coarse grid, broadcast: ties, where each side gets half the gradient.
    gen = torch.Generator().manual_seed(6)
    a = c.input_from("a", torch.randint(-2, 3, [3, 4], generator=gen) / 2.0, requires_grad=True)
    b = c.input_from("b", torch.randint(-2, 3, [4], generator=gen) / 2.0, requires_grad=True)
    return f(a, b) * c.input("w", [3, 4])


@case("maximum")
def maximum_case(c):
    return extremum(c, torch.maximum)


@case("minimum")
def minimum_case(c):
    return extremum(c, torch.minimum)


@case("constant_pad")
def constant_pad_case(c):
    # Swin's F.pad(x, (0, 0, 0, pad_r, 0, pad_b)) on [B, H, W, C], then a non-zero value; the
    # sigmoid makes the padded tensor's gradient depend on where the input landed.
    c.attr("before", [0, 0, 0, 1])
    c.attr("after", [0, 2, 3, 0])
    c.attr("value", -0.5)
    y = F.pad(c.input("x", [2, 3, 4, 5]), (1, 0, 0, 3, 0, 2), value=-0.5)
    return torch.sigmoid(y) * y


@case("erf")
def erf_case(c):
    return torch.erf(c.input("x", [4, 5]))


# --- in-place -----------------------------------------------------------------------------
@case("relu_inplace")
def relu_inplace(c):
    y = c.input("x", [4, 5]) * 2
    F.relu(y, inplace=True)
    return y


@case("add_inplace")
def add_inplace(c):
    y = torch.sigmoid(c.input("x", [4, 5]))
    y = y * c.input("s", [4, 5])
    y.add_(c.input("b", [5]))
    return y


@case("inplace_modifies_saved", expect_error=True)
def inplace_modifies_saved(c):
    # sigmoid saves its result; add_ then changes it: backward must refuse.
    y = torch.sigmoid(c.input("x", [4, 5]))
    y.add_(c.input("b", [5], requires_grad=False))
    return y


@case("inplace_on_leaf", expect_error=True)
def inplace_on_leaf(c):
    x = c.input("x", [4, 5])
    return F.relu(x, inplace=True)


# --- matmul: what PyTorch 1.13's folding and bmm paths save -------------------------------
MATMUL = {
    "mm": ([3, 4], [4, 5], None),
    "dot": ([4], [4], None),
    "mv": ([3, 4], [4], None),
    "vm": ([4], [4, 3], None),
    "3d_2d": ([2, 3, 4], [4, 5], None),
    "3d_transposed_2d": ([3, 2, 4], [4, 5], "t01"),
    "3d_slice_2d": ([2, 3, 12], [4, 5], "slice"),
    "2d_3d": ([3, 4], [2, 4, 5], None),
    "1d_3d": ([4], [2, 4, 5], None),
    "3d_1d": ([2, 3, 4], [4], None),
    "bmm": ([2, 3, 4], [2, 4, 5], None),
    "broadcast_4d_3d": ([2, 2, 3, 4], [2, 4, 5], None),
    "attention": ([2, 3, 4, 5], [2, 3, 4, 5], "attention"),
}


def matmul_case(name, sa, sb, how):
    @case(f"matmul@{name}")
    def f(c):
        a = c.input("a", sa)
        b = c.input("b", sb)
        c.attr("how", how or "plain")
        if how == "t01":
            a = a.transpose(0, 1)
        elif how == "slice":
            a = a[..., 0:4]
        elif how == "attention":
            a = a.transpose(1, 2)
            b = b.transpose(1, 2).transpose(-1, -2)
        return a @ b


for _name, (_sa, _sb, _how) in MATMUL.items():
    matmul_case(_name, _sa, _sb, _how)


# --- masks computed at run time: comparisons, where, logical_not, cast --------------------------
# A key padding mask as an input (`pad > 0.5`) selecting on attention scores: the condition is
# bool (one byte an element) and WhereBackward0 keeps it.
COMPARISONS = {"gt": torch.gt, "lt": torch.lt, "ge": torch.ge, "le": torch.le, "eq": torch.eq}


def comparison(c, kind):
    # On a coarse grid, broadcast: equal elements exist for eq, ge and le to see.
    gen = torch.Generator().manual_seed(7)
    a = c.input_from("a", torch.randint(-2, 3, [3, 4], generator=gen) / 2.0, requires_grad=True)
    b = c.input_from("b", torch.randint(-2, 3, [4], generator=gen) / 2.0, requires_grad=True)
    c.attr("kind", kind)
    return torch.where(COMPARISONS[kind](a, b), a * 2.0, b)


@case("gt@where")
def gt_case(c):
    return comparison(c, "gt")


@case("lt@where")
def lt_case(c):
    return comparison(c, "lt")


@case("ge@where")
def ge_case(c):
    return comparison(c, "ge")


@case("le@where")
def le_case(c):
    return comparison(c, "le")


@case("eq@where")
def eq_case(c):
    return comparison(c, "eq")


@case("where@padding_mask")
def where_padding_case(c):
    scores = c.input("scores", [2, 3, 5])
    pad = c.input("pad", [2, 1, 5], init="uniform", low=0.0, high=1.0, requires_grad=False)
    return torch.where(pad > 0.5, torch.tensor(float("-inf")), scores).softmax(-1)


@case("logical_not@where")
def logical_not_case(c):
    x = c.input("x", [3, 4])
    return torch.where(torch.logical_not(x > 0), x * 3.0, x)


@case("cast@mask")
def cast_case(c):
    x = c.input("x", [3, 4])
    keep = c.input("keep", [3, 4], requires_grad=False)
    return x * (keep > 0).to(torch.float32)


# --- masks a forward builds (issue 37's captures: engine/ops/mask.hpp) ---------------------
@case("full@causal")
def full_case(c):
    # nn.Transformer.generate_square_subsequent_mask: torch.full then torch.triu.
    scores = c.input("scores", [2, 5, 5])
    return (scores + torch.triu(torch.full((5, 5), float("-inf")), diagonal=1)).softmax(-1)


@case("arange@padding")
def arange_case(c):
    x = c.input("x", [2, 6])
    return x * (torch.arange(6) >= 4).to(torch.float32)


@case("trilu@grad")
def trilu_case(c):
    x = c.input("x", [2, 4, 5])
    return torch.triu(x, 1) * 2.0 + torch.tril(x, -2)


@case("compare_scalar@masked_fill")
def compare_scalar_case(c):
    # nanoGPT: att.masked_fill(bias == 0, -inf); the number taken in the tensor's dtype.
    att = c.input("att", [2, 4, 4])
    bias = c.buffer("bias", torch.tril(torch.ones(4, 4)))
    return att.masked_fill(bias == 0, float("-inf")).softmax(-1) + (att > 0.1).to(torch.float32)


@case("ne@where")
def ne_case(c):
    a = c.input("a", [3, 4])
    b = c.input("b", [4])
    return torch.where(a != b, a * 2.0, b)


@case("logical@or")
def logical_case(c):
    # nn.MultiheadAttention's merge of a bool attention mask with a key padding mask.
    x = c.input("x", [3, 4])
    keep = torch.logical_or(x > 0.5, torch.logical_and(x < 0.0, x > -0.5))
    return torch.where(keep, x, x * 0.5)


@case("masked_fill@mask")
def masked_fill_case(c):
    x = c.input("x", [3, 4])
    pad = c.input("pad", [4], requires_grad=False)
    return x.masked_fill(pad > 0, 0.25) * x


@case("masked_fill_inplace")
def masked_fill_inplace_case(c):
    # nn.MultiheadAttention 1.13: zeros_like then masked_fill_ of a bool mask.
    x = c.input("x", [3, 4])
    bias = torch.zeros(3, 4)
    bias.masked_fill_(x.detach() > 0, -2.0)
    return (x + bias).softmax(-1)


@case("fill_inplace")
def fill_inplace_case(c):
    # Swin's shifted-window mask: new_zeros, then slice assignments.
    x = c.input("x", [4, 6])
    mask = x.new_zeros((4, 6))
    mask[:2, 3:] = 1.0
    mask[2:, :3] = 2.0
    return x * mask


@case("vector_norm@normalize")
def vector_norm_case(c):
    # F.normalize as 1.13 writes it (Swin V2's cosine attention): x / ||x||.clamp_min(eps).
    x = c.input("x", [2, 3, 5])
    return x / x.norm(2, -1, keepdim=True).clamp_min(1e-12).expand_as(x) + x.norm(3, 1)[:, None, :]


@case("rms_norm")
def rsqrt_rms_norm(c):
    # Llama's RMSNorm as eager PyTorch computes it (issue 39): pow saves x, RsqrtBackward0 its
    # result, each mul both operands.
    x = c.input("x", [2, 3, 8])
    w = c.param("w", [8], init="uniform", low=0.5, high=1.5)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w
