// Captures (docs/capture_format.md): the header, the values table, the sources (inputs,
// parameters, buffers, constants), the module instances, the ops in dispatch order (translated
// in capture_ops.cpp), the outputs and the loss. Errors name the file and the entry.
#include "engine/model/capture_loader.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>
#include <unordered_set>

#include "engine/model/capture_import.hpp"
#include "engine/model/finalize.hpp"
#include "engine/tensor/memory_ledger.hpp"

namespace ckpt {

namespace capture_import {

namespace {

constexpr const char* kFormat = "ckptlab-capture";

const json& member(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    throw CaptureError(where, std::string("needs \"") + key + "\"");
  return j.at(key);
}

std::int64_t integer(const json& j, const std::string& where) {
  if (!j.is_number_integer()) throw CaptureError(where, "must be an integer, got " + j.dump());
  return j.get<std::int64_t>();
}

std::string text(const json& j, const std::string& where) {
  if (!j.is_string()) throw CaptureError(where, "must be a string, got " + j.dump());
  return j.get<std::string>();
}

std::vector<unsigned char> base64(const std::string& s, const std::string& where) {
  static const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> out;
  out.reserve(s.size() / 4 * 3);
  std::uint32_t acc = 0;
  int bits = 0;
  std::size_t i = 0;
  for (; i < s.size() && s[i] != '='; ++i) {
    const auto pos = alphabet.find(s[i]);
    if (pos == std::string::npos)
      throw CaptureError(where, "is not base64 (character " + std::to_string(i) + ")");
    acc = (acc << 6) | static_cast<std::uint32_t>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<unsigned char>((acc >> bits) & 0xFF));
    }
  }
  for (; i < s.size(); ++i)
    if (s[i] != '=') throw CaptureError(where, "is not base64 (text after the padding)");
  return out;
}

}  // namespace

DType dtype_named(const std::string& name, const std::string& where) {
  for (DType d :
       {DType::f32, DType::f64, DType::i64, DType::b8, DType::bf16, DType::f16, DType::i32})
    if (name == dtype_name(d)) return d;
  throw CaptureError(where, "dtype '" + name +
                                "' is not supported (float32, float64, bfloat16, float16, "
                                "int64, int32, bool are)");
}

Importer::Importer(Model& model, const json& doc, std::string source)
    : m_(model), doc_(doc), source_(std::move(source)) {}

void Importer::read_header() {
  if (!doc_.is_object()) throw CaptureError("the document", "must be a JSON object");
  const std::string format = text(member(doc_, "format", "format"), "format");
  if (format != kFormat)
    throw CaptureError("format",
                       std::string("expected \"") + kFormat + "\", got \"" + format + "\"");
  const std::int64_t version = integer(member(doc_, "version", "version"), "version");
  if (version != 1)
    throw CaptureError(
        "version", "this build reads version 1, the file is version " + std::to_string(version));
  if (doc_.contains("torch") && doc_.at("torch").is_string()) torch_ = doc_.at("torch");
  m_.name = doc_.contains("model") && doc_.at("model").is_string()
                ? doc_.at("model").get<std::string>()
                : "capture";
  const std::string device = doc_.contains("device") && doc_.at("device").is_string()
                                 ? doc_.at("device").get<std::string>()
                                 : "cpu";
  m_.scenario.title = m_.name + " (captured from PyTorch " + torch_ + ")";
  m_.scenario.notes = "Captured by ckptlab_capture from PyTorch " + torch_ + " on " + device +
                      ": every ATen op as PyTorch dispatched it in one training forward.";
}

void Importer::read_values() {
  const json& values = member(doc_, "values", "values");
  if (!values.is_array()) throw CaptureError("values", "must be a list");
  recorded_.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::string w = "values[" + std::to_string(i) + "]";
    const json& v = values[i];
    if (integer(member(v, "id", w), w + ".id") != static_cast<std::int64_t>(i))
      throw CaptureError(w + ".id", "must be " + std::to_string(i) + " (ids count from 0)");
    Recorded r;
    const json& shape = member(v, "shape", w);
    if (!shape.is_array()) throw CaptureError(w + ".shape", "must be a list of sizes");
    for (const auto& d : shape) {
      const std::int64_t size = integer(d, w + ".shape");
      if (size < 0) throw CaptureError(w + ".shape", "a size cannot be negative");
      r.shape.push_back(size);
    }
    if (v.contains("storage") && v.at("storage").is_number_integer())
      r.storage = v.at("storage").get<std::int64_t>();
    const std::string dtype = text(member(v, "dtype", w), w + ".dtype");
    try {
      r.dtype = dtype_named(dtype, w + ".dtype");
    } catch (const CaptureError&) {
      r.unsupported_dtype = dtype;  // an error where the value is used, not here
    }
    recorded_.push_back(std::move(r));
  }
}

