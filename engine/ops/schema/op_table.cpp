#include <algorithm>
#include <set>
#include <stdexcept>

#include "engine/ops/autocast.hpp"
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

const OpTable& OpTable::instance() {
  static const OpTable table = [] {
    OpTable t;
#define CKPTLAB_REGISTER_FAMILY(family) register_##family##_ops(t);
    CKPTLAB_OP_FAMILIES(CKPTLAB_REGISTER_FAMILY)
#undef CKPTLAB_REGISTER_FAMILY
#define CKPTLAB_REGISTER_ATEN(family) register_##family##_aten(t);
    CKPTLAB_ATEN_FAMILIES(CKPTLAB_REGISTER_ATEN)
#undef CKPTLAB_REGISTER_ATEN
    return t;
  }();
  return table;
}

void OpTable::add(OpSchema row) {
  const std::string type = row.type;
  for (const OnnxRule& rule : row.onnx) {
    const auto [first, last] = onnx_.equal_range(rule.op_type);
    for (auto it = first; it != last; ++it)
      if (rule.since <= it->second.until && it->second.since <= rule.until)
        throw std::logic_error(std::string("op table: ONNX ") + rule.op_type +
                               " has two rules for overlapping opsets (rows '" + type + "')");
    onnx_.emplace(rule.op_type, rule);
  }
  for (std::size_t i = 0; i < row.onnx_patterns.size(); ++i)
    patterns_.emplace(pattern_root_type(row.onnx_patterns[i]), std::pair(type, i));
  for (std::size_t i = 0; i < row.native_layers.size(); ++i)
    if (!layers_.emplace(row.native_layers[i].name, std::pair(type, i)).second)
      throw std::logic_error(std::string("op table: two rows build the native layer '") +
                             row.native_layers[i].name + "' (row '" + type + "')");
  if (!rows_.emplace(type, std::move(row)).second)
    throw std::logic_error("op table: two rows for op kind '" + type + "'");
}

// Op kinds that were renamed: a model or a caller that still names the old kind gets the row
// that replaced it (the 2-D convolutions, pools and resizes became the rank-generic ones).
namespace {
const std::string& current_kind(const std::string& type) {
  static const std::map<std::string, std::string> renamed{
      {"conv2d", "conv"},
      {"conv_transpose2d", "conv_transpose"},
      {"max_pool2d", "max_pool"},
      {"avg_pool2d", "avg_pool"},
      {"adaptive_avg_pool2d", "adaptive_avg_pool"},
      {"upsample_nearest2d", "upsample_nearest"},
      {"upsample_bilinear2d", "upsample_linear"}};
  auto it = renamed.find(type);
  return it == renamed.end() ? type : it->second;
}
}  // namespace

void OpTable::add_aten(const std::string& type, std::vector<AtenRule> rules) {
  auto row = rows_.find(current_kind(type));
  if (row == rows_.end())
    throw std::logic_error("op table: ATen rules for the unknown op kind '" + type + "'");
  for (const AtenRule& rule : rules) {
    if (!aten_.emplace(rule.name, rule).second)
      throw std::logic_error(std::string("op table: two rules for ATen op ") + rule.name +
                             " (row '" + type + "')");
    row->second.aten.push_back(rule);
  }
}

