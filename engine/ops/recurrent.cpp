#include "engine/ops/recurrent.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/autograd/node.hpp"
#include "engine/kernels/blas.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/recurrent_detail.hpp"

namespace ckpt {

using namespace recurrent_detail;

std::int64_t recurrent_gates(RecurrentCell cell) {
  return cell == RecurrentCell::lstm ? 4 : cell == RecurrentCell::gru ? 3 : 1;
}

std::int64_t recurrent_directions(RecurrentDirection direction) {
  return direction == RecurrentDirection::bidirectional ? 2 : 1;
}

namespace {

const char* op_of(RecurrentCell cell) {
  return cell == RecurrentCell::lstm ? "lstm" : cell == RecurrentCell::gru ? "gru" : "rnn";
}
const char* node_of(RecurrentCell cell) {
  return cell == RecurrentCell::lstm  ? "LSTMLayerBackward"
         : cell == RecurrentCell::gru ? "GRULayerBackward"
                                      : "RNNLayerBackward";
}

void check_shape(const char* op, const Tensor& t, const Shape& want, const char* what,
                 DType dtype) {
  if (!t.defined()) return;
  if (t.shape() != want)
    throw std::invalid_argument(std::string(op) + ": " + what + " must be " + shape_str(want) +
                                ", got " + shape_str(t.shape()));
  if (t.dtype() != dtype)
    throw std::invalid_argument(std::string(op) + ": " + what + " is " + t.str() +
                                ", the input is " + dtype_name(dtype));
}

Geometry check(const RecurrentLayer& layer, const Tensor& x, const Tensor& h0, const Tensor& c0,
               const Tensor& lengths, const std::vector<RecurrentWeights>& weights) {
  const char* op = op_of(layer.cell);
  if (!x.defined() || x.dim() != 3)
    throw std::invalid_argument(std::string(op) + ": the input must be 3-D [sequence, batch, " +
                                "features], got " + (x.defined() ? x.str() : "none"));
  if (!is_floating(x.dtype()))
    throw std::invalid_argument(std::string(op) + ": the input must be floating, got " + x.str());
  Geometry g;
  g.cell = layer.cell;
  g.direction = layer.direction;
  g.steps = x.shape()[0];
  g.batch = x.shape()[1];
  g.input = x.shape()[2];
  g.hidden = layer.hidden;
  g.gates = recurrent_gates(layer.cell);
  g.directions = recurrent_directions(layer.direction);
  g.onnx_gate_order = layer.onnx_gate_order;
  if (g.hidden <= 0)
    throw std::invalid_argument(std::string(op) + ": hidden_size must be positive, got " +
                                std::to_string(g.hidden));
  if (static_cast<std::int64_t>(weights.size()) != g.directions)
    throw std::invalid_argument(std::string(op) + ": " + std::to_string(weights.size()) +
                                " weight sets for " + std::to_string(g.directions) +
                                " direction(s)");
  const std::int64_t gh = g.gate_rows();
  for (const auto& w : weights) {
    if (!w.w_ih.defined() || !w.w_hh.defined())
      throw std::invalid_argument(std::string(op) + ": every direction needs w_ih and w_hh");
    check_shape(op, w.w_ih, {gh, g.input}, "w_ih", x.dtype());
    check_shape(op, w.w_hh, {gh, g.hidden}, "w_hh", x.dtype());
    check_shape(op, w.b_ih, {gh}, "b_ih", x.dtype());
    check_shape(op, w.b_hh, {gh}, "b_hh", x.dtype());
  }
  const Shape state{g.directions, g.batch, g.hidden};
  check_shape(op, h0, state, "the initial hidden state", x.dtype());
  if (c0.defined() && layer.cell != RecurrentCell::lstm)
    throw std::invalid_argument(std::string(op) + ": only an LSTM has an initial cell state");
  check_shape(op, c0, state, "the initial cell state", x.dtype());
  if (lengths.defined() && (lengths.dtype() != DType::i64 || lengths.shape() != Shape{g.batch}))
    throw std::invalid_argument(std::string(op) + ": the sequence lengths must be int64 [" +
                                std::to_string(g.batch) + "], got " + lengths.str());
  if (lengths.defined() && !lengths.is_meta())
    for (double v : lengths.to_vector()) {
      if (v < 0 || v > static_cast<double>(g.steps))
        throw std::invalid_argument(std::string(op) + ": sequence length " +
                                    std::to_string(static_cast<std::int64_t>(v)) +
                                    " is outside [0, " + std::to_string(g.steps) + "]");
      g.lengths.push_back(static_cast<std::int64_t>(v));
    }
  return g;
}

// out [rows, H*G] = a [rows, k] @ w^T (w [H*G, k]) + bias (or 0), accumulated onto `out` when
// `accumulate`.
template <typename S>
void project(const S* a, std::int64_t rows, std::int64_t k, const Tensor& w, const Tensor& bias,
             S* out, std::int64_t cols, bool accumulate) {
  if (!accumulate) {
    if (bias.defined()) {
      const S* b = bias.data<S>();
      for (std::int64_t r = 0; r < rows; ++r) std::copy(b, b + cols, out + r * cols);
    } else {
      std::fill(out, out + rows * cols, S(0));
    }
  } else if (bias.defined()) {
    const S* b = bias.data<S>();
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < cols; ++j) out[r * cols + j] += b[j];
  }
  gemm_rm<S>(false, true, rows, cols, k, S(1), a, k, w.data<S>(), k, S(1), out, cols);
}

template <typename S>
class ForwardPass {
 public:
  explicit ForwardPass(const Geometry& g) : g_(g) {}

