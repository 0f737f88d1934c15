// ONNX import: TensorProtos as engine tensors, and weights kept in external data files.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "engine/kernels/kernels.hpp"
#include "engine/model/onnx_import.hpp"
#include "engine/model/onnx_tensors.hpp"

namespace ckpt::onnx_import {

namespace {

// A tensor of `shape` holding the elements stored as S (raw little-endian bytes or the typed
// repeated field), converted to T: written straight into the tensor's storage, since a model's
// weights can be hundreds of megabytes and every extra copy of them is felt at load.
template <typename S, typename T, typename Field>
Tensor read_values(const onnx::TensorProto& t, const Field& field, const Shape& shape,
                   const std::string& where) {
  const std::int64_t n = shape_numel(shape);
  // The element count is checked against the bytes the file actually holds before anything is
  // allocated: a corrupt or absurd shape must be an error, not a multi-terabyte allocation.
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    if (raw.size() % sizeof(S) != 0 || static_cast<std::int64_t>(raw.size() / sizeof(S)) != n)
      throw std::invalid_argument(where + ": its raw data holds " + std::to_string(raw.size()) +
                                  " bytes, its shape " + shape_str(shape) + " needs " +
                                  std::to_string(n) + " elements of " + std::to_string(sizeof(S)) +
                                  " bytes");
  } else if (field.size() != n) {
    throw std::invalid_argument(where + ": it holds " + std::to_string(field.size()) +
                                " values, its shape needs " + std::to_string(n));
  }
  Tensor out = Tensor::empty(shape, dtype_of<T>());
  if (n == 0) return out;
  T* o = out.data<T>();
  if (t.has_raw_data()) {
    const char* raw = t.raw_data().data();
    if constexpr (std::is_same_v<S, T>) {
      std::memcpy(o, raw, static_cast<std::size_t>(n) * sizeof(T));
    } else {
      for (std::int64_t i = 0; i < n; ++i) {
        S v;
        std::memcpy(&v, raw + i * static_cast<std::int64_t>(sizeof(S)), sizeof(S));
        o[i] = static_cast<T>(v);
      }
    }
    return out;
  }
  for (std::int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(field.Get(static_cast<int>(i)));
  return out;
}

}  // namespace

std::string type_name(int t) {
  return onnx::TensorProto_DataType_IsValid(t)
             ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t))
             : "unknown";
}

std::string absent_data(const onnx::TensorProto& t, const std::string& model_path) {
  namespace fs = std::filesystem;
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    for (const auto& e : t.external_data()) {
      if (e.key() != "location" || e.value().empty() || fs::path(e.value()).is_absolute()) continue;
      const fs::path folder = fs::absolute(fs::path(model_path)).parent_path();
      const fs::path file = (folder / e.value()).lexically_normal();
      // A location outside the model's folder is an error (with_external_data), never absent.
      const auto rel = file.lexically_relative(folder);
      if (rel.empty() || *rel.begin() == "..") continue;
      std::error_code ec;
      if (!fs::exists(file, ec) && !ec)
        return "its external data file '" + e.value() + "' is absent";
    }
    return "";
  }
  const std::int64_t n = shape_numel(Shape(t.dims().begin(), t.dims().end()));
  const bool holds_nothing = !t.has_raw_data() && t.float_data_size() == 0 &&
                             t.double_data_size() == 0 && t.int32_data_size() == 0 &&
                             t.int64_data_size() == 0 && t.uint64_data_size() == 0;
  return n > 0 && holds_nothing ? "it holds no data (initializers stripped)" : "";
}

// Models over 2 GB keep their weights in files beside the model (`location`, `offset`, `length`
// entries). The file must stay inside the model's folder: a location that leaves it, a missing
// file or a range the file does not hold is an error naming the tensor.
onnx::TensorProto with_external_data(const onnx::TensorProto& t, const std::string& model_path) {
  namespace fs = std::filesystem;
  const std::string what = model_path + ": tensor '" + t.name() + "'";
  std::string location;
  std::int64_t offset = 0, length = -1;
  for (const auto& e : t.external_data()) {
    try {
      if (e.key() == "location") location = e.value();
      if (e.key() == "offset") offset = std::stoll(e.value());
      if (e.key() == "length") length = std::stoll(e.value());
    } catch (const std::exception&) {
      throw std::invalid_argument(what + ": external data " + e.key() + " '" + e.value() +
                                  "' is not a number");
    }
  }
  if (location.empty())
    throw std::invalid_argument(what + ": keeps its data in an external file but names none");
  const fs::path folder = fs::absolute(fs::path(model_path)).parent_path();
  const fs::path file = (folder / location).lexically_normal();
  const auto rel = file.lexically_relative(folder);
  if (fs::path(location).is_absolute() || rel.empty() || *rel.begin() == "..")
    throw std::invalid_argument(what + ": its external data file '" + location +
                                "' is outside the model's folder");
  std::error_code ec;
  const auto size = static_cast<std::int64_t>(fs::file_size(file, ec));
  if (ec)
    throw std::invalid_argument(what + ": cannot read its external data file '" + file.string() +
                                "' (" + ec.message() + ")");
  if (length < 0) length = size - offset;
  if (offset < 0 || length < 0 || offset > size || length > size - offset)
    throw std::invalid_argument(what + ": bytes " + std::to_string(offset) + " to " +
                                std::to_string(offset + length) + " are outside its external " +
                                "data file '" + location + "' of " + std::to_string(size) +
                                " bytes");
  const std::int64_t needed = shape_numel(Shape(t.dims().begin(), t.dims().end()));
  std::ifstream in(file, std::ios::binary);
  onnx::TensorProto copy = t;
  copy.clear_external_data();
  copy.set_data_location(onnx::TensorProto_DataLocation_DEFAULT);
  // The byte count is checked against the shape by tensor_from_proto; a length far beyond
  // what any shape of the tensor could need is refused before reading it.
  if (needed >= 0 && length / 8 > needed + 8)
    throw std::invalid_argument(what + ": its external data range holds " + std::to_string(length) +
                                " bytes, far more than its shape needs");
  std::string raw(static_cast<std::size_t>(length), '\0');
  in.seekg(offset);
  if (!in.read(raw.data(), length))
    throw std::invalid_argument(what + ": reading its external data file '" + location +
                                "' failed");
  copy.set_raw_data(std::move(raw));
  return copy;
}

Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& where) {
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL)
    throw std::invalid_argument(where + ": tensor '" + t.name() +
                                "' keeps its data in an external file, which is not supported");
  const Shape shape(t.dims().begin(), t.dims().end());
  shape_numel(shape);  // an absurd shape is an error before anything else
  const std::string w = where + ": tensor '" + t.name() + "'";
  switch (t.data_type()) {
    case onnx::TensorProto_DataType_FLOAT:
      return read_values<float, float>(t, t.float_data(), shape, w);
    case onnx::TensorProto_DataType_DOUBLE:
      return read_values<double, double>(t, t.double_data(), shape, w);
    case onnx::TensorProto_DataType_INT64:
      return read_values<std::int64_t, std::int64_t>(t, t.int64_data(), shape, w);
    case onnx::TensorProto_DataType_INT32:
      return read_values<std::int32_t, std::int64_t>(t, t.int32_data(), shape, w);
    case onnx::TensorProto_DataType_BOOL:
      return read_values<std::uint8_t, std::int64_t>(t, t.int32_data(), shape, w);
    default:
      throw std::invalid_argument(w + " has element type " + type_name(t.data_type()) +
                                  ", which is not supported (FLOAT, DOUBLE, INT64, INT32, BOOL)");
  }
}

}  // namespace ckpt::onnx_import
