#include "engine/tensor/tensor.hpp"

#include "engine/tensor/reduced_float.hpp"

#include <atomic>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace ckpt {

namespace {

std::atomic<const AutogradHooks*> g_autograd_hooks{nullptr};

Tensor make_contiguous(const Shape& shape, DType dtype) {
  const std::int64_t n = shape_numel(shape);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(
      MemoryLedger::current(), n * static_cast<std::int64_t>(dtype_size(dtype)), current_device());
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

// A new contiguous tensor's bytes from host memory, on whichever device it lives.
void write_from_host(const Tensor& t, const void* host) {
  const Backend& b = backend(t.device());
  if (b.computes && t.nbytes())
    b.write(t.storage()->data(), host, static_cast<std::size_t>(t.nbytes()));
}

// `fill(p, n)` writes a new contiguous tensor's n values: in place on the host, through a
// staging buffer on a device (outside the ledger, as PyTorch's host staging is outside
// torch.cuda.memory_allocated).
template <typename T, typename F>
void write_values(const Tensor& t, F&& fill) {
  if (!backend(t.device()).computes) return;
  const std::int64_t n = t.numel();
  if (t.device() == Device::cpu) {
    fill(t.data<T>(), n);
    return;
  }
  // An array, not a vector: std::vector<bool> packs bits.
  const auto staging = std::make_unique<T[]>(static_cast<std::size_t>(n));
  fill(staging.get(), n);
  write_from_host(t, staging.get());
}

template <typename T>
Tensor from_values(const std::vector<T>& values, const Shape& shape) {
  if (static_cast<std::int64_t>(values.size()) != shape_numel(shape))
    throw std::invalid_argument("from_vector: " + std::to_string(values.size()) +
                                " values do not fill shape " + shape_str(shape));
  Tensor t = make_contiguous(shape, dtype_of<T>());
  write_from_host(t, values.data());
  return t;
}

}  // namespace

TensorImpl& Tensor::ref() const {
  if (!impl_) throw std::logic_error("use of an undefined tensor");
  return *impl_;
}

void Tensor::check_dtype(DType expected) const {
  if (dtype() != expected)
    throw std::invalid_argument(std::string("tensor data requested as ") + dtype_name(expected) +
                                " but the tensor is " + dtype_name(dtype()));
}

void Tensor::fail_host_data() const {
  if (is_meta())
    throw std::logic_error("the values of " + str() +
                           " were asked for on the meta device (a dry run " +
                           "has shapes and bytes, not values)");
  throw std::logic_error("the values of " + str() + " live on the " + device_name(device()) +
                         " device, and this kernel runs on the host: it has no " +
                         device_name(device()) + " row in the kernel table yet");
}

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  return make_contiguous(shape, dtype);
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) {
  Tensor t = make_contiguous(shape, dtype);
  const Backend& b = backend(t.device());
  if (b.computes) b.zero(t.storage()->data(), static_cast<std::size_t>(t.nbytes()));
  return t;
}

Tensor Tensor::ones(const Shape& shape, DType dtype) {
  return full(shape, 1.0, dtype);
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype) {
  Tensor t = make_contiguous(shape, dtype);
  dispatch_every(dtype, [&]<typename T>() {
    write_values<T>(t, [&](T* p, std::int64_t n) {
      for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(value);
    });
  });
  return t;
}

Tensor Tensor::scalar(double value, DType dtype) {
  return full({}, value, dtype);
}

Tensor Tensor::from_vector(const std::vector<float>& v, const Shape& s) {
  return from_values(v, s);
}
Tensor Tensor::from_vector(const std::vector<double>& v, const Shape& s) {
  return from_values(v, s);
}
Tensor Tensor::from_vector(const std::vector<std::int64_t>& v, const Shape& s) {
  return from_values(v, s);
}

Tensor Tensor::arange(std::int64_t n, DType dtype) {
  Tensor t = make_contiguous({n}, dtype);
  dispatch_all(dtype, [&]<typename T>() {
    write_values<T>(t, [](T* p, std::int64_t count) {
      for (std::int64_t i = 0; i < count; ++i) p[i] = static_cast<T>(i);
    });
  });
  return t;
}

