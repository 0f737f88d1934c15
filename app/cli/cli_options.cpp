#include "cli_options.hpp"

#include <fnmatch.h>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>

#include "engine/model/module_range.hpp"
#include "engine/plan/planner.hpp"
#include "engine/tensor/npy.hpp"
#include "option_table.hpp"

namespace ckpt::cli {

namespace {

template <typename T>
T parse_number(const std::string& opt, const std::string& v) {
  T out{};
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size())
    throw UsageError(opt + " expects a number, got '" + v + "'");
  return out;
}

// A real number, finite ("1e-4", "0.01").
double parse_real(const std::string& opt, const std::string& v) {
  std::size_t used = 0;
  double out = 0;
  try {
    out = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || !std::isfinite(out))
    throw UsageError(opt + " expects a number, got '" + v + "'");
  return out;
}

int depth_of(const std::string& path) {
  return path.empty() ? 0 : 1 + static_cast<int>(std::count(path.begin(), path.end(), '.'));
}

std::string suggestions(const Model& model, const std::string& wanted) {
  std::string out;
  int shown = 0;
  for (const Module* m : model.all_modules()) {
    if (m->path.find(wanted) == std::string::npos && wanted.find(m->name) == std::string::npos)
      continue;
    out += (shown ? ", " : "") + m->path;
    if (++shown == 8) break;
  }
  if (shown == 0) {
    for (const Module* m : model.all_modules()) {
      if (depth_of(m->path) != 1) continue;
      out += (shown ? ", " : "") + m->path;
      if (++shown == 8) break;
    }
    return "top-level modules: " + out + " (see `ckptlab-cli modules MODEL`)";
  }
  return "did you mean: " + out;
}

}  // namespace

