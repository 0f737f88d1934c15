// ONNX LSTM, GRU and RNN as the engine's recurrent ops (recurrent_rows.cpp).
//
// PyTorch exports each layer of nn.LSTM / nn.GRU / nn.RNN as one node whose weights it builds
// from the module's parameters at run time: W = Unsqueeze(Concat(Slice(weight_ih_l0), ...)),
// the gates' row blocks reordered into ONNX's order, biases concatenated. Running that as it
// stands would keep the reordered copies alive for backward, where PyTorch keeps the
// parameters. So the rule reads W, R and B back to the parameters they were cut from; when
// they are exactly PyTorch's parameters in ONNX's gate order, the op takes the parameters
// themselves (and the exporter's Slice and Concat ops are left out). Weights that are anything
// else (an initializer in ONNX's layout, from another exporter) are used as they are, in
// ONNX's gate order.
#include <optional>
#include <string>
#include <vector>

#include "engine/ops/recurrent.hpp"
#include "engine/ops/recurrent_detail.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {

// Rows [begin, end) of parameter `param`, along its first dimension.
struct RowSource {
  std::string param;
  std::int64_t begin = 0, end = 0;
};
using Rows = std::vector<RowSource>;

std::optional<std::int64_t> int_attr(const Attributes& a, const char* key) {
  const auto it = a.find(key);
  if (it == a.end()) return std::nullopt;
  const auto* v = std::get_if<std::int64_t>(&it->second);
  return v ? std::optional<std::int64_t>(*v) : std::nullopt;
}

std::int64_t row_count(const Rows& rows) {
  std::int64_t n = 0;
  for (const auto& r : rows) n += r.end - r.begin;
  return n;
}

// What `value`'s rows are made of, following the slices and concatenations along dimension
// 0 that PyTorch's export builds the weights with; nullopt for anything else.
std::optional<Rows> rows_of(const OnnxNode& n, const std::string& value, int depth = 0) {
  if (depth > 16) return std::nullopt;
  if (n.is_parameter(value)) {
    const Tensor* p = n.probe(value);
    if (!p || p->dim() < 1) return std::nullopt;
    return Rows{{value, 0, p->shape()[0]}};
  }
  const OnnxNode::Producer* op = n.producer(value);
  if (!op || op->inputs.empty()) return std::nullopt;
  if (op->type == "cat") {
    if (int_attr(op->attrs, "dim").value_or(-1) != 0) return std::nullopt;
    Rows all;
    for (const auto& in : op->inputs) {
      auto part = rows_of(n, in, depth + 1);
      if (!part) return std::nullopt;
      all.insert(all.end(), part->begin(), part->end());
    }
    return all;
  }
  if (op->type != "slice" || int_attr(op->attrs, "dim").value_or(-1) != 0 ||
      int_attr(op->attrs, "step").value_or(0) != 1)
    return std::nullopt;
  auto in = rows_of(n, op->inputs[0], depth + 1);
  if (!in) return std::nullopt;
  const std::int64_t size = row_count(*in);
  const auto clamp = [size](std::int64_t v) {
    if (v < 0) v += size;
    return std::min(std::max<std::int64_t>(v, 0), size);
  };
  const std::int64_t start = clamp(int_attr(op->attrs, "start").value_or(0));
  const std::int64_t stop = std::max(clamp(int_attr(op->attrs, "end").value_or(size)), start);
  Rows out;
  std::int64_t at = 0;
  for (const auto& r : *in) {
    const std::int64_t len = r.end - r.begin;
    const std::int64_t lo = std::max(start, at), hi = std::min(stop, at + len);
    if (lo < hi) out.push_back({r.param, r.begin + (lo - at), r.begin + (hi - at)});
    at += len;
  }
  return out;
}

// Direction d's rows of a [D, ...] weight: Unsqueeze(rows, 0) for one direction,
// Concat(Unsqueeze(forward), Unsqueeze(reverse)) for two.
std::optional<std::string> direction_value(const OnnxNode& n, const std::string& w, std::int64_t d,
                                           std::int64_t directions) {
  std::string v = w;
  if (directions == 2) {
    const OnnxNode::Producer* cat = n.producer(w);
    if (!cat || cat->type != "cat" || cat->inputs.size() != 2 ||
        int_attr(cat->attrs, "dim").value_or(-1) != 0)
      return std::nullopt;
    v = cat->inputs[static_cast<std::size_t>(d)];
  }
  const OnnxNode::Producer* un = n.producer(v);
  if (!un || un->type != "unsqueeze" || int_attr(un->attrs, "dim").value_or(-1) != 0)
    return std::nullopt;
  return un->inputs[0];
}

