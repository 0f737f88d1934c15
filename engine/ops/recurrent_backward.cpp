// Backward of recurrent_layer (recurrent.cpp): back through the time steps of each direction,
// from what the forward saved (recurrent_detail.hpp's layout).
#include <algorithm>

#include "engine/autograd/node.hpp"
#include "engine/kernels/blas.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/recurrent_detail.hpp"

namespace ckpt {

using namespace recurrent_detail;

namespace {

template <typename S>
class BackwardPass {
 public:
  BackwardPass(const Geometry& g, BackwardContext& c) : g_(g), c_(c) {
    live_ = !c.grads[0].is_meta();
  }

  TensorList run() {
    const std::int64_t steps = g_.steps, batch = g_.batch, hidden = g_.hidden;
    const auto& need = c_.needs_input_grad;
    const DType dt = c_.grads[0].dtype();
    const Shape state{g_.directions, batch, hidden};
    grad_y_ = as_contiguous(c_.grads[0]);
    const Tensor grad_h = as_contiguous(c_.grads[1]);
    const Tensor grad_c = lstm() ? as_contiguous(c_.grads[2]) : Tensor();
    TensorList out(input_count(g_.directions));
    h0_ = input_index(g_.directions, StateInput::h0);
    c0_ = input_index(g_.directions, StateInput::c0);
    if (need[0]) out[0] = Tensor::zeros({steps, batch, g_.input}, dt);
    if (need[h0_]) out[h0_] = Tensor::empty(state, dt);
    if (need[c0_]) out[c0_] = Tensor::empty(state, dt);
    for (std::int64_t d = 0; d < g_.directions; ++d) direction(d, grad_h, grad_c, out);
    return out;
  }

 private:
  bool lstm() const { return g_.cell == RecurrentCell::lstm; }
  bool active(std::int64_t t, std::int64_t b) const { return g_.active(t, b); }
  const Tensor& saved(std::int64_t d, std::size_t k) const {
    return c_.saved[direction_offset(g_, d) + k];
  }
  const Tensor& step(std::int64_t d, std::int64_t s, std::size_t k) const {
    return saved(d, kHeader + static_cast<std::size_t>(s) * step_entries(g_.cell) + k);
  }
  // The hidden (k = 0) or cell (k = 1) state direction d's step s started from.
  const Tensor& previous(std::int64_t d, std::int64_t s, int k) const {
    if (s == 0) return saved(d, k == 0 ? 3 : 4);
    const std::size_t at = g_.cell == RecurrentCell::lstm  ? (k == 0 ? 2 : 3)
                           : g_.cell == RecurrentCell::gru ? 4
                                                           : 0;
    return step(d, s - 1, at);
  }

