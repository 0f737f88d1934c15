#pragma once

// The benchmark's two networks, built from the engine's ops exactly like bench_torch.py
// builds them in PyTorch: (a) an MLP of 4 x Linear(1024) at batch 64, (b) a ResNet-18-shaped
// network (torchvision's layout, 1000 classes) at batch 8 on 3 x 64 x 64, each ending in
// cross_entropy. step() runs one forward and backward.

#include <cstdint>
#include <functional>
#include <string>

#include "engine/ops/ops.hpp"

namespace ckpt::bench {

struct Net {
  std::string name;
  TensorList params;
  std::function<void()> step;  // forward + loss + backward; clears the grads first
  double flops = 0;            // multiply-adds x 2 of every conv/linear, forward and backward
};

Net make_mlp();
Net make_resnet18();

}  // namespace ckpt::bench