void Importer::read_sources() {
  // Weights are made once here, in a ledger of their own (runs copy them into theirs).
  LedgerScope ledger(std::make_shared<MemoryLedger>());
  bool all_data = true;
  const auto source = [&](const char* list, auto&& add) {
    if (!doc_.contains(list)) return;
    const json& entries = doc_.at(list);
    if (!entries.is_array()) throw CaptureError(list, "must be a list");
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const std::string w = std::string(list) + "[" + std::to_string(i) + "]";
      const json& e = entries[i];
      const std::string name = text(member(e, "name", w), w + ".name");
      const std::int64_t id = integer(member(e, "value", w), w + ".value");
      if (name.empty() || name[0] == '~') throw CaptureError(w + ".name", "is not a usable name");
      if (id < 0 || id >= static_cast<std::int64_t>(recorded_.size()))
        throw CaptureError(w + ".value", "is not a value id");
      if (graph_.count(id)) throw CaptureError(w + ".value", "is already a source");
      if (probes_.count(name)) throw CaptureError(w + ".name", "'" + name + "' is named twice");
      const Recorded& r = recorded_[static_cast<std::size_t>(id)];
      if (!r.unsupported_dtype.empty())
        dtype_named(r.unsupported_dtype, w + " (values[" + std::to_string(id) + "].dtype)");
      Tensor value;
      if (e.contains("data")) {
        const auto bytes = base64(text(e.at("data"), w + ".data"), w + ".data");
        if (r.dtype != DType::f32 && r.dtype != DType::f64 && r.dtype != DType::i64 &&
            r.dtype != DType::b8)
          throw CaptureError(w + ".data", std::string("values of dtype ") + dtype_name(r.dtype) +
                                              " are not read (float32, float64, int64, bool are)");
        double needed = static_cast<double>(dtype_size(r.dtype));
        for (std::int64_t d : r.shape) needed *= static_cast<double>(d);
        if (static_cast<double>(bytes.size()) != needed)
          throw CaptureError(w + ".data", "holds " + std::to_string(bytes.size()) + " bytes; " +
                                              dtype_name(r.dtype) + shape_str(r.shape) + " needs " +
                                              std::to_string(static_cast<std::uint64_t>(needed)));
        value = Tensor::empty(r.shape, r.dtype);
        std::memcpy(value.storage()->data(), bytes.data(), bytes.size());
      } else {
        all_data = false;
        DeviceScope meta(Device::meta);  // no weights: a dry run needs their shapes alone
        value = Tensor::empty(r.shape, r.dtype);
      }
      {
        DeviceScope meta(Device::meta);
        probes_[name] = Tensor::empty(r.shape, r.dtype);
      }
      graph_[id] = name;
      if (r.storage >= 0) storage_of_[name] = r.storage;
      add(e, w, name, r, value);
    }
  };
  source("inputs", [&](const json& e, const std::string& w, const std::string& name,
                       const Recorded& r, const Tensor&) {
    InputInfo in;
    in.name = name;
    in.shape = r.shape;
    in.dtype = r.dtype;
    in.batched = !r.shape.empty();
    if (e.contains("classes")) {
      in.classes = integer(e.at("classes"), w + ".classes");
      if (in.classes <= 0) throw CaptureError(w + ".classes", "must be positive");
    }
    m_.inputs.push_back(in);
  });
  const auto weight = [&](bool buffer) {
    return [&, buffer](const json& e, const std::string& w, const std::string& name,
                       const Recorded&, const Tensor& value) {
      ParameterInfo p;
      p.name = name;
      p.initial = value;
      p.is_buffer = buffer;
      p.requires_grad = !buffer && (!e.contains("requires_grad") || e.at("requires_grad") == true);
      if (!buffer && e.contains("requires_grad") && !e.at("requires_grad").is_boolean())
        throw CaptureError(w + ".requires_grad", "must be true or false");
      m_.parameters.push_back(std::move(p));
      statics_.insert(name);
    };
  };
  source("parameters", weight(false));
  source("buffers", weight(true));
  source("constants", [&](const json& e, const std::string&, const std::string& name,
                          const Recorded&, const Tensor& value) {
    m_.constants[name] = value;
    // A number the forward wrapped (torch.tensor(k) of a slice assignment): rules may read it.
    if (e.contains("data") && value.numel() == 1)
      producers_[name] = AtenNode::Producer{"constant", {}, {{"value", value.item()}}};
  });
  if (m_.inputs.empty()) throw CaptureError("inputs", "the capture has no input");
  // Without weights only a dry run can run it (any size: the parameters are shapes).
  m_.scenario.dry_run_only = !all_data;
  m_.scenario.batch = m_.inputs[0].shape.empty() ? 1 : m_.inputs[0].shape[0];
  m_.scenario.batch_fixed = true;
}

