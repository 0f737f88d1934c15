#include "cli_common.hpp"

#include <unistd.h>

#include <QGuiApplication>
#include <filesystem>
#include <iostream>

#include "engine/autograd/anomaly.hpp"
#include "engine/model/load_notes.hpp"
#include "engine/model/loader.hpp"
#include "engine/tensor/device.hpp"
#include "sample_path.hpp"
#include "ui/plot/memory_plot_renderer.hpp"

namespace ckpt::cli {

bool stderr_is_tty() {
  return isatty(fileno(stderr)) != 0;
}

namespace {
LoadOptions& stored_load_options() {
  static LoadOptions options;
  return options;
}
}  // namespace

const std::vector<OptionRule<LoadOptions>>& load_rules() {
  using S = const std::string&;
  static const std::vector<OptionRule<LoadOptions>> rules = {
      {"--frozen", "PATTERN",
       "take these parameters as not trainable, as a registered buffer or requires_grad=False "
       "is in PyTorch: no gradient, and no op keeps anything for one (repeatable; a name or a "
       "module path, * is one path segment: 'rotary', '*_cached'). An ONNX file does not say "
       "which initializers are buffers; the load summary on stderr lists what was taken as "
       "trainable",
       [](LoadOptions& o, S a, S v) {
         if (v.empty())
           throw UsageError(a +
                            " needs a PATTERN (a parameter name or module path; * is one "
                            "path segment)");
         o.frozen.push_back(v);
       }},
  };
  return rules;
}

void take_load_options(std::vector<std::string>& args) {
  LoadOptions& o = stored_load_options();
  for (std::size_t i = 0; i < args.size();) {
    const std::size_t first = i;
    if (apply_option(load_rules(), args, i, o)) {
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(first),
                 args.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      i = first;
    } else {
      ++i;
    }
  }
}

OptionGroup load_option_group() {
  return option_group("model options (any command that opens a MODEL)", load_rules());
}

const LoadOptions& load_options() {
  return stored_load_options();
}

std::shared_ptr<Model> load_or_exit(const std::string& path, int* code) {
  try {
    auto model = load_model(resolve_model_path(path), load_options());
    if (model->format == "onnx")
      for (const std::string& line : load_summary_lines(*model))
        std::cerr << "ckptlab-cli: " << path << ": " << line << "\n";
    return model;
  } catch (const std::exception& e) {
    std::cerr << "ckptlab-cli: cannot load model: " << e.what() << "\n";
    *code = kExitModel;
    return nullptr;
  }
}

// --device: real runs go to the CPU. A GPU's storage and first kernel table exist behind the
// device seam (engine/kernels/kernel_table.hpp), but most ops' loops are host-only, so a real run
// there would stop at its first such op: refused up front, saying which is missing. A dry run
// with CUDA's memory semantics needs neither a GPU nor those loops.
bool check_device(DeviceChoice d, bool dry_run) {
  if (d == DeviceChoice::cuda) {
    if (dry_run) return true;
    std::string why;
    if (device_available(Device::cuda, &why))
      std::cerr << "ckptlab-cli: --device cuda: a GPU is present, but whole runs do not run on "
                   "it yet: its kernel table has the raw kernels (elementwise, sums, copies, "
                   "GEMM), while most ops' own loops run on the host\n";
    else
      std::cerr << "ckptlab-cli: --device cuda: " << why << "\n";
    std::cerr << "ckptlab-cli: add --dry-run for the exact bytes PyTorch 2.x would hold on the "
                 "GPU (its allocations replayed on the meta device, no GPU needed)\n";
    return false;
  }
  if (d == DeviceChoice::auto_select) {
    std::string why;
    if (device_available(Device::cuda, &why))
      std::cerr << "ckptlab-cli: device auto: running on the CPU (whole runs do not run on the "
                   "GPU yet)\n";
    else
      std::cerr << "ckptlab-cli: device auto: running on the CPU (" << why << ")\n";
  }
  return true;
}

namespace {

// The offscreen platform, with a runtime directory of its own (Qt warns on stderr without one).
void offscreen() {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  if (qEnvironmentVariableIsEmpty("XDG_RUNTIME_DIR")) {
    // Qt warns on stderr without one; a private directory keeps the output clean.
    const std::string dir = "/tmp/ckptlab-runtime-" + std::to_string(getuid());
    std::filesystem::create_directories(dir);
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
    qputenv("XDG_RUNTIME_DIR", QByteArray::fromStdString(dir));
  }
}

}  // namespace

bool plot(int argc, char** argv, const std::string& path, MemorySeriesPtr series,
          MemorySeriesPtr ghost, const Trace& trace) {
  offscreen();
  QGuiApplication app(argc, argv);
  ui::MemoryPlotModel model;
  model.series = std::move(series);
  model.ghost = std::move(ghost);
  const Trace* t = &trace;
  model.stepLabel = [t](std::int64_t k) {
    const TraceStep& s = t->step(k);
    return QString::fromStdString(s.node.empty() ? s.op : s.op + " · " + s.node);
  };
  QString error;
  if (!ui::exportMemoryPlot(QString::fromStdString(path), model, {1200, 480}, ui::Palette::light(),
                            &error)) {
    std::cerr << "ckptlab-cli: --plot: " << error.toStdString() << "\n";
    return false;
  }
  return true;
}

bool plot(int argc, char** argv, const std::string& path, const Trace& trace, const Trace* ghost) {
  offscreen();
  QGuiApplication app(argc, argv);
  QString error;
  if (!ui::exportMemoryPlot(QString::fromStdString(path), trace, ghost, {1200, 480}, &error)) {
    std::cerr << "ckptlab-cli: --plot: " << error.toStdString() << "\n";
    return false;
  }
  return true;
}

void warn_non_finite_loss(const RunResult& r) {
  if (!r.ok || r.dry_run || !r.loss.defined()) return;
  if (const std::string kind = non_finite_kind(r.loss); !kind.empty())
    std::cerr << "ckptlab-cli: warning: the loss is " << kind
              << ": the gradients are not meaningful; rerun with --detect-anomaly to name the "
                 "op that first made a non-finite value\n";
}

RunOutcome execute_with_progress(const RunTarget& target, const RunRequest& request,
                                 RequestOptions options) {
  ProgressLabel label("dry run");
  options.on_stage = [&label](const std::string& stage) { label.set(stage); };
  return with_progress(label, [&] { return execute(target, request, options); });
}

bool has_help(const std::vector<std::string>& args) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h") return true;
  return false;
}

}  // namespace ckpt::cli