namespace {

// One of a closed set of words: "--loss must be sum, mean or model, got 'x'".
template <typename T>
T choice(const std::string& flag, const std::string& value,
         std::initializer_list<std::pair<const char*, T>> words) {
  std::string names;
  std::size_t k = 0;
  for (const auto& [word, result] : words) {
    if (value == word) return result;
    names += (k == 0 ? "" : k + 1 == words.size() ? " or " : ", ") + std::string(word);
    ++k;
  }
  throw UsageError(flag + " must be " + names + ", got '" + value + "'");
}

using Rule = OptionRule<RunOptions>;
using S = const std::string&;

// The options of `run`, and of every command that takes run's options (compare's --config,
// code, plan, snapshot --compare), in the groups their help shows them in.
const std::vector<Rule>& checkpoint_rules() {
  static const std::vector<Rule> rules = {
      {"--checkpoint", "MODULE",
       "checkpoint this module instance (repeatable; a path from `modules`, or a pattern such "
       "as 'features.*.*.bottleneck', where * is one path segment)",
       [](RunOptions& o, S, S v) { o.checkpoint.push_back(v); }},
      {"--checkpoint-instances", "DEF",
       "checkpoint every instance of a module definition (cell, cell_1, ...)",
       [](RunOptions& o, S, S v) { o.checkpoint_instances.push_back(v); }},
      {"--checkpoint-range", "A..B",
       "checkpoint sibling modules A to B as one segment (repeatable; as a "
       "checkpoint_sequential segment; an end may be an op of the parent)",
       [](RunOptions& o, S, S v) { o.checkpoint_ranges.push_back(v); }},
      {"--checkpoint-all", "", "checkpoint every checkpointable module (nested ones too)",
       [](RunOptions& o, S, S) { o.checkpoint_all = true; }},
      {"--checkpoint-depth", "N",
       "checkpoint every checkpointable module at depth N (1 = top level)",
       [](RunOptions& o, S a, S v) {
         o.checkpoint_depth = parse_number<int>(a, v);
         if (*o.checkpoint_depth < 1) throw UsageError("--checkpoint-depth must be at least 1");
       }},
      {"--segments", "N", "checkpoint_sequential over the top-level modules, N segments",
       [](RunOptions& o, S a, S v) {
         o.segments = parse_number<int>(a, v);
         if (o.segments < 1) throw UsageError("--segments must be at least 1");
       }},
      {"--offload", "MODULE",
       "with --device cuda: keep this module's saved tensors in host memory "
       "(torch.autograd.graph.save_on_cpu(pin_memory=True)), copied back in backward "
       "(repeatable; paths or patterns as --checkpoint)",
       [](RunOptions& o, S, S v) { o.offload.push_back(v); }},
      {"--pcie", "GB/s", "the host link's bandwidth the offload's copies are timed at (25)",
       [](RunOptions& o, S a, S v) {
         o.pcie_gb_per_s = parse_real(a, v);
         if (!(*o.pcie_gb_per_s > 0)) throw UsageError("--pcie must be a positive GB/s");
       }},
      {"--variant", "V", "reentrant (PyTorch 1.13's default) | non-reentrant",
       [](RunOptions& o, S a, S v) {
         o.use_reentrant = choice<bool>(a, v, {{"reentrant", true}, {"non-reentrant", false}});
       }},
      {"--no-preserve-rng", "", "do not stash the RNG state per checkpoint",
       [](RunOptions& o, S, S) { o.no_preserve_rng = true; }},
      {"--early-stop", "", "non-reentrant: stop recomputing once every needed tensor is back",
       [](RunOptions& o, S, S) { o.early_stop = true; }},
      {"--no-check-recompute", "", "do not compare recomputed values with the forward's",
       [](RunOptions& o, S, S) { o.no_check_recompute = true; }},
      {"--policy", "P",
       "per-op policy inside checkpointed segments: none (recompute everything) | "
       "save:KIND[,KIND...][/N] keeps the outputs of the ops of those kinds (mm: linear, "
       "matmul; conv: convolutions; sdpa: attention) instead of recomputing them; /N keeps the "
       "1st, (N+1)-th, ... of them in each segment | save-matmul (= save:conv,mm,sdpa)",
       [](RunOptions& o, S a, S v) {
         try {
           o.policy = SelectivePolicy::parse(v);
         } catch (const std::invalid_argument& e) {
           throw UsageError(a + ": " + e.what());
         }
       }},
  };
  return rules;
}

const std::vector<Rule>& run_rules() {
  static const std::vector<Rule> rules = {
      {"--batch", "N", "the batch size (default: the model's)",
       [](RunOptions& o, S a, S v) {
         o.batch = parse_number<std::int64_t>(a, v);
         if (*o.batch < 1 || *o.batch > (1LL << 24))
           throw UsageError("--batch must be in 1..16777216");
       }},
      {"--seed", "S", "the seed of the weights, inputs and dropout masks (default: the model's)",
       [](RunOptions& o, S a, S v) { o.seed = parse_number<std::uint64_t>(a, v); }},
      {"--threads", "N", "the engine's threads (default: every core)",
       [](RunOptions& o, S a, S v) {
         o.threads = parse_number<int>(a, v);
         if (o.threads < 1 || o.threads > 1024) throw UsageError("--threads must be in 1..1024");
       }},
      {"--dry-run", "",
       "run on the meta device: exact bytes and peak, estimated times, no values (any batch, "
       "any model size; nothing is computed)",
       [](RunOptions& o, S, S) { o.dry_run = true; }},
      {"--max-memory", "SIZE",
       "the memory a real run may use (bytes or e.g. 16GiB); a run whose dry run predicts more "
       "is not started (exit 4); default: 75 % of the memory available; the allocator's cap as "
       "well",
       [](RunOptions& o, S, S v) {
         try {
           if (v.find('%') != std::string::npos) throw std::invalid_argument("a share");
           o.max_memory = parse_budget(v, 0);
         } catch (const std::exception&) {
           throw UsageError("--max-memory expects bytes (123456) or a size such as 16GiB, got '" +
                            v + "'");
         }
         if (o.max_memory < 1) throw UsageError("--max-memory must be a positive number of bytes");
       }},
      {"--device", "auto|cpu|cuda",
       "whose memory: cpu (this engine, PyTorch 1.13's CPU figures) or cuda (what PyTorch 2.x "
       "holds on an NVIDIA GPU: 512 B rounding, cuBLAS workspaces, bool dropout masks, reserved "
       "memory); cuda runs as a dry run (--dry-run) on any machine, a real cuda run exits 4; "
       "auto: cpu",
       [](RunOptions& o, S a, S v) {
         o.device = choice<DeviceChoice>(a, v,
                                         {{"auto", DeviceChoice::auto_select},
                                          {"cpu", DeviceChoice::cpu},
                                          {"cuda", DeviceChoice::cuda}});
       }},
      {"--gpu-memory", "SIZE",
       "the GPU a cuda run must fit, reserved memory plus the CUDA context (an estimate): "
       "default 80GiB",
       [](RunOptions& o, S, S v) {
         try {
           if (v.find('%') != std::string::npos) throw std::invalid_argument("a share");
           o.gpu_memory = parse_budget(v, 0);
         } catch (const std::exception&) {
           throw UsageError("--gpu-memory expects bytes or a size such as 24GiB, got '" + v + "'");
         }
       }},
      {"--input-requires-grad", "", "make every model input require grad",
       [](RunOptions& o, S, S) { o.input_requires_grad = true; }},
      {"--input", "FILE.npy", "an input (repeatable, in the model's input order)",
       [](RunOptions& o, S, S v) { o.input_files.push_back(v); }},
      {"--loss", "sum|mean|model", "default: the model's own loss where it declares one, else sum",
       [](RunOptions& o, S a, S v) {
         o.loss = choice<LossKind>(
             a, v, {{"sum", LossKind::sum}, {"mean", LossKind::mean}, {"model", LossKind::model}});
       }},
      {"--detect-anomaly", "",
       "fail the run at the first forward, recomputed or backward op whose output holds NaN or "
       "Inf, naming it (PyTorch's anomaly mode)",
       [](RunOptions& o, S, S) { o.detect_anomaly = true; }},
      {"--fail-allocation", "K", "fault injection: the run's K-th allocation fails (tests)",
       [](RunOptions& o, S a, S v) {
         o.fail_allocation = parse_number<std::int64_t>(a, v);
         if (o.fail_allocation < 1) throw UsageError("--fail-allocation must be at least 1");
       }},
  };
  return rules;
}

const std::vector<Rule>& training_rules() {
  static const std::vector<Rule> rules = {
      {"--optimizer", "O",
       "none (default: the run stops after backward) | sgd | momentum (SGD, momentum 0.9) | "
       "adam | adamw: the optimizer's step after backward, its state live from the start (a "
       "steady-state step)",
       [](RunOptions& o, S a, S v) {
         o.optimizer.kind = choice<OptimizerKind>(a, v,
                                                  {{"none", OptimizerKind::none},
                                                   {"sgd", OptimizerKind::sgd},
                                                   {"momentum", OptimizerKind::momentum},
                                                   {"adam", OptimizerKind::adam},
                                                   {"adamw", OptimizerKind::adamw}});
       }},
      {"--lr", "X", "the optimizer's learning rate (default: sgd 0.01, adam/adamw 0.001)",
       [](RunOptions& o, S a, S v) {
         o.optimizer.lr = parse_real(a, v);
         if (!(*o.optimizer.lr > 0)) throw UsageError("--lr must be positive");
       }},
      {"--weight-decay", "X", "the optimizer's weight decay (default: adamw 0.01, others 0)",
       [](RunOptions& o, S a, S v) {
         o.optimizer.weight_decay = parse_real(a, v);
         if (!(*o.optimizer.weight_decay >= 0))
           throw UsageError("--weight-decay must not be negative");
       }},
      {"--amp", "off|bf16|fp16",
       "the forward and the loss under torch.autocast (default off): matmul, linear, conv in "
       "bfloat16/float16, softmax, norms, losses as PyTorch's lists say (1.13's on the cpu, "
       "2.x's on cuda); saved tensors in the dtype they have. fp16 with an optimizer adds the "
       "gradient scaler (cuda only; the cpu's autocast has no fp16)",
       [](RunOptions& o, S a, S v) {
         o.amp = choice<AmpMode>(
             a, v, {{"off", AmpMode::off}, {"bf16", AmpMode::bf16}, {"fp16", AmpMode::fp16}});
       }},
      {"--param-dtype", "fp32|bf16",
       "FSDP2's MixedPrecisionPolicy(param_dtype): weights, activations and gradients in that "
       "dtype in compute, the float32 shard kept for the optimizer (not autocast: nothing is "
       "cast op by op); alone it means --fsdp 1",
       [](RunOptions& o, S a, S v) {
         o.param_dtype = choice<DType>(a, v, {{"fp32", DType::f32}, {"bf16", DType::bf16}});
       }},
      {"--fsdp", "N",
       "FSDP2 per rank: fully_shard on every block, then the root, over N ranks; prints what one "
       "rank holds, by category (modelled on FSDP2's documented behaviour, not yet measured on a "
       "GPU)",
       [](RunOptions& o, S a, S v) {
         o.fsdp.ranks = parse_number<int>(a, v);
         if (o.fsdp.ranks < 1 || o.fsdp.ranks > 65536)
           throw UsageError("--fsdp must be a number of ranks in 1..65536");
       }},
      {"--reshard-after-forward", "true|false",
       "free each block's gathered parameters after its forward (default true)",
       [](RunOptions& o, S a, S v) {
         o.fsdp.reshard_after_forward = choice<bool>(a, v, {{"true", true}, {"false", false}});
       }},
      {"--reduce-dtype", "fp32|bf16", "the reduce-scatter's dtype (default fp32)",
       [](RunOptions& o, S a, S v) {
         o.fsdp.reduce_dtype = choice<DType>(a, v, {{"fp32", DType::f32}, {"bf16", DType::bf16}});
       }},
  };
  return rules;
}

const std::vector<Rule>& output_rules() {
  static const std::vector<Rule> rules = {
      {"--json", "", "the summary as one JSON object on stdout (keys in docs/guide/cli.md)",
       [](RunOptions& o, S, S) { o.json = true; }},
      {"--no-baseline", "", "skip the run without checkpointing",
       [](RunOptions& o, S, S) { o.no_baseline = true; }},
      {"--dump", "DIR", "outputs, loss and every parameter's gradient as .npy files",
       [](RunOptions& o, S, S v) { o.dump_dir = v; }},
      {"--trace", "FILE",
       "the trace: .json (ckptlab schema), .csv (memory per step), .perfetto.json (Chrome trace "
       "event format; opens in Perfetto), .pickle (a PyTorch memory snapshot; opens in "
       "memory_viz)",
       [](RunOptions& o, S, S v) { o.trace_file = v; }},
      {"--plot", "FILE", "the memory plot (.png or .svg), the run without checkpoints as a ghost",
       [](RunOptions& o, S, S v) { o.plot_file = v; }},
  };
  return rules;
}

}  // namespace