  void direction(std::int64_t d, const Tensor& grad_h, const Tensor& grad_c, TensorList& out) {
    const std::int64_t steps = g_.steps, batch = g_.batch, hidden = g_.hidden, gh = g_.gate_rows();
    const auto& need = c_.needs_input_grad;
    const std::size_t w0 = kFirstWeight + kWeightsPerDirection * static_cast<std::size_t>(d);
    const bool need_w_ih = need[w0], need_w_hh = need[w0 + 1], need_b_ih = need[w0 + 2],
               need_b_hh = need[w0 + 3];
    const DType dt = grad_y_.dtype();
    const Tensor w_ih = as_contiguous(saved(d, 1)), w_hh = as_contiguous(saved(d, 2));
    Tensor grad_projected = Tensor::empty({steps * batch, gh}, dt);  // of x W_ih^T + b_ih
    Tensor grad_gates = Tensor::empty({batch, gh}, dt);              // of h W_hh^T + b_hh
    Tensor dh = Tensor::empty({batch, hidden}, dt), dh_prev = Tensor::empty({batch, hidden}, dt);
    Tensor dc = lstm() ? Tensor::empty({batch, hidden}, dt) : Tensor();
    Tensor dc_prev = lstm() ? Tensor::empty({batch, hidden}, dt) : Tensor();
    Tensor dw_hh = need_w_hh ? Tensor::zeros({gh, hidden}, dt) : Tensor();
    Tensor db_hh = need_b_hh ? Tensor::zeros({gh}, dt) : Tensor();
    if (live_) {
      const S* gh0 = grad_h.data<S>() + d * batch * hidden;
      std::copy(gh0, gh0 + batch * hidden, dh.data<S>());
      if (lstm()) {
        const S* gc0 = grad_c.data<S>() + d * batch * hidden;
        std::copy(gc0, gc0 + batch * hidden, dc.data<S>());
      }
    }
    for (std::int64_t s = steps - 1; s >= 0 && live_; --s) {
      const std::int64_t t = g_.time(d, s);
      S* dhp = dh.data<S>();
      dh_ptr_ = dhp;
      if (lstm()) {
        dc_ptr_ = dc.data<S>();
        dc_prev_ptr_ = dc_prev.data<S>();
      }
      const S* gy = grad_y_.data<S>() + (t * g_.directions + d) * batch * hidden;
      for (std::int64_t b = 0; b < batch; ++b)
        if (active(t, b))
          for (std::int64_t j = 0; j < hidden; ++j) dhp[b * hidden + j] += gy[b * hidden + j];
      S* gx = grad_projected.data<S>() + t * batch * gh;
      S* gg = grad_gates.data<S>();
      S* dhn = dh_prev.data<S>();
      std::fill(dhn, dhn + batch * hidden, S(0));
      if (lstm())
        lstm_cell(d, s, t, gx, gg);
      else if (g_.cell == RecurrentCell::gru)
        gru_cell(d, s, t, gx, gg, dhn);
      else
        rnn_cell(d, s, t, gx, gg);
      // Through h W_hh^T: to W_hh, b_hh and the previous hidden state.
      if (need_w_hh)
        gemm_rm<S>(true, false, gh, hidden, batch, S(1), gg, gh, data(previous(d, s, 0)), hidden,
                   S(1), dw_hh.data<S>(), hidden);
      if (need_b_hh) {
        S* db = db_hh.data<S>();
        for (std::int64_t b = 0; b < batch; ++b)
          for (std::int64_t j = 0; j < gh; ++j) db[j] += gg[b * gh + j];
      }
      gemm_rm<S>(false, false, batch, hidden, gh, S(1), gg, gh, w_hh.data<S>(), hidden, S(1), dhn,
                 hidden);
      // A padded step passed the state through unchanged.
      for (std::int64_t b = 0; b < batch; ++b)
        if (!active(t, b)) {
          std::copy(dhp + b * hidden, dhp + (b + 1) * hidden, dhn + b * hidden);
          if (lstm())
            std::copy(dc.data<S>() + b * hidden, dc.data<S>() + (b + 1) * hidden,
                      dc_prev.data<S>() + b * hidden);
        }
      std::swap(dh, dh_prev);
      if (lstm()) std::swap(dc, dc_prev);
    }
    if (out[h0_].defined() && live_)
      std::copy(dh.data<S>(), dh.data<S>() + batch * hidden,
                out[h0_].data<S>() + d * batch * hidden);
    if (out[c0_].defined() && live_)
      std::copy(dc.data<S>(), dc.data<S>() + batch * hidden,
                out[c0_].data<S>() + d * batch * hidden);
    // Through x W_ih^T + b_ih, over the whole sequence at once.
    const Tensor& input = saved(d, 0);
    if (need_w_ih) {
      out[w0] = Tensor::empty({gh, g_.input}, dt);
      if (live_)
        gemm_rm<S>(true, false, gh, g_.input, steps * batch, S(1), grad_projected.data<S>(), gh,
                   as_contiguous(input).data<S>(), g_.input, S(0), out[w0].data<S>(), g_.input);
    }
    out[w0 + 1] = dw_hh;
    if (need_b_ih) {
      out[w0 + 2] = Tensor::zeros({gh}, dt);
      if (live_) {
        S* db = out[w0 + 2].data<S>();
        const S* gp = grad_projected.data<S>();
        for (std::int64_t r = 0; r < steps * batch; ++r)
          for (std::int64_t j = 0; j < gh; ++j) db[j] += gp[r * gh + j];
      }
    }
    out[w0 + 3] = db_hh;
    if (out[0].defined() && live_)
      gemm_rm<S>(false, false, steps * batch, g_.input, gh, S(1), grad_projected.data<S>(), gh,
                 w_ih.data<S>(), g_.input, S(1), out[0].data<S>(), g_.input);
  }

