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

const char* const kRunOptionsHelp = R"(checkpoint options:
  --checkpoint MODULE        checkpoint this module instance (repeatable; a path from `modules`,
                             or a pattern such as 'features.*.*.bottleneck'; * is one segment)
  --checkpoint-instances DEF checkpoint every instance of a module definition (cell, cell_1, ...)
  --checkpoint-range A..B    checkpoint sibling modules A to B as one segment (repeatable; as a
                             checkpoint_sequential segment; an end may be an op of the parent)
  --checkpoint-all           checkpoint every checkpointable module (nested ones too)
  --checkpoint-depth N       checkpoint every checkpointable module at depth N (1 = top level)
  --segments N               checkpoint_sequential over the top-level modules, N segments
  --offload MODULE           with --device cuda: keep this module's saved tensors in host memory
                             (torch.autograd.graph.save_on_cpu(pin_memory=True)), copied back
                             in backward (repeatable; paths or patterns as --checkpoint)
  --pcie GB/s                the host link's bandwidth the offload's copies are timed at (25)
  --variant V                reentrant (PyTorch 1.13's default) | non-reentrant
  --no-preserve-rng          do not stash the RNG state per checkpoint
  --early-stop               non-reentrant: stop recomputing once every needed tensor is back
  --no-check-recompute       do not compare recomputed values with the forward's
  --policy P                 per-op policy inside checkpointed segments: none (recompute
                             everything) | save:KIND[,KIND...][/N] keeps the outputs of the
                             ops of those kinds (mm: linear, matmul; conv: conv2d,
                             conv_transpose2d; sdpa: attention) instead of recomputing them;
                             /N keeps the 1st, (N+1)-th, ... of them in each segment |
                             save-matmul (= save:conv,mm,sdpa)
run options:
  --batch N  --seed S  --threads N
  --dry-run                  run on the meta device: exact bytes and peak, estimated times, no
                             values (any batch, any model size; nothing is computed)
  --max-memory SIZE          the memory a real run may use (bytes or e.g. 16GiB); a run whose
                             dry run predicts more is not started (exit 4); default: 75 % of
                             the memory available; the allocator's cap as well
  --device auto|cpu|cuda     whose memory: cpu (this engine, PyTorch 1.13's CPU figures) or cuda
                             (what PyTorch 2.x holds on an NVIDIA GPU: 512 B rounding, cuBLAS
                             workspaces, bool dropout masks, reserved memory); cuda runs as a dry
                             run (--dry-run) on any machine, a real cuda run exits 4; auto: cpu
  --gpu-memory SIZE          the GPU a cuda run must fit, reserved memory plus the CUDA context
                             (an estimate): default 80GiB
  --input-requires-grad      make every model input require grad
  --input FILE.npy           an input (repeatable, in the model's input order)
  --loss sum|mean|model      default: the model's own loss where it declares one, else sum
  --detect-anomaly           fail the run at the first forward, recomputed or backward op whose
                             output holds NaN or Inf, naming it (PyTorch's anomaly mode)
  --fail-allocation K        fault injection: the run's K-th allocation fails (tests)
training step options:
  --optimizer O              none (default: the run stops after backward) | sgd | momentum
                             (SGD, momentum 0.9) | adam | adamw: the optimizer's step after
                             backward, its state live from the start (a steady-state step)
  --lr X  --weight-decay X   the optimizer's (default: sgd 0.01, adam/adamw 0.001; adamw's
                             weight decay 0.01, others' 0)
  --amp off|bf16|fp16        the forward and the loss under torch.autocast (default off):
                             matmul, linear, conv in bfloat16/float16, softmax, norms, losses
                             as PyTorch's lists say (1.13's on the cpu, 2.x's on cuda); saved
                             tensors in the dtype they have. fp16 with an optimizer adds the
                             gradient scaler (cuda only; the cpu's autocast has no fp16)
)";

bool stderr_is_tty() {
  return isatty(fileno(stderr)) != 0;
}

namespace {
LoadOptions& stored_load_options() {
  static LoadOptions options;
  return options;
}
}  // namespace

void take_load_options(std::vector<std::string>& args) {
  LoadOptions& o = stored_load_options();
  for (std::size_t i = 0; i < args.size();) {
    if (args[i] == "--frozen") {
      if (i + 1 >= args.size() || args[i + 1].empty())
        throw UsageError(
            "--frozen needs a PATTERN (a parameter name or module path; * is one "
            "path segment)");
      o.frozen.push_back(args[i + 1]);
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i),
                 args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
    } else if (args[i].rfind("--frozen=", 0) == 0) {
      o.frozen.push_back(args[i].substr(9));
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
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

bool plot(int argc, char** argv, const std::string& path, const Trace& trace, const Trace* ghost) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  if (qEnvironmentVariableIsEmpty("XDG_RUNTIME_DIR")) {
    // Qt warns on stderr without one; a private directory keeps the output clean.
    const std::string dir = "/tmp/ckptlab-runtime-" + std::to_string(getuid());
    std::filesystem::create_directories(dir);
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
    qputenv("XDG_RUNTIME_DIR", QByteArray::fromStdString(dir));
  }
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