std::vector<OptionGroup> run_option_groups(bool with_outputs) {
  std::vector<OptionGroup> groups{option_group("checkpoint options", checkpoint_rules()),
                                  option_group("run options", run_rules()),
                                  option_group("training step options", training_rules())};
  if (with_outputs) groups.push_back(option_group("output options", output_rules()));
  return groups;
}

RunOptions parse_run_options(const std::vector<std::string>& args,
                             std::vector<std::string>* positional, bool allow_outputs) {
  RunOptions o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (apply_option(checkpoint_rules(), args, i, o) || apply_option(run_rules(), args, i, o) ||
        apply_option(training_rules(), args, i, o) ||
        (allow_outputs && apply_option(output_rules(), args, i, o)))
      continue;
    if (a.rfind("--", 0) == 0) {
      throw UsageError("unknown option " + a);
    } else if (positional) {
      positional->push_back(a);
    } else {
      throw UsageError("unexpected argument '" + a + "'");
    }
  }
  return o;
}

std::pair<std::string, std::vector<std::string>> split_config(const std::string& text, int index) {
  std::string label = "config " + std::to_string(index + 1);
  std::string rest = text;
  const auto colon = text.find(':');
  const auto dash = text.find("--");
  if (colon != std::string::npos && (dash == std::string::npos || colon < dash)) {
    label = text.substr(0, colon);
    label.erase(0, label.find_first_not_of(" \t"));
    label.erase(label.find_last_not_of(" \t") + 1);
    rest = text.substr(colon + 1);
    if (label.empty()) throw UsageError("--config '" + text + "' has an empty label");
  }
  std::vector<std::string> args;
  std::string cur;
  bool in_token = false;
  char quote = 0;
  for (char c : rest) {
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else {
        cur.push_back(c);
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_token = true;
    } else if (c == ' ' || c == '\t') {
      if (in_token) args.push_back(cur);
      cur.clear();
      in_token = false;
    } else {
      cur.push_back(c);
      in_token = true;
    }
  }
  if (quote) throw UsageError("--config '" + text + "' has an unterminated quote");
  if (in_token) args.push_back(cur);
  return {label, args};
}