  // Runs direction d from h (and c), appending what it saves to `saved`; returns its hidden
  // state after every step (in the order it ran) and leaves the last states in h and c.
  TensorList run(std::int64_t d, const Tensor& x, const RecurrentWeights& w, Tensor& h, Tensor& c,
                 bool keep_input, bool keep_hidden, TensorList& saved) {
    const std::int64_t steps = g_.steps, batch = g_.batch, gh = g_.gate_rows();
    const DType dt = x.dtype();
    live_ = !x.is_meta();
    // PyTorch's linear over a transposed (batch-first) input copies it, once per direction.
    const Tensor xin = x.is_contiguous() ? x : contiguous_copy(x);
    const Tensor w_ih = as_contiguous(w.w_ih), w_hh = as_contiguous(w.w_hh);
    const Tensor b_ih = w.b_ih.defined() ? as_contiguous(w.b_ih) : Tensor();
    b_hh_ = w.b_hh.defined() ? as_contiguous(w.b_hh) : Tensor();
    w_hh_ = w_hh;
    Tensor projected = Tensor::empty({steps * batch, gh}, dt);
    if (live_)
      project<S>(xin.data<S>(), steps * batch, g_.input, w_ih, b_ih, projected.data<S>(), gh,
                 false);
    const bool lstm = g_.cell == RecurrentCell::lstm;
    saved.insert(saved.end(), {keep_input ? xin : Tensor(), w.w_ih, w.w_hh,
                               keep_hidden ? h : Tensor(), lstm ? c : Tensor()});
    TensorList hs;
    for (std::int64_t s = 0; s < steps; ++s) {
      const std::int64_t t = g_.time(d, s);
      const bool last = s == steps - 1;
      const S* xp = live_ ? projected.data<S>() + t * batch * gh : nullptr;
      Tensor h_next;
      if (lstm) {
        Tensor c_next;
        const Tensor gates = lstm_step(xp, t, h, c, h_next, c_next);
        saved.insert(saved.end(), {gates, tanh_c_, keep_hidden && !last ? h_next : Tensor(),
                                   last ? Tensor() : c_next});
        c = c_next;
      } else if (g_.cell == RecurrentCell::gru) {
        gru_step(xp, t, h, h_next, saved);
        if (last || !keep_hidden) saved.back() = Tensor();
      } else {
        h_next = rnn_step(xp, t, h);
        saved.push_back(h_next);
      }
      hs.push_back(h_next);
      h = h_next;
    }
    return hs;
  }

 private:
  // gates = h W_hh^T + b_hh + (x W_ih^T + b_ih) for step t, as PyTorch's addmm then add_.
  Tensor hidden_projection(const S* xp, const Tensor& h) {
    const std::int64_t batch = g_.batch, gh = g_.gate_rows();
    Tensor gates = Tensor::empty({batch, gh}, h.dtype());
    if (!live_) return gates;
    S* gp = gates.data<S>();
    project<S>(h.data<S>(), batch, g_.hidden, w_hh_, b_hh_, gp, gh, false);
    if (xp)
      for (std::int64_t i = 0; i < batch * gh; ++i) gp[i] += xp[i];
    return gates;
  }

  // A padded step (t at or past the sequence's length) keeps the row's state.
  void keep_padded_rows(std::int64_t t, const Tensor& from, Tensor& to) const {
    if (!live_ || g_.lengths.empty()) return;
    const std::int64_t hidden = g_.hidden;
    for (std::int64_t b = 0; b < g_.batch; ++b)
      if (!g_.active(t, b))
        std::copy(from.data<S>() + b * hidden, from.data<S>() + (b + 1) * hidden,
                  to.data<S>() + b * hidden);
  }

