// C++ halves of the checkpointing oracle cases (cases_checkpoint.py): same gradients, same
// message texts, same counts as PyTorch 1.13.
#include <any>
#include <sstream>

#include "engine/checkpoint/checkpoint.hpp"
#include "engine/ops/ops.hpp"
#include "support/oracle_harness.hpp"

using namespace ckpt;

namespace {

std::string messages_since(std::size_t from, Severity severity) {
  const auto all = ExecutionContext::current()->messages();
  std::string out;
  for (std::size_t i = from; i < all.size(); ++i) {
    if (all[i].first != severity) continue;
    if (!out.empty()) out += "\n";
    out += all[i].second;
  }
  return out;
}

void check_text(oracle::OracleCase& c, const std::string& what, const std::string& ours,
                const std::string& torch) {
  c.check(ours == torch, what + ": engine \"" + ours + "\", PyTorch \"" + torch + "\"");
}

void check_count(oracle::OracleCase& c, const std::string& key, double ours) {
  const double torch = c.reported(key);
  c.check(ours == torch,
          key + ": engine " + std::to_string(ours) + ", PyTorch " + std::to_string(torch));
}

// saved_tensors_hooks(pack, unpack) that counts the packs, as the Python side does.
struct CountingHooks {
  std::int64_t packs = 0;
  std::shared_ptr<SavedTensorHooks> hooks = std::make_shared<SavedTensorHooks>();
  CountingHooks() {
    hooks->pack = [this](const Tensor& t) -> std::any {
      ++packs;
      return t;
    };
    hooks->unpack = [](std::any& a) { return std::any_cast<Tensor>(a); };
  }
};

// "w3", "calls_3" (built by appending: GCC 12 misreports "w" + std::to_string(i) under -O3).
std::string indexed(const char* prefix, std::size_t i) {
  std::string s(prefix);
  s.append(std::to_string(i));
  return s;
}

Tensor fresh_leaf(const Tensor& t) {
  return t.detach().set_requires_grad(true);
}

}  // namespace

