#pragma once

// nn.LSTM, nn.GRU and nn.RNN, one layer at a time (PyTorch's ONNX export makes each layer its
// own LSTM, GRU or RNN node).

#include <cstdint>
#include <vector>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

enum class RecurrentCell : std::uint8_t { lstm, gru, rnn_tanh, rnn_relu };
enum class RecurrentDirection : std::uint8_t { forward, reverse, bidirectional };

// One direction's weights as nn.LSTM / nn.GRU / nn.RNN hold them: w_ih [G*H, I], w_hh
// [G*H, H], biases [G*H] or undefined, for G gates (LSTM 4, GRU 3, RNN 1) of H rows each.
struct RecurrentWeights {
  Tensor w_ih, w_hh, b_ih, b_hh;
};

struct RecurrentLayer {
  RecurrentCell cell = RecurrentCell::lstm;
  RecurrentDirection direction = RecurrentDirection::forward;
  std::int64_t hidden = 0;
  // The gates' order along the weights' rows: PyTorch's (LSTM i f g o, GRU r z n), or ONNX's
  // (LSTM i o f c, GRU z r h) for weights that come from an ONNX file as they are.
  bool onnx_gate_order = false;
};

std::int64_t recurrent_gates(RecurrentCell cell);                 // G
std::int64_t recurrent_directions(RecurrentDirection direction);  // D

// One layer over x [T, B, I] (sequence first; a transposed view of a batch-first input is
// fine), one weight set per direction, from h0 (and, for the LSTM, c0) [D, B, H] or from zeros
// when they are undefined. `lengths` (int64 [B], or undefined) is ONNX's sequence_lens: steps
// from a sequence's length on leave its state as it was and output zeros. Returns ONNX's
// outputs: Y [T, D, B, H], Y_h [D, B, H], and Y_c [D, B, H] for the LSTM.
//
// Computed and saved as PyTorch 1.13 does on the CPU, where no fused kernel runs: per
// direction, the input projection of the whole sequence (addmm, saving the input — or the
// contiguous copy of a transposed one, one per direction), then per time step an addmm of the
// hidden state (saving it) and the cell's ops in place on the gates: every gate tensor, tanh(c)
// and the cell states the next step reads (LSTM); the hidden gates, the copies autograd keeps
// for the in-place mul_ calls and the new gate (GRU); each hidden state (RNN). The bytes saved
// for backward are PyTorch's to the byte; one node (LSTMLayerBackward, ...) holds them.
TensorList recurrent_layer(const RecurrentLayer& layer, const Tensor& x, const Tensor& h0,
                           const Tensor& c0, const Tensor& lengths,
                           const std::vector<RecurrentWeights>& weights);

}  // namespace ckpt
