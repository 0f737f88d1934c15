#include "engine/model/loader.hpp"

#include "engine/model/onnx_import.hpp"

#include "engine/model/onnx_import.hpp"

#include <cctype>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ckpt {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot open the file");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw std::runtime_error(path + ": cannot read the file");
  return ss.str();
}

bool looks_like_json(const std::string& bytes) {
  for (unsigned char c : bytes) {
    if (std::isspace(c)) continue;
    return c == '{';
  }
  return false;
}

}  // namespace

std::shared_ptr<Model> load_model(const std::string& path) {
  const std::string bytes = read_file(path);
  if (bytes.empty()) throw std::invalid_argument(path + ": the file is empty");
  if (looks_like_json(bytes)) return load_model_json_text(bytes, path);
  return load_model_onnx_bytes(bytes, path);
}

std::vector<std::string> supported_onnx_ops() {
  return onnx_import::Importer::supported();
}

}  // namespace ckpt
