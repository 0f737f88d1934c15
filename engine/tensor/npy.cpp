#include "engine/tensor/npy.hpp"

#include "engine/tensor/reduced_float.hpp"

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <type_traits>

namespace ckpt {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

std::string descr_of(DType d) {
  switch (d) {
    case DType::f32:
      return "<f4";
    case DType::f64:
      return "<f8";
    case DType::i64:
      return "<i8";
    case DType::b8:
      return "|b1";
    case DType::f16:
      return "<f2";
    case DType::i32:
      return "<i4";
    case DType::bf16:
      break;  // NumPy has no bfloat16 (save_npy refuses it)
  }
  return "?";
}

// The bytes left in `in`: what the shape may claim, checked before anything is allocated (a
// corrupt header must not ask for terabytes).
std::int64_t remaining(std::istream& in) {
  const auto here = in.tellg();
  in.seekg(0, std::ios::end);
  const auto end = in.tellg();
  in.seekg(here);
  return static_cast<std::int64_t>(end - here);
}

void check_payload(const std::string& path, const Shape& shape, DType dtype, std::int64_t left) {
  std::int64_t bytes = static_cast<std::int64_t>(dtype_size(dtype));
  for (const std::int64_t d : shape) {
    if (d < 0) fail(path, "negative dimension in shape " + shape_str(shape));
    if (d > 0 && bytes > left / d)
      fail(path, "file is shorter than its shape " + shape_str(shape) + " needs");
    bytes *= d;
  }
  if (bytes > left) fail(path, "file is shorter than its shape " + shape_str(shape) + " needs");
}

Tensor read_npy(std::istream& in, const std::string& path);

}  // namespace

Tensor load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open file");
  return read_npy(in, path);
}

Tensor load_npy_bytes(std::string_view bytes, const std::string& source) {
  std::istringstream in{std::string(bytes), std::ios::binary};
  return read_npy(in, source);
}

namespace {

// The header dictionary after the magic and the version's length field.
std::string read_header(std::istream& in, const std::string& path) {
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    fail(path, "not a .npy file (bad magic)");
  std::uint32_t header_len = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) fail(path, "truncated header");
    header_len = b[0] | (b[1] << 8);
  } else if (magic[6] == 2 || magic[6] == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) fail(path, "truncated header");
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
  } else {
    fail(path, "unsupported .npy version " + std::to_string(magic[6]));
  }
  if (header_len > (1u << 20)) fail(path, "header too large");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) fail(path, "truncated header");
  return header;
}

DType dtype_of_descr(const std::string& header, const std::string& path) {
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']*)'")))
    fail(path, "header has no 'descr'");
  const std::string descr = m[1];
  if (descr == "<f4") return DType::f32;
  if (descr == "<f8") return DType::f64;
  if (descr == "<i8") return DType::i64;
  if (descr == "|b1") return DType::b8;
  fail(path, "unsupported dtype '" + descr + "' (supported: <f4, <f8, <i8, |b1)");
}

Tensor read_npy(std::istream& in, const std::string& path) {
  const std::string header = read_header(in, path);
  const DType dtype = dtype_of_descr(header, path);
  std::smatch m;
  if (std::regex_search(header, m, std::regex("'fortran_order':\\s*True")))
    fail(path, "Fortran-ordered arrays are not supported");
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)")))
    fail(path, "header has no 'shape'");
  Shape shape;
  std::stringstream ss(m[1].str());
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    if (item.empty()) continue;
    try {
      shape.push_back(std::stoll(item));
    } catch (const std::exception&) {
      fail(path, "bad shape entry '" + item + "'");
    }
  }
  check_payload(path, shape, dtype, remaining(in));
  Tensor t;
  try {
    t = Tensor::empty(shape, dtype);
  } catch (const std::invalid_argument& e) {
    fail(path, e.what());
  }
  if (t.nbytes() && !in.read(static_cast<char*>(t.storage()->data()), t.nbytes()))
    fail(path, "file is shorter than its shape " + shape_str(shape) + " needs");
  if (dtype == DType::b8) {
    // A bool is one byte holding 0 or 1; anything else would be read as neither.
    const auto* bytes = static_cast<const unsigned char*>(t.storage()->data());
    for (std::int64_t i = 0; i < t.nbytes(); ++i)
      if (bytes[i] > 1)
        fail(path, "bool element " + std::to_string(i) + " holds the byte " +
                       std::to_string(bytes[i]) + ", not 0 or 1");
  }
  return t;
}

}  // namespace

void save_npy(const std::string& path, const Tensor& t) {
  if (t.dtype() == DType::bf16)
    fail(path,
         "NumPy has no bfloat16: cast the tensor to float32 first (exactly, every bfloat16 is "
         "a float32)");
  std::ofstream out(path, std::ios::binary);
  if (!out) fail(path, "cannot write file");
  std::string shape = "(";
  for (std::size_t i = 0; i < t.shape().size(); ++i)
    shape += std::to_string(t.shape()[i]) +
             (t.shape().size() == 1 ? "," : (i + 1 < t.shape().size() ? ", " : ""));
  shape += ")";
  std::string header =
      "{'descr': '" + descr_of(t.dtype()) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  out.write("\x93NUMPY\x01\x00", 8);
  const auto len = static_cast<std::uint16_t>(header.size());
  const char lb[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(lb, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  const std::vector<double> values = t.to_vector();
  dispatch_every(t.dtype(), [&]<typename T>() {
    // One byte per bool (std::vector<bool> packs bits).
    using Stored = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;
    std::vector<Stored> v(values.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<Stored>(values[i]);
    out.write(reinterpret_cast<const char*>(v.data()),
              static_cast<std::streamsize>(v.size() * sizeof(Stored)));
  });
  if (!out) fail(path, "write failed");
}

}  // namespace ckpt
