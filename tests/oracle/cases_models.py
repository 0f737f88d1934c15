"""Oracle cases for the blocks people checkpoint (issue 3): conv stacks, a ResNet basic block,
a DenseNet layer, an LSTM cell unrolled over time and a transformer block.

Written the way torchvision and common code write them (in-place ReLU, `out += identity`,
dropout with p = 0 for determinism where the text asks for it).
"""

import math

import torch
import torch.nn.functional as F

from oracle_harness import case, inv_sqrt


def conv_w(c, name, cout, cin, k):
    # Kaiming-like scale, so activations stay O(1) through the stack.
    return c.param(name, [cout, cin, k, k], scale=math.sqrt(2.0 / (cin * k * k)))


def bn(c, prefix, channels, x, training=True):
    rm = c.buffer(f"{prefix}_rm", torch.randn(channels, generator=c.gen) * 0.1)
    rv = c.buffer(f"{prefix}_rv", torch.rand(channels, generator=c.gen) + 0.5)
    w = c.param(f"{prefix}_w", [channels], init="uniform", low=0.5, high=1.5)
    b = c.param(f"{prefix}_b", [channels], scale=0.1)
    return F.batch_norm(x, rm, rv, w, b, training=training, momentum=0.1, eps=1e-5)


@case("conv_bn_relu")
def conv_bn_relu(c):
    # Two Conv-BN-ReLU stages and a pool, out-of-place ReLU.
    h = c.input("x", [4, 3, 12, 12])
    h = F.relu(bn(c, "bn1", 8, F.conv2d(h, conv_w(c, "conv1", 8, 3, 3), None, 1, 1)))
    h = F.relu(bn(c, "bn2", 8, F.conv2d(h, conv_w(c, "conv2", 8, 8, 3), None, 1, 1)))
    return F.max_pool2d(h, 2, 2)


@case("conv_bn_relu_inplace")
def conv_bn_relu_inplace(c):
    # nn.ReLU(inplace=True) after BatchNorm: BN saves its input, so the in-place ReLU is legal
    # and saves one activation per stage less.
    h = c.input("x", [4, 3, 12, 12])
    h = F.relu(bn(c, "bn1", 8, F.conv2d(h, conv_w(c, "conv1", 8, 3, 3), c.param("b1", [8]), 1, 1)),
               inplace=True)
    h = F.relu(bn(c, "bn2", 8, F.conv2d(h, conv_w(c, "conv2", 8, 8, 3), None, 1, 1)), inplace=True)
    return h


def basic_block(c, x, cin, cout, stride, prefix):
    # torchvision's BasicBlock.forward
    identity = x
    out = F.conv2d(x, conv_w(c, f"{prefix}_conv1", cout, cin, 3), None, stride, 1)
    out = bn(c, f"{prefix}_bn1", cout, out)
    out = F.relu(out, inplace=True)
    out = F.conv2d(out, conv_w(c, f"{prefix}_conv2", cout, cout, 3), None, 1, 1)
    out = bn(c, f"{prefix}_bn2", cout, out)
    if stride != 1 or cin != cout:
        identity = F.conv2d(x, conv_w(c, f"{prefix}_down", cout, cin, 1), None, stride, 0)
        identity = bn(c, f"{prefix}_down_bn", cout, identity)
    out += identity
    return F.relu(out, inplace=True)


@case("resnet_basic_block")
def resnet_basic_block(c):
    x = c.input("x", [2, 8, 8, 8])
    return basic_block(c, x, 8, 8, 1, "block")


@case("resnet_basic_block_downsample")
def resnet_basic_block_downsample(c):
    # The block input comes out of a stem conv, so `identity` is a non-leaf like in a network.
    x = c.input("x", [2, 3, 10, 10])
    stem = F.relu(F.conv2d(x, conv_w(c, "stem", 8, 3, 3), None, 1, 1))
    return basic_block(c, stem, 8, 16, 2, "block")


