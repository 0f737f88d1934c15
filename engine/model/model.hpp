#pragma once

// A model: a Graph of ops over named values plus a Module tree of named scopes over it
// (docs/ARCHITECTURE.md "model"). Loaders (native JSON, ONNX) produce it; the Runner executes it;
// ui/ draws it.
//
// CONTRACT shared by engine/model, engine/run, ui/ and app/cli. Additions are fine;
// changing or removing a member needs every user updated in the same change.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/ops/schema/attributes.hpp"
#include "engine/ops/schema/parameter_init.hpp"
#include "engine/tensor/tensor.hpp"

namespace ckpt {

// A named value of the graph: a model input, a parameter or buffer, a constant, or an op output.
struct ValueInfo {
  std::string name;
  Shape shape;  // as loaded (batch dimension resolved by the Runner); empty if unknown
  DType dtype = DType::f32;
};

struct OpNode {
  std::string name;     // unique in the graph, e.g. "features.denseblock1.denselayer1.conv1"
  std::string op_type;  // engine op kind: "conv2d", "relu", "add", "linear", ...
  std::vector<std::string> inputs;   // value names; "" for an absent optional input
  std::vector<std::string> outputs;  // value names
  Attributes attrs;
  std::string module;  // path of the innermost module instance it belongs to ("" for the root)
  // The ONNX nodes this op stands for when a pattern rule fused them (GELU's Div, Erf, Add,
  // Mul, Mul), in the graph's order; empty for an op translated from one node.
  std::vector<std::string> fused;
};

struct ParameterInfo {
  std::string name;  // original name, e.g. "features.conv0.weight"
  Tensor initial;    // initial value (f32), made once by the loader
  bool requires_grad = true;
  // A registered buffer (running_mean, a rotary table, a mask): never trained, never given a
  // gradient, so no op keeps anything for one.
  bool is_buffer = false;
  // The file does not hold the value (its external data file is absent, or the initializer
  // holds no data): `initial` is a meta tensor of its shape, all a dry run needs, and a real
  // run makes the value as torch.nn's default initialisation of its layer would.
  std::optional<ParameterInit> made_at_run;
};

// What a loader decided that its file does not say, for the load summary (engine/model/
// load_notes.hpp; the CLI and the app show it): an ONNX file does not tell a trainable
// initializer from a buffer.
struct LoadNotes {
  // Parameters taken as not trainable, each with why ("BatchNorm running statistic", "a
  // buffer by the file's ckptlab.buffers", "--frozen 'rotary'").
  std::vector<std::pair<std::string, std::string>> frozen;
  std::vector<std::string> warnings;  // what the loader changed or ignored, in words
  // Why weights are absent from the file ("external data file 'model.data' not found"), when
  // some are (ParameterInfo::made_at_run).
  std::string weights_absent;
};

struct InputInfo {
  std::string name;
  // Dims of -1 (a "batch" dim) are filled from the batch size; -k is k times the batch size (a
  // language model's targets, [batch × sequence] once flattened).
  Shape shape;
  DType dtype = DType::f32;
  bool requires_grad = false;
  bool batched = true;  // whether dim 0 is the batch dimension
  // A target of the model's own loss: drawn from the targets stream, never requires grad.
  bool is_target = false;
  // > 0: int64 class indices in [0, classes): a cross-entropy target's (drawn from the targets
  // stream), or token ids (any other input, drawn from the inputs stream).
  std::int64_t classes = 0;
  // int64 positions 0, 1, ..., n-1 along the last dimension (`torch.arange(T)`): no randomness.
  bool arange = false;
};

// A named scope: what a user can checkpoint. Each call of a module is its own instance
// ("cell", "cell_1"); `definition` names the module they are instances of.
struct Module {
  std::string path;           // instance path, "" for the root
  std::string name;           // last path component
  std::string kind;           // display type: "DenseLayer", "Sequential", "Linear", ...
  std::string definition;     // path of the module definition (same for all its instances)
  std::int64_t first_op = 0;  // range of its ops in execution order: [first_op, end_op)
  std::int64_t end_op = 0;
  bool checkpointable = false;
  std::string not_checkpointable_reason;  // why not, when it is not
  std::vector<std::string> inputs;   // values made outside and used inside (the function's args)
  std::vector<std::string> outputs;  // values made inside and used outside (or model outputs)
  std::vector<std::unique_ptr<Module>> children;
  // Parameters and buffers its ops use (captured by a checkpoint, not passed).
  std::vector<std::string> parameters;
  Attributes attrs;           // the layer's configuration (in/out features, kernel, ...)
  std::int64_t instance = 0;  // which call of `definition` this is (0 for the first)
  // Parameters passed as arguments instead of captured, as in the blog's
  // checkpoint(heavy_function, x, self.a): they join `inputs`, so a reentrant checkpoint saves
  // them and gives them their gradient through its own backward.
  std::vector<std::string> passed_parameters;
};

enum class LossKind : std::uint8_t { sum, mean, model };

// What a sample brings besides the network: how to run it and what to teach with it.
struct Scenario {
  std::int64_t batch = 1;
  std::uint64_t seed = 0;
  LossKind loss = LossKind::sum;  // `model`: the graph computes its own loss (loss_value)
  std::string loss_value;         // name of the scalar loss value when loss == model
  std::vector<std::string> default_checkpoints;  // module paths checkpointed when opened
  bool use_reentrant = true;
  std::string notes;  // teaching notes (Markdown): what to click, what to look at
  std::string title;
  int segments = 0;                // default checkpoint_sequential segments (0: none)
  bool preserve_rng_state = true;  // default of the checkpoint configuration
  bool batch_fixed = false;        // shapes were folded at load (ONNX): batch cannot change
  std::string loss_type;           // model loss: "cross_entropy", "mse_loss", ... (display)
  // The real run needs more memory than a usual machine has (GPT-2 small at batch 32): tests
  // and tools run it dry only (RunSettings::dry_run).
  bool dry_run_only = false;
};

class Model {
 public:
  std::string name;
  std::string source;  // the file it came from, or ":/samples/..." for an embedded one
  std::string format;  // "json" or "onnx"
  std::vector<InputInfo> inputs;
  std::vector<ParameterInfo> parameters;
  std::map<std::string, Tensor> constants;
  std::vector<OpNode> ops;  // in execution order
  std::vector<std::string> outputs;
  std::map<std::string, ValueInfo> values;  // every value by name (shape inference results)
  Module root;
  Scenario scenario;
  LoadNotes load_notes;
  // An ONNX model exported with a dynamic batch axis: its shape arithmetic was folded at the
  // loaded batch, so another batch is the same file loaded again at that batch. Empty for a
  // model whose batch is free (native) or fixed at export.
  std::function<std::shared_ptr<const Model>(std::int64_t batch)> at_batch;

  // Lookups; null/-1 when absent.
  const Module* find_module(const std::string& path) const;
  std::vector<const Module*> all_modules() const;  // pre-order, root excluded
  std::vector<const Module*> instances_of(const std::string& definition) const;
  std::int64_t op_index(const std::string& op_name) const;
  const ParameterInfo* find_parameter(const std::string& name) const;
  const InputInfo* find_input(const std::string& name) const;

  // Rebuilds the lookup tables; loaders call it (through finalize_model) once the model is
  // complete, before it is shared.
  void reindex();

 private:
  std::map<std::string, std::int64_t> op_index_;
  std::map<std::string, const Module*> module_index_;
};

}  // namespace ckpt