void Importer::read_modules() {
  modules_[""] = &m_.root;
  if (!doc_.contains("modules")) return;
  const json& mods = doc_.at("modules");
  if (!mods.is_array()) throw CaptureError("modules", "must be a list");
  for (std::size_t i = 0; i < mods.size(); ++i) {
    const std::string w = "modules[" + std::to_string(i) + "]";
    const json& e = mods[i];
    const std::string path = text(member(e, "path", w), w + ".path");
    if (path.empty() || modules_.count(path))
      throw CaptureError(w + ".path", "'" + path + "' is empty or listed twice");
    const auto dot = path.rfind('.');
    const std::string parent = dot == std::string::npos ? "" : path.substr(0, dot);
    auto up = modules_.find(parent);
    if (up == modules_.end())
      throw CaptureError(w + ".path", "its parent '" + parent + "' is not listed before it");
    auto mod = std::make_unique<Module>();
    mod->path = path;
    mod->name = dot == std::string::npos ? path : path.substr(dot + 1);
    mod->definition = e.contains("definition") ? text(e.at("definition"), w + ".definition") : path;
    mod->kind = e.contains("class") ? text(e.at("class"), w + ".class") : "Module";
    mod->instance = e.contains("instance") ? integer(e.at("instance"), w + ".instance") : 0;
    modules_[path] = mod.get();
    up->second->children.push_back(std::move(mod));
  }
}

void Importer::read_outputs() {
  const json& outs = member(doc_, "outputs", "outputs");
  if (!outs.is_array() || outs.empty()) throw CaptureError("outputs", "must list value ids");
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const std::string w = "outputs[" + std::to_string(i) + "]";
    const std::string& g = graph_of(integer(outs[i], w), source_ + ": " + w);
    if (pending_.count(g) || statics_.count(g) || m_.find_input(g))
      throw CaptureError(w, "is not computed by the model's ops");
    if (std::find(m_.outputs.begin(), m_.outputs.end(), g) == m_.outputs.end())
      m_.outputs.push_back(g);
  }
  m_.scenario.loss = LossKind::sum;
  if (!doc_.contains("loss")) return;
  const json& loss = doc_.at("loss");
  const std::string kind = text(member(loss, "kind", "loss"), "loss.kind");
  if (kind == "sum" || kind == "mean") {
    m_.scenario.loss = kind == "sum" ? LossKind::sum : LossKind::mean;
  } else if (kind == "model") {
    m_.scenario.loss = LossKind::model;
    m_.scenario.loss_value =
        graph_of(integer(member(loss, "value", "loss"), "loss.value"), source_ + ": loss.value");
    m_.scenario.loss_type = "captured";
  } else {
    throw CaptureError("loss.kind", "must be \"sum\", \"mean\" or \"model\", got \"" + kind + "\"");
  }
}