// The parameter whose rows, in PyTorch's gate order, make `rows` in ONNX's: ONNX gate block k
// is PyTorch's block order[k] (LSTM i o f c from i f g o; GRU z r h from r z n).
std::optional<std::string> pytorch_parameter(const OnnxNode& n, const Rows& rows,
                                             const std::vector<std::int64_t>& order,
                                             std::int64_t hidden) {
  if (rows.empty()) return std::nullopt;
  const std::string& p = rows.front().param;
  const Tensor* probe = n.probe(p);
  const auto gates = static_cast<std::int64_t>(order.size());
  if (!probe || probe->shape()[0] != gates * hidden || row_count(rows) != gates * hidden)
    return std::nullopt;
  std::int64_t at = 0;  // ONNX row
  for (const auto& r : rows) {
    if (r.param != p) return std::nullopt;
    for (std::int64_t src = r.begin; src < r.end; ++src, ++at) {
      const std::int64_t want = order[static_cast<std::size_t>(at / hidden)] * hidden + at % hidden;
      if (src != want) return std::nullopt;
    }
  }
  return p;
}

struct Spec {
  RecurrentCell cell = RecurrentCell::lstm;
  const char* type = "lstm";
  std::int64_t gates = 4;
  std::vector<std::int64_t> order;       // ONNX gate block k is PyTorch's order[k]
  std::vector<std::string> activations;  // ONNX's defaults, per direction
};

Spec spec_of(OnnxNode& n) {
  const std::string& t = n.op_type();
  if (t == "LSTM")
    return {RecurrentCell::lstm, "lstm", 4, {0, 3, 1, 2}, {"Sigmoid", "Tanh", "Tanh"}};
  if (t == "GRU") return {RecurrentCell::gru, "gru", 3, {1, 0, 2}, {"Sigmoid", "Tanh"}};
  // RNN: Tanh by default; nn.RNN(nonlinearity='relu') exports Relu.
  const std::string acts = n.attr_s("activations", "Tanh");
  const bool relu = acts.rfind("Relu", 0) == 0;
  return {relu ? RecurrentCell::rnn_relu : RecurrentCell::rnn_tanh,
          "rnn",
          1,
          {0},
          {relu ? "Relu" : "Tanh"}};
}

void check_attributes(OnnxNode& n, const Spec& s, std::int64_t directions) {
  if (n.attr("clip")) n.fail("the clip attribute is not supported (PyTorch exports none)");
  if (n.attr_i("layout", 0) != 0)
    n.fail("layout 1 (batch first) is not supported; PyTorch exports layout 0 and a Transpose");
  if (n.attr("activation_alpha") || n.attr("activation_beta"))
    n.fail("activation_alpha and activation_beta are not supported");
  if (s.cell == RecurrentCell::lstm && n.attr_i("input_forget", 0) != 0)
    n.fail("input_forget=1 (coupled input and forget gates) is not supported");
  if (s.cell == RecurrentCell::lstm && n.has_input(7))
    n.fail("peephole weights (input P) are not supported; nn.LSTM has none");
  if (s.cell == RecurrentCell::gru && n.attr_i("linear_before_reset", 0) != 1)
    n.fail(
        "linear_before_reset=0 is not supported: nn.GRU applies the reset gate after its "
        "linear map and exports linear_before_reset=1");
  std::string want;
  for (std::int64_t d = 0; d < directions; ++d)
    for (const auto& a : s.activations) want += (want.empty() ? "" : ",") + a;
  const std::string acts = n.attr_s("activations", want);
  if (acts != want)
    n.fail("activations '" + acts + "' are not supported (" + want + " are, as in PyTorch)");
}

