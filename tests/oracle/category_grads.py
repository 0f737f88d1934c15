#!/usr/bin/python3
"""Every torchvision classifier, its video networks (video.r3d_18, video.mc3_18,
video.r2plus1d_18 on 8 frames of 32 x 32), nd_models_oracle.py's speech and audio networks
(audio.wav2vec_fe, ...) and nn.Transformer / nn.MultiheadAttention models
through the engine against PyTorch: loads?, float64 gradients, float32 accuracy (issue 15).

    /usr/bin/python3 tests/oracle/category_grads.py --cli build/app/cli/ckptlab-cli
        [--models NAME ...] [--opsets 13 17] [--f32-opsets 13] [--cache /tmp/tvcov]
        [--timeout 600] [--size 32] [--batch 2] [--table [CACHE ...]]

Per model (untrained, weights=None, 10 classes, the smallest input it accepts; dropout and
stochastic depth off so that no mask is shared; BatchNorm's and LayerNorm's eps the float32
value the ONNX attribute holds), exported by torch.onnx.export in training mode with constant
folding off, as samples/export_onnx.py does:
  - float64 at each --opsets: the engine (`ckptlab-cli run --dump`, sum of the outputs, one
    thread) against PyTorch in float64: the largest |g_engine - g_torch| / max |g_torch| over
    the parameters (those whose gradient is not 0 but for rounding);
  - float32 at each --f32-opsets: tests/bench/f32_accuracy.py's rule, per parameter
    |g_engine32 - g_torch64| / |g_torch32 - g_torch64| (L2 norms), the worst; goal <= 10; and
    the same with the largest absolute error over the parameter in place of the L2 norm (issue
    38's rule). Where either is over 10, PyTorch's other float32 CPU paths (oneDNN off,
    channels_last) as the denominator too.
With --saved, instead, the bytes saved for backward (issue 27), float32 at each --opsets: the
eager module's (PyTorch 1.13, the storages saved_tensors_hooks sees, parameters, buffers and
inputs excluded) against the engine's (`ckptlab-cli run --dry-run`: activations at the end of
the forward), and --cli-before's too when given (an engine from before a change).
Each model runs in a child process under --timeout seconds. Results are appended to
CACHE/results.jsonl (a model and opset already there is not run again; exports are kept in
CACHE too); --table prints the Markdown table of what CACHE holds. A report: exit status 0.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

import numpy
import torch
import torch.nn as nn

sys.dont_write_bytecode = True

# Too big for this machine's budget: export over 2 GB in float64, or minutes per run.
TOO_BIG = {
    "vit_h_14": "632 M parameters: 5 GB in float64, an export over 2 GB (external data)",
    "regnet_y_128gf": "645 M parameters: 5 GB in float64, an export over 2 GB",
    "vit_l_16": "304 M parameters: 2.4 GB in float64, an export over 2 GB",
    "vit_l_32": "306 M parameters: 2.4 GB in float64, an export over 2 GB",
}


def family_size(name):
    """(input side, batch, builder kwargs): the smallest input each family accepts in training
    mode. ViT takes image_size; VGG, AlexNet (adaptive pools to 7x7 and 6x6 export only on a
    multiple), Inception v3 (its auxiliary head) and MaxViT (7x7 window partitions) fix theirs."""
    if name.startswith("vit_"):
        patch = int(name.rsplit("_", 1)[1])
        return 2 * patch, 2, {"image_size": 2 * patch}
    if name.startswith(("vgg", "alexnet")):
        return 224, 1, {}
    if name.startswith("maxvit"):
        return 224, 1, {}
    if name.startswith("inception"):
        return 299, 2, {"init_weights": True}
    if name.startswith("googlenet"):
        return 64, 2, {"init_weights": True}
    if name.startswith("swin"):
        return 64, 2, {}
    return SIDE, BATCH, {}


# --size, --batch: the convolutional networks' input (default 2 x 32 x 32). At 32 x 32 their
# last stage is 1 x 1, so its batch norms normalise two values per channel: both frameworks'
# gradients there depend on rounding (RegNet, ShuffleNet, ResNeXt); 64 x 64 gives them eight.
SIDE, BATCH = 32, 2


# --- nn.Transformer / nn.MultiheadAttention models -------------------------------------------

class Mha(nn.Module):
    def __init__(self, batch_first, mask):
        super().__init__()
        self.batch_first, self.mask = batch_first, mask
        self.attn = nn.MultiheadAttention(16, 4, dropout=0.0, batch_first=batch_first)
        # A boolean causal mask kept as a buffer: exports at opset 13 too (no torch.triu).
        self.register_buffer("bool_mask", torch.ones(6, 6).triu(1).bool())

    def forward(self, x):
        seq = x.shape[1] if self.batch_first else x.shape[0]
        kw = {}
        if self.mask == "causal_float":
            kw["attn_mask"] = nn.Transformer.generate_square_subsequent_mask(seq).to(x.dtype)
        elif self.mask == "bool_and_padding":
            kw["attn_mask"] = self.bool_mask[:seq, :seq]
            pad = torch.zeros(2, seq, dtype=torch.bool)
            pad[1, -2:] = True
            kw["key_padding_mask"] = pad
        out, weights = self.attn(x, x, x, need_weights=self.mask == "bool_and_padding", **kw)
        return out if weights is None else out + weights.sum()


class MhaBufferMask(nn.Module):
    """A causal mask made once and kept as a buffer (an initializer in the export): how a
    causal model exports below opset 14, where torch.triu has no ONNX form."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 4, dropout=0.0, batch_first=True)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(6))

    def forward(self, x):
        return self.attn(x, x, x, attn_mask=self.mask.to(x.dtype), need_weights=False)[0]


