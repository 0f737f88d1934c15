#include "engine/model/loader.hpp"

#include "engine/model/capture_loader.hpp"
#include "engine/model/load_notes.hpp"
#include "engine/model/onnx_import.hpp"

#include <cctype>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ckpt {

namespace {

// The whole file in one string, read once into its final place (a stringstream copied a
// 500 MB model twice).
std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) throw std::runtime_error(path + ": cannot open the file");
  const std::streamoff size = f.tellg();
  std::string bytes;
  if (size > 0) {
    bytes.resize(static_cast<std::size_t>(size));
    f.seekg(0);
    f.read(bytes.data(), size);
    if (f.gcount() != size) throw std::runtime_error(path + ": cannot read the file");
  } else {
    // Not a regular file (a pipe, /proc): read to its end.
    f.clear();
    f.seekg(0);
    std::ostringstream ss;
    ss << f.rdbuf();
    bytes = ss.str();
  }
  if (f.bad()) throw std::runtime_error(path + ": cannot read the file");
  return bytes;
}

bool looks_like_json(const std::string& bytes) {
  for (unsigned char c : bytes) {
    if (std::isspace(c)) continue;
    return c == '{';
  }
  return false;
}

}  // namespace

std::shared_ptr<Model> load_model(const std::string& path, const LoadOptions& options) {
  const std::string bytes = read_file(path);
  if (bytes.empty()) throw std::invalid_argument(path + ": the file is empty");
  if (looks_like_json(bytes) && looks_like_capture(bytes)) {
    auto model = load_model_capture_text(bytes, path);
    freeze_parameters(*model, options.frozen);
    return model;
  }
  if (looks_like_json(bytes)) return load_model_json_text(bytes, path, options);
  return load_model_onnx_file(
      bytes, path, [path] { return read_file(path); }, options);
}

std::vector<std::string> supported_onnx_ops() {
  return onnx_import::Importer::supported();
}

}  // namespace ckpt