namespace {

// The modules a --checkpoint or --offload argument names: a path, or a pattern
// ("features.*.*.bottleneck") matching every module that can run as one call, `*` standing for
// one path segment as in a shell glob over directories ('layer*.*' is the blocks of a ResNet,
// not also every conv inside them). `verb` says what for, in the messages.
std::set<std::string> named_modules(const Model& model, const std::string& p, const char* verb) {
  if (p.find_first_of("*?[") == std::string::npos) {
    const Module* m = model.find_module(p);
    if (!m)
      throw UsageError("no module '" + p + "' in " + model.source + "; " + suggestions(model, p));
    if (!m->checkpointable)
      throw UsageError("module '" + m->path + "' cannot be " + verb + ": " +
                       m->not_checkpointable_reason);
    return {m->path};
  }
  const auto as_path = [](std::string s) {
    std::replace(s.begin(), s.end(), '.', '/');
    return s;
  };
  const std::string glob = as_path(p);
  std::set<std::string> out;
  for (const Module* m : model.all_modules())
    if (fnmatch(glob.c_str(), as_path(m->path).c_str(), FNM_PATHNAME) == 0 && m->checkpointable)
      out.insert(m->path);
  if (out.empty())
    throw UsageError("no " +
                     std::string(std::string_view(verb) == "checkpointed"
                                     ? "checkpointable module"
                                     : "module that can be " + std::string(verb)) +
                     " matches '" + p + "' in " + model.source + "; " +
                     suggestions(model, p.substr(0, p.find_first_of("*?["))));
  return out;
}

// --checkpoint (paths and patterns) and --checkpoint-instances: into c.modules; --offload: into
// c.offload.
void select_named_modules(const Model& model, const RunOptions& o, CheckpointPlan& c) {
  auto add = [&](const Module* m, const std::string& asked) {
    if (!m)
      throw UsageError("no module '" + asked + "' in " + model.source + "; " +
                       suggestions(model, asked));
    if (!m->checkpointable)
      throw UsageError("module '" + m->path +
                       "' cannot be checkpointed: " + m->not_checkpointable_reason);
    c.modules.insert(m->path);
  };
  for (const auto& p : o.checkpoint) c.modules.merge(named_modules(model, p, "checkpointed"));
  for (const auto& p : o.offload) c.offload.merge(named_modules(model, p, "offloaded"));
  for (const auto& d : o.checkpoint_instances) {
    const auto inst = model.instances_of(d);
    if (inst.empty())
      throw UsageError("no module definition '" + d + "' in " + model.source + "; " +
                       suggestions(model, d));
    for (const Module* m : inst) add(m, d);
  }
}

// --checkpoint-range, --checkpoint-all and --checkpoint-depth.
void select_other_modules(const Model& model, const RunOptions& o, CheckpointPlan& c) {
  for (const auto& text : o.checkpoint_ranges) {
    try {
      auto range = parse_range(text);
      make_range(model, range.first, range.second);  // checked here: a usage error, not a run's
      c.ranges.push_back(std::move(range));
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--checkpoint-range: ") + e.what());
    }
  }
  if (o.checkpoint_all)
    for (const Module* m : model.all_modules())
      if (m->checkpointable) c.modules.insert(m->path);
  if (o.checkpoint_depth) {
    bool any = false;
    for (const Module* m : model.all_modules()) {
      if (depth_of(m->path) != *o.checkpoint_depth) continue;
      any = true;
      if (m->checkpointable) c.modules.insert(m->path);
    }
    if (!any)
      throw UsageError("the model has no modules at depth " + std::to_string(*o.checkpoint_depth));
  }
}

// --input FILE, one per model input.
ExplicitInputs read_inputs(const Model& model, const RunOptions& o) {
  ExplicitInputs inputs;
  if (!o.input_files.empty()) {
    if (o.input_files.size() != model.inputs.size())
      throw UsageError("the model takes " + std::to_string(model.inputs.size()) + " input(s), " +
                       std::to_string(o.input_files.size()) + " --input given");
    for (const auto& f : o.input_files) {
      try {
        inputs.push_back(load_npy(f));
      } catch (const std::runtime_error& e) {
        throw UsageError(std::string("--input: ") + e.what());
      }
    }
  }
  return inputs;
}

}  // namespace