class MhaPaddingInput(nn.Module):
    """The key padding mask as a model input (float, 1 where padded), as a data loader gives
    it: the mask is not known at load time."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 4, dropout=0.0, batch_first=True)

    def forward(self, x, pad):
        return self.attn(x, x, x, key_padding_mask=pad > 0.5, need_weights=False)[0]


class CrossMha(nn.Module):
    """Cross-attention with distinct key/value widths (kdim, vdim: separate projections)."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 2, dropout=0.0, kdim=12, vdim=8, batch_first=True)

    def forward(self, q, kv):
        return self.attn(q, kv[..., :12], kv[..., 8:], need_weights=False)[0]


class Encoder(nn.Module):
    def __init__(self, norm_first, activation, batch_first, causal):
        super().__init__()
        layer = nn.TransformerEncoderLayer(16, 4, 32, 0.0, activation, batch_first=batch_first,
                                           norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16))
        self.causal, self.batch_first = causal, batch_first

    def forward(self, x):
        seq = x.shape[1] if self.batch_first else x.shape[0]
        mask = nn.Transformer.generate_square_subsequent_mask(seq).to(x.dtype) \
            if self.causal else None
        return self.encoder(x, mask=mask)


class Decoder(nn.Module):
    def __init__(self, batch_first):
        super().__init__()
        layer = nn.TransformerDecoderLayer(16, 4, 32, 0.0, batch_first=batch_first)
        self.decoder = nn.TransformerDecoder(layer, 2)
        self.batch_first = batch_first

    def forward(self, tgt, memory):
        seq = tgt.shape[1] if self.batch_first else tgt.shape[0]
        mask = nn.Transformer.generate_square_subsequent_mask(seq).to(tgt.dtype)
        return self.decoder(tgt, memory, tgt_mask=mask)


class Seq2Seq(nn.Module):
    def __init__(self, batch_first):
        super().__init__()
        self.t = nn.Transformer(16, 4, 2, 2, 32, 0.0, batch_first=batch_first)
        self.batch_first = batch_first

    def forward(self, src, tgt):
        seq = tgt.shape[1] if self.batch_first else tgt.shape[0]
        mask = self.t.generate_square_subsequent_mask(seq).to(src.dtype)
        pad = torch.zeros(2, src.shape[1] if self.batch_first else src.shape[0], dtype=torch.bool)
        pad[0, -1] = True
        return self.t(src, tgt, tgt_mask=mask, src_key_padding_mask=pad,
                      memory_key_padding_mask=pad)


def seq(batch_first, n):
    return [2, n, 16] if batch_first else [n, 2, 16]


