// The layers of the native format that are one op: the op table's rows build them
// (NativeLayer, beside each op in engine/ops/*_rows.cpp); here the builder hands a row the layer
// as a NativeLayerCall: its keys, inputs and scope. The composite blocks are in json_blocks.cpp.
#include "engine/model/json_builder.hpp"
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt::json_model {

class Builder::LayerCall final : public NativeLayerCall {
 public:
  LayerCall(Builder& b, const std::string& type, const json& j, const std::string& where, Scope& s,
            const Values& in, std::string hint)
      : b_(b), type_(type), j_(j), where_(where), s_(s), in_(in), hint_(std::move(hint)) {}

  const std::string& type() const override { return type_; }
  bool has(const char* key) const override { return j_.contains(key); }
  std::int64_t get_int(const char* key) const override {
    return json_model::get_int(j_, key, where_);
  }
  std::int64_t get_int(const char* key, std::int64_t fallback) const override {
    return json_model::get_int(j_, key, where_, fallback);
  }
  double get_double(const char* key, double fallback) const override {
    return json_model::get_double(j_, key, where_, fallback);
  }
  bool get_bool(const char* key, bool fallback) const override {
    return json_model::get_bool(j_, key, where_, fallback);
  }
  std::string get_string(const char* key, const std::string& fallback) const override {
    return json_model::get_string(j_, key, where_, fallback);
  }
  std::vector<std::int64_t> get_ints(const char* key, std::size_t n,
                                     std::int64_t fallback) const override {
    return json_model::get_ints(j_, key, where_, n, fallback);
  }
  std::vector<std::int64_t> get_int_list(const char* key) const override {
    return json_model::get_int_list(j_, key, where_);
  }
  const Values& inputs() const override { return in_; }
  Values expect(std::size_t n, const std::string& what) const override {
    return Builder::expect(in_, n, where_, what);
  }
  std::string param(const std::string& local, const Shape& shape,
                    const std::function<Tensor()>& make, bool requires_grad, bool buffer) override {
    return b_.param(s_, local, shape, make, requires_grad, buffer);
  }
  std::string lookup_param(const std::string& name) const override {
    return b_.lookup_param(s_, name, where_);
  }
  std::string lookup(const std::string& name) const override { return b_.lookup(s_, name, where_); }
  Generator& generator() override { return b_.gen_; }
  Values emit_op(const std::string& type, const Values& inputs, Attributes attrs) override {
    return b_.emit(s_, type, inputs, std::move(attrs), hint_);
  }
  const std::string& where() const override { return where_; }

 private:
  Builder& b_;
  const std::string& type_;
  const json& j_;
  const std::string& where_;
  Scope& s_;
  const Values& in_;
  std::string hint_;  // the op's label when the layer is not a module of its own
};

Values Builder::layer(const NativeLayerEntry& entry, const std::string& type, const json& j,
                      const std::string& where, Scope& s, const Values& in, bool own_module) {
  LayerCall call(*this, type, j, where, s, in, own_module ? "" : type);
  if (entry.layer->build) return entry.layer->build(call);
  return call.emit_op(entry.row->type, call.one(), {});
}

}  // namespace ckpt::json_model
