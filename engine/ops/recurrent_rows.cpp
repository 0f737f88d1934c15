// Rows of lstm, gru and rnn (recurrent.cpp): one layer of nn.LSTM / nn.GRU / nn.RNN, one or
// two directions. Inputs: x, h0, c0 (LSTM only), sequence lengths, then w_ih, w_hh, b_ih, b_hh
// per direction (absent ones ""); attributes hidden_size, direction (forward, reverse,
// bidirectional), gate_order (pytorch or onnx) and, for rnn, nonlinearity (tanh or relu).
// Outputs: ONNX's Y [T, D, B, H], Y_h and (LSTM) Y_c [D, B, H]. The ONNX rules are in
// recurrent_onnx.cpp.
#include <string>
#include <vector>

#include "engine/ops/recurrent.hpp"
#include "engine/ops/recurrent_detail.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {

RecurrentDirection direction_of(const OpCall& op) {
  const std::string d = attr_string(op, "direction", "forward");
  if (d == "forward") return RecurrentDirection::forward;
  if (d == "reverse") return RecurrentDirection::reverse;
  if (d == "bidirectional") return RecurrentDirection::bidirectional;
  attr_error(op, "direction", "is '" + d + "', not forward, reverse or bidirectional");
}

RecurrentLayer layer_of(const OpCall& op, RecurrentCell cell) {
  RecurrentLayer l;
  l.cell = cell;
  if (cell == RecurrentCell::rnn_tanh) {
    const std::string nl = attr_string(op, "nonlinearity", "tanh");
    if (nl != "tanh" && nl != "relu")
      attr_error(op, "nonlinearity", "is '" + nl + "', not tanh or relu");
    if (nl == "relu") l.cell = RecurrentCell::rnn_relu;
  }
  l.direction = direction_of(op);
  l.hidden = attr_int(op, "hidden_size");
  const std::string order = attr_string(op, "gate_order", "pytorch");
  if (order != "pytorch" && order != "onnx")
    attr_error(op, "gate_order", "is '" + order + "', not pytorch or onnx");
  l.onnx_gate_order = order == "onnx";
  return l;
}

template <RecurrentCell Cell>
TensorList run_recurrent(const OpCall& op, const TensorList& x) {
  const RecurrentLayer layer = layer_of(op, Cell);
  const std::int64_t dirs = recurrent_directions(layer.direction);
  const std::size_t want = recurrent_detail::input_count(dirs);
  if (x.size() != want)
    throw std::invalid_argument(op.type + ": " + std::to_string(x.size()) + " inputs, " +
                                std::to_string(want) + " expected for the '" +
                                attr_string(op, "direction", "forward") + "' direction");
  std::vector<RecurrentWeights> weights;
  for (std::int64_t d = 0; d < dirs; ++d) {
    const std::size_t i = recurrent_detail::kFirstWeight + 4 * static_cast<std::size_t>(d);
    weights.push_back({x[i], x[i + 1], x[i + 2], x[i + 3]});
  }
  using recurrent_detail::input_index, recurrent_detail::StateInput;
  return recurrent_layer(layer, x[0], x[input_index(dirs, StateInput::h0)],
                         x[input_index(dirs, StateInput::c0)],
                         x[input_index(dirs, StateInput::lengths)], weights);
}

// Per direction: the sequence's input projection and the hidden projection of every step
// (a multiply and an add per term), and about ten operations per gate element.
OpCost recurrent_cost(const OpCall& op, const TensorList& in, const TensorList& out) {
  OpCost c = rows::elementwise_cost(op, in, out);
  if (in.size() < 3 || in[0].dim() != 3 || !in[2].defined()) return c;
  const double steps = static_cast<double>(in[0].shape()[0]),
               batch = static_cast<double>(in[0].shape()[1]),
               input = static_cast<double>(in[0].shape()[2]),
               rows = static_cast<double>(in[2].shape()[0]),  // gates x hidden
      hidden = static_cast<double>(in[2].shape()[1]);
  const double dirs = static_cast<double>((in.size() - recurrent_detail::kFirstWeight - 3) / 4);
  c.flops = dirs * steps * batch * rows * (2 * input + 2 * hidden + 10);
  return c;
}