TRANSFORMERS = {
    "mha": (lambda: Mha(True, None), [seq(True, 6)]),
    "mha_seqfirst": (lambda: Mha(False, None), [seq(False, 6)]),
    "mha_causal": (lambda: Mha(True, "causal_float"), [seq(True, 6)]),
    "mha_seqfirst_causal": (lambda: Mha(False, "causal_float"), [seq(False, 6)]),
    "mha_boolmask_padding_weights": (lambda: Mha(True, "bool_and_padding"), [seq(True, 6)]),
    "mha_seqfirst_boolmask_padding_weights": (lambda: Mha(False, "bool_and_padding"),
                                              [seq(False, 6)]),
    "mha_buffer_mask": (MhaBufferMask, [seq(True, 6)]),
    "mha_padding_mask_input": (MhaPaddingInput, [seq(True, 6), [2, 6]]),
    "mha_cross_kdim_vdim": (CrossMha, [[2, 5, 16], [2, 7, 16]]),
    "encoder_postln_relu": (lambda: Encoder(False, "relu", True, False), [seq(True, 6)]),
    "encoder_preln_gelu_causal": (lambda: Encoder(True, "gelu", True, True), [seq(True, 6)]),
    "encoder_seqfirst_causal": (lambda: Encoder(False, "relu", False, True), [seq(False, 6)]),
    "decoder": (lambda: Decoder(True), [seq(True, 5), seq(True, 6)]),
    "decoder_seqfirst": (lambda: Decoder(False), [seq(False, 5), seq(False, 6)]),
    "transformer": (lambda: Seq2Seq(True), [seq(True, 6), seq(True, 5)]),
    "transformer_seqfirst": (lambda: Seq2Seq(False), [seq(False, 6), seq(False, 5)]),
    # nanoGPT's block (masked_fill, its own tanh GELU): fusion_oracle.py's.
    "gpt_block": (lambda: __import__("fusion_oracle").GptBlock(), [seq(True, 6)]),
}


VIDEO = ["video.r3d_18", "video.mc3_18", "video.r2plus1d_18"]
AUDIO = ["audio.wav2vec_fe", "audio.wav2vec_fe_group_norm", "audio.wav2letter", "audio.tcn", "audio.unet1d",
         "audio.padding", "audio.instance_norm", "audio.subpixel", "audio.unet3d"]


def all_models():
    import torchvision
    names = [n for n in torchvision.models.list_models(module=torchvision.models)]
    return names + ["nn." + n for n in TRANSFORMERS] + VIDEO + AUDIO


def build(name):
    """(model, input shapes) for a model name, prepared for comparison."""
    torch.manual_seed(0)
    if name.startswith("nn."):
        make, shapes = TRANSFORMERS[name[3:]]
        model = make()
    elif name.startswith("audio."):
        # nd_models_oracle.py's speech and audio networks (wav2vec's feature extractor,
        # Wav2Letter, a TCN, a 1-D U-Net) at their oracle sizes.
        from nd_models_oracle import families
        make, make_input, _ = families()[name[6:]]
        model = make()
        shapes = [list(make_input().shape)]
    elif name.startswith("segmentation."):
        # samples/export_onnx.py's segmentation_model: untrained, no auxiliary head, the 'out'
        # tensor; 2 x 3 x 64 x 64.
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                        "samples"))
        import export_onnx
        model = export_onnx.segmentation_model(name[13:], 5)
        shapes = [[2, 3, 64, 64]]
    elif name.startswith("video."):
        # torchvision's video networks (issue 38): 8 frames of 32 x 32, the smallest clip
        # whose last stage keeps 1 x 2 x 2 values per channel for its batch norms.
        import torchvision.models.video
        model = getattr(torchvision.models.video, name[6:])(weights=None, num_classes=10)
        shapes = [[BATCH, 3, 8, 32, 32]]
        if name == "video.s3d" or name.startswith("video.mvit"):
            # S3D's last pool is 2 x 7 x 7 and MViT is built for one clip size: 16 x 224 x 224.
            shapes = [[1, 3, 16, 224, 224]]
    else:
        import torchvision
        side, batch, kwargs = family_size(name)
        model = getattr(torchvision.models, name)(weights=None, num_classes=10, **kwargs)
        shapes = [[batch, 3, side, side]]
        for m in model.modules():
            if isinstance(m, torchvision.ops.StochasticDepth):
                m.p = 0.0  # PyTorch 1.13 has no ONNX form of its bernoulli_ in training mode
    # Zero-initialised weights (ViT's head) would make every gradient before them 0: exact in
    # both frameworks, nothing compared. Random ones instead.
    for p in model.parameters():
        if p.dim() >= 2 and not p.detach().any():
            with torch.no_grad():
                p.normal_(0, 0.02)
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        if isinstance(m, nn.MultiheadAttention):
            m.dropout = 0.0
        if isinstance(m, (nn.modules.batchnorm._BatchNorm, nn.LayerNorm)):
            m.eps = float(numpy.float32(m.eps))
    return model.train(), shapes


