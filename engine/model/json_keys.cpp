#include <algorithm>
#include <cmath>

#include "engine/model/json_builder.hpp"

// Typed access to a layer object's keys, with errors that say where.

namespace ckpt::json_model {

std::int64_t get_int(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw JsonError(where, std::string("missing \"") + key + "\"");
  const json& v = j.at(key);
  if (!v.is_number_integer())
    throw JsonError(where, std::string("\"") + key + "\" must be an integer, got " + v.dump());
  return v.get<std::int64_t>();
}

std::int64_t get_int(const json& j, const char* key, const std::string& where,
                     std::int64_t fallback) {
  return j.contains(key) ? get_int(j, key, where) : fallback;
}

double get_double(const json& j, const char* key, const std::string& where, double fallback) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (!v.is_number())
    throw JsonError(where, std::string("\"") + key + "\" must be a number, got " + v.dump());
  return v.get<double>();
}

bool get_bool(const json& j, const char* key, const std::string& where, bool fallback) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (!v.is_boolean())
    throw JsonError(where, std::string("\"") + key + "\" must be true or false, got " + v.dump());
  return v.get<bool>();
}

std::string get_string(const json& j, const char* key, const std::string& where,
                       const std::string& fallback) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (!v.is_string())
    throw JsonError(where, std::string("\"") + key + "\" must be a string, got " + v.dump());
  return v.get<std::string>();
}

std::vector<std::int64_t> get_int_list(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw JsonError(where, std::string("missing \"") + key + "\"");
  const json& v = j.at(key);
  if (v.is_number_integer()) return {v.get<std::int64_t>()};
  if (!v.is_array() ||
      !std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_number_integer(); }))
    throw JsonError(where,
                    std::string("\"") + key + "\" must be a list of integers, got " + v.dump());
  return v.get<std::vector<std::int64_t>>();
}

std::vector<std::int64_t> get_ints(const json& j, const char* key, const std::string& where,
                                   std::size_t n, std::int64_t fallback) {
  if (!j.contains(key)) return std::vector<std::int64_t>(n, fallback);
  auto v = get_int_list(j, key, where);
  if (v.size() == 1) return std::vector<std::int64_t>(n, v[0]);
  if (v.size() != n)
    throw JsonError(where, std::string("\"") + key + "\" must be an integer or a list of " +
                               std::to_string(n) + ", got " + j.at(key).dump());
  return v;
}

}  // namespace ckpt::json_model
