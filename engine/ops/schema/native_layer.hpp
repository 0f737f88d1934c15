#pragma once

// A layer of the native JSON format (samples/README.md) as the op row that builds it sees it.
// The JSON loader (model floor) implements the call; the rules live in the rows beside the ops
// they emit (ops floor), as the ONNX rules do, so that one place says everything about an op.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/ops/schema/attributes.hpp"
#include "engine/tensor/generator.hpp"
#include "engine/tensor/tensor.hpp"

namespace ckpt {

using ValueNames = std::vector<std::string>;

class NativeLayerCall {
 public:
  virtual ~NativeLayerCall() = default;

  // The layer's "type" ("relu6", "sum").
  virtual const std::string& type() const = 0;

  // The layer object's keys, typed; a missing required key or a wrong type is an error naming
  // the place in the document.
  virtual bool has(const char* key) const = 0;
  virtual std::int64_t get_int(const char* key) const = 0;
  virtual std::int64_t get_int(const char* key, std::int64_t fallback) const = 0;
  virtual double get_double(const char* key, double fallback) const = 0;
  virtual bool get_bool(const char* key, bool fallback) const = 0;
  virtual std::string get_string(const char* key, const std::string& fallback) const = 0;
  // An integer or a list of `n` integers (kernel: 3 or [3, 3]).
  virtual std::vector<std::int64_t> get_ints(const char* key, std::size_t n,
                                             std::int64_t fallback) const = 0;
  virtual std::vector<std::int64_t> get_int_list(const char* key) const = 0;

  // The values the layer is given; exactly `n` of them, or an error ("takes 2 inputs (a, b)").
  virtual const ValueNames& inputs() const = 0;
  virtual ValueNames expect(std::size_t n, const std::string& what) const = 0;
  ValueNames one() const { return expect(1, ""); }

  // A parameter (or buffer) of the layer's module, made by `make` unless it is shared.
  virtual std::string param(const std::string& local, const Shape& shape,
                            const std::function<Tensor()>& make, bool requires_grad = true,
                            bool buffer = false) = 0;
  // A parameter declared by an enclosing layer, or a value named in an enclosing scope.
  virtual std::string lookup_param(const std::string& name) const = 0;
  virtual std::string lookup(const std::string& name) const = 0;
  // The stream that draws parameters' initial values.
  virtual Generator& generator() = 0;

  // Emits an op of kind `type` in the layer's module; returns its outputs.
  virtual ValueNames emit_op(const std::string& type, const ValueNames& inputs,
                             Attributes attrs) = 0;

  // The layer's place in the document ("model.layers[3] (relu6)").
  virtual const std::string& where() const = 0;
  // An error at the layer: throws std::invalid_argument("<where>: " + what).
  [[noreturn]] void fail(const std::string& what) const;
};

struct NativeLayer {
  const char* name = nullptr;  // {"type": name}
  // The torch.nn class a module of this layer shows as ("ReLU6"); null: the type, capitalised.
  const char* module_class = nullptr;
  // A layer with parameters is always a module of its own; the others are inline ops of their
  // module unless named.
  bool parameters = false;
  // Reads the layer's keys and emits its op; null: the row's op on one input, no keys.
  ValueNames (*build)(NativeLayerCall& call) = nullptr;
};

}  // namespace ckpt