def saved_state(model):
    """A copy of the state dict that loads back (MNASNet's loader needs its _metadata)."""
    sd = model.state_dict()
    state = collections.OrderedDict((k, v.clone()) for k, v in sd.items())
    state._metadata = getattr(sd, "_metadata", None)
    return state


def export(model, inputs, path, opset):
    if os.path.exists(path):
        return
    state = saved_state(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, tuple(inputs), path + ".part", opset_version=opset,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    os.replace(path + ".part", path)
    model.load_state_dict(state)  # the export ran the model: undo its BatchNorm updates


def torch_grads(model, inputs):
    for p in model.parameters():
        p.grad = None
    out = model(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    sum(o.sum() for o in outs if o is not None).backward()
    return {n: p.grad.detach().double().numpy() for n, p in model.named_parameters()
            if p.grad is not None}


def torch_alternatives(model, state, x32):
    """PyTorch's float32 gradients by its other CPU paths: oneDNN off, channels_last."""
    out = []
    model.load_state_dict(state)
    with torch.backends.mkldnn.flags(enabled=False):
        out.append(torch_grads(model.float(), x32))
    model.load_state_dict(state)
    if all(x.dim() == 4 for x in x32):
        m = model.float().to(memory_format=torch.channels_last)
        out.append(torch_grads(m, [x.contiguous(memory_format=torch.channels_last)
                                   for x in x32]))
        model.load_state_dict(state)
    return out


def engine_grads(cli, path, inputs, timeout):
    with tempfile.TemporaryDirectory() as d:
        files = []
        for i, x in enumerate(inputs):
            files += ["--input", os.path.join(d, f"in{i}.npy")]
            numpy.save(files[-1], x.numpy())
        dump = os.path.join(d, "dump")
        r = subprocess.run([cli, "run", path, *files, "--loss", "sum", "--no-baseline",
                            "--threads", "1", "--dump", dump], capture_output=True, text=True,
                           timeout=timeout)
        if r.returncode != 0:
            lines = (r.stderr.strip() or r.stdout.strip() or f"exit {r.returncode}").splitlines()
            raise RuntimeError(lines[-1].replace(path, os.path.basename(path))[:300])
        return {f[:-4]: numpy.load(os.path.join(dump, f)).astype(numpy.float64)
                for f in os.listdir(dump) if f.endswith(".npy")}


def f64_diff(ours, exact):
    largest = max(numpy.abs(g).max() for g in exact.values())
    worst, missing = (0.0, ""), []
    for pname, g in exact.items():
        o = ours.get(pname.replace("/", "_"))
        if o is None:
            missing.append(pname)
            continue
        if numpy.abs(g).max() > 1e-9 * largest:
            worst = max(worst, (float(numpy.abs(o - g).max() / numpy.abs(g).max()), pname))
    return worst, missing


def l2_error(d):
    return numpy.linalg.norm(d)


def max_abs_error(d):
    return numpy.abs(d).max()


def f32_ratio(ours, g32, g64, error=l2_error):
    """The worst per-parameter error(g_engine32 - g_torch64) / error(g_torch32 - g_torch64), the
    count over 10, the count compared and the parameters the engine gave no gradient for."""
    rows, missing = [], []
    for pname, exact in g64.items():
        o = ours.get(pname.replace("/", "_"))
        if o is None:
            missing.append(pname)
            continue
        theirs = error(g32[pname] - exact)
        if theirs == 0:
            continue
        rows.append((float(error(o - exact) / theirs), pname))
    rows.sort(reverse=True)
    return (rows[0] if rows else (0.0, "")), sum(1 for r in rows if r[0] > 10), len(rows), missing


def worst_torch_path(g32, alts, g64, error):
    """Per parameter, the PyTorch float32 gradient (default path or another) furthest from
    float64 by `error`."""
    return {n: max([g32] + alts, key=lambda a, n=n: error(a[n] - g64[n]))[n] for n in g32}


def f32_opsets(name, args):
    """The float32 opsets for a model: --f32-opsets, and 17 for the transformer models (their
    causal masks, torch.triu, export from opset 14 on)."""
    extra = [17] if name.startswith("nn.") and args.f32_opsets else []
    return sorted(set(args.f32_opsets + extra))


def run_one(name, args, done):
    model, shapes = build(name)
    torch.manual_seed(1)
    x32 = [torch.randn(*s) for s in shapes]
    x64 = [x.double() for x in x32]
    state = saved_state(model)
    safe = name.replace(".", "_")
    t0 = time.time()
    g32 = torch_grads(model.float(), x32) if args.f32_opsets else None
    model.load_state_dict(state)
    g64 = torch_grads(model.double(), x64)
    state64 = collections.OrderedDict((k, v.double() if v.is_floating_point() else v)
                                      for k, v in state.items())
    state64._metadata = state._metadata
    model.load_state_dict(state64)
    results = []
    for kind, opsets in (("f64", args.opsets), ("f32", f32_opsets(name, args))):
        for opset in opsets:
            if (name, opset, kind) in done:
                continue
            row = {"model": name, "opset": opset, "kind": kind,
                   "input": " + ".join("x".join(map(str, s)) for s in shapes)}
            path = os.path.join(args.cache, f"{safe}_o{opset}_{kind}.onnx")
            m = model.double() if kind == "f64" else model.float()
            xs = x64 if kind == "f64" else x32
            t = time.time()
            try:
                export(m, xs, path, opset)
            except Exception as e:  # noqa: BLE001 - the report names any failure
                row.update(result="export failed", why=str(e).splitlines()[0][:300])
                results.append(row)
                print(json.dumps(row), flush=True)
                continue
            try:
                ours = engine_grads(args.cli, path, xs, args.timeout)
            except subprocess.TimeoutExpired:
                row.update(result="timeout", why=f"engine run over {args.timeout} s")
            except RuntimeError as e:
                row.update(result="fails", why=str(e))
            else:
                if kind == "f64":
                    (diff, where), missing = f64_diff(ours, g64)
                    row.update(result="ok", grad_rel_diff=diff, worst=where, missing=missing)
                else:
                    (ratio, where), over, count, missing = f32_ratio(ours, g32, g64)
                    (mratio, mwhere), mover, _, _ = f32_ratio(ours, g32, g64, max_abs_error)
                    row.update(result="ok", f32_ratio=ratio, worst=where, over10=over,
                               params=count, missing=missing, f32_maxabs_ratio=mratio,
                               worst_maxabs=mwhere, over10_maxabs=mover)
                    if over or mover:
                        # Is it the engine, or a ReLU whose pre-activation is within float32
                        # rounding of 0? PyTorch's own other float32 paths (no oneDNN,
                        # channels_last) as the denominator: their worst error per parameter.
                        alts = torch_alternatives(model, state, x32)
                        model.load_state_dict(state64 if kind == "f64" else state)
                        for error, suffix in ((l2_error, ""), (max_abs_error, "_maxabs")):
                            worst32 = worst_torch_path(g32, alts, g64, error)
                            (r2, w2), over2, _, _ = f32_ratio(ours, worst32, g64, error)
                            alt = max(f32_ratio(a, g32, g64, error)[0] for a in alts)
                            row.update({f"f32{suffix}_ratio_vs_torch_paths": r2,
                                        f"worst{suffix}_vs_torch_paths": w2,
                                        f"over10{suffix}_vs_torch_paths": over2,
                                        f"torch_alt{suffix}_ratio": alt[0],
                                        f"torch_alt{suffix}_worst": alt[1]})
            row["seconds"] = round(time.time() - t, 1)
            results.append(row)
            print(json.dumps(row), flush=True)
    del t0
    return results


def eager_saved_bytes(model, inputs):
    """What the eager module keeps for backward: distinct storages, parameters, buffers and the
    inputs excluded (the engine counts inputs apart)."""
    inputs = [x.clone() for x in inputs]
    skip = {t.storage().data_ptr() for t in list(model.parameters()) + list(model.buffers())}
    skip |= {x.storage().data_ptr() for x in inputs}
    packed = {}

    def pack(t):
        key = t.storage().data_ptr()
        if key not in skip:
            packed.setdefault(key, t.storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(*inputs)
    return sum(packed.values())


def engine_saved_bytes(cli, path, timeout):
    """The engine's activations at the end of the forward: what its ops keep for backward."""
    r = subprocess.run([cli, "run", path, "--dry-run", "--json", "--no-baseline"],
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        lines = (r.stderr.strip() or r.stdout.strip() or f"exit {r.returncode}").splitlines()
        raise RuntimeError(lines[-1].replace(path, os.path.basename(path))[:300])
    return json.loads(r.stdout)["end_of_forward"]["by_category"]["activation"]


def run_saved(name, args, done):
    model, shapes = build(name)
    torch.manual_seed(1)
    xs = [torch.randn(*s) for s in shapes]
    model = model.float()
    state = saved_state(model)
    eager = eager_saved_bytes(model, xs)
    model.load_state_dict(state)
    safe = name.replace(".", "_")
    results = []
    for opset in args.opsets:
        if (name, opset, "saved") in done:
            continue
        row = {"model": name, "opset": opset, "kind": "saved", "eager": eager,
               "input": " + ".join("x".join(map(str, s)) for s in shapes)}
        path = os.path.join(args.cache, f"{safe}_o{opset}_f32.onnx")
        try:
            export(model, xs, path, opset)
            row["engine"] = engine_saved_bytes(args.cli, path, args.timeout)
            if args.cli_before:
                row["engine_before"] = engine_saved_bytes(args.cli_before, path, args.timeout)
            row["result"] = "ok"
        except Exception as e:  # noqa: BLE001 - the report names any failure
            row.update(result="fails", why=str(e).splitlines()[0][:300])
        results.append(row)
        print(json.dumps(row), flush=True)
    return results


def load_done(cache):
    done = {}
    path = os.path.join(cache, "results.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                done[(r["model"], r["opset"], r["kind"])] = r
    return done


def table(caches):
    """One Markdown row per model from the results in CACHES (a later one wins: a rerun at
    another size)."""
    done = {}
    for c in caches:
        done.update(load_done(c))
    by_model = {}
    for (model, opset, kind), r in done.items():
        by_model.setdefault(model, {})[(opset, kind)] = r
    print("| model | input | loads (opsets) | float64: max rel. grad diff, opset 13 / 17 "
          "| float32 worst ratio (opset) | float32 worst max-abs ratio (opset) "
          "| saved for backward, engine / eager, opset 13 / 17 |")
    print("|---|---|---|---|---|---|---|")
    order = {n: i for i, n in enumerate(all_models())}
    for model in sorted(set(by_model) | set(order), key=lambda m: order.get(m, 1e9)):
        if model in TOO_BIG and model not in by_model:
            print(f"| {model} | — | not tried: {TOO_BIG[model]} | | | | |")
            continue
        if model not in by_model:
            print(f"| {model} | — | not run yet (no result in the caches) | | | | |")
            continue
        rs = by_model[model]
        first = next(iter(rs.values()))
        loads, why = [], ""
        for (opset, kind), r in sorted(rs.items()):
            if r["result"] == "ok" and str(opset) not in loads:
                loads.append(str(opset))
            elif r["result"] != "ok" and not why:
                m = re.search(r"operator '(aten::\w+)' to ONNX opset version (\d+)", r.get("why", ""))
                why = (f"PyTorch 1.13 cannot export {m.group(1)} at opset {m.group(2)}" if m else
                       f"{r['result']} at {opset}: {r.get('why', '')[:110]}")
        f64 = " / ".join(f"{rs[(o, 'f64')]['grad_rel_diff']:.0e}"
                         if rs.get((o, "f64"), {}).get("result") == "ok" else "—"
                         for o in (13, 17))
        def ratio(o, r):
            text = f"{r['f32_ratio']:.2f} ({o})"
            if r["over10"]:
                text += f", {r['over10']} of {r['params']} over 10"
            if "f32_ratio_vs_torch_paths" in r:
                text += (f"; PyTorch's other float32 paths: {r['torch_alt_ratio']:.0f}; engine "
                         f"against their worst: {r['f32_ratio_vs_torch_paths']:.2f}")
            return text
        f32 = ", ".join(ratio(o, r) for (o, k), r in sorted(rs.items())
                        if k == "f32" and r["result"] == "ok")
        f32_max = ", ".join(maxabs_cell(o, r) for (o, k), r in sorted(rs.items())
                            if k == "f32" and r["result"] == "ok" and "f32_maxabs_ratio" in r)
        print(f"| {model} | {first['input']} | {', '.join(loads) or 'no'}"
              f"{'; ' + why if why else ''} | {f64} | {f32 or '—'} | {f32_max or 'not measured'}"
              f" | {saved_cell(rs)} |")


def maxabs_cell(opset, r):
    """The largest-absolute-error rule: "1.42 (17)", and where over 10, the parameter and the
    engine against PyTorch's worst float32 path (a ReLU flipped by rounding flips it there too)."""
    text = f"{r['f32_maxabs_ratio']:.2f} ({opset})"
    if r["over10_maxabs"]:
        text += f", `{r['worst_maxabs']}`, {r['over10_maxabs']} of {r['params']} over 10"
    if r.get("over10_maxabs") and "f32_maxabs_ratio_vs_torch_paths" in r:
        text += (f"; PyTorch's other float32 paths: {r['torch_alt_maxabs_ratio']:.0f}; engine "
                 f"against their worst: {r['f32_maxabs_ratio_vs_torch_paths']:.2f}")
    return text


def saved_cell(rs):
    """engine / eager at opsets 13 and 17, and before the change when measured: "1.000 / 1.000
    (was 1.80 / 1.28)"."""
    def at(o, key):
        r = rs.get((o, "saved"), {})
        return f"{r[key] / r['eager']:.3f}" if r.get("result") == "ok" and key in r else "—"
    now = f"{at(13, 'engine')} / {at(17, 'engine')}"
    if now == "— / —":
        return "not measured"
    before = f"{at(13, 'engine_before')} / {at(17, 'engine_before')}"
    return now if before == "— / —" or before == now else f"{now} (was {before})"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli")
    ap.add_argument("--cli-before", help="with --saved: an engine from before a change, too")
    ap.add_argument("--saved", action="store_true",
                    help="measure the bytes saved for backward instead of the gradients")
    ap.add_argument("--models", nargs="+")
    ap.add_argument("--opsets", type=int, nargs="*", default=[13, 17])
    ap.add_argument("--f32-opsets", type=int, nargs="*", default=[13])
    ap.add_argument("--cache", default="/tmp/tvcov")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--size", type=int, default=32,
                    help="input side of the convolutional networks (default 32)")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--table", nargs="*", metavar="MORE_CACHE",
                    help="print the table of CACHE's results (and these caches', which win)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.makedirs(args.cache, exist_ok=True)
    global SIDE, BATCH
    SIDE, BATCH = args.size, args.batch
    if args.table is not None:
        table([args.cache] + args.table)
        return 0
    torch.set_num_threads(1)
    done = load_done(args.cache)
    if args.one:
        rows = (run_saved if args.saved else run_one)(args.one, args, done)
        with open(os.path.join(args.cache, "results.jsonl"), "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        return 0
    if not args.cli:
        ap.error("--cli is required")
    for name in args.models or all_models():
        if name in TOO_BIG:
            print(json.dumps({"model": name, "result": "not tried", "why": TOO_BIG[name]}))
            continue
        want = ([(name, o, "saved") for o in args.opsets] if args.saved else
                [(name, o, "f64") for o in args.opsets] + [(name, o, "f32")
                                                           for o in f32_opsets(name, args)])
        if all(w in done for w in want):
            continue
        cmd = [sys.executable, os.path.abspath(__file__), "--one", name, "--cli", args.cli,
               "--cache", args.cache, "--timeout", str(args.timeout),
               "--size", str(args.size), "--batch", str(args.batch),
               "--opsets", *map(str, args.opsets), "--f32-opsets", *map(str, args.f32_opsets)]
        if args.saved:
            cmd += ["--saved"] + (["--cli-before", args.cli_before] if args.cli_before else [])
        try:
            r = subprocess.run(cmd, timeout=4 * args.timeout, capture_output=True, text=True)
            sys.stdout.write(r.stdout)
            if r.returncode != 0:
                print(json.dumps({"model": name, "result": "script failed",
                                  "why": r.stderr.strip().splitlines()[-1][:300]}), flush=True)
        except subprocess.TimeoutExpired:
            print(json.dumps({"model": name, "result": "timeout"}), flush=True)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
