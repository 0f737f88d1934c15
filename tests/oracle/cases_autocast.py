"""Oracle cases for mixed precision (issue 31): what PyTorch 1.13's CPU autocast casts and what
each op then saves for backward, op by op and in small blocks, under
torch.autocast("cpu", dtype=torch.bfloat16) (the engine: the op table's AutocastRule, its
cast cache and its bfloat16 kernels).

The harness compares the bytes saved for backward by distinct storage: a cast the engine makes
that PyTorch does not (or a tensor saved in another dtype) changes them. Outputs are returned
as float32 (numpy has no bfloat16), through one more cast on both sides; backward runs outside
autocast, as in training. Values agree to bfloat16's precision: both compute in float and round
each op's output once (a fused PyTorch kernel rounds once where the engine rounds twice, e.g.
GELU's backward), hence the tolerances.
"""

import math

import torch
import torch.nn.functional as F

from oracle_harness import case, inv_sqrt

BF16 = dict(rtol=3e-2, atol=3e-2)


def autocast():
    return torch.autocast("cpu", dtype=torch.bfloat16)


def linear_params(c, name, nout, nin, bias=True):
    k = inv_sqrt(nin)
    w = c.param(f"{name}_w", [nout, nin], init="uniform", low=-k, high=k)
    b = c.param(f"{name}_b", [nout], init="uniform", low=-k, high=k) if bias else None
    return w, b


@case("ac_linear", **BF16)
def ac_linear(c):
    # addmm in bfloat16: the input cast (not cached), weight and bias cast once (cached), the
    # casts of x and w saved.
    x = c.input("x", [4, 8], requires_grad=True)
    w, b = linear_params(c, "fc", 6, 8)
    with autocast():
        y = F.linear(x, w, b)
    return y.float()


@case("ac_linear_3d", **BF16)
def ac_linear_3d(c):
    # A 3-D input: matmul on the folded input, then the bias added (AddBackward0).
    x = c.input("x", [2, 3, 8])
    w, b = linear_params(c, "fc", 5, 8)
    with autocast():
        y = F.linear(x, w, b)
    return y.float()


@case("ac_shared_weight", **BF16)
def ac_shared_weight(c):
    # Two uses of one weight share one cached cast (one ToCopyBackward0, one bfloat16 copy).
    x = c.input("x", [4, 8])
    w, b = linear_params(c, "fc", 8, 8)
    with autocast():
        h = F.linear(x, w, b)
        y = F.linear(torch.relu(h), w, b)
    return y.float()


@case("ac_conv_bn_relu_pool", **BF16)
def ac_conv_bn_relu_pool(c):
    # conv2d in bfloat16; batch_norm runs as given (a bfloat16 input, float32 parameters and
    # statistics: PyTorch's mixed-type kernel); relu, max_pool2d and the global average pool (a
    # mean) in bfloat16.
    x = c.input("x", [2, 3, 8, 8])
    w = c.param("conv_w", [4, 3, 3, 3], scale=math.sqrt(2.0 / 27))
    rm = c.buffer("bn_rm", torch.randn(4, generator=c.gen) * 0.1)
    rv = c.buffer("bn_rv", torch.rand(4, generator=c.gen) + 0.5)
    bw = c.param("bn_w", [4], init="uniform", low=0.5, high=1.5)
    bb = c.param("bn_b", [4], scale=0.1)
    with autocast():
        h = F.conv2d(x, w, None, 1, 1)
        h = F.batch_norm(h, rm, rv, bw, bb, training=True, momentum=0.1, eps=1e-5)
        h = F.relu(h)
        h = F.max_pool2d(h, 2, 2)
        h = F.adaptive_avg_pool2d(h, 1)
    return h.float()


@case("ac_attention", **BF16)
def ac_attention(c):
    # q, k, v in bfloat16; the scores scaled in bfloat16, then a float32 mask added (type
    # promotion: float32, the bfloat16 operand converted first); softmax in float32; the product
    # with v casts the weights back to bfloat16 (saved in bfloat16).
    x = c.input("x", [2, 6, 8])
    wq, bq = linear_params(c, "q", 8, 8)
    wk, bk = linear_params(c, "k", 8, 8)
    wv, bv = linear_params(c, "v", 8, 8)
    mask = c.const("mask", torch.triu(torch.full((6, 6), -1e4), 1))
    with autocast():
        q, k, v = F.linear(x, wq, bq), F.linear(x, wk, bk), F.linear(x, wv, bv)
        s = torch.matmul(q, k.transpose(-2, -1)) * 0.25
        a = F.softmax(s + mask, dim=-1)
        y = torch.matmul(a, v)
    return y.float()