  // The gates' gradients at step s (time t) of an LSTM: into the input projection's (gx) and
  // the hidden projection's (gg, the same), and the cell state's into dc_prev.
  void lstm_cell(std::int64_t d, std::int64_t s, std::int64_t t, S* gx, S* gg) {
    const std::int64_t batch = g_.batch, hidden = g_.hidden, gh = g_.gate_rows();
    const LstmGates k = lstm_gates(g_.onnx_gate_order);
    const S* gates = data(step(d, s, 0));
    const S* tanh_c = data(step(d, s, 1));
    const S* c_prev = data(previous(d, s, 1));
    const S* dh = dh_cur();
    const S* dc = dc_cur();
    S* dcp = dc_prev_ptr();
    for (std::int64_t b = 0; b < batch; ++b) {
      S* row = gg + b * gh;
      if (!active(t, b)) {
        std::fill(row, row + gh, S(0));
        continue;
      }
      const S* gr = gates + b * gh;
      for (std::int64_t j = 0; j < hidden; ++j) {
        const std::int64_t e = b * hidden + j;
        const S i = gr[k.i * hidden + j], f = gr[k.f * hidden + j], gv = gr[k.g * hidden + j],
                o = gr[k.o * hidden + j], tc = tanh_c[e];
        const S dcv = dc[e] + dh[e] * o * (S(1) - tc * tc);
        row[k.i * hidden + j] = dcv * gv * i * (S(1) - i);
        row[k.f * hidden + j] = dcv * c_prev[e] * f * (S(1) - f);
        row[k.g * hidden + j] = dcv * i * (S(1) - gv * gv);
        row[k.o * hidden + j] = dh[e] * tc * o * (S(1) - o);
        dcp[e] = dcv * f;
      }
    }
    std::copy(gg, gg + batch * gh, gx);
  }

  // GRU: h = (h_prev - n) z + n, n = tanh(xn + r hn), r and z sigmoids of x and h projections.
  void gru_cell(std::int64_t d, std::int64_t s, std::int64_t t, S* gx, S* gg, S* dh_prev) {
    const std::int64_t batch = g_.batch, hidden = g_.hidden, gh = g_.gate_rows();
    const GruGates k = gru_gates(g_.onnx_gate_order);
    const S* gates = data(step(d, s, 0));
    const S* hn = data(step(d, s, 1));
    const S* n = data(step(d, s, 2));
    const S* diff = data(step(d, s, 3));
    const S* dh = dh_cur();
    for (std::int64_t b = 0; b < batch; ++b) {
      S* row = gg + b * gh;
      S* xrow = gx + b * gh;
      if (!active(t, b)) {
        std::fill(row, row + gh, S(0));
        std::fill(xrow, xrow + gh, S(0));
        continue;
      }
      const S* gr = gates + b * gh;
      for (std::int64_t j = 0; j < hidden; ++j) {
        const std::int64_t e = b * hidden + j;
        const S r = gr[k.r * hidden + j], z = gr[k.z * hidden + j];
        const S dn = dh[e] * (S(1) - z) * (S(1) - n[e] * n[e]);
        const S dr = dn * hn[e] * r * (S(1) - r);
        const S dz = dh[e] * diff[e] * z * (S(1) - z);
        xrow[k.n * hidden + j] = dn;
        row[k.n * hidden + j] = dn * r;
        xrow[k.r * hidden + j] = row[k.r * hidden + j] = dr;
        xrow[k.z * hidden + j] = row[k.z * hidden + j] = dz;
        dh_prev[e] = dh[e] * z;
      }
    }
  }

  void rnn_cell(std::int64_t d, std::int64_t s, std::int64_t t, S* gx, S* gg) {
    const std::int64_t batch = g_.batch, hidden = g_.hidden;
    const S* h = data(step(d, s, 0));
    const S* dh = dh_cur();
    const bool relu = g_.cell == RecurrentCell::rnn_relu;
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t j = 0; j < hidden; ++j) {
        const std::int64_t e = b * hidden + j;
        const S slope = relu ? (h[e] > S(0) ? S(1) : S(0)) : S(1) - h[e] * h[e];
        gg[e] = active(t, b) ? dh[e] * slope : S(0);
      }
    std::copy(gg, gg + batch * hidden, gx);
  }

  static const S* data(const Tensor& t) { return t.data<S>(); }
  const S* dh_cur() const { return dh_ptr_; }
  const S* dc_cur() const { return dc_ptr_; }
  S* dc_prev_ptr() const { return dc_prev_ptr_; }

  const Geometry& g_;
  BackwardContext& c_;
  bool live_ = true;
  Tensor grad_y_;
  std::size_t h0_ = 0, c0_ = 0;  // their input positions
  const S* dh_ptr_ = nullptr;
  const S* dc_ptr_ = nullptr;
  S* dc_prev_ptr_ = nullptr;
};

}  // namespace

TensorList recurrent_detail::recurrent_backward(const Geometry& g, BackwardContext& c) {
  return dispatch_floating(c.grads[0].dtype(), "recurrent backward",
                           [&]<typename S>() { return BackwardPass<S>(g, c).run(); });
}

}  // namespace ckpt
