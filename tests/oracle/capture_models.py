"""Models written for the capture tests (issue 37): a Llama-family decoder (RMSNorm, rotary
embeddings kept as buffers, SwiGLU, grouped-query attention) and a small CNN. The 8B bench
(tests/bench/capture_8b.py) builds the same decoder at Llama 3 8B's sizes.

    llama(vocab, dim, layers, heads, kv_heads, ffn, max_seq)   a factory for ckptlab_capture
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# RMSNorm, the rotary rotation, SwiGLU and the layer are the ONNX tests' (fusion_oracle.py);
# the attention here repeats the key/value heads as Hugging Face's repeat_kv does.
from llama_family import DecoderLayer, RMSNorm, rotate_half  # noqa: F401


def repeat_kv(x, n_rep):
    b, h, t, d = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(b, h, n_rep, t, d).reshape(b, h * n_rep, t, d)


class Attention(nn.Module):
    def __init__(self, dim, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q_proj = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, dim, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = repeat_kv(k, self.heads // self.kv_heads)
        v = repeat_kv(v, self.heads // self.kv_heads)
        att = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        att = F.softmax(att + mask, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).contiguous().view(b, t, -1)
        return self.o_proj(y)


class Llama(nn.Module):
    def __init__(self, vocab, dim, layers, heads, kv_heads, ffn, max_seq, theta=500000.0):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(DecoderLayer(dim, heads, kv_heads, ffn, Attention)
                                    for _ in range(layers))
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        head_dim = dim // heads
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
        freqs = torch.outer(torch.arange(max_seq).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        # Buffers, not weights: the rotary tables and the causal mask.
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)
        self.register_buffer("causal_mask",
                             torch.full((max_seq, max_seq), float("-inf")).triu(1),
                             persistent=False)

    def forward(self, input_ids):
        t = input_ids.shape[1]
        x = self.embed_tokens(input_ids)
        cos, sin, mask = self.cos_cached[:t], self.sin_cached[:t], self.causal_mask[:t, :t]
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


def llama_small():
    return Llama(vocab=64, dim=32, layers=2, heads=4, kv_heads=2, ffn=48, max_seq=16)


def llama_8b():
    """Llama 3 8B's sizes: 32 layers, width 4,096, FFN 14,336, 32 heads, 8 KV heads, a
    vocabulary of 128,256; the buffers made for 8,192 tokens."""
    return Llama(vocab=128256, dim=4096, layers=32, heads=32, kv_heads=8, ffn=14336,
                 max_seq=8192)


class SmallCnn(nn.Module):
    """Conv, BatchNorm, ReLU, max pooling, an in-place residual, average pooling and a head with
    in-place activations and a GLU."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(2))
        self.conv = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        # In-place activations save a clone of their input in PyTorch 1.13 (as EfficientNet's
        # and MobileNet's do): the engine's out-of-place ops keep the same bytes.
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 16),
                                  nn.SiLU(inplace=True), nn.Linear(16, 16),
                                  nn.Hardswish(inplace=True), nn.Linear(16, 32), nn.GLU(),
                                  nn.ReLU6(inplace=True), nn.Linear(16, classes))

    def forward(self, x):
        x = self.stem(x)
        y = self.bn(self.conv(x))
        y += x
        return self.head(self.pool(F.relu(y)))


# --- Masks the forward builds (issue 37): what nn.Transformer, nn.MultiheadAttention, Swin and
# nanoGPT dispatch for them in PyTorch 1.13 (full, triu, zeros, slice assignment, comparisons,
# logical_or, masked_fill and masked_fill_).

class CausalEncoder(nn.Module):
    """nn.TransformerEncoder under nn.Transformer.generate_square_subsequent_mask, made in the
    forward on the CPU (torch.full then torch.triu) whatever device the model is on."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(16, 2, 32, 0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.encoder(x, mask=mask)


class MaskedMha(nn.Module):
    """nn.MultiheadAttention with a bool causal mask (a buffer) and a key padding mask made in
    the forward, bool (zeros, a slice assignment) or float (arange, a comparison, a cast)."""

    def __init__(self, float_padding):
        super().__init__()
        self.float_padding = float_padding
        self.attn = nn.MultiheadAttention(16, 2, dropout=0.0, batch_first=True)
        self.register_buffer("causal", torch.ones(6, 6).triu(1).bool(), persistent=False)

    def forward(self, x):
        b, t, _ = x.shape
        if self.float_padding:
            pad = (torch.arange(t) >= t - 2).to(x.dtype).expand(b, t) * -1e4
        else:
            pad = torch.zeros(b, t, dtype=torch.bool)
            pad[1, -2:] = True
        out, weights = self.attn(x, x, x, key_padding_mask=pad, attn_mask=self.causal[:t, :t])
        return out + weights.sum()


def swin_block():
    """torchvision's Swin block with a shifted window: its attention mask is made in the forward
    (new_zeros, slice assignments, ne and eq, masked_fill twice)."""
    from torchvision.models.swin_transformer import SwinTransformerBlock
    return SwinTransformerBlock(16, 2, [4, 4], [2, 2])


class GptBlock(nn.Module):
    """nanoGPT's causal self-attention: masked_fill(self.bias[:, :, :T, :T] == 0, -inf)."""

    def __init__(self, width=16, heads=2, block=8):
        super().__init__()
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.heads = heads
        self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)


class Video3d(nn.Module):
    """A small 3-d CNN as torchvision's video networks are made: Conv3d, BatchNorm3d, in-place
    ReLU, MaxPool3d (which PyTorch 1.13 cannot run on meta: the capture runs it on CPU zeros),
    AdaptiveAvgPool3d and a head."""

    def __init__(self, classes=5):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv3d(3, 8, 3, padding=1, bias=False), nn.BatchNorm3d(8),
                                  nn.ReLU(inplace=True), nn.MaxPool3d((1, 2, 2)))
        self.conv = nn.Conv3d(8, 8, (1, 3, 3), padding=(0, 1, 1))
        self.pool = nn.AdaptiveAvgPool3d(1)
        self.fc = nn.Linear(8, classes)

    def forward(self, x):
        x = self.conv(self.stem(x))
        return self.fc(self.pool(F.relu(x)).flatten(1))
