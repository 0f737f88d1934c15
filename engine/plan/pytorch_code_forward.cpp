#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "engine/ops/schema/op_schema.hpp"
#include "engine/plan/pytorch_code_detail.hpp"

// The body of each forward(): one statement per op or child call, checkpoint(...) around the
// calls the configuration names, loops for runs of identical calls, checkpoint_sequential.

namespace ckpt::pytorch_code_detail {

std::string NativeWriter::render(const Module& m, const Unit& u, Names& names, int placeholder) {
  std::vector<std::string> args;
  for (std::size_t i = 0; i < u.inputs.size(); ++i) {
    const std::string& v = u.inputs[i];
    if (static_cast<int>(i) == placeholder) {
      args.push_back("{x}");
    } else if (v.empty()) {
      args.push_back("");
    } else if (is_param(v)) {
      args.push_back(param_expr(m, v, names));
    } else {
      args.push_back(names.var.at(v));
    }
  }
  if (u.child) {
    std::string list;
    for (const auto& a : args) list += (list.empty() ? "" : ", ") + a;
    const std::string callee = attr_ref(attr_of(*u.child));
    if (c_.plan.modules.count(u.child->path))
      return "checkpoint(" + callee + (list.empty() ? "" : ", " + list) +
             checkpoint_kwargs(c_, u.child->path) + ")";
    if (c_.plan.offload.count(u.child->path))
      return "offloaded(" + callee + (list.empty() ? "" : ", " + list) + ")";
    return callee + "(" + list + ")";
  }
  const OpNode& op = m_.ops[static_cast<std::size_t>(u.op)];
  const auto shape_it = op.inputs.empty() ? m_.values.end() : m_.values.find(op.inputs[0]);
  return py::op_expression(op, args,
                           shape_it == m_.values.end() ? Shape{} : shape_it->second.shape);
}

std::string NativeWriter::short_name(const Module& m, const std::string& v) const {
  std::string s = v;
  const std::string prefix = m.path.empty() ? "" : m.path + ".";
  if (!prefix.empty() && s.rfind(prefix, 0) == 0) s = s.substr(prefix.size());
  s = last_component(s);
  std::replace(s.begin(), s.end(), ':', '_');
  return s;
}

// A function that hands all its inputs, in order, to one call takes *inputs (the dense
// layers: each gets one more feature map than the last).
// A single input qualifies when it goes to an op of any number of inputs (cat) or to a call that
// is itself variadic, so that the first dense layer shares its class with the others.
bool NativeWriter::takes_variadic_inputs(const std::vector<std::string>& inputs,
                                         const std::vector<Unit>& units,
                                         std::map<std::string, int>& uses) const {
  bool variadic = false;
  if (!inputs.empty() &&
      std::none_of(inputs.begin(), inputs.end(), [&](const auto& v) { return is_param(v); }) &&
      std::all_of(inputs.begin(), inputs.end(), [&](const auto& v) { return uses[v] == 1; })) {
    for (const auto& u : units) {
      if (u.inputs != inputs) continue;
      const OpSchema* row =
          u.child ? nullptr
                  : OpTable::instance().find(m_.ops[static_cast<std::size_t>(u.op)].op_type);
      const bool gathers =
          u.child ? variadic_.count(u.child->definition) > 0 : row && row->max_inputs < 0;
      if (inputs.size() >= 2 || gathers) variadic = true;
    }
  }
  return variadic;
}

// A run of three or more identical calls, each fed by the one before, becomes a loop:
// "for _ in range(n): x = call(x)". Returns the unit after the run, or i when there is none.
std::size_t NativeWriter::fold_repeated_calls(const Module& m, const std::vector<Unit>& units,
                                              std::size_t i, std::map<std::string, int>& uses,
                                              Names& names, std::string& body) {
  std::size_t j = i + 1;
  int p0 = -1;
  std::string tmpl;
  while (j < units.size() && units[j - 1].outputs.size() == 1 && units[j].outputs.size() == 1 &&
         uses[units[j - 1].outputs[0]] == 1) {
    const auto& in = units[j].inputs;
    const auto pos = std::find(in.begin(), in.end(), units[j - 1].outputs[0]);
    if (pos == in.end() || std::count(in.begin(), in.end(), *pos) != 1) break;
    const int p = static_cast<int>(pos - in.begin());
    if (j == i + 1) {
      if (static_cast<std::size_t>(p) >= units[i].inputs.size() ||
          units[i].inputs[static_cast<std::size_t>(p)].empty())
        break;
      p0 = p;
      tmpl = render(m, units[i], names, p0);
    }
    if (render(m, units[j], names, p) != tmpl) break;
    ++j;
  }
  if (j - i >= 3) {
    const std::string& in_v = units[i].inputs[static_cast<std::size_t>(p0)];
    std::string var;
    if (!is_param(in_v) && uses[in_v] == 1) {
      var = names.var.at(in_v);
    } else {
      var = names.fresh(short_name(m, units[j - 1].outputs[0]));
      body +=
          var + " = " + (is_param(in_v) ? param_expr(m, in_v, names) : names.var.at(in_v)) + "\n";
    }
    std::string stmt = tmpl;
    stmt.replace(stmt.find("{x}"), 3, var);
    body += "for _ in range(" + std::to_string(j - i) + "):\n    " + var + " = " + stmt + "\n";
    names.var[units[j - 1].outputs[0]] = var;
    return j;
  }
  return i;
}

namespace {

std::string comma_list(const std::vector<std::string>& items) {
  std::string list;
  for (const auto& a : items) list += (list.empty() ? "" : ", ") + a;
  return list;
}

// How often each value is read (by a unit, or as a result): one read once may be folded into a
// loop or passed on as *inputs.
std::map<std::string, int> count_uses(const std::vector<Unit>& units,
                                      const std::vector<std::string>& outputs) {
  std::map<std::string, int> uses;
  for (const auto& u : units)
    for (const auto& v : u.inputs) ++uses[v];
  for (const auto& v : outputs) ++uses[v];
  return uses;
}

// A variadic function passes its inputs on as *inputs: the one call that takes them all is
// spelled so (a cat's list becomes list(inputs)).
void spell_star_inputs(const std::vector<std::string>& args, std::string& body) {
  const std::string list = comma_list(args);
  const auto at = body.find(list);
  if (at != std::string::npos) body.replace(at, list.size(), "*inputs");
  if (body.find("[*inputs]") != std::string::npos)
    body.replace(body.find("[*inputs]"), 9, "list(inputs)");
}

}  // namespace

// A statement per unit, or a loop per run of identical calls, after the root's
// checkpoint_sequential prefix where the configuration has one.
std::string NativeWriter::statements(const Module& m, const std::vector<Unit>& units,
                                     std::map<std::string, int>& uses, Names& names) {
  std::string body;
  std::size_t i = 0;
  if (m.path.empty() && c_.plan.segments > 0) i = sequential_prefix(m, units, names, body);
  while (i < units.size()) {
    if (const std::size_t folded = fold_repeated_calls(m, units, i, uses, names, body);
        folded != i) {
      i = folded;
      continue;
    }
    const Unit& u = units[i];
    const std::string expr = render(m, u, names, -1);
    std::string lhs;
    for (const auto& v : u.outputs) {
      const std::string want = u.child && u.outputs.size() == 1 ? u.child->name : short_name(m, v);
      const std::string n = names.fresh(want);
      names.var[v] = n;
      lhs += (lhs.empty() ? "" : ", ") + n;
    }
    body += lhs + " = " + expr + "\n";
    ++i;
  }
  return body;
}

std::string NativeWriter::forward(const Module& m) {
  Names names;
  const bool root = m.path.empty();
  std::vector<std::string> args;
  std::vector<std::string> inputs = m.inputs;
  if (root) {
    inputs.clear();
    for (const auto& in : m_.inputs)
      if (!in.is_target) inputs.push_back(in.name);
  }
  const std::vector<Unit> units = units_of(m);
  std::vector<std::string> outputs = root ? m_.outputs : call_values(m, false);
  std::map<std::string, int> uses = count_uses(units, outputs);
  const bool variadic = !root && takes_variadic_inputs(inputs, units, uses);
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const std::string& v = inputs[k];
    std::string n;
    if (variadic)
      n.append("inputs[").append(std::to_string(k)).append("]");
    else if (!root && inputs.size() == 1 && !is_param(v))
      n = names.fresh(
          "x");  // one neutral name, so that blocks fed by different layers share a class
    else
      n = names.fresh(is_param(v) ? last_component(v) : short_name(m, v));
    names.var[v] = n;
    args.push_back(n);
  }
  std::string body = statements(m, units, uses, names);
  std::string ret;
  for (const auto& v : outputs) ret += (ret.empty() ? "" : ", ") + names.var.at(v);
  body += "return " + ret + "\n";
  if (variadic) {
    variadic_.insert(m.definition);
    spell_star_inputs(args, body);
  }
  const std::string sig = variadic ? "*inputs" : comma_list(args);
  return "def forward(self" + (sig.empty() ? "" : ", " + sig) + "):\n" + indent(body, 4);
}

