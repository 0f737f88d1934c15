// C++ halves of the recurrent oracle cases (cases_recurrent.py): the ONNX file PyTorch exported
// for the case, loaded by the importer and run on PyTorch's weights and inputs.
#include <string>

#include "engine/autograd/saved_tensors.hpp"
#include "support/model_run.hpp"

using namespace ckpt;
using oracle::OracleCase;

namespace {

TensorList run_export(OracleCase& c) {
  TensorList out = oracle::run_model_file(c, c.attr_string("onnx"), nullptr, true);
  // A packed batch: PyTorch's packed path saves other tensors than the exported graph can
  // (see the Python case); the engine keeps what nn.LSTM keeps for the padded batch.
  if (c.has_attr("padded")) {
    const std::int64_t ours = saved_tensor_bytes(out);
    const auto padded = static_cast<std::int64_t>(c.reported("padded_saved_bytes"));
    c.check(ours == padded, "saved for backward: engine " + std::to_string(ours) +
                                " bytes, PyTorch's LSTM on the padded batch " +
                                std::to_string(padded));
  }
  // Weights in ONNX's gate order: PyTorch needs reordered copies (and saves them), the engine
  // reads the rows where they are and keeps what nn.LSTM keeps with its own parameters.
  if (c.has_attr("native")) {
    const std::int64_t ours = saved_tensor_bytes(out);
    const auto native = static_cast<std::int64_t>(c.reported("native_saved_bytes"));
    c.check(ours == native, "saved for backward: engine " + std::to_string(ours) +
                                " bytes, PyTorch with the weights as its parameters " +
                                std::to_string(native));
  }
  return out;
}

}  // namespace

CKPTLAB_ORACLE_CASE(lstm) {
  return run_export(c);
}

CKPTLAB_ORACLE_CASE(gru) {
  return run_export(c);
}

CKPTLAB_ORACLE_CASE(rnn) {
  return run_export(c);
}
