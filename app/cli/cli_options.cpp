#include "cli_options.hpp"

#include <fnmatch.h>
#include <algorithm>
#include <charconv>

#include "engine/plan/planner.hpp"
#include "engine/run/module_range.hpp"
#include "engine/tensor/npy.hpp"

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

RunOptions parse_run_options(const std::vector<std::string>& args,
                             std::vector<std::string>* positional, bool allow_outputs) {
  RunOptions o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw UsageError(a + " needs a value");
      return args[++i];
    };
    if (a == "--checkpoint") {
      o.checkpoint.push_back(value());
    } else if (a == "--checkpoint-range") {
      o.checkpoint_ranges.push_back(value());
    } else if (a == "--checkpoint-instances") {
      o.checkpoint_instances.push_back(value());
    } else if (a == "--checkpoint-all") {
      o.checkpoint_all = true;
    } else if (a == "--checkpoint-depth") {
      o.checkpoint_depth = parse_number<int>(a, value());
      if (*o.checkpoint_depth < 1) throw UsageError("--checkpoint-depth must be at least 1");
    } else if (a == "--segments") {
      o.segments = parse_number<int>(a, value());
      if (o.segments < 1) throw UsageError("--segments must be at least 1");
    } else if (a == "--variant") {
      const auto& v = value();
      if (v == "reentrant") {
        o.use_reentrant = true;
      } else if (v == "non-reentrant") {
        o.use_reentrant = false;
      } else {
        throw UsageError("--variant must be reentrant or non-reentrant, got '" + v + "'");
      }
    } else if (a == "--no-preserve-rng") {
      o.no_preserve_rng = true;
    } else if (a == "--early-stop") {
      o.early_stop = true;
    } else if (a == "--no-check-recompute") {
      o.no_check_recompute = true;
    } else if (a == "--policy") {
      const auto& v = value();
      if (v == "save-matmul") {
        o.policy = SelectivePolicy::save_matmul;
      } else if (v == "none") {
        o.policy = SelectivePolicy::none;
      } else {
        throw UsageError("--policy must be save-matmul or none, got '" + v + "'");
      }
    } else if (a == "--batch") {
      o.batch = parse_number<std::int64_t>(a, value());
      if (*o.batch < 1 || *o.batch > (1LL << 24))
        throw UsageError("--batch must be in 1..16777216");
    } else if (a == "--seed") {
      o.seed = parse_number<std::uint64_t>(a, value());
    } else if (a == "--threads") {
      o.threads = parse_number<int>(a, value());
      if (o.threads < 1 || o.threads > 1024) throw UsageError("--threads must be in 1..1024");
    } else if (a == "--max-memory") {
      const std::string& v = value();
      try {
        if (v.find('%') != std::string::npos) throw std::invalid_argument("a share");
        o.max_memory = parse_budget(v, 0);
      } catch (const std::exception&) {
        throw UsageError("--max-memory expects bytes (123456) or a size such as 16GiB, got '" + v +
                         "'");
      }
      if (o.max_memory < 1) throw UsageError("--max-memory must be a positive number of bytes");
    } else if (a == "--dry-run") {
      o.dry_run = true;
    } else if (a == "--detect-anomaly") {
      o.detect_anomaly = true;
    } else if (a == "--fail-allocation") {
      o.fail_allocation = parse_number<std::int64_t>(a, value());
      if (o.fail_allocation < 1) throw UsageError("--fail-allocation must be at least 1");
    } else if (a == "--device") {
      const auto& v = value();
      if (v == "auto") {
        o.device = DeviceChoice::auto_select;
      } else if (v == "cpu") {
        o.device = DeviceChoice::cpu;
      } else if (v == "cuda") {
        o.device = DeviceChoice::cuda;
      } else {
        throw UsageError("--device must be auto, cpu or cuda, got '" + v + "'");
      }
    } else if (a == "--input-requires-grad") {
      o.input_requires_grad = true;
    } else if (a == "--input") {
      o.input_files.push_back(value());
    } else if (a == "--loss") {
      const auto& v = value();
      if (v == "sum") {
        o.loss = LossKind::sum;
      } else if (v == "mean") {
        o.loss = LossKind::mean;
      } else if (v == "model") {
        o.loss = LossKind::model;
      } else {
        throw UsageError("--loss must be sum, mean or model, got '" + v + "'");
      }
    } else if (allow_outputs && a == "--json") {
      o.json = true;
    } else if (allow_outputs && a == "--no-baseline") {
      o.no_baseline = true;
    } else if (allow_outputs && a == "--dump") {
      o.dump_dir = value();
    } else if (allow_outputs && a == "--trace") {
      o.trace_file = value();
    } else if (allow_outputs && a == "--plot") {
      o.plot_file = value();
    } else if (a.rfind("--", 0) == 0) {
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

// --checkpoint (paths and patterns) and --checkpoint-instances: into c.modules.
void select_named_modules(const Model& model, const RunOptions& o, CheckpointConfig& c) {
  auto add = [&](const Module* m, const std::string& asked) {
    if (!m)
      throw UsageError("no module '" + asked + "' in " + model.source + "; " +
                       suggestions(model, asked));
    if (!m->checkpointable)
      throw UsageError("module '" + m->path +
                       "' cannot be checkpointed: " + m->not_checkpointable_reason);
    c.modules.insert(m->path);
  };
  for (const auto& p : o.checkpoint) {
    if (p.find_first_of("*?[") == std::string::npos) {
      add(model.find_module(p), p);
      continue;
    }
    // A pattern ("features.*.*.bottleneck"): every checkpointable module whose path matches,
    // `*` standing for one path segment, as in a shell glob over directories ('layer*.*' is
    // the blocks of a ResNet, not also every conv inside them).
    const auto as_path = [](std::string s) {
      std::replace(s.begin(), s.end(), '.', '/');
      return s;
    };
    const std::string glob = as_path(p);
    bool any = false;
    for (const Module* m : model.all_modules()) {
      if (fnmatch(glob.c_str(), as_path(m->path).c_str(), FNM_PATHNAME) != 0 || !m->checkpointable)
        continue;
      c.modules.insert(m->path);
      any = true;
    }
    if (!any)
      throw UsageError("no checkpointable module matches '" + p + "' in " + model.source + "; " +
                       suggestions(model, p.substr(0, p.find_first_of("*?["))));
  }
  for (const auto& d : o.checkpoint_instances) {
    const auto inst = model.instances_of(d);
    if (inst.empty())
      throw UsageError("no module definition '" + d + "' in " + model.source + "; " +
                       suggestions(model, d));
    for (const Module* m : inst) add(m, d);
  }
}

// --checkpoint-range, --checkpoint-all and --checkpoint-depth.
void select_other_modules(const Model& model, const RunOptions& o, CheckpointConfig& c) {
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

CheckpointConfig make_config(const Model& model, const RunOptions& o) {
  CheckpointConfig c;
  select_named_modules(model, o, c);
  select_other_modules(model, o, c);
  c.segments = o.segments;
  c.use_reentrant = o.use_reentrant.value_or(model.scenario.use_reentrant);
  c.preserve_rng_state = !o.no_preserve_rng;
  c.early_stop = o.early_stop;
  c.check_recompute = !o.no_check_recompute;
  c.policy = o.policy;
  c.seed = o.seed.value_or(model.scenario.seed);
  c.batch = o.batch.value_or(0);
  if (o.input_requires_grad) c.input_requires_grad = true;
  c.loss = o.loss;
  c.threads = o.threads;
  c.max_memory = o.max_memory;
  c.dry_run = o.dry_run;
  c.detect_anomaly = o.detect_anomaly;
  c.fail_allocation_at = o.fail_allocation;
  c.inputs = read_inputs(model, o);
  return c;
}

}  // namespace ckpt::cli
