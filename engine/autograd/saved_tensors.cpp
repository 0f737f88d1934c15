#include "engine/autograd/saved_tensors.hpp"

#include <cstdint>
#include <unordered_map>
#include <unordered_set>

namespace ckpt {

namespace {

// Every node reachable from the roots' grad_fns, depth first, the first edge first; `visit`
// sees each node's saved variables that hold data.
template <typename Visit>
void walk_saved(const TensorList& roots, Visit visit) {
  std::unordered_set<const Node*> seen_node;
  // Iterative: HeavyModel graphs are 100,000 nodes deep.
  std::vector<const Node*> stack;
  for (const auto& r : roots) {
    if (!r.defined() || !r.grad_fn()) continue;
    if (seen_node.insert(r.grad_fn().get()).second) stack.push_back(r.grad_fn().get());
  }
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (const auto* saved = n->saved_variables())
      for (const auto& s : *saved)
        if (s.data().defined()) visit(*n, s.data());
    // Reverse, so that the first edge is walked first.
    const auto& edges = n->next_edges();
    for (auto it = edges.rbegin(); it != edges.rend(); ++it)
      if (it->valid() && seen_node.insert(it->function.get()).second)
        stack.push_back(it->function.get());
  }
}

}  // namespace

std::vector<SavedStorage> saved_tensor_storages(const TensorList& roots,
                                                const SavedStorageOptions& options) {
  std::vector<SavedStorage> out;
  std::unordered_set<const Storage*> seen_storage;
  walk_saved(roots, [&](const Node& n, const Tensor& t) {
    const auto& st = t.storage();
    if (!seen_storage.insert(st.get()).second) return;
    const MemoryCategory cat = st->ledger().category_of(st->id());
    if (cat == MemoryCategory::parameter && !options.include_parameters) return;
    out.push_back({st, st->bytes(), cat, n.name(), t.shape(), t.dtype()});
  });
  return out;
}

std::vector<SavedStorageUsers> saved_tensor_users(const TensorList& roots,
                                                  const SavedStorageOptions& options) {
  std::vector<SavedStorageUsers> out;
  std::unordered_map<const Storage*, std::size_t> index;
  walk_saved(roots, [&](const Node& n, const Tensor& t) {
    const auto& st = t.storage();
    auto [it, fresh] = index.emplace(st.get(), out.size());
    if (fresh) {
      const MemoryCategory cat = st->ledger().category_of(st->id());
      if (cat == MemoryCategory::parameter && !options.include_parameters) {
        it->second = SIZE_MAX;
        return;
      }
      out.push_back({st, st->bytes(), cat, {}});
    }
    if (it->second == SIZE_MAX) return;
    auto& users = out[it->second].users;
    if (users.empty() || users.back() != &n) users.push_back(&n);
  });
  return out;
}

std::vector<SavedStorage> saved_tensor_storages(const Tensor& root,
                                                const SavedStorageOptions& options) {
  return saved_tensor_storages(TensorList{root}, options);
}

std::int64_t saved_tensor_bytes(const TensorList& roots, const SavedStorageOptions& options) {
  std::int64_t total = 0;
  for (const auto& s : saved_tensor_storages(roots, options)) total += s.bytes;
  return total;
}

}  // namespace ckpt
