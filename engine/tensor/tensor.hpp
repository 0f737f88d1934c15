#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/tensor/dtype.hpp"
#include "engine/tensor/shape.hpp"
#include "engine/tensor/storage.hpp"

namespace ckpt {

class Node;
class Tensor;

// How the tensor floor reaches autograd without depending on it (as c10 reaches libtorch's
// VariableHooks): the autograd floor installs these when it is linked in.
struct AutogradHooks {
  virtual ~AutogradHooks() = default;
  virtual void backward(const Tensor& root, const Tensor& gradient, bool retain_graph) const = 0;
};
void set_autograd_hooks(const AutogradHooks* hooks);
const AutogradHooks* autograd_hooks();

// Shared by a tensor and all its views, like PyTorch's version counter: an in-place op bumps
// it, and a saved tensor whose version moved on is an error at backward.
struct VersionCounter {
  std::uint32_t value = 0;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Strides strides;
  std::int64_t offset = 0;  // in elements
  DType dtype = DType::f32;
  std::shared_ptr<VersionCounter> version = std::make_shared<VersionCounter>();

  // Autograd. A leaf that requires grad has requires_grad set and no grad_fn; a non-leaf has a
  // grad_fn (and requires grad through it).
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;
  std::uint32_t output_nr = 0;
  std::weak_ptr<Node> grad_accumulator;
  std::shared_ptr<TensorImpl> grad;
  std::string name;
};

// A handle over shared_ptr<TensorImpl>: copies share the same tensor, as in libtorch.
// Ops are free functions (engine/ops); this class knows storage, shape and autograd state only.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // Factories draw from the current ledger (MemoryLedger::current()).
  static Tensor empty(const Shape& shape, DType dtype = DType::f32);
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32);
  static Tensor ones(const Shape& shape, DType dtype = DType::f32);
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f32);
  static Tensor scalar(double value, DType dtype = DType::f32);
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape);
  static Tensor from_vector(const std::vector<double>& values, const Shape& shape);
  static Tensor from_vector(const std::vector<std::int64_t>& values, const Shape& shape);
  static Tensor arange(std::int64_t n, DType dtype = DType::f32);

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  const Shape& shape() const { return ref().shape; }
  const Strides& strides() const { return ref().strides; }
  std::int64_t offset() const { return ref().offset; }
  std::int64_t dim() const { return static_cast<std::int64_t>(ref().shape.size()); }
  std::int64_t size(std::int64_t d) const;
  std::int64_t numel() const { return shape_numel(ref().shape); }
  DType dtype() const { return ref().dtype; }
  Device device() const { return ref().storage->device(); }
  // No data: a dry run's tensor (device.hpp). Kernels return right after their allocations.
  bool is_meta() const { return device() == Device::meta; }
  std::int64_t element_size() const { return static_cast<std::int64_t>(dtype_size(dtype())); }
  std::int64_t nbytes() const { return numel() * element_size(); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return ref().storage; }
  bool shares_storage(const Tensor& other) const;
  std::string str() const;  // "float32[2, 3]"

  // Host memory only. Throws std::logic_error on a meta tensor (a kernel that reaches for data
  // there has missed its dry-run return, and the dry run fails naming it instead of reading
  // nothing) and on a device tensor (a host loop that has no row in that device's kernel table
  // fails naming the device instead of reading device memory).
  template <typename T>
  T* data() const {
    check_dtype(dtype_of<T>());
    if (device() != Device::cpu) fail_host_data();
    return static_cast<T*>(ref().storage->data()) + ref().offset;
  }
  // The first element's address in its device's memory, for that device's kernel table.
  template <typename T>
  T* device_data() const {
    check_dtype(dtype_of<T>());
    return static_cast<T*>(ref().storage->data()) + ref().offset;
  }
  // The value of a one-element tensor, converted to double (not available on meta: throws;
  // read across the host boundary on a device).
  double item() const;
  // Values in row-major order (any layout, any dtype), for tests and exporters.
  std::vector<double> to_vector() const;

  // A tensor over the same storage with other geometry; no autograd (ops build on it).
  Tensor alias(const Shape& shape, const Strides& strides, std::int64_t offset) const;

  // Autograd.
  bool requires_grad() const { return ref().requires_grad || ref().grad_fn != nullptr; }
  Tensor& set_requires_grad(bool value);  // leaves only, floating only
  bool is_leaf() const { return ref().grad_fn == nullptr; }
  Tensor grad() const { return Tensor(ref().grad); }
  void set_grad(const Tensor& g) { ref().grad = g.impl_; }
  const std::shared_ptr<Node>& grad_fn() const { return ref().grad_fn; }
  std::uint32_t output_nr() const { return ref().output_nr; }
  // loss.backward(): accumulates into the leaves' .grad. `gradient` may be omitted for a
  // one-element tensor.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  // Same storage, no history: PyTorch's detach().
  Tensor detach() const;
  std::uint32_t version() const { return ref().version->value; }
  void bump_version() const { ++ref().version->value; }
  const std::string& name() const { return ref().name; }
  Tensor& set_name(std::string name);

 private:
  TensorImpl& ref() const;
  void check_dtype(DType expected) const;
  [[noreturn]] void fail_host_data() const;
  std::shared_ptr<TensorImpl> impl_;
};

using TensorList = std::vector<Tensor>;

}  // namespace ckpt
