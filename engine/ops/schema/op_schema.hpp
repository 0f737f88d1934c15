#pragma once

// One row per op kind: everything the project knows about an op, next to its implementation
// (in the spirit of libtorch's derivatives.yaml and onnx2torch's per-op converters). The model
// loaders, the Runner, the code export and the planner look rows up here; none of them lists
// op kinds of its own. What an op saves for backward is stated where it calls record().

#include <climits>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/ops/schema/aten_node.hpp"
#include "engine/ops/schema/attributes.hpp"
#include "engine/ops/schema/native_layer.hpp"
#include "engine/ops/schema/onnx_node.hpp"
#include "engine/ops/schema/onnx_pattern.hpp"
#include "engine/ops/schema/parameter_init.hpp"
#include "engine/tensor/tensor.hpp"

namespace ckpt {

// An ONNX op type this row translates from, for opsets [since, until].
struct OnnxRule {
  const char* op_type = nullptr;
  int since = 1;
  int until = INT_MAX;
  // Values computed at run time become engine ops (define the node's outputs).
  void (*translate)(OnnxNode&) = nullptr;
  // Every input known at load time: define the outputs as constants and return true, or
  // return false to translate instead. Rules with no engine op (Shape, Constant) only fold.
  bool (*fold)(OnnxNode&) = nullptr;
  // A module that is exactly one node of this type shows as this torch.nn class ("Conv2d").
  const char* module_class = nullptr;
  // Inputs that are the module's buffers (BatchNorm's running statistics), not parameters.
  std::vector<int> buffer_inputs;
  // How torch.nn initialises each input that is a parameter, by input index (a weight a file
  // does not hold is made so for a real run; engine/ops/schema/parameter_init.hpp).
  std::vector<InitKind> parameter_init;
};

// An ATen op, as ckptlab_capture recorded it ("aten::addmm"), that this row translates from
// (docs/capture_format.md). One rule per ATen name; the rule reads the overload itself.
struct AtenRule {
  const char* name = nullptr;
  void (*translate)(AtenNode&) = nullptr;
};

// What a per-op checkpoint policy calls an op (`--policy save:mm,sdpa`), and the aten functions
// PyTorch 2.4+'s selective activation checkpointing sees for it when it runs, which the code
// export's policy function names (torch.ops.aten.<name>.default).
struct PolicyKind {
  const char* name = nullptr;     // "mm", "conv", "sdpa"; null: no policy names this op
  std::vector<const char*> aten;  // "addmm", "mm", ...
};

// FLOPs and bytes moved by one forward execution (backward is estimated from them).
struct OpCost {
  double flops = 0;
  double bytes = 0;
};

// The PyTorch spelling for the code export: an expression over already-spelled arguments
// (one per input, "" for an absent optional one; `shape` is the first input's shape), and the
// torch.nn constructor of a single-op module ("nn.Linear(4, 8)"), or "" when there is none.
using PythonExpression = std::string (*)(const OpCall& op, const std::vector<std::string>& args,
                                         const Shape& shape);
using PythonModule = std::string (*)(const OpCall& op, const std::vector<Shape>& params);

// What torch.autocast does to an op's floating inputs (the op's entry in ATen's autocast lists,
// aten/src/ATen/autocast_mode.cpp), per device, since the CPU's and CUDA's lists differ:
//   none     the op runs in its inputs' dtypes (autocast falls through; elementwise ops promote);
//   lower    float32 inputs cast to the lower precision (lower_precision_fp: conv, linear, matmul);
//   fp32     lower-precision inputs cast to float32 (fp32: losses; on CUDA norms, exp, ...);
//   fp32_set_opt_dtype  computed in float32 when an input is lower (CUDA's softmax, sum): the
//            input converted to float32 first, as softmax(x, dtype=float32) does;
//   promote  inputs cast to their widest floating dtype (cat).
// float64 and integer inputs are never cast.
enum class AutocastPolicy : std::uint8_t { none, lower, fp32, fp32_set_opt_dtype, promote };

struct AutocastRule {
  AutocastPolicy cpu = AutocastPolicy::none;   // PyTorch 1.13's torch.autocast("cpu", bfloat16)
  AutocastPolicy cuda = AutocastPolicy::none;  // PyTorch 2.x's torch.autocast("cuda")
};

struct OpSchema {
  const char* type = nullptr;  // the op kind in a Model ("conv2d")
  int min_inputs = 1;
  int max_inputs = 1;  // -1: any number (cat)
  TensorList (*kernel)(const OpCall& op, const TensorList& inputs) = nullptr;
  // A policy naming this kind keeps the op's outputs inside checkpointed regions instead of
  // recomputing them.
  PolicyKind policy_kind;
  OpCost (*cost)(const OpCall& op, const TensorList& inputs, const TensorList& outputs) = nullptr;
  PythonExpression python = nullptr;
  PythonModule python_module = nullptr;
  std::vector<OnnxRule> onnx;
  // Subgraphs of an imported ONNX graph this op stands for (GELU's Erf form, LayerNorm's
  // decomposition, the attention core): the importer fuses them into this one op.
  std::vector<OnnxPattern> onnx_patterns;
  // The layers of the native JSON format this op is ({"type": "relu6"} is hardtanh).
  std::vector<NativeLayer> native_layers;
  // The names torch.nn gives the parameters and buffers among the inputs, from input 1
  // ("weight", "bias", ...): a module whose one op this is, with its parameters so named, is
  // that torch.nn layer in the code export.
  std::vector<const char*> parameter_names;
  // A training-mode execution updates buffers in place (BatchNorm's running statistics), so a
  // recompute updates them again: whether this execution did, known by what it saved. Null for
  // ops that never do.
  bool (*updates_buffers)(const TensorList& saved) = nullptr;
  // Under autocast (engine/ops/autocast.hpp); checked against PyTorch 1.13's CPU autocast by
  // tests/oracle/test_oracle_amp.
  AutocastRule autocast;
  // The ATen ops of a capture this op stands for (engine/model/capture_loader.cpp).
  std::vector<AtenRule> aten;
};

// A native layer and the row that builds it.
struct NativeLayerEntry {
  const OpSchema* row = nullptr;
  const NativeLayer* layer = nullptr;
};

class OpTable {
 public:
  static const OpTable& instance();

