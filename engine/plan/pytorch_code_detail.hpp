#pragma once

// Private to pytorch_code*.cpp: the writer that turns a native model and a checkpoint
// configuration into PyTorch source, split by concern across
//   pytorch_code.cpp           the text helpers, the ONNX helper script, the public entry
//   pytorch_code_analysis.cpp  which ops and child calls make up a module, its call signature
//   pytorch_code_forward.cpp   forward() bodies: each call, checkpoint(...) and loops
//   pytorch_code_classes.cpp   the nn.Module classes, the header and the usage lines

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/plan/python_expr.hpp"
#include "engine/plan/pytorch_code.hpp"

namespace ckpt::pytorch_code_detail {

bool is_identifier(const std::string& s);
std::string attr_ref(const std::string& attr);
std::string last_component(const std::string& path);
std::string owner_of(const std::string& param);
// checkpoint()'s keyword arguments for the region `region` (its policy: CheckpointPlan::
// policy_for).
std::string checkpoint_kwargs(const RunRequest& c, const std::string& region);
std::string indent(const std::string& text, int n);

// pytorch_code_step.cpp: the training step the run assumed around the forward and loss lines
// (which compute `loss` from `outputs`): the optimizer and scaler to make first, then the step
// itself (under torch.autocast, backward, the optimizer's step).
std::string training_step_setup(const RunSettings& s);
std::string training_step(const RunSettings& s, const std::string& forward_and_loss,
                          const std::string& outputs);
bool scales_gradients(const RunSettings& s);  // float16 on CUDA with an optimizer

// For an ONNX model, whose Python source is not known.
std::string onnx_code(const Model& m, const RunRequest& c);

struct Unit {
  std::int64_t op = -1;           // an op of the module itself, or
  const Module* child = nullptr;  // a call of a child module
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

// Local variable names of one Python function.
class Names {
 public:
  std::string fresh(const std::string& want) {
    std::string base = py::ident(want), s = base;
    for (int k = 2; used_.count(s); ++k) s = base + "_" + std::to_string(k);
    used_.insert(s);
    return s;
  }
  std::map<std::string, std::string> var;  // graph value -> Python name

 private:
  std::set<std::string> used_;
};

class NativeWriter {
 public:
  NativeWriter(const Model& m, const RunRequest& c);

  std::string write();

 private:
  bool is_param(const std::string& v) const { return params_.count(v) > 0; }

  std::string attr_of(const Module& child) const { return last_component(child.definition); }

  // pytorch_code_analysis.cpp
  const Module* child_containing(const Module& m, const std::string& op_module) const;
  std::string leaf(const Module& m) const;
  int sequential_kind(const Module& m) const;
  std::string param_expr(const Module& m, const std::string& name, const Names& names);
  struct Signature {
    std::vector<std::pair<std::int64_t, std::size_t>> in, out;
  };
  const Signature& signature(const Module& m) const;
  std::vector<std::string> call_values(const Module& m, bool inputs) const;
  std::vector<Unit> units_of(const Module& m) const;

  // pytorch_code_forward.cpp
  std::string render(const Module& m, const Unit& u, Names& names, int placeholder);
  std::string short_name(const Module& m, const std::string& v) const;
  bool takes_variadic_inputs(const std::vector<std::string>& inputs, const std::vector<Unit>& units,
                             std::map<std::string, int>& uses) const;
  std::size_t fold_repeated_calls(const Module& m, const std::vector<Unit>& units, std::size_t i,
                                  std::map<std::string, int>& uses, Names& names,
                                  std::string& body);
  std::string statements(const Module& m, const std::vector<Unit>& units,
                         std::map<std::string, int>& uses, Names& names);
  std::string forward(const Module& m);
  std::size_t sequential_prefix(const Module& m, const std::vector<Unit>& units, Names& names,
                                std::string& body);

  // pytorch_code_classes.cpp
  std::string construct(const Module& m, int ind);
  std::string param_init(const ParameterInfo& p) const;
  std::string class_for(const Module& m,
                        const std::vector<std::pair<std::string, std::string>>& args);
  std::string header() const;
  std::string usage() const;

  const Model& m_;
  const RunRequest& c_;
  std::map<std::string, const ParameterInfo*> params_;
  std::int64_t loss_op_ = -1;
  std::map<std::string, std::set<std::string>> captured_;
  mutable std::map<std::string, Signature> signatures_;
  std::set<std::string> variadic_;  // definitions whose forward takes *inputs
  std::map<std::string, std::string> class_by_body_;
  std::set<std::string> class_names_;
  std::vector<std::string> classes_;
};

}  // namespace ckpt::pytorch_code_detail
