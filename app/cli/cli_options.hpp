#pragma once

// Parsing of ckptlab-cli's run options into a RunRequest (shared by `run`, `compare`'s --config
// strings, `code` and `plan`).

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/run/run_request.hpp"
#include "option_table.hpp"

namespace ckpt::cli {

enum class DeviceChoice { auto_select, cpu, cuda };

struct RunOptions {
  std::vector<std::string> checkpoint;            // --checkpoint (repeatable)
  std::vector<std::string> checkpoint_instances;  // --checkpoint-instances DEF
  std::vector<std::string> checkpoint_ranges;     // --checkpoint-range FIRST..LAST
  std::vector<std::string> offload;               // --offload MODULE (repeatable, patterns)
  std::optional<double> pcie_gb_per_s;            // --pcie GB/s
  bool checkpoint_all = false;
  std::optional<int> checkpoint_depth;
  int segments = 0;
  std::optional<bool> use_reentrant;
  bool no_preserve_rng = false;
  bool early_stop = false;
  bool no_check_recompute = false;
  SelectivePolicy policy;
  std::optional<std::int64_t> batch;
  std::optional<std::uint64_t> seed;
  int threads = 0;
  std::int64_t max_memory = 0;       // --max-memory: the guard's limit and the ledger's cap
  bool dry_run = false;              // --dry-run: on the meta device (exact bytes, estimated times)
  bool detect_anomaly = false;       // --detect-anomaly: NaN/Inf in any op's output fails the run
  std::int64_t fail_allocation = 0;  // --fail-allocation K: fault injection (0: off)
  DeviceChoice device = DeviceChoice::auto_select;
  std::int64_t gpu_memory = 0;  // --gpu-memory: the GPU a cuda request must fit (0: 80 GiB)
  bool input_requires_grad = false;
  std::vector<std::string> input_files;
  std::optional<LossKind> loss;
  OptimizerSettings optimizer;     // --optimizer, --lr, --weight-decay
  AmpMode amp = AmpMode::off;      // --amp
  DType param_dtype = DType::f32;  // --param-dtype (FSDP2's MixedPrecisionPolicy)
  FsdpSettings fsdp;               // --fsdp, --reshard-after-forward, --reduce-dtype
  // Output options (run only).
  bool json = false;
  bool no_baseline = false;
  std::string dump_dir;
  std::string trace_file;
  std::string plot_file;
};

// Consumes the run options in args (throws UsageError on an unknown or malformed one);
// positional arguments are returned in `positional`.
RunOptions parse_run_options(const std::vector<std::string>& args,
                             std::vector<std::string>* positional, bool allow_outputs);

// The run options' rows as their help shows them: checkpoint, run and training step options,
// and with `with_outputs` run's own output options.
std::vector<OptionGroup> run_option_groups(bool with_outputs);

// Splits a --config value "label: --opt a --opt b" into label and arguments (shell-like quoting).
std::pair<std::string, std::vector<std::string>> split_config(const std::string& text, int index);

// Resolves module selections against the model and builds the engine's request; unknown or
// non-checkpointable modules are UsageErrors naming the module and what exists.
RunRequest make_request(const Model& model, const RunOptions& o);

}  // namespace ckpt::cli