CKPTLAB_ORACLE_CASE(ckpt_subnet) {
  const std::size_t first = ExecutionContext::current()->messages().size();
  Tensor x = c.input("x");
  Tensor w1 = c.param("l1w"), b1 = c.param("l1b"), w2 = c.param("l2w"), b2 = c.param("l2b");
  CheckpointOptions o;
  o.use_reentrant = c.attr_bool("reentrant");
  o.name = "subnet";
  // Captured by value: the recomputation runs in the harness's backward, after this returns.
  auto subnet = [=](const TensorList& in) {
    return TensorList{linear(relu(linear(in[0], w1, b1)), w2, b2)};
  };
  Tensor out = checkpoint(subnet, {x}, o)[0];
  check_text(c, "warnings", messages_since(first, Severity::warning), c.attr_string("warnings"));
  if (c.attr_bool("head")) out = linear(out, c.param("headw"), c.param("headb"));
  std::string error;
  if (c.attr_bool("try_backward")) {
    try {
      sum(out).backward();
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
  }
  check_text(c, "error at backward", error, c.attr_string("error"));
  return {out};
}

CKPTLAB_ORACLE_CASE(ckpt_heavy) {
  const bool use_sin = c.attr_bool("sin");
  Tensor x = c.input("x");
  Tensor a = c.param("a");
  int calls = 0;
  SegmentFunction heavy_function = [&](const TensorList& in) {
    ++calls;
    Tensor t = in[0];
    for (int i = 0; i < 100; ++i) t = add(use_sin ? sin(t) : t, in[1]);
    return TensorList{t};
  };
  auto model = [&](const Tensor& xx, const Tensor& aa, const std::string& mode) {
    CheckpointOptions o;
    o.use_reentrant = mode == "reentrant";
    o.name = "heavy_function";
    Tensor y = xx;
    for (int i = 0; i < 1000; ++i)
      y = mode == "plain" ? heavy_function({y, aa})[0] : checkpoint(heavy_function, {y, aa}, o)[0];
    return y;
  };
  for (const std::string mode : {"plain", "reentrant", "non_reentrant"}) {
    Tensor xx = fresh_leaf(x), aa = fresh_leaf(a);
    calls = 0;
    CountingHooks counter;
    Tensor y;
    {
      SavedTensorHooksScope hooks(counter.hooks);
      y = model(xx, aa, mode);
    }
    const int forward_calls = calls;
    y.backward();
    check_count(c, "packs_" + mode, static_cast<double>(counter.packs));
    check_count(c, "forward_calls_" + mode, forward_calls);
    check_count(c, "recompute_calls_" + mode, calls - forward_calls);
    const double ga = aa.grad().item();
    const double torch_ga = c.reported("grad_a_" + mode);
    c.check(std::abs(ga - torch_ga) <= 1e-4 * (1 + std::abs(torch_ga)),
            "grad of a (" + mode + "): engine " + std::to_string(ga) + ", PyTorch " +
                std::to_string(torch_ga));
  }
  return {model(x, a, "plain")};
}

CKPTLAB_ORACLE_CASE(ckpt_sequential) {
  const int segments = static_cast<int>(c.attr_int("segments"));
  std::vector<Tensor> ws;
  for (int i = 0; i < 10; ++i) ws.push_back(c.param(indexed("w", static_cast<std::size_t>(i))));
  Tensor x = c.input("x");
  // Shared with the functions, which the harness's backward recomputes after this returns.
  struct State {
    std::vector<int> calls = std::vector<int>(10, 0);
    std::vector<Tensor> weights;
  };
  auto state = std::make_shared<State>();
  std::vector<SegmentFunction> fns;
  for (std::size_t i = 0; i < 10; ++i)
    fns.push_back([state, i](const TensorList& in) {
      ++state->calls[i];
      return TensorList{tanh(linear(in[0], state->weights[i]))};
    });
  for (const auto& w : ws) state->weights.push_back(fresh_leaf(w));
  sum(checkpoint_sequential(fns, segments, {fresh_leaf(x)})[0]).backward();
  for (std::size_t i = 0; i < 10; ++i) check_count(c, indexed("calls_", i), state->calls[i]);
  state->weights = ws;
  return checkpoint_sequential(fns, segments, {x});
}

CKPTLAB_ORACLE_CASE(ckpt_dropout) {
  Tensor x = c.input("x");
  Tensor w = c.param("lw"), b = c.param("lb");
  CheckpointOptions o;
  o.use_reentrant = c.attr_bool("reentrant");
  o.preserve_rng_state = c.attr_bool("preserve");
  // Without the preserved state PyTorch silently uses the recompute's other masks; with the
  // recompute check off the engine computes those very gradients (the check would stop it:
  // see test_checkpoint_scenarios).
  o.determinism_check = o.preserve_rng_state;
  o.name = "block";
  auto block = [=](const TensorList& in) {
    return TensorList{dropout(tanh(linear(in[0], w, b)), 0.5, true)};
  };
  return {sin(checkpoint(block, {x}, o)[0])};
}

CKPTLAB_ORACLE_CASE(ckpt_bn) {
  const std::size_t first = ExecutionContext::current()->messages().size();
  Tensor x = c.input("x");
  Tensor w = c.param("w"), gamma = c.param("gamma"), beta = c.param("beta");
  Tensor rm = c.buffer("running_mean"), rv = c.buffer("running_var");
  Tensor nbt = c.buffer("num_batches_tracked");
  CheckpointOptions o;
  o.use_reentrant = c.attr_bool("reentrant");
  o.name = "conv_bn_relu";
  auto block = [=](const TensorList& in) {
    Tensor h = conv2d(in[0], w, Tensor(), {1, 1}, {1, 1});
    return TensorList{relu(batch_norm(h, gamma, beta, rm, rv, true, 0.1, 1e-5, nbt))};
  };
  Tensor y = checkpoint(block, {x}, o)[0];
  c.check(messages_since(first, Severity::warning).empty(), "no warning before backward");
  // The recompute (in the harness's backward) notes the second update; checked in
  // test_checkpoint_scenarios, since the ledger is read after this function returns.
  return {y};
}

CKPTLAB_ORACLE_CASE(ckpt_grad) {
  Tensor x = c.input("x");
  Tensor w = c.param("lw"), b = c.param("lb");
  CheckpointOptions o;
  o.use_reentrant = c.attr_bool("reentrant");
  auto block = [=](const TensorList& in) { return TensorList{tanh(linear(in[0], w, b))}; };
  Tensor y = checkpoint(block, {x}, o)[0];
  std::string error;
  Tensor g = Tensor::zeros({4, 8});
  try {
    g = grad({sum(y)}, {x}, {}, /*retain_graph=*/true)[0];
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  check_text(c, "error of grad()", error, c.attr_string("error"));
  return {y, g};
}

CKPTLAB_ORACLE_CASE(ckpt_detached) {
  Tensor x = c.input("x");
  Tensor w = c.param("lw"), b = c.param("lb");
  auto block = [=](const TensorList& in) { return TensorList{tanh(linear(in[0], w, b)).detach()}; };
  Tensor y = checkpoint(block, {x})[0];
  c.check(y.requires_grad() == c.attr_bool("requires_grad"), "requires_grad of the output");
  std::string error;
  try {
    sum(y).backward();
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  check_text(c, "error at backward", error, c.attr_string("error"));
  return {y.detach()};
}

// Per-op policies (issue 28) against PyTorch 2.4's selective checkpointing as cases_checkpoint.py
// emulates it in 1.13: the same op outputs kept (bytes), the same reused in the recompute, the
// same gradients.
CKPTLAB_ORACLE_CASE(ckpt_selective) {
  const std::string kinds = c.attr_string("kinds");
  Tensor x = c.input("x");
  std::vector<std::pair<Tensor, Tensor>> layers;
  for (std::size_t i = 0; i < 4; ++i)
    layers.emplace_back(c.param(indexed("l", i) + "w"), c.param(indexed("l", i) + "b"));
  Tensor w = c.param("w");
  SegmentFunction block = [layers, w](const TensorList& in) {
    Tensor t = in[0];
    for (std::size_t i = 0; i < layers.size(); ++i) {
      t = linear(t, layers[i].first, layers[i].second);
      t = i % 2 ? tanh(t) : gelu(t);
    }
    return TensorList{matmul(t, w)};
  };
  auto run = [&](bool with_policy) {
    CheckpointOptions o;
    o.use_reentrant = false;
    o.name = "block";
    if (with_policy && !kinds.empty()) o.save_ops = ops_of_kinds({kinds});
    o.save_every = static_cast<int>(c.attr_int("every"));
    return checkpoint(block, {sin(x)}, o)[0];
  };
  // The bytes the policy keeps: activations after its forward beyond a full recompute's.
  const MemoryLedger& ledger = ExecutionContext::current()->ledger();
  auto activation_after = [&](bool with_policy) {
    const std::int64_t before = ledger.live_bytes(MemoryCategory::activation);
    Tensor out = run(with_policy);
    return std::pair{ledger.live_bytes(MemoryCategory::activation) - before, out};
  };
  const auto full = activation_after(false);
  auto [kept, out] = activation_after(true);
  check_count(c, "kept_bytes", static_cast<double>(kept - full.first));
  // The recompute (in this backward) says how many outputs it reused.
  const std::size_t from = ExecutionContext::current()->messages().size();
  out.backward(Tensor::ones(out.shape()));
  const std::string info = messages_since(from, Severity::info);
  const auto at = info.find(" op outputs reused");
  const std::size_t start = info.rfind(' ', at == std::string::npos ? 0 : at - 1);
  const double reused =
      at == std::string::npos ? 0 : std::stod(info.substr(start + 1, at - start - 1));
  check_count(c, "reused", reused);
  for (auto& [wi, bi] : layers) {
    wi.set_grad(Tensor());
    bi.set_grad(Tensor());
  }
  w.set_grad(Tensor());
  x.set_grad(Tensor());
  return {run(true)};
}
