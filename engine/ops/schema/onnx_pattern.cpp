#include "engine/ops/schema/onnx_pattern.hpp"

#include <cmath>

namespace ckpt {

namespace pattern {

struct Expr {
  enum class Kind : std::uint8_t {
    op,
    any,
    constant,
    number,
    optional_constant,
    initializer,
    as,
    one_of
  };
  Kind kind = Kind::any;
  std::string type;     // op
  int output = 0;       // op: which of the node's outputs the value is
  int outputs = 0;      // op: how many outputs the node has (0: any)
  std::vector<P> args;  // op: its inputs; as: the inner expression; one_of: the alternatives
  bool commutative = false;
  std::string name;  // the leaves' and as()'s
  double value = 0, relative = 0;
};

namespace {
P make(Expr e) {
  return std::make_shared<const Expr>(std::move(e));
}
}  // namespace

P op(const char* type, std::vector<P> args) {
  return make({.kind = Expr::Kind::op, .type = type, .args = std::move(args)});
}
P commutative(const char* type, P a, P b) {
  return make({.kind = Expr::Kind::op, .type = type, .args = {a, b}, .commutative = true});
}
P output(const char* type, int index, int outputs, const char* node, std::vector<P> args) {
  return make({.kind = Expr::Kind::op,
               .type = type,
               .output = index,
               .outputs = outputs,
               .args = std::move(args),
               .name = node});
}
P any(const char* name) {
  return make({.kind = Expr::Kind::any, .name = name});
}
P constant(const char* name) {
  return make({.kind = Expr::Kind::constant, .name = name});
}
P number(double value, double relative) {
  return make({.kind = Expr::Kind::number, .value = value, .relative = relative});
}
P optional_constant(const char* name) {
  return make({.kind = Expr::Kind::optional_constant, .name = name});
}
P initializer(const char* name) {
  return make({.kind = Expr::Kind::initializer, .name = name});
}
P as(const char* name, P inner) {
  return make({.kind = Expr::Kind::as, .args = {inner}, .name = name});
}
P one_of(std::vector<P> alternatives) {
  return make({.kind = Expr::Kind::one_of, .args = std::move(alternatives)});
}

}  // namespace pattern

namespace {

using pattern::Expr;
using States = std::vector<OnnxMatch>;

class Matcher {
 public:
  explicit Matcher(const OnnxGraphView& g) : g_(g) {}

  // Every way `e` matches `value` from state `s`.
  States match(const Expr& e, const std::string& value, const OnnxMatch& s) const {
    switch (e.kind) {
      case Expr::Kind::op:
        return match_op(e, value, s);
      case Expr::Kind::any:
      case Expr::Kind::constant:
      case Expr::Kind::optional_constant:
        return leaf(e, value, s);
      case Expr::Kind::initializer:
        return g_.is_initializer(value) ? leaf(e, value, s) : States{};
      case Expr::Kind::number:
        return number(e, value, s);
      case Expr::Kind::as: {
        if (auto it = s.bound.find(e.name); it != s.bound.end())
          return it->second == value ? States{s} : States{};
        States out = match(*e.args[0], value, s);
        for (auto& m : out) m.bound[e.name] = value;
        return out;
      }
      case Expr::Kind::one_of: {
        States out;
        for (const auto& alt : e.args) {
          States r = match(*alt, value, s);
          out.insert(out.end(), r.begin(), r.end());
        }
        return out;
      }
    }
    return {};
  }

 private:
  States leaf(const Expr& e, const std::string& value, OnnxMatch s) const {
    if (value.empty()) return e.kind == Expr::Kind::optional_constant ? States{s} : States{};
    if (auto it = s.bound.find(e.name); it != s.bound.end() && it->second != value) return {};
    s.bound[e.name] = value;
    s.leaves.insert(value);
    if (e.kind != Expr::Kind::any && e.kind != Expr::Kind::initializer) s.constants.insert(value);
    return {s};
  }

  States number(const Expr& e, const std::string& value, OnnxMatch s) const {
    if (value.empty()) return {};
    using Kind = OnnxGraphView::FileValue::Kind;
    const OnnxGraphView::FileValue known = g_.file_value(value);
    if (known.kind == Kind::tensor ||
        (known.kind == Kind::number && !is_number(known.number, e.value, e.relative)))
      return {};
    // Computed at load time from other constants (the exporter's Sqrt of a shape): checked when
    // the root's turn comes.
    if (known.kind == Kind::unknown) s.numbers.push_back({value, e.value, e.relative});
    s.leaves.insert(value);
    s.constants.insert(value);
    return {s};
  }

