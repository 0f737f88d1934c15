#include "engine/ops/schema/attributes.hpp"

#include <stdexcept>

namespace ckpt {

namespace {
const AttrValue* find_attr(const OpCall& n, const std::string& key) {
  auto it = n.attrs.find(key);
  return it == n.attrs.end() ? nullptr : &it->second;
}
}  // namespace

void attr_error(const OpCall& n, const std::string& key, const std::string& what) {
  throw std::invalid_argument("node '" + n.name + "' (" + n.type + "): attribute '" + key + "' " +
                              what);
}

bool has_attr(const OpCall& n, const std::string& key) {
  return find_attr(n, key) != nullptr;
}

std::int64_t attr_int(const OpCall& n, const std::string& key) {
  const AttrValue* v = find_attr(n, key);
  if (!v) attr_error(n, key, "is missing");
  if (auto p = std::get_if<std::int64_t>(v)) return *p;
  attr_error(n, key, "must be an integer");
}

std::int64_t attr_int(const OpCall& n, const std::string& key, std::int64_t fallback) {
  return find_attr(n, key) ? attr_int(n, key) : fallback;
}

double attr_double(const OpCall& n, const std::string& key) {
  const AttrValue* v = find_attr(n, key);
  if (!v) attr_error(n, key, "is missing");
  if (auto p = std::get_if<double>(v)) return *p;
  if (auto p = std::get_if<std::int64_t>(v)) return static_cast<double>(*p);
  attr_error(n, key, "must be a number");
}

double attr_double(const OpCall& n, const std::string& key, double fallback) {
  return find_attr(n, key) ? attr_double(n, key) : fallback;
}

std::vector<std::int64_t> attr_ints(const OpCall& n, const std::string& key) {
  const AttrValue* v = find_attr(n, key);
  if (!v) attr_error(n, key, "is missing");
  if (auto p = std::get_if<std::vector<std::int64_t>>(v)) return *p;
  if (auto p = std::get_if<std::int64_t>(v)) return {*p};
  attr_error(n, key, "must be a list of integers");
}

std::vector<std::int64_t> attr_ints(const OpCall& n, const std::string& key,
                                    const std::vector<std::int64_t>& fallback) {
  return find_attr(n, key) ? attr_ints(n, key) : fallback;
}

std::string attr_string(const OpCall& n, const std::string& key, const std::string& fallback) {
  const AttrValue* v = find_attr(n, key);
  if (!v) return fallback;
  if (auto p = std::get_if<std::string>(v)) return *p;
  attr_error(n, key, "must be a string");
}

std::array<std::int64_t, 2> attr_pair(const OpCall& n, const std::string& key,
                                      std::array<std::int64_t, 2> fallback) {
  if (!has_attr(n, key)) return fallback;
  const auto v = attr_ints(n, key);
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() != 2) attr_error(n, key, "must have 1 or 2 values");
  return {v[0], v[1]};
}

}  // namespace ckpt