std::int64_t Tensor::size(std::int64_t d) const {
  if (dim() == 0)
    throw std::invalid_argument("size: dimension specified as " + std::to_string(d) +
                                " but tensor has no dimensions");
  return ref().shape[static_cast<std::size_t>(wrap_dim(d, dim(), "size"))];
}

bool Tensor::is_contiguous() const {
  const auto& s = ref().shape;
  const auto& st = ref().strides;
  std::int64_t expected = 1;
  for (auto i = static_cast<std::int64_t>(s.size()) - 1; i >= 0; --i) {
    const auto k = static_cast<std::size_t>(i);
    if (s[k] == 1) continue;
    if (st[k] != expected) return false;
    expected *= s[k];
  }
  return true;
}

bool Tensor::shares_storage(const Tensor& other) const {
  return defined() && other.defined() && storage() == other.storage();
}

std::string Tensor::str() const {
  return std::string(dtype_name(dtype())) + shape_str(shape());
}

double Tensor::item() const {
  if (numel() != 1)
    throw std::invalid_argument("item(): tensor of shape " + shape_str(shape()) +
                                " has more than one element");
  return to_vector()[0];
}

std::vector<double> Tensor::to_vector() const {
  const std::int64_t n = numel();
  std::vector<double> out(static_cast<std::size_t>(n));
  if (n == 0) return out;
  const auto& s = shape();
  const auto& st = strides();
  const std::size_t nd = s.size();
  std::vector<std::int64_t> idx(nd, 0);
  dispatch_every(dtype(), [&]<typename T>() {
    // A device tensor's whole storage span is read to the host first (outside the ledger).
    std::unique_ptr<T[]> staging;  // not a vector: std::vector<bool> packs bits
    const T* base = nullptr;
    if (device() == Device::cpu) {
      base = data<T>();
    } else {
      const Backend& b = backend(device());
      if (!b.computes) fail_host_data();
      std::int64_t span = 1;
      for (std::size_t d = 0; d < nd; ++d) span += (s[d] - 1) * st[d];
      staging = std::make_unique<T[]>(static_cast<std::size_t>(span));
      b.read(staging.get(), device_data<T>(), static_cast<std::size_t>(span) * sizeof(T));
      base = staging.get();
    }
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t off = 0;
      for (std::size_t d = 0; d < nd; ++d) off += idx[d] * st[d];
      out[static_cast<std::size_t>(i)] = static_cast<double>(base[off]);
      for (auto d = static_cast<std::int64_t>(nd) - 1; d >= 0; --d) {
        const auto k = static_cast<std::size_t>(d);
        if (++idx[k] < s[k]) break;
        idx[k] = 0;
      }
    }
  });
  return out;
}

Tensor Tensor::alias(const Shape& shape, const Strides& strides, std::int64_t offset) const {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = storage();
  impl->shape = shape;
  impl->strides = strides;
  impl->offset = offset;
  impl->dtype = dtype();
  impl->version = this->ref().version;
  return Tensor(std::move(impl));
}

Tensor& Tensor::set_requires_grad(bool value) {
  if (!is_leaf())
    throw std::runtime_error(
        "you can only change requires_grad flags of leaf variables. If you want to use a computed "
        "variable in a subgraph that doesn't require differentiation use var_no_grad = "
        "var.detach().");
  if (value && !is_floating(dtype()))
    throw std::runtime_error("only Tensors of floating point dtype can require gradients");
  ref().requires_grad = value;
  return *this;
}

void set_autograd_hooks(const AutogradHooks* hooks) {
  g_autograd_hooks.store(hooks);
}

const AutogradHooks* autograd_hooks() {
  return g_autograd_hooks.load();
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  const AutogradHooks* hooks = autograd_hooks();
  if (!hooks)
    throw std::logic_error(
        "Tensor::backward: the autograd library is not linked into this program");
  hooks->backward(*this, gradient, retain_graph);
}

Tensor Tensor::detach() const {
  Tensor t = alias(shape(), strides(), offset());
  t.impl()->name = ref().name;
  return t;
}

Tensor& Tensor::set_name(std::string name) {
  ref().name = std::move(name);
  return *this;
}

}  // namespace ckpt
