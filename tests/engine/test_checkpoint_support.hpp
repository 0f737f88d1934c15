#pragma once

// Helpers shared by the checkpoint tests: seeded tensors, a pack counter (what PyTorch users
// measure with saved_tensors_hooks), a run harness that records a trace, and comparisons.

#include <QtTest>

#include <any>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "engine/checkpoint/checkpoint.hpp"
#include "engine/ops/ops.hpp"
#include "engine/tensor/generator.hpp"
#include "engine/trace/trace.hpp"

namespace ckpt::testing {

inline Tensor randn(const Shape& shape, std::uint64_t seed, double scale = 1.0,
                    MemoryCategory category = MemoryCategory::input) {
  Generator g(seed);
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (auto& x : v) x = static_cast<float>(g.normal() * scale);
  CategoryScope c(category);
  return Tensor::from_vector(v, shape);
}

inline Tensor param(const Shape& shape, std::uint64_t seed, double scale = 0.5) {
  return randn(shape, seed, scale, MemoryCategory::parameter).set_requires_grad(true);
}

// Counts the tensors packed by saved_tensors_hooks (outer hooks see nothing inside a
// non-reentrant checkpoint, as in PyTorch). The packed tensors are kept, as PyTorch's
// pack(t) -> t does.
struct PackCounter {
  std::int64_t packs = 0;
  std::shared_ptr<SavedTensorHooks> hooks = std::make_shared<SavedTensorHooks>();
  PackCounter() {
    hooks->pack = [this](const Tensor& t) -> std::any {
      ++packs;
      // What the engine does for a saved tensor without hooks: it becomes an activation.
      auto& ledger = t.storage()->ledger();
      if (ledger.category_of(t.storage()->id()) == MemoryCategory::temporary)
        ledger.recategorize(t.storage()->id(), MemoryCategory::activation);
      return t;
    };
    hooks->unpack = [](std::any& a) { return std::any_cast<Tensor>(a); };
  }
};

// One forward + backward on a fresh ledger, recorded.
struct Run {
  std::shared_ptr<MemoryLedger> ledger = std::make_shared<MemoryLedger>();
  std::unique_ptr<Recorder> recorder;
  Trace trace;
  std::int64_t packs = 0;
  std::int64_t peak = 0;
  std::int64_t forward_end_bytes = 0;  // live after the forward
  std::vector<std::pair<Severity, std::string>> messages;
};

// `forward` builds the loss (called in phase forward, under the run's ledger); backward runs
// on it unless `backward` is false. Parameters are made inside `forward` or before (then
// pass them through the capture; they live on the default ledger unless made in `setup`).
inline Run run_recorded(const std::function<Tensor()>& forward, bool do_backward = true,
                        bool count_packs = false) {
  Run r;
  ExecutionScope scope(r.ledger);
  r.recorder = std::make_unique<Recorder>(scope.context());
  {
    PackCounter counter;
    std::optional<SavedTensorHooksScope> hooks;
    if (count_packs) hooks.emplace(counter.hooks);
    Tensor loss;
    {
      PhaseScope fwd(Phase::forward);
      loss = forward();
    }
    hooks.reset();
    r.packs = counter.packs;
    r.forward_end_bytes = r.ledger->live_bytes();
    if (do_backward) loss.backward();
  }
  r.peak = r.ledger->peak_bytes();
  r.messages = scope.context().messages();
  r.trace = r.recorder->finish();
  return r;
}

inline void compare_tensors(const Tensor& a, const Tensor& b, double tol, const char* what) {
  QVERIFY2(a.defined() && b.defined(), what);
  const auto va = a.to_vector();
  const auto vb = b.to_vector();
  QCOMPARE(va.size(), vb.size());
  for (std::size_t i = 0; i < va.size(); ++i)
    if (std::abs(va[i] - vb[i]) > tol * (1 + std::abs(vb[i])))
      QFAIL(qPrintable(
          QString("%1: element %2 is %3, expected %4").arg(what).arg(i).arg(va[i]).arg(vb[i])));
}

// Steps executed per model node ("f3") in the given phase.
inline std::map<std::string, int> steps_by_node(const Trace& t, Phase phase) {
  std::map<std::string, int> m;
  for (std::int64_t k = 0; k < t.step_count(); ++k) {
    const auto s = t.step(k);
    if (s.phase == phase) ++m[s.node];
  }
  return m;
}

inline bool has_message(const std::vector<std::pair<Severity, std::string>>& ms, Severity s,
                        const std::string& text) {
  for (const auto& [sev, t] : ms)
    if (sev == s && t == text) return true;
  return false;
}

}  // namespace ckpt::testing