  Tensor lstm_step(const S* xp, std::int64_t t, const Tensor& h, const Tensor& c, Tensor& h_next,
                   Tensor& c_next) {
    const std::int64_t batch = g_.batch, hidden = g_.hidden, gh = g_.gate_rows();
    const DType dt = h.dtype();
    Tensor gates = hidden_projection(xp, h);
    c_next = Tensor::empty({batch, hidden}, dt);  // forgetgate * cx, then += ingate * cellgate
    {
      Tensor product = Tensor::empty({batch, hidden}, dt);  // ingate * cellgate, freed at once
      if (live_) {
        const LstmGates k = lstm_gates(g_.onnx_gate_order);
        S* gp = gates.data<S>();
        const S* cp = c.data<S>();
        S* cn = c_next.data<S>();
        S* pp = product.data<S>();
        for (std::int64_t b = 0; b < batch; ++b) {
          S* row = gp + b * gh;
          for (std::int64_t j = 0; j < hidden; ++j) {
            S& i = row[k.i * hidden + j];
            S& f = row[k.f * hidden + j];
            S& gg = row[k.g * hidden + j];
            S& o = row[k.o * hidden + j];
            i = sigmoid(i);
            f = sigmoid(f);
            gg = std::tanh(gg);
            o = sigmoid(o);
            pp[b * hidden + j] = i * gg;
            cn[b * hidden + j] = f * cp[b * hidden + j] + pp[b * hidden + j];
          }
        }
      }
    }
    tanh_c_ = Tensor::empty({batch, hidden}, dt);
    h_next = Tensor::empty({batch, hidden}, dt);
    if (live_) {
      const LstmGates k = lstm_gates(g_.onnx_gate_order);
      const S* gp = gates.data<S>();
      const S* cn = c_next.data<S>();
      S* tc = tanh_c_.data<S>();
      S* hn = h_next.data<S>();
      for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t j = 0; j < hidden; ++j) {
          tc[b * hidden + j] = std::tanh(cn[b * hidden + j]);
          hn[b * hidden + j] = gp[b * gh + k.o * hidden + j] * tc[b * hidden + j];
        }
    }
    keep_padded_rows(t, c, c_next);
    keep_padded_rows(t, h, h_next);
    return gates;
  }

  // PyTorch's GRUCell on the CPU: r and z in place on the hidden gates, hn.mul_(r) (autograd
  // keeps hn's value before), n = tanh(xn + hn), then (h - n).mul_(z) (it keeps h - n) .add_(n).
  void gru_step(const S* xp, std::int64_t t, const Tensor& h, Tensor& h_next, TensorList& saved) {
    const std::int64_t batch = g_.batch, hidden = g_.hidden, gh = g_.gate_rows();
    const DType dt = h.dtype();
    const GruGates k = gru_gates(g_.onnx_gate_order);
    Tensor hgates = hidden_projection(nullptr, h);
    Tensor hn = Tensor::empty({batch, hidden}, dt);
    Tensor n = Tensor::empty({batch, hidden}, dt);
    Tensor diff = Tensor::empty({batch, hidden}, dt);  // h - n, then h_next
    Tensor diff_before = Tensor::empty({batch, hidden}, dt);
    if (live_) {
      S* gp = hgates.data<S>();
      const S* hp = h.data<S>();
      S *hnp = hn.data<S>(), *np = n.data<S>(), *dp = diff.data<S>(), *bp = diff_before.data<S>();
      for (std::int64_t b = 0; b < batch; ++b) {
        S* row = gp + b * gh;
        const S* xrow = xp + b * gh;
        for (std::int64_t j = 0; j < hidden; ++j) {
          const std::int64_t e = b * hidden + j;
          S& r = row[k.r * hidden + j];
          S& z = row[k.z * hidden + j];
          S& hnew = row[k.n * hidden + j];
          r = sigmoid(r + xrow[k.r * hidden + j]);
          z = sigmoid(z + xrow[k.z * hidden + j]);
          hnp[e] = hnew;
          hnew *= r;
          np[e] = std::tanh(xrow[k.n * hidden + j] + hnew);
          dp[e] = hp[e] - np[e];
          bp[e] = dp[e];
          dp[e] = dp[e] * z + np[e];
        }
      }
    }
    h_next = diff;
    keep_padded_rows(t, h, h_next);
    saved.insert(saved.end(), {hgates, hn, n, diff_before, h_next});
  }

  Tensor rnn_step(const S* xp, std::int64_t t, const Tensor& h) {
    const std::int64_t batch = g_.batch, hidden = g_.hidden;
    const Tensor pre = hidden_projection(xp, h);
    Tensor h_next = Tensor::empty({batch, hidden}, h.dtype());
    if (live_) {
      const S* pp = pre.data<S>();
      S* hp = h_next.data<S>();
      const bool relu = g_.cell == RecurrentCell::rnn_relu;
      for (std::int64_t e = 0; e < batch * hidden; ++e)
        hp[e] = relu ? std::max(pp[e], S(0)) : std::tanh(pp[e]);
    }
    keep_padded_rows(t, h, h_next);
    return h_next;
  }

