// The native JSON format: the scenario (inputs, loss, seed, batch, default checkpoints, notes)
// around a tree of layers that json_builder expands. Syntax errors carry line and column.
#include <algorithm>
#include <sstream>

#include "engine/model/finalize.hpp"
#include "engine/model/json_builder.hpp"
#include "engine/model/load_notes.hpp"
#include "engine/model/loader.hpp"

namespace ckpt {

namespace {

using json_model::get_bool;
using json_model::get_int;
using json_model::get_string;
using json_model::json;
using json_model::JsonError;

std::string line_col(const std::string& text, std::size_t byte) {
  // nlohmann reports the 1-based position of the last byte it read.
  const std::size_t pos = std::min(byte == 0 ? 0 : byte - 1, text.size());
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < pos; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

void read_inputs(const json& doc, Model& m) {
  if (!doc.contains("inputs") || !doc.at("inputs").is_array() || doc.at("inputs").empty())
    throw JsonError("inputs", "give a list of inputs, each {\"name\", \"shape\"}");
  const json& inputs = doc.at("inputs");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const json& in = inputs[i];
    const std::string w = "inputs[" + std::to_string(i) + "]";
    if (!in.is_object()) throw JsonError(w, "must be an object {\"name\", \"shape\"}");
    InputInfo info;
    info.name = get_string(in, "name", w, "");
    if (info.name.empty()) throw JsonError(w, "needs a \"name\"");
    if (!in.contains("shape") || !in.at("shape").is_array())
      throw JsonError(w, "needs a \"shape\": a list of sizes, \"batch\" for the batch size");
    info.batched = false;
    for (const auto& d : in.at("shape")) {
      if (d == "batch") {
        info.shape.push_back(-1);
        info.batched = true;
      } else if (d.is_number_integer() && d.get<std::int64_t>() >= 0) {
        info.shape.push_back(d.get<std::int64_t>());
      } else {
        throw JsonError(w, "a shape entry must be a size or \"batch\", got " + d.dump());
      }
    }
    info.requires_grad = get_bool(in, "requires_grad", w, false);
    // Integer inputs: token ids drawn as class indices, or positions (torch.arange).
    info.classes = get_int(in, "classes", w, 0);
    info.arange = get_bool(in, "arange", w, false);
    if (in.contains("classes") && info.classes <= 0)
      throw JsonError(w, "\"classes\" must be positive");
    if (info.classes > 0 && info.arange)
      throw JsonError(w, "give \"classes\" (token ids) or \"arange\" (positions), not both");
    if (info.classes > 0 || info.arange) {
      info.dtype = DType::i64;
      if (info.requires_grad)
        throw JsonError(w, "an integer input (\"classes\", \"arange\") cannot require grad");
    }
    m.inputs.push_back(std::move(info));
  }
}

// The loss: "sum", "mean", or the model's own ({"type": "cross_entropy", "classes": 10}).
void read_loss(const json& doc, Model& m, json_model::Builder& b) {
  const json loss = doc.contains("loss") ? doc.at("loss") : json("sum");
  if (loss == "sum" || loss == "mean") {
    m.scenario.loss = loss == "sum" ? LossKind::sum : LossKind::mean;
    return;
  }
  if (!loss.is_object())
    throw JsonError("loss",
                    "must be \"sum\", \"mean\" or {\"type\": \"cross_entropy\" | "
                    "\"mse\", ...}, got " +
                        loss.dump());
  const std::string type = get_string(loss, "type", "loss", "");
  if (m.outputs.size() != 1)
    throw JsonError("loss", "a model loss needs exactly one model output, there are " +
                                std::to_string(m.outputs.size()));
  InputInfo target;
  target.name = "target";
  target.is_target = true;
  if (type == "cross_entropy") {
    target.classes = get_int(loss, "classes", "loss");
    if (target.classes <= 0) throw JsonError("loss", "\"classes\" must be positive");
    // A language model's targets: `per_example` tokens of each example, flattened as the
    // logits are (`F.cross_entropy(logits.view(-1, vocab), targets.view(-1))`).
    const std::int64_t per_example = get_int(loss, "per_example", "loss", 1);
    if (per_example <= 0) throw JsonError("loss", "\"per_example\" must be positive");
    target.shape = {-per_example};
    target.dtype = DType::i64;
  } else if (type == "mse") {
    target.shape = json_model::get_int_list(loss, "shape", "loss");
    for (auto& d : target.shape)
      if (d == 0) d = -1;
  } else {
    throw JsonError("loss", "unknown loss type \"" + type + "\" (cross_entropy, mse)");
  }
  m.inputs.push_back(target);
  const std::string op = type == "mse" ? "mse_loss" : "cross_entropy";
  m.scenario.loss = LossKind::model;
  m.scenario.loss_type = op;
  m.scenario.loss_value =
      b.emit_root(op, {m.outputs[0], "target"}, {{"reduction", std::string("mean")}}, "loss")[0];
}

void read_checkpoint(const json& doc, Model& m) {
  if (!doc.contains("checkpoint")) return;
  const json& c = doc.at("checkpoint");
  if (!c.is_object()) throw JsonError("checkpoint", "must be an object");
  if (c.contains("modules")) {
    for (const auto& p : c.at("modules")) {
      if (!p.is_string()) throw JsonError("checkpoint.modules", "must be module paths");
      m.scenario.default_checkpoints.push_back(p.get<std::string>());
    }
  }
  m.scenario.use_reentrant = get_bool(c, "use_reentrant", "checkpoint", true);
  m.scenario.preserve_rng_state = get_bool(c, "preserve_rng_state", "checkpoint", true);
  m.scenario.segments = static_cast<int>(get_int(c, "segments", "checkpoint", 0));
  if (m.scenario.segments < 0) throw JsonError("checkpoint", "\"segments\" must not be negative");
}

std::string read_notes(const json& doc) {
  if (!doc.contains("notes")) return {};
  const json& n = doc.at("notes");
  if (n.is_string()) return n.get<std::string>();
  if (!n.is_array()) throw JsonError("notes", "must be a string or a list of lines");
  std::string s;
  for (const auto& line : n) {
    if (!line.is_string()) throw JsonError("notes", "must be a string or a list of lines");
    s += line.get<std::string>() + "\n";
  }
  return s;
}

std::shared_ptr<Model> build(const json& doc, const std::string& source) {
  if (!doc.is_object()) throw JsonError("document", "the top level must be an object");
  const std::string format = get_string(doc, "format", "format", "checkpoint-lab-model");
  if (format != "checkpoint-lab-model")
    throw JsonError("format", "expected \"checkpoint-lab-model\", got \"" + format + "\"");
  const std::int64_t version = get_int(doc, "version", "version", 1);
  if (version != 1)
    throw JsonError("version",
                    "this build reads version 1, the file is version " + std::to_string(version));
  auto m = std::make_shared<Model>();
  m->source = source;
  m->format = "json";
  m->name = get_string(doc, "name", "name", "model");
  m->scenario.title = get_string(doc, "title", "title", m->name);
  const json seed = doc.contains("seed") ? doc.at("seed") : json(0);
  if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<std::int64_t>() >= 0))
    throw JsonError("seed", "must be a non-negative integer");
  m->scenario.seed = seed.get<std::uint64_t>();
  m->scenario.batch = get_int(doc, "batch", "batch", 1);
  if (m->scenario.batch <= 0) throw JsonError("batch", "must be positive");
  m->scenario.notes = read_notes(doc);
  m->scenario.dry_run_only = get_bool(doc, "dry_run_only", "dry_run_only", false);
  read_inputs(doc, *m);
  if (!doc.contains("model")) throw JsonError("model", "missing: the root layer");
  // Parameters are made once here, in a ledger of their own (runs copy them into theirs).
  LedgerScope ledger(std::make_shared<MemoryLedger>());
  json_model::Builder builder(*m, m->scenario.seed);
  std::vector<std::string> input_names;
  for (const auto& in : m->inputs) input_names.push_back(in.name);
  m->outputs = builder.build_root(doc.at("model"), input_names);
  read_loss(doc, *m, builder);
  read_checkpoint(doc, *m);
  finalize_model(*m);
  for (const auto& path : m->scenario.default_checkpoints) {
    const Module* mod = m->find_module(path);
    if (!mod) throw JsonError("checkpoint.modules", "no module \"" + path + "\"");
    if (!mod->checkpointable)
      throw JsonError("checkpoint.modules",
                      "\"" + path + "\" is not checkpointable: " + mod->not_checkpointable_reason);
  }
  return m;
}

}  // namespace

std::shared_ptr<Model> load_model_json_text(const std::string& text, const std::string& source,
                                            const LoadOptions& options) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 2: "
    // prefix: the position is given in our own form.
    const auto colon = what.find(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    throw std::invalid_argument(source + ":" + line_col(text, e.byte) +
                                ": JSON syntax error: " + what);
  } catch (const json::exception& e) {
    // Not a syntax error but a value nlohmann cannot hold, such as a number beyond a double
    // (found by fuzz_json_model: 33333E33333333333).
    throw std::invalid_argument(source + ": " + e.what());
  }
  std::shared_ptr<Model> model;
  try {
    model = build(doc, source);
  } catch (const JsonError& e) {
    throw std::invalid_argument(source + ": " + e.what());
  } catch (const json::exception& e) {
    throw std::invalid_argument(source + ": " + e.what());
  } catch (const std::exception& e) {
    // Whatever building the model throws (an absurd size's allocation, a shape rule) is this
    // file's error and says so (found by fuzz_json_model).
    const std::string what = e.what();
    if (what.rfind(source + ":", 0) == 0) throw;
    throw std::invalid_argument(source + ": " + what);
  }
  freeze_parameters(*model, options.frozen);
  return model;
}

}  // namespace ckpt
