#pragma once

// Internal to the capture loader (capture_loader.cpp reads the document, capture_ops.cpp
// translates the ops): the state of one load.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/model/model.hpp"
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt::capture_import {

using nlohmann::json;

// A problem at a place in the document ("ops[12].args.self"); the loader prefixes the file.
struct CaptureError : std::invalid_argument {
  CaptureError(const std::string& where, const std::string& what)
      : std::invalid_argument(where + ": " + what) {}
};

// What PyTorch recorded of one value.
struct Recorded {
  Shape shape;
  DType dtype = DType::f32;
  std::string unsupported_dtype;  // a dtype the engine has not (uint8): fine if never used
  std::int64_t storage = -1;      // the storage PyTorch's tensor viewed (-1: not recorded)
};

class Importer {
 public:
  Importer(Model& model, const json& doc, std::string source);
  void run();

 private:
  friend class CapturedOp;
  void read_header();
  void read_values();
  void read_sources();
  void read_modules();
  void translate(std::size_t index);
  void read_outputs();
  void drop_unused_ops();
  void prune_modules(Module& m);

  // The graph value of capture value `id` as op `where` reads it.
  const std::string& graph_of(std::int64_t id, const std::string& where) const;
  std::string op_name(const std::string& module, const std::string& type);

  Model& m_;
  const json& doc_;
  std::string source_;
  std::string torch_ = "?";
  std::vector<Recorded> recorded_;                             // by value id
  std::unordered_map<std::int64_t, std::string> graph_;        // value id -> graph value
  std::unordered_map<std::int64_t, std::string> unavailable_;  // value id -> why
  std::unordered_map<std::string, Tensor> probes_;             // graph value -> meta tensor
  std::unordered_map<std::string, Attributes> pending_;        // pending graph values
  std::unordered_map<std::string, AtenNode::Producer> producers_;
  std::set<std::string> statics_;  // parameters and buffers
  std::map<std::string, Module*> modules_;
  std::unordered_map<std::string, std::int64_t> name_counts_;
  std::unordered_map<std::string, std::int64_t> index_ranges_;  // input -> classes
  // graph value -> the capture's storage it is a view of (an in-place write into one view of a
  // storage is read through the others: drop_unused_ops keeps it).
  std::unordered_map<std::string, std::int64_t> storage_of_;
};

DType dtype_named(const std::string& name, const std::string& where);

}  // namespace ckpt::capture_import
