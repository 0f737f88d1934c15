#pragma once

// Shared by recurrent.cpp (forward) and recurrent_backward.cpp: the layer's geometry, where
// each gate sits in the weights' rows, and the layout of what the node saves.

#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/autograd/node.hpp"
#include "engine/ops/recurrent.hpp"
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt::recurrent_detail {

struct Geometry {
  RecurrentCell cell = RecurrentCell::lstm;
  RecurrentDirection direction = RecurrentDirection::forward;
  std::int64_t steps = 0, batch = 0, input = 0, hidden = 0, gates = 0, directions = 0;
  bool onnx_gate_order = false;
  // ONNX's sequence_lens (none: every sequence runs every step), read when the layer runs and
  // kept here rather than saved: nn.LSTM on the padded batch saves no lengths either. A dry
  // run has no values: every step counts, which changes no allocation.
  std::vector<std::int64_t> lengths;
  bool active(std::int64_t t, std::int64_t b) const {
    return lengths.empty() || t < lengths[static_cast<std::size_t>(b)];
  }
  std::int64_t gate_rows() const { return gates * hidden; }
  // Whether direction d runs from the last step to the first.
  bool reversed(std::int64_t d) const {
    return direction == RecurrentDirection::reverse ||
           (direction == RecurrentDirection::bidirectional && d == 1);
  }
  // The time step of direction d's s-th step.
  std::int64_t time(std::int64_t d, std::int64_t s) const {
    return reversed(d) ? steps - 1 - s : s;
  }
};

// The row block (in units of H) of each gate. LSTM: input, forget, cell (g), output; GRU:
// reset, update (z), new (n).
struct LstmGates {
  std::int64_t i, f, g, o;
};
struct GruGates {
  std::int64_t r, z, n;
};
inline LstmGates lstm_gates(bool onnx) {
  return onnx ? LstmGates{0, 2, 3, 1} : LstmGates{0, 1, 2, 3};  // ONNX: i o f c
}
inline GruGates gru_gates(bool onnx) {
  return onnx ? GruGates{1, 0, 2} : GruGates{0, 1, 2};  // ONNX: z r h
}

// What the node saves, in order: per direction a header and
// one group per step in the order the direction runs:
//   header: input (or its contiguous copy; undefined when w_ih needs no gradient), w_ih,
//           w_hh (parameters: not activation memory), h0 (undefined when w_hh needs no
//           gradient), c0 (LSTM; else undefined);
//   LSTM step: gates, tanh(c), h, c   (h and c undefined at the last step, h also when w_hh
//              needs no gradient: nothing reads them then);
//   GRU step:  hidden gates, their n rows before the reset gate multiplied them, the new
//              gate n, h_prev - n before the update gate multiplied it, h;
//   RNN step:  h.
constexpr std::size_t kHeader = 5;
inline std::size_t step_entries(RecurrentCell cell) {
  return cell == RecurrentCell::lstm ? 4 : cell == RecurrentCell::gru ? 5 : 1;
}
inline std::size_t direction_entries(const Geometry& g) {
  return kHeader + static_cast<std::size_t>(g.steps) * step_entries(g.cell);
}
inline std::size_t direction_offset(const Geometry& g, std::int64_t d) {
  return static_cast<std::size_t>(d) * direction_entries(g);
}

template <typename S>
inline S sigmoid(S v) {
  return S(1) / (S(1) + std::exp(-v));
}

// The node's inputs (and the op's): x, then w_ih, w_hh, b_ih, b_hh per direction, then h0, c0
// and the lengths (the required ones first: absent ones are undefined).
constexpr std::size_t kFirstWeight = 1;
constexpr std::size_t kWeightsPerDirection = 4;
enum class StateInput : std::size_t { h0 = 0, c0 = 1, lengths = 2 };
inline std::size_t input_index(std::int64_t directions, StateInput which) {
  return kFirstWeight + kWeightsPerDirection * static_cast<std::size_t>(directions) +
         static_cast<std::size_t>(which);
}
inline std::size_t input_count(std::int64_t directions) {
  return input_index(directions, StateInput::lengths) + 1;
}

// The ONNX LSTM, GRU and RNN rules (recurrent_onnx.cpp), for the rows (recurrent_rows.cpp).
void recurrent_onnx_rules(std::vector<OnnxRule>& lstm, std::vector<OnnxRule>& gru,
                          std::vector<OnnxRule>& rnn);

// The node's backward (recurrent_backward.cpp).
TensorList recurrent_backward(const Geometry& g, BackwardContext& c);

}  // namespace ckpt::recurrent_detail