// Ops whose outputs nothing reads (aten::t of a weight that linear took instead, the reserve
// tensors and statistics only autograd reads) are left out, and what only they read. An in-place
// op writes into a storage that later ops may read through another view of it (Swin's slice
// assignments into its mask): it stays when a kept later op reads that storage.
void Importer::drop_unused_ops() {
  std::unordered_set<std::string> live(m_.outputs.begin(), m_.outputs.end());
  if (!m_.scenario.loss_value.empty()) live.insert(m_.scenario.loss_value);
  std::unordered_set<std::int64_t> live_storages;
  const auto storage = [&](const std::string& graph) {
    auto it = storage_of_.find(graph);
    return it == storage_of_.end() ? std::int64_t{-1} : it->second;
  };
  for (const auto& v : live)
    if (storage(v) >= 0) live_storages.insert(storage(v));
  std::vector<bool> keep(m_.ops.size(), false);
  for (std::size_t i = m_.ops.size(); i-- > 0;) {
    const OpNode& op = m_.ops[i];
    keep[i] = std::any_of(op.outputs.begin(), op.outputs.end(), [&](const std::string& o) {
      return live.count(o) > 0 || (!op.op_type.empty() && op.op_type.back() == '_' &&
                                   storage(o) >= 0 && live_storages.count(storage(o)) > 0);
    });
    if (keep[i])
      for (const auto& in : op.inputs) {
        live.insert(in);
        if (storage(in) >= 0) live_storages.insert(storage(in));
      }
  }
  std::vector<OpNode> kept;
  for (std::size_t i = 0; i < m_.ops.size(); ++i)
    if (keep[i]) kept.push_back(std::move(m_.ops[i]));
  m_.ops = std::move(kept);
  // Constants only dropped ops read (a number a rule took as an attribute) are not the run's.
  for (auto c = m_.constants.begin(); c != m_.constants.end();)
    c = live.count(c->first) ? std::next(c) : m_.constants.erase(c);
  for (auto& in : m_.inputs) {
    auto r = index_ranges_.find(in.name);
    if (r != index_ranges_.end() && in.classes == 0) in.classes = r->second;
  }
}

// Modules that ran no kept op (an nn.Dropout(0.0), a container of such) are not shown.
void Importer::prune_modules(Module& m) {
  std::unordered_set<std::string> used;
  for (const auto& op : m_.ops)
    for (std::string p = op.module; !p.empty();) {
      if (!used.insert(p).second) break;
      const auto dot = p.rfind('.');
      p = dot == std::string::npos ? "" : p.substr(0, dot);
    }
  const std::function<void(Module&)> prune = [&](Module& mod) {
    auto& c = mod.children;
    c.erase(std::remove_if(
                c.begin(), c.end(),
                [&](const std::unique_ptr<Module>& child) { return !used.count(child->path); }),
            c.end());
    for (auto& child : c) prune(*child);
  };
  prune(m);
}

void Importer::run() {
  read_header();
  read_values();
  read_sources();
  read_modules();
  const json& ops = member(doc_, "ops", "ops");
  if (!ops.is_array()) throw CaptureError("ops", "must be a list");
  for (std::size_t i = 0; i < ops.size(); ++i) translate(i);
  read_outputs();
  drop_unused_ops();
  prune_modules(m_.root);
}

}  // namespace capture_import

bool looks_like_capture(const std::string& bytes) {
  const std::string head = bytes.substr(0, 4096);
  const auto key = head.find("\"format\"");
  if (key == std::string::npos) return false;
  const auto value = head.find_first_not_of(" \t\r\n:", key + 8);
  return value != std::string::npos &&
         head.compare(value, std::strlen(capture_import::kFormat) + 2,
                      std::string("\"") + capture_import::kFormat + "\"") == 0;
}

std::shared_ptr<Model> load_model_capture_text(const std::string& text, const std::string& source) {
  using capture_import::json;
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    std::string what = e.what();
    const auto colon = what.find(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    throw std::invalid_argument(source + ": not a complete capture (JSON: " + what + ")");
  }
  auto m = std::make_shared<Model>();
  m->source = source;
  m->format = "capture";
  try {
    capture_import::Importer(*m, doc, source).run();
    finalize_model(*m);
  } catch (const json::exception& e) {
    throw std::invalid_argument(source + ": " + e.what());
  } catch (const std::exception& e) {
    const std::string what = e.what();
    if (what.rfind(source + ":", 0) == 0) throw;
    throw std::invalid_argument(source + ": " + what);
  }
  return m;
}

std::vector<std::string> supported_aten_ops() {
  return OpTable::instance().aten_names();
}

}  // namespace ckpt
