#include "engine/autograd/engine.hpp"
#include "engine/autograd/anomaly.hpp"

#include <map>
#include <optional>
#include <queue>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "engine/autograd/grad_mode.hpp"
#include "engine/kernels/kernels.hpp"

namespace ckpt {

namespace {

thread_local std::vector<GraphTaskInfo> t_tasks;

struct TaskGuard {
  explicit TaskGuard(bool is_grad) { t_tasks.push_back({is_grad}); }
  ~TaskGuard() { t_tasks.pop_back(); }
  TaskGuard(const TaskGuard&) = delete;
  TaskGuard& operator=(const TaskGuard&) = delete;
};

// A backward's nodes are numbered as they are discovered; its per-node state lives in vectors
// by that number, so a node costs one hash lookup (its number), not one per container.
// HeavyModel's backward runs 100,000-200,000 nodes of scalar ops, where five hash tables of
// that size (dependencies, buffers, keep-alive, seen, queued) were a tenth of the run.
struct Ready {
  std::uint64_t sequence_nr;
  std::size_t slot;
  bool operator<(const Ready& other) const { return sequence_nr < other.sequence_nr; }
};

struct Task {
  std::unordered_map<Node*, std::size_t> slots;  // every reachable node -> its number
  std::vector<Node*> nodes;                      // by number
  std::vector<int> dependencies;                 // edges from nodes that run, by number
  std::vector<TensorList> buffers;               // gradients received, by number
  std::unordered_set<Node*> needed;              // empty: every reachable node
  std::map<std::pair<Node*, std::uint32_t>, std::size_t> captures;
  TensorList captured;
  bool is_grad = false;
  bool retain_graph = false;

