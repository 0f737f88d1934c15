"""Oracle cases for the foundation ops (issue 2)."""

import torch
import torch.nn.functional as F

from oracle_harness import case, inv_sqrt


@case("mlp", atol=1e-6)
def mlp(c):
    # nn.Linear's default init range, so the activations have realistic magnitudes.
    sizes = [16, 32, 32, 10]
    x = c.input("x", [8, sizes[0]])
    h = x
    for i in range(len(sizes) - 1):
        bound = inv_sqrt(sizes[i])
        w = c.param(f"w{i}", [sizes[i + 1], sizes[i]], init="uniform", low=-bound, high=bound)
        b = c.param(f"b{i}", [sizes[i + 1]], init="uniform", low=-bound, high=bound)
        h = F.linear(h, w, b)
        if i < len(sizes) - 2:
            h = torch.relu(h)
    return h
