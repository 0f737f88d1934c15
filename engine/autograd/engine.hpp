#pragma once

#include <vector>

#include "engine/autograd/node.hpp"

namespace ckpt {

// torch.autograd.backward: accumulates gradients of `roots` into the leaves' .grad.
// An undefined entry of `grad_roots` means ones (allowed for one-element roots only).
void backward(const TensorList& roots, const TensorList& grad_roots = {},
              bool retain_graph = false);

// torch.autograd.grad: returns d(outputs)/d(inputs) and leaves every .grad alone.
TensorList grad(const TensorList& outputs, const TensorList& inputs,
                const TensorList& grad_outputs = {}, bool retain_graph = false,
                bool allow_unused = false);

// Makes Tensor::backward reach this engine. It happens at static initialisation; connect()
// calls it again, so that a static link that dropped this file's initialiser still works.
void install_autograd_hooks();

// What the innermost running backward pass is (a reentrant checkpoint refuses grad()).
struct GraphTaskInfo {
  bool is_grad_call = false;
};
const GraphTaskInfo* current_graph_task();

}  // namespace ckpt