@case("densenet_layer")
def densenet_layer(c):
    # torchvision's _DenseLayer (bn_function + conv2) inside a dense block: the new features are
    # concatenated to all previous ones.
    growth, bn_size = 4, 4
    feats = [c.input("x0", [2, 8, 6, 6]), c.input("x1", [2, 4, 6, 6])]
    concated = torch.cat(feats, 1)
    h = F.relu(bn(c, "norm1", 12, concated), inplace=True)
    h = F.conv2d(h, conv_w(c, "conv1", bn_size * growth, 12, 1))
    h = F.relu(bn(c, "norm2", bn_size * growth, h), inplace=True)
    new = F.conv2d(h, conv_w(c, "conv2", growth, bn_size * growth, 3), None, 1, 1)
    return torch.cat(feats + [new], 1)


@case("lstm_cell_8_steps")
def lstm_cell_8_steps(c):
    steps, batch, nin, hidden = 8, 3, 5, 6
    x = c.input("x", [steps, batch, nin])
    h = c.input("h0", [batch, hidden], scale=0.1)
    cell = c.input("c0", [batch, hidden], scale=0.1)
    k = inv_sqrt(hidden)
    w_ih = c.param("w_ih", [4 * hidden, nin], init="uniform", low=-k, high=k)
    w_hh = c.param("w_hh", [4 * hidden, hidden], init="uniform", low=-k, high=k)
    b_ih = c.param("b_ih", [4 * hidden], init="uniform", low=-k, high=k)
    b_hh = c.param("b_hh", [4 * hidden], init="uniform", low=-k, high=k)
    hs = []
    for t in range(steps):
        # nn.LSTMCell's arithmetic, written out (the fused cell saves differently).
        gates = F.linear(x[t], w_ih, b_ih) + F.linear(h, w_hh, b_hh)
        i, f, g, o = gates.chunk(4, 1)
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
        cell = f * cell + i * g
        h = o * torch.tanh(cell)
        hs.append(h.unsqueeze(0))
    return torch.cat(hs, 0), cell


@case("transformer_block")
def transformer_block(c):
    # A pre-LayerNorm GPT block: causal multi-head attention and a GELU MLP, residuals, and
    # dropout with p = 0 (deterministic; the op itself is checked with p = 0.5 elsewhere).
    batch, seq, dim, heads = 2, 5, 8, 2
    dh = dim // heads
    x = c.input("x", [batch, seq, dim])
    mask = c.const("mask", torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1))

    def lin(name, nout, nin):
        k = inv_sqrt(nin)
        return (c.param(f"{name}_w", [nout, nin], init="uniform", low=-k, high=k),
                c.param(f"{name}_b", [nout], init="uniform", low=-k, high=k))

    def ln(name, t):
        return F.layer_norm(t, (dim,), c.param(f"{name}_w", [dim], init="uniform", low=0.5,
                                               high=1.5), c.param(f"{name}_b", [dim], scale=0.1))

    h = ln("ln1", x)
    qkv = F.linear(h, *lin("qkv", 3 * dim, dim))
    q, k, v = qkv.split(dim, dim=2)
    q = q.view(batch, seq, heads, dh).transpose(1, 2)
    k = k.view(batch, seq, heads, dh).transpose(1, 2)
    v = v.view(batch, seq, heads, dh).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
    att = F.softmax(att + mask, dim=-1)
    att = F.dropout(att, 0.0, True)
    y = (att @ v).transpose(1, 2).contiguous().view(batch, seq, dim)
    y = F.linear(y, *lin("proj", dim, dim))
    x = x + F.dropout(y, 0.0, True)
    m = F.gelu(F.linear(ln("ln2", x), *lin("fc", 4 * dim, dim)))
    m = F.linear(m, *lin("fc_out", dim, 4 * dim))
    return x + F.dropout(m, 0.0, True)