  const Geometry& g_;
  bool live_ = true;
  Tensor w_hh_, b_hh_, tanh_c_;
};

// Y [T, D, B, H] from each direction's per-step states (zeros at padded steps), Y_h and Y_c.
template <typename S>
TensorList assemble(const Geometry& g, const std::vector<TensorList>& hs, const TensorList& hn,
                    const TensorList& cn) {
  const std::int64_t steps = g.steps, batch = g.batch, hidden = g.hidden, dirs = g.directions;
  const DType dt = hn[0].dtype();
  Tensor y = Tensor::empty({steps, dirs, batch, hidden}, dt);
  Tensor y_h = Tensor::empty({dirs, batch, hidden}, dt);
  Tensor y_c = cn.empty() ? Tensor() : Tensor::empty({dirs, batch, hidden}, dt);
  if (y.is_meta()) return y_c.defined() ? TensorList{y, y_h, y_c} : TensorList{y, y_h};
  S* yp = y.data<S>();
  for (std::int64_t d = 0; d < dirs; ++d) {
    for (std::int64_t s = 0; s < steps; ++s) {
      const std::int64_t t = g.time(d, s);
      const S* src = hs[static_cast<std::size_t>(d)][static_cast<std::size_t>(s)].data<S>();
      for (std::int64_t b = 0; b < batch; ++b) {
        S* dst = yp + ((t * dirs + d) * batch + b) * hidden;
        if (g.active(t, b))
          std::copy(src + b * hidden, src + (b + 1) * hidden, dst);
        else
          std::fill(dst, dst + hidden, S(0));
      }
    }
    const S* hp = hn[static_cast<std::size_t>(d)].data<S>();
    std::copy(hp, hp + batch * hidden, y_h.data<S>() + d * batch * hidden);
    if (y_c.defined()) {
      const S* cp = cn[static_cast<std::size_t>(d)].data<S>();
      std::copy(cp, cp + batch * hidden, y_c.data<S>() + d * batch * hidden);
    }
  }
  return y_c.defined() ? TensorList{y, y_h, y_c} : TensorList{y, y_h};
}

}  // namespace

TensorList recurrent_layer(const RecurrentLayer& layer, const Tensor& x, const Tensor& h0,
                           const Tensor& c0, const Tensor& lengths,
                           const std::vector<RecurrentWeights>& weights) {
  OpScope op(op_of(layer.cell));
  const Geometry g = check(layer, x, h0, c0, lengths, weights);
  const DType dt = x.dtype();
  const Shape state{g.directions, g.batch, g.hidden};
  const bool lstm = g.cell == RecurrentCell::lstm;
  // nn.LSTM's zeros when no state is given: one tensor for the layer's directions.
  const Tensor h_init = h0.defined() ? as_contiguous(h0) : Tensor::zeros(state, dt);
  const Tensor c_init = !lstm          ? Tensor()
                        : c0.defined() ? as_contiguous(c0)
                                       : Tensor::zeros(state, dt);
  TensorList saved;
  std::vector<TensorList> hs;
  TensorList h_last, c_last;
  const auto slice = [&](const Tensor& t, std::int64_t d) {
    return t.alias({g.batch, g.hidden}, {g.hidden, 1}, t.offset() + d * g.batch * g.hidden);
  };
  TensorList outputs = dispatch_floating(dt, op_of(layer.cell), [&]<typename S>() {
    ForwardPass<S> pass(g);
    for (std::int64_t d = 0; d < g.directions; ++d) {
      const RecurrentWeights& w = weights[static_cast<std::size_t>(d)];
      Tensor h = slice(h_init, d);
      Tensor c = lstm ? slice(c_init, d) : Tensor();
      hs.push_back(pass.run(d, x, w, h, c, w.w_ih.requires_grad(), w.w_hh.requires_grad(), saved));
      h_last.push_back(h);
      if (lstm) c_last.push_back(c);
    }
    return assemble<S>(g, hs, h_last, c_last);
  });
  TensorList inputs{x};
  for (const auto& w : weights) inputs.insert(inputs.end(), {w.w_ih, w.w_hh, w.b_ih, w.b_hh});
  inputs.insert(inputs.end(), {h0, c0, lengths});
  record(node_of(layer.cell), inputs, outputs, saved,
         [g](BackwardContext& ctx) { return recurrent_backward(g, ctx); });
  return outputs;
}

}  // namespace ckpt
