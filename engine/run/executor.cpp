#include "engine/run/executor.hpp"
#include "engine/autograd/execution_context.hpp"

#include <algorithm>

#include "engine/autograd/anomaly.hpp"
#include "engine/model/module_range.hpp"
#include "engine/run/segment_call.hpp"
#include "engine/tensor/memory_semantics.hpp"

namespace ckpt {

// The values one function invocation holds: those its own ops make (by id range, so that a
// frame costs nothing to look up) and those it was given.
struct Executor::Frame {
  const CompiledModel* plan = nullptr;
  const TensorList* statics = nullptr;
  int lo = 0;
  int hi = 0;
  std::vector<Tensor> locals;
  std::vector<std::pair<int, Tensor>> bound;

  Frame(const CompiledModel& p, const TensorList& s, std::int64_t first_op, std::int64_t end_op)
      : plan(&p),
        statics(&s),
        lo(p.first_output_id(first_op)),
        hi(p.first_output_id(end_op)),
        locals(static_cast<std::size_t>(hi - lo)) {}

  bool binds_static = false;  // a passed parameter shadows the run's own tensor

  const Tensor& get(int id) const {
    if (id < plan->static_count() && !binds_static) return (*statics)[static_cast<std::size_t>(id)];
    if (id >= lo && id < hi) {
      const Tensor& t = locals[static_cast<std::size_t>(id - lo)];
      if (t.defined()) return t;
    }
    for (const auto& [k, t] : bound)
      if (k == id) return t;
    if (id < plan->static_count()) return (*statics)[static_cast<std::size_t>(id)];
    throw std::logic_error("Runner: value '" + plan->name(id) +
                           "' is not available at this point of the run");
  }
  void set(int id, Tensor t) {
    if (id >= lo && id < hi) {
      locals[static_cast<std::size_t>(id - lo)] = std::move(t);
      return;
    }
    for (auto& [k, v] : bound)
      if (k == id) {
        v = std::move(t);
        return;
      }
    bound.emplace_back(id, std::move(t));
  }
  void release(int id) {
    if (id >= lo && id < hi) {
      locals[static_cast<std::size_t>(id - lo)] = Tensor();
      return;
    }
    for (auto it = bound.begin(); it != bound.end(); ++it)
      if (it->first == id) {
        bound.erase(it);
        return;
      }
  }
};

Executor::Executor(const Model& model, const CompiledModel& plan, const RunRequest& request,
                   const std::atomic<bool>* cancel)
    : model_(model), plan_(plan), request_(request), cancel_(cancel) {
  starts_.resize(model.ops.size());
  for (const auto& path : request.plan.modules) {
    const Module* m = model.find_module(path);
    if (!m || path.empty())
      throw std::invalid_argument("cannot checkpoint '" + path + "': " + model.source +
                                  " has no such module");
    if (!m->checkpointable)
      throw std::invalid_argument("cannot checkpoint '" + path +
                                  "': it is not checkpointable, because " +
                                  m->not_checkpointable_reason);
    starts_[static_cast<std::size_t>(m->first_op)].push_back(m);
  }
  add_ranges();
  add_offloaded();
  for (auto& list : starts_)
    std::sort(list.begin(), list.end(), [](const Module* a, const Module* b) {
      if (a->end_op != b->end_op) return a->end_op > b->end_op;
      return a->path.size() < b->path.size();  // an ancestor with the same ops goes first
    });
}

void Executor::add_offloaded() {
  if (request_.plan.offload.empty()) return;
  const MemorySemantics& rules = current_memory_semantics();
  if (!rules.host_memory_apart)
    throw std::invalid_argument(
        std::string("cannot offload to host memory on ") + device_name(rules.device) +
        ": save_on_cpu's copies would stay in the same memory (offloading is for a GPU: "
        "--device cuda)");
  for (const auto& path : request_.plan.offload) {
    const Module* m = model_.find_module(path);
    if (!m || path.empty())
      throw std::invalid_argument("cannot offload '" + path + "': " + model_.source +
                                  " has no such module");
    if (!m->checkpointable)
      throw std::invalid_argument("cannot offload '" + path +
                                  "': its ops cannot run as one call, "
                                  "because " +
                                  m->not_checkpointable_reason);
    if (request_.plan.modules.count(path))
      throw std::invalid_argument("cannot both checkpoint and offload '" + path +
                                  "': a checkpoint keeps nothing of it to offload");
    offloaded_.insert(m);
    starts_[static_cast<std::size_t>(m->first_op)].push_back(m);
  }
  offload_ = std::make_unique<HostOffload>();
}

void Executor::add_ranges() {
  for (const auto& [first, last] : request_.plan.ranges)
    ranges_.push_back(std::make_unique<Module>(make_range(model_, first, last)));
  // Segments nest or stay apart: a range that cuts through another checkpointed segment would
  // be half inside and half outside it.
  for (const auto& r : ranges_) {
    for (const auto& list : starts_)
      for (const Module* m : list) {
        const bool apart = m->end_op <= r->first_op || r->end_op <= m->first_op;
        const bool nested = (m->first_op <= r->first_op && r->end_op <= m->end_op) ||
                            (r->first_op <= m->first_op && m->end_op <= r->end_op);
        if (!apart && !nested)
          throw std::invalid_argument("cannot checkpoint the range '" + r->path +
                                      "': it overlaps the checkpointed segment '" + m->path +
                                      "' without holding it or lying inside it");
      }
    starts_[static_cast<std::size_t>(r->first_op)].push_back(r.get());
  }
}

void Executor::check_cancel() const {
  if (cancel_ && cancel_->load(std::memory_order_relaxed)) throw RunCancelled();
}

namespace {

CheckpointOptions options_for(const RunRequest& r, const std::string& name) {
  CheckpointOptions o;
  o.use_reentrant = r.settings.use_reentrant;
  o.preserve_rng_state = r.settings.preserve_rng_state;
  // Unset unless asked for: the device's default (PyTorch 2.x's on cuda, issue 26).
  if (r.settings.early_stop) o.early_stop = true;
  o.determinism_check = r.settings.check_recompute;
  const SelectivePolicy& policy = r.plan.policy_for(name);
  if (!policy.empty()) {
    o.save_ops = ops_of_kinds(policy.save);
    o.save_every = policy.every;
  }
  o.name = name;
  return o;
}

}  // namespace

const Module* Executor::pick(std::int64_t k, const Module* owner, std::int64_t end) const {
  const auto& list = starts_[static_cast<std::size_t>(k)];
  std::size_t i = 0;
  if (owner && owner->first_op == k) {
    auto it = std::find(list.begin(), list.end(), owner);
    if (it != list.end()) i = static_cast<std::size_t>(it - list.begin()) + 1;
  }
  for (; i < list.size(); ++i)
    if (list[i]->end_op <= end) return list[i];
  return nullptr;
}

LabelId Executor::node_label(ExecutionContext& context, std::int64_t k, const std::string& name) {
  return context.known_labels() == plan_.labels().get() ? plan_.op_label(k) : context.intern(name);
}

LabelId Executor::value_label(ExecutionContext& context, int id, const std::string& name) {
  return context.known_labels() == plan_.labels().get() ? plan_.value_label(id)
                                                        : context.intern(name);
}

void Executor::run_op(Frame& f, std::int64_t k) {
  const CompiledOp& op = plan_.ops()[static_cast<std::size_t>(k)];
  TensorList xs;
  xs.reserve(op.inputs.size());
  for (int id : op.inputs) xs.push_back(id < 0 ? Tensor() : f.get(id));
  const std::shared_ptr<ExecutionContext> context = ExecutionContext::current();
  NodeScope node(node_label(*context, k, op.node->name));
  TensorList ys = run_op_node(*op.kind, *op.node, xs);
  if (request_.hooks.detect_anomaly) check_anomaly(ys, op.node->op_type, op.node->name);
  if (costs_ && op.kind->cost && ExecutionContext::current()->phase() == Phase::forward)
    (*costs_)[op.node->name] = op.kind->cost(op_call(*op.node), xs, ys);
  if (ys.size() != op.outputs.size())
    throw std::logic_error("node '" + op.node->name + "' made " + std::to_string(ys.size()) +
                           " outputs, the graph names " + std::to_string(op.outputs.size()));
  for (std::size_t i = 0; i < ys.size(); ++i) {
    const Tensor& y = ys[i];
    // Name the allocation after the value, unless the op returned a view of an input (whose
    // allocation already carries the input's name).
    bool fresh = y.defined();
    for (const auto& x : xs)
      if (fresh && x.defined() && x.shares_storage(y)) fresh = false;
    if (fresh) {
      // The run's context listens to the tensor's ledger: tag it there by label. A tensor from
      // another ledger (none in a Runner's run) is tagged through its own.
      if (&y.storage()->ledger() == &context->ledger())
        context->tag(y.storage()->id(), value_label(*context, op.outputs[i], op.node->outputs[i]));
      else
        y.storage()->ledger().tag(y.storage()->id(), op.node->outputs[i]);
    }
    f.set(op.outputs[i], y);
  }
}

void Executor::run_range(Frame& f, std::int64_t a, std::int64_t b, const Module* owner) {
  std::int64_t k = a;
  while (k < b) {
    check_cancel();
    std::int64_t e = k + 1;
    if (const Module* seg = pick(k, owner, b)) {
      TensorList args;
      const auto in_ids = plan_.ids(seg->inputs);
      for (int id : in_ids) args.push_back(f.get(id));
      TensorList outs;
      if (offloaded_.count(seg)) {
        SavedTensorHooksScope to_host(offload_->hooks());
        outs = run_module(*seg, args);
      } else {
        outs = call_checkpoint([this, seg](const TensorList& xs) { return run_module(*seg, xs); },
                               args, options_for(request_, seg->path));
      }
      const auto out_ids = plan_.ids(seg->outputs);
      for (std::size_t i = 0; i < out_ids.size(); ++i) f.set(out_ids[i], outs.at(i));
      e = seg->end_op;
    } else {
      run_op(f, k);
    }
    for (std::int64_t j = k; j < e; ++j)
      for (int id : plan_.release_after(j)) f.release(id);
    k = e;
  }
}

TensorList Executor::run_module(const Module& m, const TensorList& args) {
  Frame g(plan_, *statics_, m.first_op, m.end_op);
  const auto in_ids = plan_.ids(m.inputs);
  if (args.size() != in_ids.size())
    throw std::logic_error("module '" + m.path + "' takes " + std::to_string(in_ids.size()) +
                           " inputs, got " + std::to_string(args.size()));
  for (std::size_t i = 0; i < args.size(); ++i) {
    g.bound.emplace_back(in_ids[i], args[i]);
    if (in_ids[i] < plan_.static_count()) g.binds_static = true;
  }
  run_range(g, m.first_op, m.end_op, &m);
  TensorList outs;
  for (int id : plan_.ids(m.outputs)) outs.push_back(g.get(id));
  return outs;
}

namespace {

// One function of checkpoint_sequential: an op outside every module, or a top-level module.
struct SequentialUnit {
  std::int64_t a, b;
  const Module* module;
  std::vector<int> inputs, outputs;
  std::string label;
};

std::vector<SequentialUnit> sequential_units(const Model& model, const CompiledModel& plan,
                                             std::int64_t chain_end) {
  std::vector<SequentialUnit> units;
  std::vector<bool> is_static(static_cast<std::size_t>(plan.value_count()), false);
  for (int i = 0; i < plan.static_count(); ++i) is_static[static_cast<std::size_t>(i)] = true;
  for (std::int64_t k = 0; k < chain_end;) {
    const OpNode& op = model.ops[static_cast<std::size_t>(k)];
    const std::string top = op.module.substr(0, op.module.find('.'));
    SequentialUnit u{};
    if (top.empty()) {
      const CompiledOp& c = plan.ops()[static_cast<std::size_t>(k)];
      u = SequentialUnit{k, k + 1, nullptr, {}, c.outputs, "op '" + op.name + "'"};
      for (int id : c.inputs)
        if (id >= 0 && !is_static[static_cast<std::size_t>(id)] &&
            std::find(u.inputs.begin(), u.inputs.end(), id) == u.inputs.end())
          u.inputs.push_back(id);
    } else {
      const Module* m = model.find_module(top);
      if (!m->checkpointable || m->end_op > chain_end)
        throw std::invalid_argument("checkpoint_sequential: top-level module '" + top +
                                    "' cannot be a segment function" +
                                    (m->checkpointable ? std::string(": it contains the loss")
                                                       : ": " + m->not_checkpointable_reason));
      u = SequentialUnit{
          m->first_op,           m->end_op, m, plan.ids(m->inputs), plan.ids(m->outputs),
          "module '" + top + "'"};
    }
    k = u.b;
    units.push_back(std::move(u));
  }
  return units;
}

void check_one_tensor_chain(const CompiledModel& plan, const std::vector<SequentialUnit>& units) {
  if (units.empty()) throw std::invalid_argument("checkpoint_sequential: the model runs no op");
  auto names = [&](const std::vector<int>& ids) {
    std::string s;
    for (int id : ids) s += (s.empty() ? "" : ", ") + plan.name(id);
    return s;
  };
  for (std::size_t i = 0; i < units.size(); ++i) {
    const SequentialUnit& u = units[i];
    const int expected = i == 0 ? -1 : units[i - 1].outputs.front();
    if (u.inputs.size() != 1 || (i > 0 && u.inputs[0] != expected) || u.outputs.size() != 1)
      throw std::invalid_argument(
          "checkpoint_sequential passes one tensor from each top-level module to the next, "
          "but " +
          u.label + " takes (" + names(u.inputs) + ") and returns (" + names(u.outputs) + ")");
  }
}

}  // namespace

void Executor::run_sequential(Frame& root, std::int64_t chain_end) {
  const std::vector<SequentialUnit> units = sequential_units(model_, plan_, chain_end);
  check_one_tensor_chain(plan_, units);
  std::vector<SegmentFunction> functions;
  for (const SequentialUnit& u : units) {
    // By value: a reentrant segment runs again in backward, after this function returned.
    functions.push_back([this, a = u.a, b = u.b, module = u.module, in = u.inputs[0],
                         out = u.outputs[0]](const TensorList& xs) {
      Frame g(plan_, *statics_, a, b);
      g.bound.emplace_back(in, xs.at(0));
      run_range(g, a, b, module);
      return TensorList{g.get(out)};
    });
  }
  const TensorList out =
      call_checkpoint_sequential(functions, request_.plan.segments, {root.get(units[0].inputs[0])},
                                 options_for(request_, "checkpoint_sequential"));
  root.set(units.back().outputs[0], out.at(0));
  for (std::int64_t j = 0; j < chain_end; ++j)
    for (int id : plan_.release_after(j)) root.release(id);
}

TensorList Executor::forward(const TensorList& statics, const TensorList& inputs,
                             const std::vector<int>& wanted) {
  statics_ = &statics;
  const auto n = static_cast<std::int64_t>(plan_.ops().size());
  Frame root(plan_, statics, 0, n);
  for (std::size_t i = 0; i < inputs.size(); ++i)
    root.bound.emplace_back(plan_.input_id(i), inputs[i]);
  std::int64_t start = 0;
  if (request_.plan.segments > 0) {
    // The model's own loss takes the targets besides the chain's output: it runs after it.
    std::int64_t chain_end = n;
    if (plan_.loss_id() >= 0 && plan_.loss_id() >= plan_.first_output_id(n - 1) &&
        model_.ops.back().module.empty())
      chain_end = n - 1;
    run_sequential(root, chain_end);
    start = chain_end;
  }
  run_range(root, start, n, nullptr);
  TensorList out;
  for (int id : wanted) out.push_back(root.get(id));
  return out;
}

}  // namespace ckpt
