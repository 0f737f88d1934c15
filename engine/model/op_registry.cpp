#include "engine/model/op_registry.hpp"

namespace ckpt {

const OpKind* find_op_kind(const std::string& type) {
  return OpTable::instance().find(type);
}

std::vector<std::string> op_kinds() {
  return OpTable::instance().types();
}

TensorList run_op_node(const OpKind& kind, const OpNode& node, const TensorList& inputs) {
  return run_op(kind, op_call(node), inputs);
}

bool has_attr(const OpNode& n, const std::string& key) {
  return has_attr(op_call(n), key);
}
std::int64_t attr_int(const OpNode& n, const std::string& key) {
  return attr_int(op_call(n), key);
}
std::int64_t attr_int(const OpNode& n, const std::string& key, std::int64_t fallback) {
  return attr_int(op_call(n), key, fallback);
}
double attr_double(const OpNode& n, const std::string& key) {
  return attr_double(op_call(n), key);
}
double attr_double(const OpNode& n, const std::string& key, double fallback) {
  return attr_double(op_call(n), key, fallback);
}
std::vector<std::int64_t> attr_ints(const OpNode& n, const std::string& key) {
  return attr_ints(op_call(n), key);
}
std::vector<std::int64_t> attr_ints(const OpNode& n, const std::string& key,
                                    const std::vector<std::int64_t>& fallback) {
  return attr_ints(op_call(n), key, fallback);
}
std::string attr_string(const OpNode& n, const std::string& key, const std::string& fallback) {
  return attr_string(op_call(n), key, fallback);
}

}  // namespace ckpt