// GCC 12 at -O3 reports a false -Wrestrict in std::string::replace (the "{x}" substitution
// below) since the writer's methods have external linkage; the same code in one file with
// internal linkage did not trip it. A known family of GCC 12 false positives (GCC bug 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
// checkpoint_sequential over the root's leading chain of top-level modules.
std::size_t NativeWriter::sequential_prefix(const Module& m, const std::vector<Unit>& units,
                                            Names& names, std::string& body) {
  std::vector<std::string> fns;
  std::size_t n = 0;
  for (; n < units.size(); ++n) {
    const Unit& u = units[n];
    if (u.outputs.size() != 1) break;
    if (u.child) {
      fns.push_back(attr_ref(attr_of(*u.child)));
    } else {
      Names scratch = names;
      fns.push_back("lambda h: " + [&] {
        std::string e = render(m, u, scratch, 0);
        e.replace(e.find("{x}"), 3, "h");
        return e;
      }());
    }
  }
  const std::string in = names.var.at(units.front().inputs.front());
  const std::string out = names.fresh("out");
  body += "# checkpoint_sequential: always the reentrant variant in PyTorch 1.13\n";
  body += out + " = checkpoint_sequential(\n    [";
  for (std::size_t k = 0; k < fns.size(); ++k) body += (k ? ", " : "") + fns[k];
  body += "],\n    " + std::to_string(c_.plan.segments) + ", " + in +
          (c_.settings.preserve_rng_state ? "" : ", preserve_rng_state=False") + ")\n";
  names.var[units[n - 1].outputs[0]] = out;
  return n;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace ckpt::pytorch_code_detail
