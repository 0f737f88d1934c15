#pragma once

// One run's forward pass over a CompiledModel: frames of live values, ops run in order, and
// checkpointed modules run as functions of their inputs with their parameters captured.

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/checkpoint/offload.hpp"
#include "engine/ops/schema/op_schema.hpp"
#include "engine/run/compiled_model.hpp"
#include "engine/run/runner.hpp"

namespace ckpt {

// Thrown between ops when the caller's cancel flag is set.
struct RunCancelled : std::runtime_error {
  RunCancelled() : std::runtime_error("cancelled") {}
};

class Executor {
 public:
  Executor(const Model& model, const CompiledModel& plan, const RunRequest& request,
           const std::atomic<bool>* cancel);

  // Runs every op; `statics` are the run's parameters and constants (by id), `inputs` the
  // model inputs. Returns the value of each id in `wanted` (outputs, loss).
  TensorList forward(const TensorList& statics, const TensorList& inputs,
                     const std::vector<int>& wanted);
  // Collects each model node's forward cost (its op-table row's FLOPs and bytes) into `sink`:
  // a dry run's time estimates.
  void collect_costs(std::unordered_map<std::string, OpCost>* sink) { costs_ = sink; }
  // The offloaded modules' host memory and copies so far (null without offloaded modules).
  const HostOffload* offload() const { return offload_.get(); }

 private:
  struct Frame;
  void run_range(Frame& f, std::int64_t a, std::int64_t b, const Module* owner);
  void run_op(Frame& f, std::int64_t k);
  TensorList run_module(const Module& m, const TensorList& args);
  const Module* pick(std::int64_t k, const Module* owner, std::int64_t end) const;
  void run_sequential(Frame& root, std::int64_t chain_end);
  void check_cancel() const;
  void add_ranges();
  void add_offloaded();

  const Model& model_;
  const CompiledModel& plan_;
  const RunRequest& request_;
  const std::atomic<bool>* cancel_;
  const TensorList* statics_ = nullptr;
  // Checkpointed modules by first op, outermost first.
  std::vector<std::vector<const Module*>> starts_;
  std::vector<std::unique_ptr<Module>> ranges_;  // the plan's ranges as modules of their own
  std::set<const Module*> offloaded_;            // in starts_ too, run under offload_'s hooks
  std::unique_ptr<HostOffload> offload_;
  std::unordered_map<std::string, OpCost>* costs_ = nullptr;
  // An op's node name and a value's name as labels of the run's context: the compiled model's
  // ids when the context starts from its table (a Runner's always does), without hashing the
  // names every step; interned otherwise.
  LabelId node_label(ExecutionContext& context, std::int64_t k, const std::string& name);
  LabelId value_label(ExecutionContext& context, int id, const std::string& name);
};

}  // namespace ckpt
