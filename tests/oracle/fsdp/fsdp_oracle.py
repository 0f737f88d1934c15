"""Per-rank memory of FSDP2 training steps, measured on ONE GPU with PyTorch 2.x's fake process
group (collectives are no-ops; every buffer FSDP allocates for them is real), as torchtitan's
memory estimator measured it. One case per process (python3 fsdp_oracle.py CASE_JSON), so the
caching allocator starts empty. Prints one JSON line:
  sharded_param_bytes  bytes of this rank's parameter shards after fully_shard
  start                allocated before step 2 (shards, optimizer state, workspaces)
  peak                 max_memory_allocated over step 2 (forward, loss, backward, optimizer)
  end_fwd              allocated just before backward in step 2
  after_bwd            allocated after backward in step 2
  reserved             max_memory_reserved over both steps
Model: a Llama-family decoder (RMSNorm, rotary embeddings, SwiGLU, grouped-query attention,
causal SDPA), fully_shard on every block and then the root, MixedPrecisionPolicy as asked,
activation checkpointing per block (none | full | sac-mm: save every matmul output), AdamW."""
import json, os, sys
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

c = json.loads(sys.argv[1])
W = c.get("world", 8)
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29561")
from torch.testing._internal.distributed.fake_pg import FakeStore
dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=W)
torch.cuda.set_device(0)
from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
from torch.utils.checkpoint import checkpoint

class RMSNorm(nn.Module):
    def __init__(s, d, eps=1e-5): super().__init__(); s.eps = eps; s.weight = nn.Parameter(torch.ones(d))
    def forward(s, x):
        xf = x.float(); return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + s.eps)).type_as(x) * s.weight

def rope(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin

class Attn(nn.Module):
    def __init__(s, d, h, kvh):
        super().__init__(); s.h, s.kvh, s.hd = h, kvh, d // h
        s.wq = nn.Linear(d, d, bias=False); s.wk = nn.Linear(d, kvh * s.hd, bias=False)
        s.wv = nn.Linear(d, kvh * s.hd, bias=False); s.wo = nn.Linear(d, d, bias=False)
    def forward(s, x, cos, sin):
        B, T, _ = x.shape
        q = s.wq(x).view(B, T, s.h, s.hd).transpose(1, 2)
        k = s.wk(x).view(B, T, s.kvh, s.hd).transpose(1, 2)
        v = s.wv(x).view(B, T, s.kvh, s.hd).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        r = s.h // s.kvh
        k = k.repeat_interleave(r, dim=1); v = v.repeat_interleave(r, dim=1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return s.wo(o.transpose(1, 2).reshape(B, T, -1))

class MLP(nn.Module):
    def __init__(s, d, f):
        super().__init__(); s.w1 = nn.Linear(d, f, bias=False); s.w3 = nn.Linear(d, f, bias=False); s.w2 = nn.Linear(f, d, bias=False)
    def forward(s, x): return s.w2(F.silu(s.w1(x)) * s.w3(x))

class Block(nn.Module):
    def __init__(s, d, h, kvh, f, ac):
        super().__init__(); s.attention_norm = RMSNorm(d); s.attention = Attn(d, h, kvh)
        s.ffn_norm = RMSNorm(d); s.feed_forward = MLP(d, f); s.ac = ac
    def body(s, x, cos, sin):
        x = x + s.attention(s.attention_norm(x), cos, sin)
        return x + s.feed_forward(s.ffn_norm(x))
    def forward(s, x, cos, sin):
        if s.ac == "full":
            return checkpoint(s.body, x, cos, sin, use_reentrant=False)
        if s.ac == "sac-mm":
            from torch.utils.checkpoint import create_selective_checkpoint_contexts, CheckpointPolicy
            keep = {torch.ops.aten.mm.default}
            pol = lambda ctx, op, *a, **k: CheckpointPolicy.MUST_SAVE if op in keep else CheckpointPolicy.PREFER_RECOMPUTE
            return checkpoint(s.body, x, cos, sin, use_reentrant=False,
                              context_fn=lambda: create_selective_checkpoint_contexts(pol))
        return s.body(x, cos, sin)

class Decoder(nn.Module):
    def __init__(s, V, d, L, h, kvh, f, T, ac):
        super().__init__(); s.tok_embeddings = nn.Embedding(V, d)
        s.layers = nn.ModuleList([Block(d, h, kvh, f, ac) for _ in range(L)])
        s.norm = RMSNorm(d); s.output = nn.Linear(d, V, bias=False)
        hd = d // h; inv = 1.0 / (500000 ** (torch.arange(0, hd, 2).float() / hd)); t = torch.arange(T).float()
        fr = torch.outer(t, inv); emb = torch.cat((fr, fr), -1)
        s.register_buffer("cos", emb.cos(), persistent=False); s.register_buffer("sin", emb.sin(), persistent=False)
    def forward(s, idx):
        x = s.tok_embeddings(idx)
        for l in s.layers: x = l(x, s.cos, s.sin)
        return s.output(s.norm(x))

m_cfg = c["model"]
V, d, L, h, kvh, f = (m_cfg[k] for k in ("vocab", "dim", "layers", "heads", "kv_heads", "ffn"))
B, T = c["batch"], c["seq"]
torch.manual_seed(0)
with torch.device("meta"):
    model = Decoder(V, d, L, h, kvh, f, T, c.get("ac", "none"))
pd = {"bf16": torch.bfloat16, "fp32": torch.float32}
mp = MixedPrecisionPolicy(param_dtype=pd[c.get("param_dtype", "bf16")], reduce_dtype=pd[c.get("reduce_dtype", "fp32")])
raf = c.get("reshard_after_forward", True)
if W > 1 or c.get("shard_at_1", True):
    for blk in model.layers:
        fully_shard(blk, mp_policy=mp, reshard_after_forward=raf)
    fully_shard(model, mp_policy=mp, reshard_after_forward=raf)
model.to_empty(device="cuda")
with torch.no_grad():
    for p in model.parameters():
        p.normal_(0, 0.02)
    hd = d // h; inv = 1.0 / (500000 ** (torch.arange(0, hd, 2, device="cuda").float() / hd))
    t = torch.arange(T, device="cuda").float(); fr = torch.outer(t, inv); emb = torch.cat((fr, fr), -1)
    model.cos = emb.cos(); model.sin = emb.sin()
torch.cuda.synchronize()
sharded = torch.cuda.memory_allocated()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
idx = torch.randint(0, V, (B, T), device="cuda")
info = {}
def step(record):
    logits = model(idx)
    loss = F.cross_entropy(logits.flatten(0, 1).float(), idx.flatten())
    if record:
        torch.cuda.synchronize(); info["end_fwd"] = torch.cuda.memory_allocated()
    loss.backward()
    if record:
        torch.cuda.synchronize(); info["after_bwd"] = torch.cuda.memory_allocated()
    opt.step(); opt.zero_grad(set_to_none=True)
try:
    step(False)
    torch.cuda.synchronize()
    start = torch.cuda.memory_allocated(); torch.cuda.reset_peak_memory_stats()
    step(True)
    torch.cuda.synchronize()
    res = dict(case=c["case"], sharded_param_bytes=sharded, start=start, peak=torch.cuda.max_memory_allocated(),
               reserved=torch.cuda.max_memory_reserved(), torch=torch.__version__,
               gpu=torch.cuda.get_device_name(0), **info)
except torch.cuda.OutOfMemoryError as e:
    res = dict(case=c["case"], error="out of memory", torch=torch.__version__)
print(json.dumps(res), flush=True)
dist.destroy_process_group()
