// ONNX import: the public load functions (parsing the bytes, loading at another batch); the
// Importer that walks the graph is in onnx_importer.cpp.
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>

#include "engine/autograd/grad_mode.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/model/finalize.hpp"
#include "engine/model/load_notes.hpp"
#include "engine/model/loader.hpp"
#include "engine/model/onnx_import.hpp"

namespace ckpt {

namespace {

// The model's bytes again, for loading it at another batch.
using Reread = std::function<std::shared_ptr<const std::string>()>;

// What the Notes pane says of an ONNX model, from what the importer did with it: which exported
// subgraphs run as the one op PyTorch runs (and so keep what that op keeps), and otherwise that
// every node keeps its own tensors.
static std::string onnx_model_notes(const Model& m) {
  std::map<std::string, std::pair<std::size_t, std::size_t>> fused;  // op -> (ops, nodes)
  for (const OpNode& op : m.ops)
    if (!op.fused.empty()) {
      auto& [ops, nodes] = fused[op.op_type];
      ++ops;
      nodes += op.fused.size();
    }
  std::string notes =
      "An ONNX model. Its memory figures are those of the exported graph, as the engine runs "
      "it.\n";
  if (fused.empty())
    return notes +
           "\nThe importer ran every exported node as an op of its own, each keeping its own "
           "tensors for backward; none was recognised as a subgraph that PyTorch runs as one op.\n";
  std::string list;
  std::size_t ops = 0;
  for (const auto& [type, counts] : fused) {
    list += (list.empty() ? "" : ", ") + type + " ×" + std::to_string(counts.first) + " (from " +
            std::to_string(counts.second) + " nodes)";
    ops += counts.first;
  }
  return notes + "\nThe importer recognised " + std::to_string(ops) +
         " exported subgraphs as ops PyTorch runs as one, and runs each as that op, keeping what "
         "it keeps for backward: " +
         list + ". Every other node runs as an op of its own.\n";
}

std::shared_ptr<Model> load_onnx(const std::string& bytes, const std::string& source,
                                 const std::map<std::string, Tensor>& bind, std::int64_t batch,
                                 Reread reread, const Model* weights_of,
                                 const LoadOptions& options);

// m->at_batch for a model whose batch axis is dynamic: loads the file again at that batch.
void install_at_batch(const std::shared_ptr<Model>& m, const std::string& source,
                      const std::map<std::string, Tensor>& bind, const Reread& reread,
                      const LoadOptions& options) {
  // The last few batches asked for stay loaded: every click of the app at the Batch box's
  // value runs the same rebatched model (a dry run, then the real one). They share this
  // model's weights; the model is held weakly, so that it is not kept alive by itself.
  struct Loaded {
    std::mutex mutex;
    std::deque<std::pair<std::int64_t, std::shared_ptr<const Model>>> recent;
  };
  auto loaded = std::make_shared<Loaded>();
  std::weak_ptr<const Model> self = m;
  m->at_batch = [reread, source, bind, loaded, self,
                 options](std::int64_t b) -> std::shared_ptr<const Model> {
    {
      std::lock_guard<std::mutex> lock(loaded->mutex);
      for (const auto& [batch, model] : loaded->recent)
        if (batch == b) return model;
    }
    const auto original = self.lock();
    auto model = load_onnx(*reread(), source, bind, b, reread, original.get(), options);
    std::lock_guard<std::mutex> lock(loaded->mutex);
    loaded->recent.emplace_front(b, model);
    if (loaded->recent.size() > 3) loaded->recent.pop_back();
    return model;
  };
}

std::shared_ptr<Model> load_onnx(const std::string& bytes, const std::string& source,
                                 const std::map<std::string, Tensor>& bind, std::int64_t batch,
                                 Reread reread, const Model* weights_of,
                                 const LoadOptions& options) {
  onnx::ModelProto proto;
  if (!proto.ParseFromString(bytes))
    throw std::invalid_argument(source +
                                ": not an ONNX model (the protobuf does not parse; "
                                "the file may be truncated)");
  if (proto.ir_version() <= 0 || !proto.has_graph())
    throw std::invalid_argument(source + ": not an ONNX model (no IR version or no graph)");
  auto m = std::make_shared<Model>();
  m->source = source;
  m->format = "onnx";
  m->name = proto.graph().name().empty() ? "onnx_model" : proto.graph().name();
  m->scenario.title = m->name + " (ONNX)";
  m->scenario.loss = LossKind::sum;
  {
    LedgerScope ledger(std::make_shared<MemoryLedger>());
    NoGradGuard no_grad;
    onnx_import::Importer importer(*m, proto, source, bind, batch);
    if (weights_of) importer.share_weights_of(*weights_of);
    try {
      importer.run();
      freeze_parameters(*m, options.frozen);
      finalize_model(*m);
      m->scenario.notes = onnx_model_notes(*m);
    } catch (const std::invalid_argument& e) {
      // Every load error names the file: a shape check deep in the engine (a graph dimension
      // of 25767706622 x ... elements, found by fuzz_onnx_model) does not know it.
      const std::string what = e.what();
      if (what.rfind(source + ":", 0) == 0) throw;
      throw std::invalid_argument(source + ": " + what);
    }
    if (importer.dynamic_batch()) {
      m->scenario.batch_fixed = false;  // any batch runs, through at_batch
      install_at_batch(m, source, bind, reread, options);
      m->scenario.notes +=
          "\nIts batch axis is dynamic: any batch runs (the file is loaded again at that batch, "
          "as its shape arithmetic was folded at load time).\n";
    } else {
      m->scenario.notes +=
          "\nIts batch is fixed at export. To explore other batches, export it with a dynamic "
          "batch axis: `torch.onnx.export(..., input_names=[\"x\"], dynamic_axes={\"x\": {0: "
          "\"batch\"}})`.\n";
    }
  }
  return m;
}

}  // namespace

std::shared_ptr<Model> load_model_onnx_bytes(const std::string& bytes, const std::string& source,
                                             const std::map<std::string, Tensor>& bind,
                                             std::int64_t batch, const LoadOptions& options) {
  auto kept = std::make_shared<const std::string>(bytes);
  return load_onnx(
      *kept, source, bind, batch, [kept] { return kept; }, nullptr, options);
}

std::shared_ptr<Model> load_model_onnx_file(const std::string& bytes, const std::string& path,
                                            std::function<std::string()> read_again,
                                            const LoadOptions& options) {
  // The bytes are not kept (a model's weights can be hundreds of megabytes): another batch
  // reads the file again, and a file that changed since is an error, not another model.
  Reread reread = [read_again = std::move(read_again), path,
                   size = bytes.size()]() -> std::shared_ptr<const std::string> {
    auto again = std::make_shared<const std::string>(read_again());
    if (again->size() != size)
      throw std::invalid_argument(path +
                                  ": the file changed since it was opened; open it again to "
                                  "run it at another batch");
    return again;
  };
  return load_onnx(bytes, path, {}, 0, reread, nullptr, options);
}

}  // namespace ckpt