  States match_op(const Expr& e, const std::string& value, const OnnxMatch& s) const {
    if (value.empty()) return {};
    const int n = g_.producer(value);
    if (n < 0 || g_.op_type(n) != e.type || e.output >= g_.output_count(n) ||
        g_.output(n, e.output) != value || (e.outputs > 0 && g_.output_count(n) != e.outputs))
      return {};
    // A named node met before: its inputs matched then.
    if (!e.name.empty())
      if (auto it = s.bound.find(e.name); it != s.bound.end())
        return g_.producer(it->second) == n ? States{s} : States{};
    if (s.nodes.count(n)) return {};
    const int inputs = g_.input_count(n);
    if (inputs > static_cast<int>(e.args.size())) return {};
    OnnxMatch claimed = s;
    claimed.nodes.insert(n);
    const auto input = [&](std::size_t i) {
      return static_cast<int>(i) < inputs ? g_.input(n, static_cast<int>(i)) : std::string();
    };
    States out = in_order(e.args, {0, 1}, input, claimed);
    if (e.commutative && e.args.size() == 2) {
      States swapped = in_order(e.args, {1, 0}, input, claimed);
      out.insert(out.end(), swapped.begin(), swapped.end());
    }
    // Named by its first output, so that attr() and op_type() find the node.
    if (!e.name.empty())
      for (auto& m : out) m.bound[e.name] = g_.output(n, 0);
    return out;
  }

  // The arguments matched against the inputs, argument `order[i]` against input i (the rest in
  // their own order).
  template <typename Input>
  States in_order(const std::vector<pattern::P>& args, std::vector<std::size_t> order,
                  const Input& input, const OnnxMatch& s) const {
    for (std::size_t i = order.size(); i < args.size(); ++i) order.push_back(i);
    States states{s};
    for (std::size_t i = 0; i < args.size() && !states.empty(); ++i) {
      States next;
      for (const auto& st : states) {
        States r = match(*args[order[i]], input(i), st);
        next.insert(next.end(), r.begin(), r.end());
      }
      states = std::move(next);
    }
    return states;
  }

  const OnnxGraphView& g_;
};

// Every claimed node's outputs are read only inside the match (the root's first output
// aside), and no leaf is made inside it.
bool self_contained(const OnnxGraphView& g, const OnnxMatch& m) {
  for (int n : m.nodes)
    for (int k = 0; k < g.output_count(n); ++k) {
      const std::string& v = g.output(n, k);
      if (v.empty() || (n == m.root && k == 0)) continue;
      for (int c : g.consumers(v))
        if (c < 0 || !m.nodes.count(c)) return false;
    }
  for (const auto& v : m.leaves)
    if (const int p = g.producer(v); p >= 0 && m.nodes.count(p)) return false;
  return true;
}

}  // namespace

bool is_number(double x, double expected, double relative) {
  return std::abs(x - expected) <= relative * std::abs(expected) || x == expected;
}

bool is_number(const Tensor& v, double expected, double relative) {
  return v.defined() && v.numel() == 1 && is_number(v.item(), expected, relative);
}

const std::string& pattern_root_type(const OnnxPattern& p) {
  const Expr* e = p.root.get();
  while (e->kind == Expr::Kind::one_of || e->kind == Expr::Kind::as) e = e->args[0].get();
  return e->type;
}

std::optional<OnnxMatch> match_pattern(const OnnxPattern& p, const OnnxGraphView& g, int node,
                                       const std::set<int>& taken) {
  if (g.op_type(node) != pattern_root_type(p) || g.output_count(node) == 0) return std::nullopt;
  OnnxMatch start;
  start.root = node;
  for (OnnxMatch& m : Matcher(g).match(*p.root, g.output(node, 0), start)) {
    bool free = true;
    for (int n : m.nodes) free = free && !taken.count(n);
    if (free && self_contained(g, m) && (!p.accept || p.accept(m))) return std::move(m);
  }
  return std::nullopt;
}

std::int64_t OnnxFusion::attr_i(const std::string& name, const std::string& attribute,
                                std::int64_t fallback) const {
  const AttrValue* a = attr(name, attribute);
  if (const auto* i = a ? std::get_if<std::int64_t>(a) : nullptr) return *i;
  return fallback;
}

std::vector<std::int64_t> OnnxFusion::attr_ints(const std::string& name,
                                                const std::string& attribute) const {
  const AttrValue* a = attr(name, attribute);
  if (const auto* v = a ? std::get_if<std::vector<std::int64_t>>(a) : nullptr) return *v;
  return {};
}

std::optional<double> OnnxFusion::scalar(const std::string& name) const {
  const OnnxValue* v = value(name);
  if (!v || !v->constant || v->probe.numel() != 1) return std::nullopt;
  return v->probe.item();
}

}  // namespace ckpt