RunRequest make_request(const Model& model, const RunOptions& o) {
  RunRequest r;
  CheckpointPlan& p = r.plan;
  select_named_modules(model, o, p);
  select_other_modules(model, o, p);
  p.segments = o.segments;
  p.policy = o.policy;
  RunSettings& s = r.settings;
  s.use_reentrant = o.use_reentrant.value_or(model.scenario.use_reentrant);
  s.preserve_rng_state = !o.no_preserve_rng;
  s.early_stop = o.early_stop;
  s.check_recompute = !o.no_check_recompute;
  s.seed = o.seed.value_or(model.scenario.seed);
  s.batch = o.batch.value_or(0);
  if (o.input_requires_grad) s.input_requires_grad = true;
  s.loss = o.loss;
  s.threads = o.threads;
  s.max_memory = o.max_memory;
  s.dry_run = o.dry_run;
  s.device = o.device == DeviceChoice::cuda ? Device::cuda : Device::cpu;
  if (o.gpu_memory > 0) s.gpu_memory = o.gpu_memory;
  s.inputs = read_inputs(model, o);
  s.optimizer = o.optimizer;
  s.amp = o.amp;
  s.param_dtype = o.param_dtype;
  s.fsdp = o.fsdp;
  if (o.pcie_gb_per_s) s.pcie_gb_per_s = *o.pcie_gb_per_s;
  r.hooks.detect_anomaly = o.detect_anomaly;
  r.hooks.fail_allocation_at = o.fail_allocation;
  return r;
}

}  // namespace ckpt::cli
