"""The PyTorch half of the benchmark (run by ckptlab_bench; /usr/bin/python3, torch 1.13).

  bench_torch.py config                      -> torch.__config__.show() and thread info
  bench_torch.py MODEL THREADS WARMUP ITERS  -> one JSON line: {"times_ms": [...]}
  bench_torch.py serve                       -> a loop on stdin, so that the caller can
      interleave PyTorch's steps with its own (both then see the same machine load):
      "setup MODEL THREADS" -> "ready THREADS", "step" -> "<wall ms> <process cpu ms>", "quit".

MODEL is one of MODELS below: mlp and resnet18 built exactly like the C++ side
(tests/bench/nets.cpp); resnet50 and densenet121 are torchvision's own models at 224x224 batch 8
(the ones ckptlab_bench exports to ONNX with samples/export_onnx.py, same seed, so the same
weights), loss sum(output) as the ONNX scenario's; transformer_block, gpt_mini, heavy_model and
heavy_model_sin are the samples' JSON files (samples/*.json) written by hand in PyTorch, op for op
as the engine's JSON builder expands them (engine/model/json_layers.cpp), in training mode.
"""

import json
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def mlp():
    torch.manual_seed(0)
    x = torch.randn(64, 1024)
    target = torch.randint(0, 1024, (64,))
    params = []
    for _ in range(4):
        k = 1 / math.sqrt(1024)
        params += [torch.empty(1024, 1024).uniform_(-k, k).requires_grad_(),
                   torch.empty(1024).uniform_(-k, k).requires_grad_()]

    def step():
        h = x
        for i in range(4):
            h = F.linear(h, params[2 * i], params[2 * i + 1])
            if i < 3:
                h = F.relu(h)
        F.cross_entropy(h, target).backward()

    return step, params


def resnet18():
    torch.manual_seed(0)
    x = torch.randn(8, 3, 64, 64)
    target = torch.randint(0, 1000, (8,))
    params = []

    def conv(cout, cin, k):
        w = (torch.randn(cout, cin, k, k) * math.sqrt(2.0 / (cin * k * k))).requires_grad_()
        params.append(w)
        return w

    def bnp(ch):
        p = (torch.ones(ch).requires_grad_(), torch.zeros(ch).requires_grad_(),
             torch.zeros(ch), torch.ones(ch))
        params.extend(p[:2])
        return p

    stem = (conv(64, 3, 7), bnp(64))
    blocks = []
    cin = 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        for b in range(2):
            s = stride if b == 0 else 1
            down = None
            if s != 1 or cin != cout:
                down = (conv(cout, cin, 1), bnp(cout))
            blocks.append((conv(cout, cin, 3), bnp(cout), conv(cout, cout, 3), bnp(cout), down, s))
            cin = cout
    fc_w = torch.empty(1000, 512).uniform_(-1 / math.sqrt(512), 1 / math.sqrt(512))
    fc_w.requires_grad_()
    fc_b = torch.zeros(1000, requires_grad=True)
    params += [fc_w, fc_b]

    def bn(h, p):
        w, b, rm, rv = p
        return F.batch_norm(h, rm, rv, w, b, training=True)

    def step():
        h = F.relu(bn(F.conv2d(x, stem[0], None, 2, 3), stem[1]), inplace=True)
        h = F.max_pool2d(h, 3, 2, 1)
        for w1, b1, w2, b2, down, s in blocks:
            out = F.relu(bn(F.conv2d(h, w1, None, s, 1), b1), inplace=True)
            out = bn(F.conv2d(out, w2, None, 1, 1), b2)
            identity = h if down is None else bn(F.conv2d(h, down[0], None, s, 0), down[1])
            out += identity
            h = F.relu(out, inplace=True)
        h = torch.flatten(F.adaptive_avg_pool2d(h, 1), 1)
        F.cross_entropy(F.linear(h, fc_w, fc_b), target).backward()

    return step, params


def torchvision_model(name):
    """torchvision.models.NAME as samples/export_onnx.py --torchvision NAME --batch 8 --size 224
    exports it: seed 0, 1000 classes, training mode; the ONNX scenario's loss is sum(output)."""
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(num_classes=1000)
    model.train()
    x = torch.randn(8, 3, 224, 224)

    def step():
        model(x).sum().backward()

    return step, list(model.parameters())