// PyTorch's own call for one layer, torch._VF.lstm (what nn.LSTM.forward calls), with ONNX's
// outputs: Y as [T, D, B, H].
std::string python_recurrent(const OpCall& op, const std::vector<std::string>& a,
                             const Shape& shape) {
  const std::string kind = op.type;
  const RecurrentLayer l = layer_of(op, kind == "lstm"  ? RecurrentCell::lstm
                                        : kind == "gru" ? RecurrentCell::gru
                                                        : RecurrentCell::rnn_tanh);
  const auto arg = [&](std::size_t i) { return rows::arg(a, i); };
  const std::int64_t dirs = recurrent_directions(l.direction), h = l.hidden;
  using recurrent_detail::input_index, recurrent_detail::StateInput;
  if (!arg(input_index(dirs, StateInput::lengths)).empty())
    return "(_ for _ in ()).throw(NotImplementedError('ONNX sequence_lens: pack the batch with "
           "torch.nn.utils.rnn.pack_padded_sequence'))";
  const std::int64_t gates = recurrent_gates(l.cell);
  const std::string batch = shape.size() == 3 ? std::to_string(shape[1]) : arg(0) + ".shape[1]";
  const std::string zeros = "torch.zeros(" + std::to_string(dirs) + ", " + batch + ", " +
                            std::to_string(h) + ", dtype=" + arg(0) + ".dtype)";
  const auto state = [&](std::size_t i) { return arg(i).empty() ? zeros : arg(i); };
  // ONNX's gate order back to PyTorch's: PyTorch block p is ONNX block from[p].
  const std::vector<std::int64_t> from =
      l.cell == RecurrentCell::lstm  ? std::vector<std::int64_t>{0, 2, 3, 1}
      : l.cell == RecurrentCell::gru ? std::vector<std::int64_t>{1, 0, 2}
                                     : std::vector<std::int64_t>{0};
  const auto weight = [&](const std::string& w) {
    if (!l.onnx_gate_order || gates == 1) return w;
    std::vector<std::string> blocks;
    for (auto b : from)
      blocks.push_back(w + "[" + std::to_string(b * h) + ":" + std::to_string((b + 1) * h) + "]");
    return "torch.cat([" + rows::join(blocks) + "])";
  };
  std::vector<std::string> flat;
  const bool biases = !arg(recurrent_detail::kFirstWeight + 2).empty();
  for (std::int64_t d = 0; d < dirs; ++d)
    for (std::size_t k = 0; k < (biases ? 4u : 2u); ++k)
      flat.push_back(
          weight(arg(recurrent_detail::kFirstWeight + 4 * static_cast<std::size_t>(d) + k)));
  const bool reverse_only = l.direction == RecurrentDirection::reverse;
  const std::string x = reverse_only ? arg(0) + ".flip(0)" : arg(0);
  std::string hx = state(input_index(dirs, StateInput::h0));
  if (l.cell == RecurrentCell::lstm)
    hx = rows::python_call("", {hx, state(input_index(dirs, StateInput::c0))});
  const std::string fn = l.cell == RecurrentCell::lstm       ? "lstm"
                         : l.cell == RecurrentCell::gru      ? "gru"
                         : l.cell == RecurrentCell::rnn_relu ? "rnn_relu"
                                                             : "rnn_tanh";
  const std::string call = "torch._VF." + fn + "(" + x + ", " + hx + ", [" + rows::join(flat) +
                           "], " + (biases ? "True" : "False") + ", 1, 0.0, True, " +
                           (dirs == 2 ? "True" : "False") + ", False)";
  const std::string y = std::string("y") + (reverse_only ? ".flip(0)" : "") + ".unflatten(2, (" +
                        std::to_string(dirs) + ", " + std::to_string(h) + ")).transpose(1, 2)";
  return l.cell == RecurrentCell::lstm ? "(lambda y, h, c: (" + y + ", h, c))(*" + call + ")"
                                       : "(lambda y, h: (" + y + ", h))(*" + call + ")";
}

OpSchema row(const char* type, TensorList (*kernel)(const OpCall&, const TensorList&),
             std::vector<OnnxRule> onnx) {
  return {.type = type,
          .min_inputs = 3,  // x, w_ih, w_hh
          .max_inputs = 12,
          .kernel = kernel,
          .cost = recurrent_cost,
          .python = python_recurrent,
          .onnx = std::move(onnx)};
}

}  // namespace

void register_recurrent_ops(OpTable& t) {
  std::vector<OnnxRule> lstm, gru, rnn;
  recurrent_detail::recurrent_onnx_rules(lstm, gru, rnn);
  t.add(row("lstm", run_recurrent<RecurrentCell::lstm>, std::move(lstm)));
  t.add(row("gru", run_recurrent<RecurrentCell::gru>, std::move(gru)));
  t.add(row("rnn", run_recurrent<RecurrentCell::rnn_tanh>, std::move(rnn)));
}

}  // namespace ckpt