@case("ac_softmax_dropout", **BF16)
def ac_softmax_dropout(c):
    # softmax and dropout of a bfloat16 tensor stay bfloat16 on the CPU (softmax saves its
    # bfloat16 result, dropout its bfloat16 mask); the masks are drawn as in float32.
    x = c.input("x", [4, 16])
    w, b = linear_params(c, "fc", 16, 16)
    with autocast():
        h = F.softmax(F.linear(x, w, b), dim=-1)
        h = F.dropout(h, 0.25, training=True)
    return h.float()


@case("ac_gelu_mlp", **BF16)
def ac_gelu_mlp(c):
    x = c.input("x", [4, 8])
    w1, b1 = linear_params(c, "fc1", 16, 8)
    w2, b2 = linear_params(c, "fc2", 8, 16)
    with autocast():
        y = F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)
    return y.float()


@case("ac_residual_layer_norm", **BF16)
def ac_residual_layer_norm(c):
    # x + linear(x): float32 plus bfloat16 is float32, so layer_norm runs in float32 (a bfloat16
    # input with float32 parameters would fail in PyTorch 1.13's CPU layer_norm).
    x = c.input("x", [3, 8])
    w, b = linear_params(c, "fc", 8, 8)
    lw = c.param("ln_w", [8], init="uniform", low=0.5, high=1.5)
    lb = c.param("ln_b", [8], scale=0.1)
    with autocast():
        h = x + F.linear(x, w, b)
        y = F.layer_norm(h, (8,), lw, lb)
    return y


@case("ac_cross_entropy", **BF16)
def ac_cross_entropy(c):
    # Losses are float32 in autocast: the bfloat16 logits cast to float32 first.
    x = c.input("x", [6, 8])
    w, b = linear_params(c, "fc", 5, 8)
    t = c.const("t", torch.randint(0, 5, (6,), generator=c.gen))
    with autocast():
        loss = F.cross_entropy(F.linear(x, w, b), t)
    return loss


@case("ac_mse", **BF16)
def ac_mse(c):
    x = c.input("x", [6, 8])
    w, b = linear_params(c, "fc", 5, 8)
    y = c.input("y", [6, 5])
    with autocast():
        loss = F.mse_loss(F.linear(x, w, b), y)
    return loss


@case("ac_cat_promote", **BF16)
def ac_cat_promote(c):
    # cat of a bfloat16 and a float32 tensor: autocast's promote casts the bfloat16 one up.
    x = c.input("x", [4, 8])
    w, b = linear_params(c, "fc", 8, 8)
    z = c.input("z", [4, 3], requires_grad=True)
    with autocast():
        y = torch.cat([F.linear(x, w, b), z], 1)
    return y


@case("ac_embedding", **BF16)
def ac_embedding(c):
    # An embedding runs as given: float32 out of a float32 table; the linear after it casts.
    idx = c.const("idx", torch.randint(0, 10, (2, 5), generator=c.gen))
    table = c.param("table", [10, 8])
    w, b = linear_params(c, "fc", 4, 8)
    with autocast():
        y = F.linear(F.embedding(idx, table), w, b)
    return y.float()


# atol 0.1: the transposed convolution's float32 weight gradient sums products of the bfloat16
# convolution's outputs, where the two sides' roundings differ by an ulp here and there (the
# convolution accumulates in another order), with cancellation: one element of 108 is 0.685
# against 0.630.
@case("ac_conv_transpose", rtol=3e-2, atol=0.1)
def ac_conv_transpose(c):
    # PyTorch 1.13's CPU autocast lists conv_transpose2d as float32: its bfloat16 input (from a
    # convolution) is cast up, its output float32.
    x = c.input("x", [1, 2, 6, 6])
    w = c.param("conv_w", [4, 2, 3, 3], scale=0.3)
    wt = c.param("convt_w", [4, 3, 3, 3], scale=0.3)
    with autocast():
        h = F.conv2d(x, w, None, 1, 1)
        y = F.conv_transpose2d(h, wt, None, 2, 1, 1)
    return y
