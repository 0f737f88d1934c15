"""Oracle cases for checkpointing (issue 4): torch.utils.checkpoint as PyTorch 1.13 runs it.

Besides outputs and gradients (compared by the harness), the cases hand the C++ side the
texts PyTorch printed (attributes) and the counts it measured (reports): warnings, errors,
tensors packed by saved_tensors_hooks, forward and recompute calls.
"""

import warnings

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

from oracle_harness import case, inv_sqrt


def _linear_params(c, prefix, n_in, n_out):
    bound = inv_sqrt(n_in)
    w = c.param(f"{prefix}w", [n_out, n_in], init="uniform", low=-bound, high=bound)
    b = c.param(f"{prefix}b", [n_out], init="uniform", low=-bound, high=bound)
    return w, b


# --- seed 002: a sub-network with trainable weights, its input not requiring grad ---------
def subnet_case(variant, reentrant, head, input_grad, try_backward):
    @case(f"ckpt_subnet@{variant}", compare_saved=False)
    def f(c):
        c.attr("reentrant", reentrant)
        c.attr("head", head)
        c.attr("try_backward", try_backward)
        x = c.input("x", [4, 8], requires_grad=input_grad)
        w1, b1 = _linear_params(c, "l1", 8, 16)
        w2, b2 = _linear_params(c, "l2", 16, 8)
        wh, bh = _linear_params(c, "head", 8, 1) if head else (None, None)

        def subnet(t):
            return F.linear(torch.relu(F.linear(t, w1, b1)), w2, b2)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = checkpoint(subnet, x, use_reentrant=reentrant)
        c.attr("warnings", "\n".join(str(w.message) for w in caught))
        if head:
            out = F.linear(out, wh, bh)
        error = ""
        if try_backward:
            try:
                out.sum().backward()
            except RuntimeError as e:
                error = str(e)
        c.attr("error", error)
        return out


# Nothing after the segment: the warning, then the error at backward.
subnet_case("reentrant_nothing_after", True, False, False, True)
# A trainable head after it: the warning, no error, and no gradient inside the segment.
subnet_case("reentrant_head", True, True, False, False)
# The non-reentrant variant has neither limit.
subnet_case("non_reentrant_nothing_after", False, False, False, False)
subnet_case("non_reentrant_head", False, True, False, False)
# The usual case: the input requires grad.
subnet_case("reentrant_input_grad", True, False, True, False)


# --- seed 004: HeavyModel, 1000 calls of a 100-op function --------------------------------
def heavy_case(variant, use_sin):
    @case(f"ckpt_heavy@{variant}", compare_saved=False)
    def f(c):
        c.attr("sin", use_sin)
        x = c.input_from("x", 0.0, requires_grad=True)
        a = c.param_from("a", 1.0)
        calls = [0]

        def heavy_function(t, p):
            calls[0] += 1
            for _ in range(100):
                t = (torch.sin(t) if use_sin else t) + p
            return t

        def model(xx, aa, mode):
            y = xx
            for _ in range(1000):
                if mode == "plain":
                    y = heavy_function(y, aa)
                else:
                    y = checkpoint(heavy_function, y, aa, use_reentrant=(mode == "reentrant"))
            return y

        for mode in ("plain", "reentrant", "non_reentrant"):
            packs = [0]

            def pack(t):
                packs[0] += 1
                return t

            xx = x.detach().requires_grad_()
            aa = a.detach().requires_grad_()
            calls[0] = 0
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                y = model(xx, aa, mode)
            forward_calls = calls[0]
            y.backward()
            c.report(f"packs_{mode}", packs[0])
            c.report(f"forward_calls_{mode}", forward_calls)
            c.report(f"recompute_calls_{mode}", calls[0] - forward_calls)
            c.report(f"grad_a_{mode}", aa.grad.item())
        return model(x, a, "plain")


heavy_case("add", False)
heavy_case("sin", True)


# --- checkpoint_sequential: 1.13's split, counted per function ----------------------------
def sequential_case(segments):
    @case(f"ckpt_sequential@{segments}", compare_saved=False)
    def f(c):
        c.attr("segments", segments)
        ws = [c.param(f"w{i}", [6, 6], init="uniform", low=-0.4, high=0.4) for i in range(10)]
        x = c.input("x", [3, 6])
        calls = [0] * 10

        def make(i):
            def fn(t):
                calls[i] += 1
                return torch.tanh(F.linear(t, ws[i]))

            return fn

        fns = [make(i) for i in range(10)]
        # A counted run on copies (forward and backward), then the compared one.
        copies = [w.detach().requires_grad_() for w in ws]
        saved = list(ws)
        ws[:] = copies
        checkpoint_sequential(fns, segments, x.detach().requires_grad_()).sum().backward()
        ws[:] = saved
        for i in range(10):
            c.report(f"calls_{i}", calls[i])
        return checkpoint_sequential(fns, segments, x)


sequential_case(2)
sequential_case(4)


# --- dropout inside a segment, with and without the RNG state preserved -------------------
def dropout_case(variant, reentrant, preserve):
    @case(f"ckpt_dropout@{variant}", compare_saved=False)
    def f(c):
        c.attr("reentrant", reentrant)
        c.attr("preserve", preserve)
        x = c.input("x", [4, 16])
        w, b = _linear_params(c, "l", 16, 16)

        def block(t):
            return F.dropout(torch.tanh(F.linear(t, w, b)), 0.5, True)

        return torch.sin(checkpoint(block, x, use_reentrant=reentrant,
                                    preserve_rng_state=preserve))


