#include "engine/autograd/node.hpp"

#include <atomic>
#include <limits>
#include <stdexcept>

#include "engine/autograd/engine.hpp"
#include "engine/autograd/grad_mode.hpp"
#include "engine/autograd/op_observer.hpp"
#include "engine/kernels/kernels.hpp"

namespace ckpt {

namespace {
std::atomic<std::uint64_t> g_next_sequence_nr{0};

// Long chains (HeavyModel has 100,000 nodes) would overflow the stack if each node's
// destructor destroyed the next one recursively; instead children are released from a queue.
thread_local bool t_draining = false;
thread_local std::vector<std::shared_ptr<Node>>* t_pending = nullptr;

void release_iteratively(std::vector<Edge>&& edges) {
  std::vector<std::shared_ptr<Node>> local;
  const bool outermost = !t_draining;
  if (outermost) {
    t_draining = true;
    t_pending = &local;
  }
  for (auto& e : edges)
    if (e.function) t_pending->push_back(std::move(e.function));
  edges.clear();
  if (!outermost) return;
  while (!local.empty()) {
    auto n = std::move(local.back());
    local.pop_back();
    n.reset();
  }
  t_pending = nullptr;
  t_draining = false;
}
}  // namespace

Node::Node(std::string name)
    : name_(std::move(name)),
      sequence_nr_(g_next_sequence_nr.fetch_add(1, std::memory_order_relaxed)),
      context_(ExecutionContext::current()) {
  node_label_ = context_->current_node();
}

Node::~Node() {
  release_iteratively(std::move(next_edges_));
}

FunctionNode::FunctionNode(std::string name, BackwardFunction fn)
    : Node(std::move(name)), fn_(std::move(fn)) {}

void FunctionNode::save(const Tensor& t) {
  // An undefined entry keeps the slot: the op did not need that tensor for this call.
  if (!t.defined()) {
    saved_.emplace_back();
    return;
  }
  saved_.emplace_back(t, t.grad_fn());
}

void FunctionNode::prepare() {
  TensorList saved;
  saved.reserve(saved_.size());
  for (const auto& s : saved_) saved.push_back(s.unpack(*this));
  prepared_ = std::move(saved);
}

TensorList FunctionNode::apply(TensorList&& grad_outputs) {
  BackwardContext ctx;
  ctx.grads = std::move(grad_outputs);
  if (prepared_) {
    ctx.saved = std::move(*prepared_);
    prepared_.reset();
  } else {
    ctx.saved.reserve(saved_.size());
    for (const auto& s : saved_) ctx.saved.push_back(s.unpack(*this));
  }
  ctx.needs_input_grad.reserve(next_edges().size());
  for (const auto& e : next_edges()) ctx.needs_input_grad.push_back(e.valid());
  return fn_(ctx);
}

void FunctionNode::release_saved_tensors() {
  prepared_.reset();
  for (auto& s : saved_) s.release();
}

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> variable)
    : Node("AccumulateGrad"), variable_(std::move(variable)) {
  // Runs as soon as it is ready, like PyTorch's (UINT64_MAX sequence number).
  set_sequence_nr(std::numeric_limits<std::uint64_t>::max());
}

TensorList AccumulateGrad::apply(TensorList&& grad_outputs) {
  Tensor g = std::move(grad_outputs.at(0));
  if (!g.defined()) return {};
  CategoryScope as_gradient(MemoryCategory::gradient);
  if (!variable_->grad) {
    // Steal the incoming buffer when nothing else holds it, as PyTorch does.
    if (g.impl_ptr().use_count() == 1 && g.is_contiguous() && g.storage().use_count() == 1 &&
        g.shape() == variable_->shape && g.offset() == 0 && g.nbytes() == g.storage()->bytes()) {
      g.storage()->ledger().recategorize(g.storage()->id(), MemoryCategory::gradient);
      variable_->grad = g.impl_ptr();
    } else {
      variable_->grad = contiguous_copy(g).impl_ptr();
    }
  } else {
    Tensor acc(variable_->grad);
    add_inplace_raw(acc, g);
  }
  return {};
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined()) return {};
  if (t.grad_fn()) return {t.grad_fn(), t.output_nr()};
  if (!t.impl()->requires_grad) return {};
  auto acc = t.impl()->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    t.impl()->grad_accumulator = acc;
  }
  return {acc, 0};
}

bool any_requires_grad(const TensorList& ts) {
  for (const auto& t : ts)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

void connect(const std::shared_ptr<Node>& node, const TensorList& inputs,
             const TensorList& outputs) {
  if (!autograd_hooks()) install_autograd_hooks();
  auto& edges = node->next_edges();
  edges.reserve(inputs.size());
  for (const auto& in : inputs) edges.push_back(gradient_edge(in));
  auto& meta = node->output_meta();
  for (std::uint32_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    meta.push_back({out.shape(), out.dtype()});
    out.impl()->grad_fn = node;
    out.impl()->output_nr = i;
    out.impl()->requires_grad = false;
  }
}

std::shared_ptr<FunctionNode> record(const char* name, const TensorList& inputs,
                                     const TensorList& outputs, const TensorList& saved,
                                     BackwardFunction backward) {
  notify_op_outputs(name, outputs, saved);
  if (!GradMode::is_enabled() || !any_requires_grad(inputs)) return nullptr;
  auto node = std::make_shared<FunctionNode>(name, std::move(backward));
  connect(node, inputs, outputs);
  for (const auto& s : saved) node->save(s);
  return node;
}

}  // namespace ckpt
