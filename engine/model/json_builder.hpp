#pragma once

// Internal to the native JSON loader: expands a tree of layers (samples/README.md) into the
// ops, parameters and module tree of a Model. Included only by engine/model's .cpp files.

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/model/model.hpp"
#include "engine/ops/schema/op_schema.hpp"
#include "engine/tensor/generator.hpp"

namespace ckpt::json_model {

using nlohmann::json;
using Values = std::vector<std::string>;

// A semantic error at a place in the document ("model.layers[3].out"); the loader prefixes it
// with the file name.
struct JsonError : std::invalid_argument {
  JsonError(const std::string& where, const std::string& what)
      : std::invalid_argument(where + ": " + what) {}
};

// Typed access to a layer object's keys, with errors that say where.
std::int64_t get_int(const json& j, const char* key, const std::string& where);
std::int64_t get_int(const json& j, const char* key, const std::string& where,
                     std::int64_t fallback);
double get_double(const json& j, const char* key, const std::string& where, double fallback);
bool get_bool(const json& j, const char* key, const std::string& where, bool fallback);
std::string get_string(const json& j, const char* key, const std::string& where,
                       const std::string& fallback);
// An integer or a list of `n` integers (kernel: 3 or [3, 3]).
std::vector<std::int64_t> get_ints(const json& j, const char* key, const std::string& where,
                                   std::size_t n, std::int64_t fallback);
std::vector<std::int64_t> get_int_list(const json& j, const char* key, const std::string& where);

class Builder {
 public:
  Builder(Model& model, std::uint64_t seed);

  // Expands the root layer (a container) into model.root; `inputs` are the model inputs,
  // bound by name. Returns the model's outputs.
  Values build_root(const json& layer, const Values& inputs);
  // Emits an op into the root module (the loss).
  Values emit_root(const std::string& type, const Values& inputs, Attributes attrs,
                   const std::string& hint);

 private:
  struct Scope {
    Module* module = nullptr;
    std::string def;  // definition path: parameter names hang off it (shared by instances)
    Scope* up = nullptr;
    std::map<std::string, std::string> names;   // local value name -> graph value
    std::map<std::string, std::string> params;  // declared parameter -> parameter name
  };
  // How a repeated layer is named: instance `instance` of definition `def`.
  struct Naming {
    std::string name;
    std::string def;
    std::int64_t instance = 0;
  };

  Values expand(const json& j, const std::string& where, Scope& s, const Values& in,
                std::size_t index, const Naming* naming);
  Values run_layers(const json& layers, const std::string& where, Scope& s, Values cur);
  Values container(const json& j, const std::string& where, Scope& s, const Values& in,
                   const std::string& name, const Naming* naming, const std::string& kind);
  // A layer that is one op, built by its op-table row (json_layers.cpp); `own_module`: the
  // layer is a module of its own (else its op is inline in `s`, labelled by its type).
  class LayerCall;
  Values layer(const NativeLayerEntry& entry, const std::string& type, const json& j,
               const std::string& where, Scope& s, const Values& in, bool own_module);

  Values residual(const json& j, const std::string& where, Scope& s, const Values& in);
  Values dense_block(const json& j, const std::string& where, Scope& s, const Values& in);
  Values dense_layer(const json& j, const std::string& where, Scope& s, const Values& features,
                     std::int64_t in_channels);
  Values transition(const json& j, const std::string& where, Scope& s, const Values& in);
  Values lstm(const json& j, const std::string& where, Scope& s, const Values& in);
  Values attention(const json& j, const std::string& where, Scope& s, const Values& in);
  Values repeat(const json& j, const std::string& where, Scope& s, const Values& in);
  // The Llama family (json_llama.cpp).
  Values rmsnorm(const json& j, const std::string& where, Scope& s, const Values& in);
  Values gated_mlp(const json& j, const std::string& where, Scope& s, const Values& in);
  Values llama_attention(const json& j, const std::string& where, Scope& s, const Values& in);
  Values tied_linear(const json& j, const std::string& where, Scope& s, const Values& in);
  std::pair<std::string, std::string> rotary_tables(std::int64_t seq, std::int64_t head_dim,
                                                    double theta, const std::string& where);
  Values apply_rotary(Scope& s, const Values& x, const std::string& cos, const std::string& sin,
                      std::int64_t head_dim, const std::string& name);

  Scope child(Scope& s, const std::string& name, const std::string& kind, const json* layer,
              const std::string& where, const Naming* naming = nullptr);
  // A module layer built from a config: linear, conv2d, batchnorm2d, relu, ... by name.
  Values module_layer(Scope& s, const std::string& name, const json& config,
                      const std::string& where, const Values& in);
  Values emit(Scope& s, const std::string& type, const Values& inputs, Attributes attrs,
              const std::string& hint, int outputs = 1);
  std::string param(Scope& s, const std::string& local, const Shape& shape,
                    const std::function<Tensor()>& make, bool requires_grad = true,
                    bool buffer = false);
  void declare_params(const json& j, const std::string& where, Scope& s);
  std::string lookup(const Scope& s, const std::string& name, const std::string& where) const;
  std::string lookup_param(const Scope& s, const std::string& name, const std::string& where) const;
  std::string unique_name(const std::string& base);
  static Values expect(const Values& in, std::size_t n, const std::string& where,
                       const std::string& what);

  Model& model_;
  Generator gen_;
  std::unordered_set<std::string> used_names_;
  std::unordered_map<std::string, std::int64_t> next_suffix_;
  std::unordered_map<std::string, std::size_t> param_index_;
  Scope root_;
};

}  // namespace ckpt::json_model