const AtenRule* OpTable::aten_rule(const std::string& name) const {
  auto it = aten_.find(name);
  return it == aten_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpTable::aten_names() const {
  std::vector<std::string> out;
  for (const auto& [name, rule] : aten_) out.push_back(name);
  return out;
}

const OpSchema* OpTable::find(const std::string& type) const {
  auto it = rows_.find(current_kind(type));
  // Rows with no kernel are ONNX load-time rules only (Shape, Constant), not op kinds.
  return it == rows_.end() || !it->second.kernel ? nullptr : &it->second;
}

std::vector<std::string> OpTable::types() const {
  std::vector<std::string> out;
  for (const auto& [type, row] : rows_)
    if (row.kernel) out.push_back(type);
  return out;
}

const OnnxRule* OpTable::onnx_rule(const std::string& onnx_type, std::int64_t opset) const {
  const auto [first, last] = onnx_.equal_range(onnx_type);
  for (auto it = first; it != last; ++it)
    if (it->second.since <= opset && opset <= it->second.until) return &it->second;
  return nullptr;
}

std::vector<std::pair<const OpSchema*, const OnnxPattern*>> OpTable::onnx_patterns(
    const std::string& onnx_type, std::int64_t opset) const {
  std::vector<std::pair<const OpSchema*, const OnnxPattern*>> out;
  const auto [first, last] = patterns_.equal_range(onnx_type);
  for (auto it = first; it != last; ++it) {
    const OpSchema& row = rows_.at(it->second.first);
    const OnnxPattern& p = row.onnx_patterns[it->second.second];
    if (p.since <= opset && opset <= p.until) out.emplace_back(&row, &p);
  }
  return out;
}

std::vector<std::string> OpTable::onnx_types() const {
  std::vector<std::string> out;
  for (const auto& [type, rule] : onnx_)
    if (out.empty() || out.back() != type) out.push_back(type);
  return out;
}

NativeLayerEntry OpTable::find_native_layer(const std::string& layer) const {
  const auto it = layers_.find(layer);
  if (it == layers_.end()) return {};
  const OpSchema& row = rows_.at(it->second.first);
  return {&row, &row.native_layers[it->second.second]};
}

std::vector<std::string> OpTable::native_layers() const {
  std::vector<std::string> out;
  for (const auto& [layer, where] : layers_) out.push_back(layer);
  return out;
}

std::vector<std::string> OpTable::policy_kinds() const {
  std::set<std::string> kinds;
  for (const auto& [type, row] : rows_)
    if (row.policy_kind.name) kinds.insert(row.policy_kind.name);
  return {kinds.begin(), kinds.end()};
}

std::vector<std::string> OpTable::types_of_policy_kind(const std::string& kind) const {
  std::vector<std::string> out;
  for (const auto& [type, row] : rows_)
    if (row.policy_kind.name && kind == row.policy_kind.name) out.push_back(type);
  return out;
}

std::vector<std::string> OpTable::aten_of_policy_kind(const std::string& kind) const {
  std::set<std::string> aten;
  for (const auto& [type, row] : rows_)
    if (row.policy_kind.name && kind == row.policy_kind.name)
      aten.insert(row.policy_kind.aten.begin(), row.policy_kind.aten.end());
  return {aten.begin(), aten.end()};
}

std::string describe_tensors(const TensorList& ts) {
  std::string s;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (i) s += ", ";
    s += ts[i].defined() ? ts[i].str() : "(none)";
  }
  return s;
}

TensorList run_op(const OpSchema& row, const OpCall& op, const TensorList& inputs) {
  const auto n = static_cast<int>(inputs.size());
  if (n < row.min_inputs || (row.max_inputs >= 0 && n > row.max_inputs))
    throw std::invalid_argument(
        "node '" + op.name + "' (" + op.type + "): takes " + std::to_string(row.min_inputs) +
        (row.max_inputs == row.min_inputs
             ? ""
             : " to " + (row.max_inputs < 0 ? std::string("any number of")
                                            : std::to_string(row.max_inputs))) +
        " inputs, got " + std::to_string(n));
  // Optional inputs come after the required ones; an absent required one would reach the
  // kernel as an undefined tensor (found by fuzz_onnx_model: a MatMul node with no inputs).
  for (int i = 0; i < std::min(n, row.min_inputs); ++i)
    if (!inputs[static_cast<std::size_t>(i)].defined())
      throw std::invalid_argument("node '" + op.name + "' (" + op.type + "): input " +
                                  std::to_string(i) + " is missing, and it takes at least " +
                                  std::to_string(row.min_inputs));
  try {
    // torch.autocast, where a run has it on: the row's inputs cast as its AutocastRule says.
    if (!autocast_state().enabled) return row.kernel(op, inputs);
    return row.kernel(op, autocast_inputs(row, inputs));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("node '" + op.name + "' (" + op.type + " on " +
                                describe_tensors(inputs) + "): " + e.what());
  } catch (const std::out_of_range& e) {
    throw std::out_of_range("node '" + op.name + "' (" + op.type + " on " +
                            describe_tensors(inputs) + "): " + e.what());
  }
}

}  // namespace ckpt
