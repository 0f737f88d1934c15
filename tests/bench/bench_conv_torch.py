"""The PyTorch half of ckptlab_bench_conv (/usr/bin/python3, torch 1.13).

  bench_conv_torch.py THREADS BATCH ITERS CLOCK LAYERS_JSON
      CLOCK: cpu (process CPU time) or wall (wall-clock time)
      LAYERS_JSON: [[name, cin, cout, hw, k, stride, pad, input_grad, t, kt, st, pt], ...]
          (t > 0: a 3-D layer, input depth t, kernel depth kt, depth stride st and padding pt)
  -> one JSON object {name: [forward ms, input-gradient ms, weight-gradient ms]}, each the median
     time of ITERS runs after 2 warm-up runs.
"""

import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def time_layer(batch, cin, cout, hw, k, stride, pad, input_grad, t, kt, st, pt, iters, clock):
    torch.manual_seed(0)
    if t > 0:
        x = torch.randn(batch, cin, t, hw, hw)
        w = torch.randn(cout, cin, kt, k, k)
        conv, stride, pad = F.conv3d, (st, stride, stride), (pt, pad, pad)
    else:
        x = torch.randn(batch, cin, hw, hw)
        w = torch.randn(cout, cin, k, k)
        conv = F.conv2d
    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
    fwd, dx, dw = [], [], []
    for i in range(iters + 2):
        t0 = clock()
        y = conv(xg, wg, None, stride, pad)
        t1 = clock()
        gy = torch.ones_like(y)
        del y
        t2 = t3 = 0
        if input_grad:
            yx = conv(xg, w, None, stride, pad)
            t2 = clock()
            torch.autograd.grad(yx, xg, gy)
            t3 = clock()
        yw = conv(x, wg, None, stride, pad)
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
    for name, cin, cout, hw, k, stride, pad, input_grad, *depth in json.loads(argv[5]):
        t, kt, st, pt = depth or (0, 0, 0, 0)
        out[name] = time_layer(batch, cin, cout, hw, k, stride, pad, input_grad, t, kt, st, pt,
                               iters, clock)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
