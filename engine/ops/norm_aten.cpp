// ATen rules of batch_norm and layer_norm (docs/capture_format.md). nn.BatchNorm's forward adds 1
// to num_batches_tracked (aten::add_, inplace_aten.cpp) before native_batch_norm; the engine's
// batch_norm does both, given the buffer. The statistics outputs 1 and 2 of the ATen ops are
// for autograd only: the engine's ops keep them inside.
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

// native_batch_norm (1.13) and _native_batch_norm_legit (2.x): the same arguments.
void aten_batch_norm(AtenNode& n) {
  std::vector<std::string> in{n.tensor("input"), n.has("weight") ? n.tensor("weight") : "",
                              n.has("bias") ? n.tensor("bias") : "",
                              n.has("running_mean") ? n.tensor("running_mean") : "",
                              n.has("running_var") ? n.tensor("running_var") : ""};
  const bool training = n.flag("training", true);
  // The module's counter, named beside its running mean ("bn1.running_mean").
  const std::string& mean = in[3];
  const std::string suffix = "running_mean";
  if (training && mean.size() > suffix.size() &&
      mean.compare(mean.size() - suffix.size(), suffix.size(), suffix) == 0) {
    const std::string counter = mean.substr(0, mean.size() - suffix.size()) + "num_batches_tracked";
    if (n.is_parameter(counter)) in.push_back(counter);
  }
  n.emit1("batch_norm", in,
          {{"training", std::int64_t{training ? 1 : 0}},
           {"momentum", n.number_or("momentum", 0.1)},
           {"eps", n.number_or("eps", 1e-5)}});
}

void aten_layer_norm(AtenNode& n) {
  n.emit1("layer_norm",
          {n.tensor("input"), n.has("weight") ? n.tensor("weight") : "",
           n.has("bias") ? n.tensor("bias") : ""},
          {{"normalized_shape", n.ints("normalized_shape")}, {"eps", n.number_or("eps", 1e-5)}});
}

// The reserve tensor PyTorch 1.13's _batch_norm_impl_index makes for cuDNN (empty, size 0 on
// the CPU): nothing reads it; any other use of an uninitialised tensor is a load error.
void aten_empty(AtenNode& n) {
  n.define_pending(0, {{"empty", std::int64_t{1}}});
}

}  // namespace

void register_norm_aten(OpTable& t) {
  t.add_aten("batch_norm", {{"aten::native_batch_norm", aten_batch_norm},
                            {"aten::_native_batch_norm_legit", aten_batch_norm},
                            {"aten::empty", aten_empty}});
  t.add_aten("layer_norm", {{"aten::native_layer_norm", aten_layer_norm}});
}

}  // namespace ckpt