void translate_recurrent(OnnxNode& n) {
  const Spec s = spec_of(n);
  const OnnxValue& x = n.input(0, "X");
  const OnnxValue& w = n.input(1, "W");
  const OnnxValue& r = n.input(2, "R");
  if (x.probe.dim() != 3)
    n.fail("X must be 3-D [sequence, batch, input], got " + shape_str(x.probe.shape()));
  const std::string dir = n.attr_s("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    n.fail("direction '" + dir + "' is not forward, reverse or bidirectional");
  const std::int64_t directions = dir == "bidirectional" ? 2 : 1;
  const Shape& rs = r.probe.shape();
  if (rs.size() != 3 || rs[0] != directions)
    n.fail("R must be [" + std::to_string(directions) + ", " + std::to_string(s.gates) +
           "*hidden_size, hidden_size], got " + shape_str(rs));
  const std::int64_t hidden = n.attr_i("hidden_size", rs[2]);
  if (hidden != rs[2] || hidden <= 0)
    n.fail("hidden_size " + std::to_string(hidden) + " is not R's last dimension, " +
           std::to_string(rs[2]));
  const Shape want_w{directions, s.gates * hidden, x.probe.shape()[2]};
  if (w.probe.shape() != want_w)
    n.fail("W must be " + shape_str(want_w) + ", got " + shape_str(w.probe.shape()));
  if (rs != Shape{directions, s.gates * hidden, hidden})
    n.fail("R must be " + shape_str({directions, s.gates * hidden, hidden}) + ", got " +
           shape_str(rs));
  check_attributes(n, s, directions);
  const bool has_bias = n.has_input(3);
  if (has_bias && n.input(3, "B").probe.shape() != Shape{directions, 2 * s.gates * hidden})
    n.fail("B must be " + shape_str({directions, 2 * s.gates * hidden}) + ", got " +
           shape_str(n.input(3, "B").probe.shape()));

  // The weights PyTorch's parameters are, per direction: w_ih, w_hh, b_ih, b_hh.
  std::vector<std::string> weights;
  bool pytorch = !w.constant && !r.constant && (!has_bias || !n.input(3, "B").constant);
  for (std::int64_t d = 0; d < directions && pytorch; ++d) {
    const auto param = [&](const std::string& v, std::int64_t lo, std::int64_t hi) {
      const auto dv = direction_value(n, v, d, directions);
      auto rows = dv ? rows_of(n, *dv) : std::nullopt;
      if (!rows) return std::optional<std::string>();
      Rows part;  // rows [lo, hi) of the direction's
      std::int64_t at = 0;
      for (const auto& e : *rows) {
        const std::int64_t len = e.end - e.begin;
        const std::int64_t a = std::max(lo, at), b = std::min(hi, at + len);
        if (a < b) part.push_back({e.param, e.begin + (a - at), e.begin + (b - at)});
        at += len;
      }
      return pytorch_parameter(n, part, s.order, hidden);
    };
    const std::int64_t gh = s.gates * hidden;
    const auto w_ih = param(w.graph, 0, gh), w_hh = param(r.graph, 0, gh);
    const auto b_ih =
        has_bias ? param(n.input(3, "B").graph, 0, gh) : std::optional<std::string>("");
    const auto b_hh =
        has_bias ? param(n.input(3, "B").graph, gh, 2 * gh) : std::optional<std::string>("");
    if (!w_ih || !w_hh || !b_ih || !b_hh)
      pytorch = false;
    else
      weights.insert(weights.end(), {*w_ih, *w_hh, *b_ih, *b_hh});
  }
  if (pytorch) {
    n.drop_if_unused(w.graph);
    n.drop_if_unused(r.graph);
    if (has_bias) n.drop_if_unused(n.input(3, "B").graph);
  } else {
    // ONNX's layout as it is: views of direction d's rows.
    weights.clear();
    const auto select = [&](const std::string& v, std::int64_t d) {
      return n.emit_op("select", {v}, {{"dim", std::int64_t{0}}, {"index", d}}).graph;
    };
    const auto rows = [&](const std::string& v, std::int64_t lo, std::int64_t hi) {
      return n
          .emit_op(
              "slice", {v},
              {{"dim", std::int64_t{0}}, {"start", lo}, {"end", hi}, {"step", std::int64_t{1}}})
          .graph;
    };
    const std::int64_t gh = s.gates * hidden;
    for (std::int64_t d = 0; d < directions; ++d) {
      weights.push_back(select(n.operand(1), d));
      weights.push_back(select(n.operand(2), d));
      if (has_bias) {
        const std::string b = select(n.operand(3), d);
        weights.push_back(rows(b, 0, gh));
        weights.push_back(rows(b, gh, 2 * gh));
      } else {
        weights.insert(weights.end(), {"", ""});
      }
    }
  }

  // Initial states: zeros (the export's Expand of 0 when nn.LSTM was given none) are made by
  // the op, as nn.LSTM makes them; anything else is an operand.
  const auto state = [&](std::size_t i) -> std::string {
    const OnnxValue* v = n.input_or_null(i);
    if (!v) return "";
    if (v->constant) {
      bool zero = true;
      for (double e : v->probe.to_vector()) zero = zero && e == 0;
      if (zero) return "";
    }
    return n.operand(i);
  };
  std::vector<std::string> inputs{x.graph};
  inputs.insert(inputs.end(), weights.begin(), weights.end());
  inputs.insert(inputs.end(), {state(5), s.cell == RecurrentCell::lstm ? state(6) : "",
                               n.has_input(4) ? n.operand(4) : ""});
  Attributes attrs{{"hidden_size", hidden},
                   {"direction", dir},
                   {"gate_order", std::string(pytorch ? "pytorch" : "onnx")}};
  if (s.cell == RecurrentCell::rnn_relu) attrs["nonlinearity"] = std::string("relu");
  std::vector<std::string> names;
  const int outputs = s.cell == RecurrentCell::lstm ? 3 : 2;
  for (int k = 0; k < outputs; ++k) names.push_back(n.output(k));
  const auto values = n.emit_multi(s.type, inputs, std::move(attrs), names);
  for (int k = 0; k < outputs; ++k)
    if (!n.output(k).empty()) n.define(n.output(k), values[static_cast<std::size_t>(k)]);
}

}  // namespace

void recurrent_detail::recurrent_onnx_rules(std::vector<OnnxRule>& lstm, std::vector<OnnxRule>& gru,
                                            std::vector<OnnxRule>& rnn) {
  lstm = {{.op_type = "LSTM", .since = 7, .translate = translate_recurrent}};
  gru = {{.op_type = "GRU", .since = 7, .translate = translate_recurrent}};
  rnn = {{.op_type = "RNN", .since = 7, .translate = translate_recurrent}};
}

}  // namespace ckpt