  std::size_t slot_of(Node* n) const { return slots.find(n)->second; }
};

void accumulate(TensorList& buffer, std::uint32_t slot, Tensor g, const Node& receiver) {
  if (buffer.size() <= slot) buffer.resize(slot + 1);
  if (!buffer[slot].defined()) {
    buffer[slot] = std::move(g);
  } else {
    // Between two nodes' steps: no op is running, so the bytes are named by what they hold.
    AllocationPurpose purpose("the sum of the gradients " + receiver.name() + " receives");
    buffer[slot] = add_raw(buffer[slot], g);
  }
}

// Every node reachable from the roots, numbered, with how many edges point at it. Iterative:
// graphs can be 100,000 nodes deep.
void discover(const std::vector<Edge>& roots, Task& task) {
  std::vector<Node*> stack;
  const auto visit = [&](Node* n) {
    const auto [it, fresh] = task.slots.try_emplace(n, task.nodes.size());
    if (fresh) {
      task.nodes.push_back(n);
      task.dependencies.push_back(0);
      stack.push_back(n);
    }
    return it->second;
  };
  for (const auto& e : roots)
    if (e.valid()) visit(e.function.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const auto& e : n->next_edges())
      if (e.valid()) ++task.dependencies[visit(e.function.get())];
  }
  task.buffers.resize(task.nodes.size());
}

// For grad(): the nodes from which a captured input is reachable (only they run).
void mark_needed(const std::vector<Node*>& nodes, Task& task) {
  // Reverse post-order via an explicit stack.
  std::unordered_map<Node*, bool> memo;
  for (Node* start : nodes) {
    if (memo.count(start)) continue;
    std::vector<std::pair<Node*, std::size_t>> stack{{start, 0}};
    memo[start] = false;
    while (!stack.empty()) {
      auto& [n, i] = stack.back();
      if (i < n->next_edges().size()) {
        const Edge& e = n->next_edges()[i++];
        if (!e.valid()) continue;
        if (task.captures.count({e.function.get(), e.input_nr})) memo[n] = true;
        Node* c = e.function.get();
        auto it = memo.find(c);
        if (it == memo.end()) {
          memo[c] = false;
          stack.push_back({c, 0});
        }
        continue;
      }
      Node* done = n;
      stack.pop_back();
      if (memo[done]) task.needed.insert(done);
      if (!stack.empty()) {
        Node* parent = stack.back().first;
        if (memo[done]) memo[parent] = true;
      }
    }
  }
  // Children finished before parents in DFS only along tree edges; propagate to a fixpoint
  // across cross edges.
  bool changed = true;
  while (changed) {
    changed = false;
    for (Node* n : nodes) {
      if (task.needed.count(n)) continue;
      for (const auto& e : n->next_edges()) {
        if (e.valid() && (task.needed.count(e.function.get()) ||
                          task.captures.count({e.function.get(), e.input_nr}))) {
          task.needed.insert(n);
          changed = true;
          break;
        }
      }
    }
  }
}

// The roots' edges and the gradients backward starts from: the given ones, or 1 for a
// one-element root (PyTorch's implicit grad), each checked as PyTorch checks it.
void seed_roots(const TensorList& roots, const TensorList& grad_roots, std::vector<Edge>& edges,
                TensorList& grads) {
  for (std::size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    if (!r.requires_grad())
      throw std::runtime_error("element " + std::to_string(i) +
                               " of tensors does not require grad and does not have a grad_fn");
    Tensor g = i < grad_roots.size() ? grad_roots[i] : Tensor();
    if (!g.defined()) {
      if (r.numel() != 1)
        throw std::runtime_error("grad can be implicitly created only for scalar outputs");
      AllocationPurpose purpose("the gradient of 1 that backward starts from");
      g = Tensor::ones(r.shape(), r.dtype());
    } else if (g.shape() != r.shape()) {
      throw std::runtime_error("Mismatch in shape: grad_output[" + std::to_string(i) +
                               "] has a shape of " + shape_str(g.shape()) + " and output[" +
                               std::to_string(i) + "] has a shape of " + shape_str(r.shape()) +
                               ".");
    }
    edges.push_back(gradient_edge(r));
    grads.push_back(std::move(g));
  }
}

// For grad(): dependencies only count edges from nodes that will run.
void count_needed_dependencies(Task& task) {
  std::fill(task.dependencies.begin(), task.dependencies.end(), 0);
  for (Node* n : task.nodes) {
    if (!task.needed.count(n)) continue;
    for (const auto& e : n->next_edges())
      if (e.valid()) ++task.dependencies[task.slot_of(e.function.get())];
  }
}

// For grad(): the gradient flowing into (n, slot), where a capture asks for it.
void capture_incoming(Task& task, Node* n, const TensorList& inputs) {
  if (task.captures.empty()) return;
  for (std::uint32_t slot = 0; slot < std::max<std::size_t>(inputs.size(), 1); ++slot) {
    auto it = task.captures.find({n, slot});
    if (it != task.captures.end() && slot < inputs.size()) task.captured[it->second] = inputs[slot];
  }
}

// For grad(): still capture a gradient that reaches an input through an unneeded node.
void capture_through_unneeded(Task& task, const Edge& e, const Tensor& g) {
  auto it = task.captures.find({e.function.get(), e.input_nr});
  if (it == task.captures.end() || !g.defined()) return;
  auto& c = task.captured[it->second];
  c = c.defined() ? add_raw(c, g) : g;
}

// An output of n that received no gradient gets zeros of its shape, as PyTorch's engine does.
void fill_missing_gradients(Node* n, TensorList& inputs) {
  auto& meta = n->output_meta();
  if (inputs.size() < meta.size()) inputs.resize(meta.size());
  for (std::size_t k = 0; k < meta.size(); ++k) {
    if (inputs[k].defined()) continue;
    AllocationPurpose purpose("the zero gradient " + n->name() + " receives");
    inputs[k] = Tensor::zeros(meta[k].shape, meta[k].dtype);
  }
}

// The dtype the gradient flowing along `e` must have: its forward value's.
DType gradient_dtype(const Edge& e, DType fallback) {
  if (const auto* acc = dynamic_cast<const AccumulateGrad*>(e.function.get()))
    return acc->variable()->dtype;
  const auto& meta = e.function->output_meta();
  return e.input_nr < meta.size() ? meta[e.input_nr].dtype : fallback;
}

// PyTorch's validate_outputs: a gradient whose dtype is not its input's is cast to it (the
// float32 gradient of an add that promoted a bfloat16 input under autocast becomes bfloat16),
// after the node has released what it saved.
void match_input_dtypes(const Node* n, TensorList& outputs) {
  const auto& edges = n->next_edges();
  for (std::size_t k = 0; k < outputs.size() && k < edges.size(); ++k) {
    Tensor& g = outputs[k];
    if (!g.defined() || !edges[k].valid()) continue;
    const DType want = gradient_dtype(edges[k], g.dtype());
    if (want != g.dtype() && is_floating(want) && is_floating(g.dtype())) g = cast_raw(g, want);
  }
}

// Runs n's backward as a step of its own (when it opens one), releasing what it saved unless
// the graph is retained, and checking its outputs in anomaly mode.
TensorList apply_node(Node* n, TensorList inputs, const Task& task) {
  TensorList outputs;
  n->prepare();
  std::optional<OpScope> step;
  if (n->opens_step()) step.emplace(*n->context(), n->name(), n->node_label());
  outputs = n->apply(std::move(inputs));
  if (!task.retain_graph) n->release_saved_tensors();
  match_input_dtypes(n, outputs);
  if (n->context() && n->context()->detect_anomaly())
    check_anomaly(outputs, n->name(), n->context()->label(n->node_label()));
  return outputs;
}

void run(const TensorList& roots, const TensorList& grad_roots, Task& task) {
  std::vector<Edge> root_edges;
  TensorList root_grads;
  seed_roots(roots, grad_roots, root_edges, root_grads);

  discover(root_edges, task);
  if (task.is_grad) mark_needed(task.nodes, task);
  auto needed = [&](Node* n) { return !task.is_grad || task.needed.count(n) > 0; };
  if (task.is_grad) count_needed_dependencies(task);

  std::priority_queue<Ready> ready;
  // A node's owner until it has run: the edge that delivered to it may be its last reference.
  std::vector<std::shared_ptr<Node>> keep_alive(task.nodes.size());
  std::vector<char> queued(task.nodes.size(), 0);
  auto deliver = [&](const Edge& e, Tensor g, bool counts) {
    const std::size_t slot = task.slot_of(e.function.get());
    if (!keep_alive[slot]) keep_alive[slot] = e.function;
    if (g.defined()) accumulate(task.buffers[slot], e.input_nr, std::move(g), *e.function);
    if (counts && --task.dependencies[slot] > 0) return;
    if (!counts && task.dependencies[slot] > 0) return;
    ready.push({e.function->sequence_nr(), slot});
  };
  for (std::size_t i = 0; i < root_edges.size(); ++i) {
    if (!root_edges[i].valid()) continue;
    deliver(root_edges[i], root_grads[i], false);
  }
  root_grads.clear();

  PhaseScope phase(Phase::backward);
  NoGradGuard no_grad;
  while (!ready.empty()) {
    const std::size_t slot = ready.top().slot;
    ready.pop();
    if (queued[slot]) continue;
    queued[slot] = 1;
    Node* n = task.nodes[slot];
    TensorList inputs = std::move(task.buffers[slot]);
    task.buffers[slot] = TensorList();
    capture_incoming(task, n, inputs);
    if (!needed(n) || (task.is_grad && dynamic_cast<AccumulateGrad*>(n))) {
      keep_alive[slot].reset();
      continue;
    }
    fill_missing_gradients(n, inputs);
    TensorList outputs = apply_node(n, std::move(inputs), task);
    const auto& edges = n->next_edges();
    for (std::size_t k = 0; k < edges.size(); ++k) {
      if (!edges[k].valid() || !needed(edges[k].function.get())) {
        if (edges[k].valid() && task.is_grad && k < outputs.size())
          capture_through_unneeded(task, edges[k], outputs[k]);
        continue;
      }
      deliver(edges[k], k < outputs.size() ? std::move(outputs[k]) : Tensor(), true);
    }
    outputs.clear();
    keep_alive[slot].reset();
  }
}

struct EngineHooks final : AutogradHooks {
  EngineHooks() { set_autograd_hooks(this); }
  void backward(const Tensor& root, const Tensor& gradient, bool retain_graph) const override {
    ckpt::backward({root}, {gradient}, retain_graph);
  }
};
const EngineHooks g_engine_hooks;

}  // namespace

void install_autograd_hooks() {
  set_autograd_hooks(&g_engine_hooks);
}

const GraphTaskInfo* current_graph_task() {
  return t_tasks.empty() ? nullptr : &t_tasks.back();
}

void backward(const TensorList& roots, const TensorList& grad_roots, bool retain_graph) {
  Task task;
  task.retain_graph = retain_graph;
  TaskGuard guard(false);
  run(roots, grad_roots, task);
}

TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs,
                bool retain_graph, bool allow_unused) {
  Task task;
  task.is_grad = true;
  task.retain_graph = retain_graph;
  task.captured.resize(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad())
      throw std::runtime_error("One of the differentiated Tensors does not require grad");
    Edge e = gradient_edge(inputs[i]);
    task.captures[{e.function.get(), e.input_nr}] = i;
  }
  TaskGuard guard(true);
  run(outputs, grad_outputs, task);
  if (!allow_unused)
    for (const auto& c : task.captured)
      if (!c.defined())
        throw std::runtime_error(
            "One of the differentiated Tensors appears to not have been used in the graph. Set "
            "allow_unused=True if this is the desired behavior.");
  return task.captured;
}

}  // namespace ckpt
