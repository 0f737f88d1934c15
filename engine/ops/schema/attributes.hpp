#pragma once

// The attributes of a graph node (kernel size, dim, eps, ...) and the view of a node that an
// op's kernel entry, its PyTorch spelling and its cost function read. Missing or mistyped
// attributes are errors naming the node.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ckpt {

using AttrValue =
    std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>, std::vector<double>>;
using Attributes = std::map<std::string, AttrValue>;

// A graph node as its op's row sees it.
struct OpCall {
  const std::string& name;  // unique in the graph, for messages
  const std::string& type;  // the op kind ("conv2d")
  const Attributes& attrs;
};

bool has_attr(const OpCall& n, const std::string& key);
std::int64_t attr_int(const OpCall& n, const std::string& key);
std::int64_t attr_int(const OpCall& n, const std::string& key, std::int64_t fallback);
double attr_double(const OpCall& n, const std::string& key);
double attr_double(const OpCall& n, const std::string& key, double fallback);
std::vector<std::int64_t> attr_ints(const OpCall& n, const std::string& key);
std::vector<std::int64_t> attr_ints(const OpCall& n, const std::string& key,
                                    const std::vector<std::int64_t>& fallback);
std::string attr_string(const OpCall& n, const std::string& key, const std::string& fallback);
// A 2-D attribute given as one or two values ("kernel": 3 or [3, 3]).
std::array<std::int64_t, 2> attr_pair(const OpCall& n, const std::string& key,
                                      std::array<std::int64_t, 2> fallback);
[[noreturn]] void attr_error(const OpCall& n, const std::string& key, const std::string& what);

}  // namespace ckpt
