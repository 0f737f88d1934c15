#include "tests/fuzz/fuzz_entries.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include "engine/model/capture_loader.hpp"
#include "engine/model/loader.hpp"
#include "engine/tensor/device.hpp"
#include "engine/tensor/npy.hpp"
#include "ui/layout/dot_format.hpp"

namespace ckpt::fuzz {

namespace {

std::string text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A rejection must say what it rejected: the loaders promise messages that start with the
// source's name (engine/model/loader.hpp, engine/tensor/npy.hpp).
[[noreturn]] void finding(const char* target, const std::string& what) {
  std::fprintf(stderr, "fuzz %s: %s\n", target, what.c_str());
  std::abort();
}

template <typename F>
void expect_named_error(const char* target, const std::string& source, F&& read) {
  try {
    read();
  } catch (const std::exception& e) {
    const std::string_view msg = e.what();
    if (!source.empty() && msg.find(source) == std::string_view::npos)
      finding(target, "an error that does not name '" + source + "': " + std::string(msg));
  }
}

// A small graph of the shape the graph view lays out: two clusters, one nested, and edges
// within and across them.
const ui::LayoutGraph& layout_graph() {
  static const ui::LayoutGraph g = [] {
    ui::LayoutGraph graph;
    graph.clusters = {{"c0", "features", ""}, {"c1", "block", "c0"}};
    graph.nodes = {
        {"n0", 80, 30, ""}, {"n1", 72, 36, "c0"}, {"n2", 72, 36, "c1"}, {"n3", 60, 20, "c1"}};
    graph.edges = {{"n0", "n1"}, {"n1", "n2"}, {"n2", "n3"}, {"n1", "n3"}};
    return graph;
  }();
  return g;
}

}  // namespace

void onnx_model(const std::uint8_t* data, std::size_t size) {
  expect_named_error("onnx_model", "fuzz.onnx",
                     [&] { load_model_onnx_bytes(text(data, size), "fuzz.onnx"); });
}

// Drawing a model's weights is not reading its file, and a mutated file may declare a valid
// network of 60 million parameters (a DenseNet of growth rate 512) whose drawing alone outlasts
// -timeout under ASan, or draw a big block's weights before an error further on. Each input is
// loaded on the meta device first, which checks everything and draws nothing, and loaded again
// for real when its parameters are few enough to draw. A model that needs values at load (a
// causal mask folded into a constant) cannot be built on the meta device: it is loaded for real.
constexpr std::int64_t kMaxDrawnElements = std::int64_t{1} << 22;

void json_model(const std::uint8_t* data, std::size_t size) {
  expect_named_error("json_model", "fuzz.json", [&] {
    std::int64_t elements = 0;
    try {
      DeviceScope meta(Device::meta);
      const auto checked = load_model_json_text(text(data, size), "fuzz.json");
      for (const auto& p : checked->parameters) elements += p.initial.numel();
    } catch (const std::exception& e) {
      // Any other rejection is the answer; values asked for on the meta device are not.
      if (std::string_view(e.what()).find("asked for on the meta device") == std::string_view::npos)
        throw;
    }
    if (elements <= kMaxDrawnElements) load_model_json_text(text(data, size), "fuzz.json");
  });
}

void capture_model(const std::uint8_t* data, std::size_t size) {
  // Weights come only with their bytes (bounded by the input); shapes alone are meta tensors.
  expect_named_error("capture_model", "fuzz.capture.json",
                     [&] { load_model_capture_text(text(data, size), "fuzz.capture.json"); });
}

void npy(const std::uint8_t* data, std::size_t size) {
  expect_named_error("npy", "fuzz.npy", [&] {
    load_npy_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  });
}

void dot_json(const std::uint8_t* data, std::size_t size) {
  // dot's output names no file; any std::exception with a message is the named error.
  expect_named_error("dot_json", "", [&] { ui::parseDotJson(text(data, size), layout_graph()); });
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"onnx_model", onnx_model},       {"json_model", json_model},
      {"capture_model", capture_model}, {"npy", npy},
      {"dot_json", dot_json},           {"memory_snapshot", memory_snapshot}};
  return all;
}

}  // namespace ckpt::fuzz
