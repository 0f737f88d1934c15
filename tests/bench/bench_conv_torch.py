"""The PyTorch half of ckptlab_bench_conv (/usr/bin/python3, torch 1.13).

  bench_conv_torch.py THREADS BATCH ITERS CLOCK LAYERS_JSON
      CLOCK: cpu (process CPU time) or wall (wall-clock time)
      LAYERS_JSON: [[name, cin, cout, hw, k, stride, pad, input_grad], ...]
  -> one JSON object {name: [forward ms, input-gradient ms, weight-gradient ms]}, each the median
     time of ITERS runs after 2 warm-up runs.
"""

import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def time_layer(batch, cin, cout, hw, k, stride, pad, input_grad, iters, clock):
    torch.manual_seed(0)
    x = torch.randn(batch, cin, hw, hw)
    w = torch.randn(cout, cin, k, k)
    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
    fwd, dx, dw = [], [], []
    for i in range(iters + 2):
        t0 = clock()
        y = F.conv2d(xg, wg, None, stride, pad)
        t1 = clock()
        gy = torch.ones_like(y)
        del y
        t2 = t3 = 0
        if input_grad:
            yx = F.conv2d(xg, w, None, stride, pad)
            t2 = clock()
            torch.autograd.grad(yx, xg, gy)
            t3 = clock()
        yw = F.conv2d(x, wg, None, stride, pad)
        t4 = clock()
        torch.autograd.grad(yw, wg, gy)
        t5 = clock()
        if i >= 2:
            fwd.append((t1 - t0) * 1e3)
            dx.append((t3 - t2) * 1e3)
            dw.append((t5 - t4) * 1e3)
    return [statistics.median(fwd), statistics.median(dx), statistics.median(dw)]


def main(argv):
    threads, batch, iters = int(argv[1]), int(argv[2]), int(argv[3])
    clock = time.perf_counter if argv[4] == "wall" else time.process_time
    torch.set_num_threads(threads)
    out = {}
    for name, cin, cout, hw, k, stride, pad, input_grad in json.loads(argv[5]):
        out[name] = time_layer(batch, cin, cout, hw, k, stride, pad, input_grad, iters, clock)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