dropout_case("reentrant_preserve", True, True)
dropout_case("non_reentrant_preserve", False, True)
# Not preserved: the recompute draws other masks and PyTorch silently computes gradients with
# them; the engine (its recompute check off) reproduces those very gradients.
dropout_case("reentrant_no_preserve", True, False)
dropout_case("non_reentrant_no_preserve", False, False)


# --- BatchNorm in a segment: running statistics updated twice -----------------------------
def bn_case(variant, reentrant):
    @case(f"ckpt_bn@{variant}", compare_saved=False)
    def f(c):
        c.attr("reentrant", reentrant)
        x = c.input("x", [4, 3, 6, 6])
        w = c.param("w", [4, 3, 3, 3], scale=0.3)
        gamma = c.param("gamma", [4], init="uniform", low=0.5, high=1.5)
        beta = c.param("beta", [4], scale=0.1)
        rm = c.buffer("running_mean", torch.zeros(4))
        rv = c.buffer("running_var", torch.ones(4))
        nbt = c.buffer("num_batches_tracked", torch.tensor(0, dtype=torch.int64))

        def block(t):
            nbt.add_(1)  # what nn.BatchNorm2d.forward does in training mode
            h = F.batch_norm(F.conv2d(t, w, padding=1), rm, rv, gamma, beta, True, 0.1, 1e-5)
            return torch.relu(h)

        return checkpoint(block, x, use_reentrant=reentrant)


bn_case("reentrant", True)
bn_case("non_reentrant", False)


# --- grad() and a detached output ----------------------------------------------------------
def grad_case(variant, reentrant):
    @case(f"ckpt_grad@{variant}", compare_saved=False)
    def f(c):
        c.attr("reentrant", reentrant)
        x = c.input("x", [4, 8])
        w, b = _linear_params(c, "l", 8, 8)
        y = checkpoint(lambda t: torch.tanh(F.linear(t, w, b)), x, use_reentrant=reentrant)
        error = ""
        g = torch.zeros(4, 8)
        try:
            g = torch.autograd.grad(y.sum(), x, retain_graph=True)[0]
        except RuntimeError as e:
            error = str(e)
        c.attr("error", error)
        return y, g


grad_case("reentrant", True)
grad_case("non_reentrant", False)


@case("ckpt_detached", compare_saved=False)
def detached(c):
    x = c.input("x", [4, 8])
    w, b = _linear_params(c, "l", 8, 8)
    y = checkpoint(lambda t: torch.tanh(F.linear(t, w, b)).detach(), x, use_reentrant=True)
    c.attr("requires_grad", y.requires_grad)
    error = ""
    try:
        y.sum().backward()
    except RuntimeError as e:
        error = str(e)
    c.attr("error", error)
    return y.detach()


# --- per-op policies (issue 28): PyTorch 2.4's selective checkpointing, emulated in 1.13 ------
# 1.13 has no create_selective_checkpoint_contexts; it has the two things 2.4 builds it from: a
# TorchDispatchMode that sees every aten op under autograd, and the non-reentrant checkpoint.
# The forward keeps the outputs of the policy's ops (MUST_SAVE) in a cache; the recomputation
# hands those back instead of running the op (2.4's _CachingTorchDispatchMode /
# _CachedTorchDispatchMode), everything else is recomputed.
_MM_OPS = (torch.ops.aten.addmm.default, torch.ops.aten.mm.default, torch.ops.aten.bmm.default)


def _selective_checkpoint(fn, x, ops, every, counts):
    from torch.utils._python_dispatch import TorchDispatchMode

    cache, seen, passes = [], [0], [0]

    class Selective(TorchDispatchMode):
        def __init__(self, recompute):
            super().__init__()
            self.recompute = recompute

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            keep = func in ops and seen[0] % every == 0
            if func in ops:
                seen[0] += 1
            if keep and self.recompute:
                counts["reused"] += 1
                return cache.pop(0)
            out = func(*args, **kwargs)
            if keep:
                cache.append(out.detach())
                counts["kept_bytes"] += out.storage().nbytes()
            return out

    def region(t):
        recompute = passes[0] > 0
        passes[0] += 1
        seen[0] = 0
        with Selective(recompute):
            return fn(t)

    return checkpoint(region, x, use_reentrant=False)


def selective_case(variant, every):
    @case(f"ckpt_selective@{variant}", compare_saved=False)
    def f(c):
        c.attr("kinds", "" if every == 0 else "mm")
        c.attr("every", max(every, 1))
        x = c.input("x", [8, 16], requires_grad=True)
        layers = [_linear_params(c, f"l{i}", n_in, n_out)
                  for i, (n_in, n_out) in enumerate([(16, 32), (32, 32), (32, 32), (32, 16)])]
        w = c.param("w", [16, 24])

        def block(t):
            for i, (wi, bi) in enumerate(layers):
                t = F.linear(t, wi, bi)
                t = torch.tanh(t) if i % 2 else F.gelu(t)
            return torch.matmul(t, w)  # aten.mm: the fifth op of kind mm

        ops = () if every == 0 else _MM_OPS
        # A run of its own for the counts (the harness's backward comes after f returns).
        counts = {"reused": 0, "kept_bytes": 0}
        out = _selective_checkpoint(block, torch.sin(x), ops, max(every, 1), counts)
        torch.autograd.backward(out, torch.ones_like(out))  # the recompute runs here
        c.report("kept_bytes", counts["kept_bytes"])
        c.report("reused", counts["reused"])
        for t, _ in c.tensors.values():
            t.grad = None
        return _selective_checkpoint(block, torch.sin(x), ops, max(every, 1), dict(counts))


selective_case("none", 0)
selective_case("mm", 1)
selective_case("mm_every2", 2)
