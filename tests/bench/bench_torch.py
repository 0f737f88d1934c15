"""The PyTorch half of the benchmark (run by ckptlab_bench; /usr/bin/python3, torch 1.13).

  bench_torch.py config                      -> torch.__config__.show() and thread info
  bench_torch.py MODEL THREADS WARMUP ITERS  -> one JSON line: {"times_ms": [...]}
  bench_torch.py serve                       -> a loop on stdin, so that the caller can
      interleave PyTorch's steps with its own (both then see the same machine load):
      "setup MODEL THREADS" -> "ready THREADS", "step" -> "<wall ms> <process cpu ms>", "quit".

MODEL is mlp or resnet18, built exactly like the C++ side (tests/bench/nets.cpp).
"""

import json
import math
import sys
import time

import torch
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


def serve():
    step = params = None
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        if words[0] == "setup":
            torch.set_num_threads(int(words[2]))
            step, params = {"mlp": mlp, "resnet18": resnet18}[words[1]]()
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
    step, params = {"mlp": mlp, "resnet18": resnet18}[model]()
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