class Attention(nn.Module):
    """The JSON "attention" layer (json_layers.cpp): q/k/v/out projections, heads split by
    reshape + transpose, scaled scores, an additive causal mask (the lowest float), softmax,
    dropout on the weights."""

    def __init__(self, dim, heads, p, causal_seq=0):
        super().__init__()
        self.heads = heads
        self.q_proj, self.k_proj = nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.v_proj, self.out_proj = nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.attn_drop = nn.Dropout(p) if p > 0 else nn.Identity()
        self.mask = None
        if causal_seq:
            self.mask = torch.triu(torch.full((causal_seq, causal_seq),
                                              torch.finfo(torch.float32).min), 1)

    def forward(self, x):
        b, s, d = x.shape
        h = self.heads

        def split(t):
            return t.reshape(b, s, h, d // h).transpose(1, 2)

        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(d // h))
        if self.mask is not None:
            scores = scores + self.mask
        weights = self.attn_drop(torch.softmax(scores, -1))
        ctx = torch.matmul(weights, v).transpose(1, 2).reshape(b, s, d)
        return self.out_proj(ctx)


def transformer_block():
    """samples/transformer_block.json: x [4, 16, 64] (requires grad), x + drop(attn(ln(x))),
    then x + drop(fc2(gelu(fc1(ln(x))))), loss mean."""
    torch.manual_seed(6)
    m = nn.ModuleDict({"ln1": nn.LayerNorm(64), "attn": Attention(64, 4, 0.1),
                       "drop1": nn.Dropout(0.1), "ln2": nn.LayerNorm(64),
                       "fc1": nn.Linear(64, 256), "fc2": nn.Linear(256, 64),
                       "drop2": nn.Dropout(0.1)})
    m.train()
    x = torch.randn(4, 16, 64, requires_grad=True)

    def step():
        h = x + m["drop1"](m["attn"](m["ln1"](x)))
        h = h + m["drop2"](m["fc2"](F.gelu(m["fc1"](m["ln2"](h)))))
        h.mean().backward()

    return step, list(m.parameters()) + [x]


def gpt_mini():
    """samples/gpt_mini.json: vocabulary 512, width 64, 4 heads, 4 pre-LN blocks with causal
    attention, 64 tokens, batch 4; next-token cross entropy over the flattened logits."""
    torch.manual_seed(64)
    vocab, dim, seq, batch = 512, 64, 64, 4
    m = nn.ModuleDict({"wte": nn.Embedding(vocab, dim), "wpe": nn.Embedding(seq, dim),
                       "drop": nn.Dropout(0.1), "ln_f": nn.LayerNorm(dim),
                       "lm_head": nn.Linear(dim, vocab, bias=False)})
    blocks = nn.ModuleList(
        nn.ModuleDict({"ln_1": nn.LayerNorm(dim), "attn": Attention(dim, 4, 0.1, seq),
                       "resid_drop": nn.Dropout(0.1), "ln_2": nn.LayerNorm(dim),
                       "c_fc": nn.Linear(dim, 4 * dim), "c_proj": nn.Linear(4 * dim, dim),
                       "dropout": nn.Dropout(0.1)}) for _ in range(4))
    m.train()
    blocks.train()
    idx = torch.randint(0, vocab, (batch, seq))
    pos = torch.arange(seq)
    targets = torch.randint(0, vocab, (batch * seq,))

    def step():
        x = m["drop"](m["wte"](idx) + m["wpe"](pos))
        for b in blocks:
            mid = b["resid_drop"](b["attn"](b["ln_1"](x))) + x
            x = b["dropout"](b["c_proj"](F.gelu(b["c_fc"](b["ln_2"](mid))))) + mid
        logits = m["lm_head"](m["ln_f"](x)).reshape(-1, vocab)
        F.cross_entropy(logits, targets).backward()

    return step, list(m.parameters()) + list(blocks.parameters())


def heavy(with_sin):
    """The blog's HeavyModel (samples/heavy_model.json, heavy_model_sin.json): a 0-d input x that
    requires grad, one shared 0-d parameter a = 1.0, 1000 calls of heavy_function, each 100 times
    x = x + a (or x = torch.sin(x) + a); loss sum."""
    torch.manual_seed(4)
    x = torch.randn((), requires_grad=True)
    a = torch.tensor(1.0, requires_grad=True)

    def heavy_function(h, a):
        for _ in range(100):
            h = (torch.sin(h) if with_sin else h) + a
        return h

    def step():
        h = x
        for _ in range(1000):
            h = heavy_function(h, a)
        h.sum().backward()

    return step, [x, a]


MODELS = {
    "mlp": mlp,
    "resnet18": resnet18,
    "resnet50": lambda: torchvision_model("resnet50"),
    "densenet121": lambda: torchvision_model("densenet121"),
    "transformer_block": transformer_block,
    "gpt_mini": gpt_mini,
    "heavy_model": lambda: heavy(False),
    "heavy_model_sin": lambda: heavy(True),
}


def serve():
    step = params = None
    built = {}  # by model: built once, run at each thread count
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        if words[0] == "setup":
            torch.set_num_threads(int(words[2]))
            if words[1] not in built:
                built[words[1]] = MODELS[words[1]]()
            step, params = built[words[1]]
            print(f"ready {torch.get_num_threads()}", flush=True)
        elif words[0] == "step":
            for p in params:
                p.grad = None
            t0, c0 = time.perf_counter(), time.process_time()
            step()
            t1, c1 = time.perf_counter(), time.process_time()
            print(f"{(t1 - t0) * 1e3:.4f} {(c1 - c0) * 1e3:.4f}", flush=True)
    return 0


def main(argv):
    if argv[1] == "serve":
        return serve()
    if argv[1] == "config":
        print(torch.__config__.show())
        print(torch.__config__.parallel_info())
        return 0
    model, threads, warmup, iters = argv[1], int(argv[2]), int(argv[3]), int(argv[4])
    torch.set_num_threads(threads)
    step, params = MODELS[model]()
    times = []
    for i in range(warmup + iters):
        for p in params:
            p.grad = None
        t0 = time.perf_counter()
        step()
        t1 = time.perf_counter()
        if i >= warmup:
            times.append((t1 - t0) * 1e3)
    print(json.dumps({"times_ms": times, "threads": torch.get_num_threads()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