  const OpSchema* find(const std::string& type) const;  // null when unknown
  std::vector<std::string> types() const;               // sorted
  // The rule for an ONNX op type at `opset`, or null.
  const OnnxRule* onnx_rule(const std::string& onnx_type, std::int64_t opset) const;
  std::vector<std::string> onnx_types() const;  // sorted, every opset
  // The pattern rules rooted at an `onnx_type` node at `opset`, each with its row.
  std::vector<std::pair<const OpSchema*, const OnnxPattern*>> onnx_patterns(
      const std::string& onnx_type, std::int64_t opset) const;
  // The native layer named `layer` and its row, or nulls.
  NativeLayerEntry find_native_layer(const std::string& layer) const;
  std::vector<std::string> native_layers() const;  // sorted
  // The kinds per-op policies name ops by (PolicyKind::name), sorted, each once.
  std::vector<std::string> policy_kinds() const;
  // The op types of the kind `kind`, and the aten functions they run as (sorted, each once).
  std::vector<std::string> types_of_policy_kind(const std::string& kind) const;
  std::vector<std::string> aten_of_policy_kind(const std::string& kind) const;

  // The rule for an ATen op of a capture ("aten::addmm"), or null; every name with a rule.
  const AtenRule* aten_rule(const std::string& name) const;
  std::vector<std::string> aten_names() const;  // sorted

  void add(OpSchema row);  // for the family registration functions only
  // Gives the existing row `type` the ATen rules of a family's *_aten.cpp.
  void add_aten(const std::string& type, std::vector<AtenRule> rules);

 private:
  std::map<std::string, OpSchema> rows_;
  std::multimap<std::string, OnnxRule> onnx_;
  std::map<std::string, std::pair<std::string, std::size_t>> layers_;         // -> row, index
  std::multimap<std::string, std::pair<std::string, std::size_t>> patterns_;  // root -> row, i
  std::map<std::string, AtenRule> aten_;
};

// Runs `row` on `inputs`; an engine error comes back naming the node, its op and its input
// shapes, as does a wrong input count.
TensorList run_op(const OpSchema& row, const OpCall& op, const TensorList& inputs);

// "float32[2, 3], int64[4]" for messages.
std::string describe_tensors(const TensorList& ts);

// An absent optional input is an undefined tensor.
inline const Tensor& optional_input(const TensorList& xs, std::size_t i) {
  static const Tensor undefined;
  return i < xs.size() ? xs[i] : undefined;
}

// Each op family (a file under engine/ops) adds its rows here. A new op in a family needs no
// edit of this list; a new family adds one line in op_table.cpp.
#define CKPTLAB_OP_FAMILIES(X) \
  X(elementwise)               \
  X(unary)                     \
  X(activation)                \
  X(attention)                 \
  X(matmul)                    \
  X(reduce)                    \
  X(shape_ops)                 \
  X(conv)                      \
  X(norm)                      \
  X(pool)                      \
  X(resize)                    \
  X(softmax)                   \
  X(loss)                      \
  X(dropout)                   \
  X(embedding)                 \
  X(inplace)                   \
  X(logical)                   \
  X(recurrent)                 \
  X(onnx_constants)

#define CKPTLAB_DECLARE_FAMILY(family) void register_##family##_ops(OpTable& table);
CKPTLAB_OP_FAMILIES(CKPTLAB_DECLARE_FAMILY)
#undef CKPTLAB_DECLARE_FAMILY

// The families whose rows translate captured ATen ops, each in its <family>_aten.cpp, registered
// after every row exists.
#define CKPTLAB_ATEN_FAMILIES(X) \
  X(matmul)                      \
  X(shape_ops)                   \
  X(elementwise)                 \
  X(unary)                       \
  X(norm)                        \
  X(conv)                        \
  X(pool)                        \
  X(reduce)                      \
  X(resize)                      \
  X(softmax)                     \
  X(dropout)                     \
  X(embedding)                   \
  X(inplace)                     \
  X(logical)

#define CKPTLAB_DECLARE_ATEN(family) void register_##family##_aten(OpTable& table);
CKPTLAB_ATEN_FAMILIES(CKPTLAB_DECLARE_ATEN)
#undef CKPTLAB_DECLARE_ATEN

}  // namespace ckpt
