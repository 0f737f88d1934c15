#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/autograd/node.hpp"

namespace ckpt {

// One distinct storage that the graph keeps for backward, with the first node found holding it.
struct SavedStorage {
  std::shared_ptr<Storage> storage;
  std::int64_t bytes = 0;
  MemoryCategory category = MemoryCategory::activation;
  std::string node;  // grad_fn name, e.g. "ConvolutionBackward0"
  Shape shape;       // of the first saved tensor seen on this storage
  DType dtype = DType::f32;
};

struct SavedStorageOptions {
  // Parameters (and model buffers, which live in the parameter category) are model state, not
  // activation memory: PyTorch users compare the rest, so they are left out by default.
  bool include_parameters = false;
};

// What the graph behind `roots` holds for backward right now: every node reachable from the
// roots' grad_fns, their saved variables, deduplicated by storage (a ReLU's saved result and
// the next layer's saved input are one storage, as in PyTorch). Saved variables taken by a
// pack hook are invisible here (their storage is whatever the hook keeps); released ones are
// gone. Order: first seen in a depth-first walk from the roots.
std::vector<SavedStorage> saved_tensor_storages(const TensorList& roots,
                                                const SavedStorageOptions& options = {});
std::vector<SavedStorage> saved_tensor_storages(const Tensor& root,
                                                const SavedStorageOptions& options = {});
std::int64_t saved_tensor_bytes(const TensorList& roots, const SavedStorageOptions& options = {});

// The same storages, each with every node that saves it (a tensor one op saves and another op
// saves again is one storage with two users): what the planner's peak model needs to know
// which checkpoint frees it.
struct SavedStorageUsers {
  std::shared_ptr<Storage> storage;
  std::int64_t bytes = 0;
  MemoryCategory category = MemoryCategory::activation;
  std::vector<const Node*> users;
};
std::vector<SavedStorageUsers> saved_tensor_users(const TensorList& roots,
                                                  const SavedStorageOptions& options = {});

}  // namespace ckpt
