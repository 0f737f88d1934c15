#include "plan_command.hpp"

#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli_common.hpp"
#include "cli_options.hpp"
#include "cli_reference.hpp"
#include "engine/model/loader.hpp"
#include "engine/model/module_range.hpp"
#include "engine/plan/plan_code.hpp"
#include "engine/plan/planner.hpp"
#include "engine/report/figures.hpp"
#include "engine/report/run_summary.hpp"
#include "frontier_svg.hpp"
#include "sample_path.hpp"

namespace ckpt::cli {

namespace {

struct PlanArgs {
  std::string budget, strategy = "optimal", plot, code;
  bool json = false;
  bool measure_times = false;
  StrategyParams params;
  CandidateOptions candidates;
  std::vector<std::string> rest;
};

int whole_number(const std::string& flag, const std::string& v, int lo) {
  try {
    const int n = std::stoi(v);
    if (n < lo || std::to_string(n) != v) throw std::out_of_range(v);
    return n;
  } catch (const std::exception&) {
    throw UsageError(flag + " expects a whole number of at least " + std::to_string(lo) +
                     ", got '" + v + "'");
  }
}

using S = const std::string&;

const std::vector<OptionRule<PlanArgs>>& plan_rules() {
  static const std::vector<OptionRule<PlanArgs>> rules = {
      {"--budget", "B",
       "bytes (2GiB, 300MiB, 1.5GB, 123456) or a share of the unplanned peak (60%); with "
       "--device cuda, what the process may take from the card: the allocator's reserved peak "
       "plus the CUDA context (an estimate, ~520 MiB)",
       [](PlanArgs& p, S, S v) { p.budget = v; }},
      {"--strategy", "S",
       "none | all | every-k | sqrt | uniform-n | greedy | knapsack | optimal (default "
       "optimal: the least recompute whose evaluated peak fits)",
       [](PlanArgs& p, S, S v) { p.strategy = v; }},
      {"--k", "K", "every-k: every K-th block (default 2)",
       [](PlanArgs& p, S a, S v) { p.params.k = whole_number(a, v, 1); }},
      {"--n", "N", "uniform-n: chunks of N blocks (default 2)",
       [](PlanArgs& p, S a, S v) { p.params.n = whole_number(a, v, 1); }},
      {"--depth", "D", "candidates D levels below the blocks (default 1; 0: blocks and ranges)",
       [](PlanArgs& p, S a, S v) { p.candidates.depth = whole_number(a, v, 0); }},
      {"--no-ranges", "", "no ranges of consecutive blocks among the candidates",
       [](PlanArgs& p, S, S) { p.candidates.ranges = false; }},
      {"--measure-times", "",
       "recompute costs from three real runs of the unplanned model (default: the dry run's "
       "estimates from each op's FLOPs and bytes; real runs take seconds and a real run's "
       "memory on a real-sized model)",
       [](PlanArgs& p, S, S) { p.measure_times = true; }},
      {"--weigh-offload", "",
       "with --device cuda: each module may also be offloaded (its saved tensors copied to host "
       "memory and back, save_on_cpu), weighed against recompute: copies at --pcie GB/s "
       "(default 25), recompute at a reference GPU's rates (H100-class estimates, not measured)",
       [](PlanArgs& p, S, S) { p.candidates.offload = true; }},
      {"--json", "", "one JSON object: the plan, the candidates, every point and the frontier",
       [](PlanArgs& p, S, S) { p.json = true; }},
      {"--plot", "FILE.svg", "the frontier: peak against recompute, points coloured by strategy",
       [](PlanArgs& p, S, S v) { p.plot = v; }},
      {"--code", "FILE.py",
       "the plan as PyTorch code (apply_plan(model) for an ONNX model's module)",
       [](PlanArgs& p, S, S v) { p.code = v; }},
  };
  return rules;
}

PlanArgs parse(const std::vector<std::string>& args) {
  PlanArgs p;
  for (std::size_t i = 0; i < args.size(); ++i)
    if (!apply_option(plan_rules(), args, i, p)) p.rest.push_back(args[i]);
  return p;
}

std::string mib(std::int64_t b) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << static_cast<double>(b) / (1 << 20) << " MiB";
  return s.str();
}

nlohmann::json point_json(const PlanPoint& p) {
  nlohmann::json ranges = nlohmann::json::array();
  for (const auto& [a, b] : p.plan.ranges) ranges.push_back({a, b});
  // Each region's per-op policy: {"h.0": "save:mm", "h.1": "none"}.
  nlohmann::json policies = nlohmann::json::object();
  for (const auto& m : p.plan.modules) policies[m] = p.plan.policy_for(m).spelling();
  for (const auto& [a, b] : p.plan.ranges)
    policies[range_label(a, b)] = p.plan.policy_for(range_label(a, b)).spelling();
  return {{"strategy", strategy_name(p.strategy)},
          {"detail", p.detail},
          {"modules", p.plan.modules},
          {"ranges", ranges},
          {"policies", policies},
          {"offload", p.plan.offload},
          {"ok", p.eval.ok},
          {"error", p.eval.error},
          {"peak_bytes", p.eval.peak_bytes},
          {"recompute_ms", p.eval.recompute_ms()},
          {"recompute_ops", p.eval.recompute_ops},
          {"transfer_ms", static_cast<double>(p.eval.transfer_ns) / 1e6},
          {"saved_bytes", p.eval.saved_bytes},
          {"rng_bytes", p.eval.rng_bytes},
          {"fits", p.fits},
          {"exact", p.exact},
          {"repaired", p.repaired},
          {"note", p.note}};
}

void print_table(const std::vector<PlanPoint>& points, const std::vector<PlanPoint>& front) {
  std::cout << "\nfrontier: peak against recompute (* = on the frontier, not beaten in both)\n"
            << "    strategy    detail                         peak   recompute ms    ops  plan\n";
  // The very point, not another one of the same plan: a strategy that found a frontier plan
  // too is not starred twice.
  auto on_front = [&](const PlanPoint& p) {
    for (const auto& f : front)
      if (f.plan.key() == p.plan.key() && f.strategy == p.strategy && f.detail == p.detail)
        return true;
    return false;
  };
  auto sorted = points;
  std::stable_sort(sorted.begin(), sorted.end(), [](const PlanPoint& a, const PlanPoint& b) {
    if (a.eval.ok != b.eval.ok) return a.eval.ok;
    return a.eval.peak_bytes < b.eval.peak_bytes;
  });
  for (const auto& p : sorted) {
    std::string plan = plan_text(p);
    if (plan.size() > 60) plan = plan.substr(0, 57) + "...";
    if (!p.eval.ok) {
      std::string why = p.eval.error;
      if (why.size() > 70) why = why.substr(0, 67) + "...";
      std::cout << "    " << std::left << std::setw(12) << strategy_name(p.strategy)
                << std::setw(24) << p.detail << std::right << "  does not run: " << why << "\n";
      continue;
    }
    std::cout << (on_front(p) ? "  * " : "    ") << std::left << std::setw(12)
              << strategy_name(p.strategy) << std::setw(24) << p.detail << " " << std::right
              << std::setw(11) << mib(p.eval.peak_bytes) << std::setw(15) << std::fixed
              << std::setprecision(3) << p.eval.recompute_ms() << std::setw(7)
              << p.eval.recompute_ops << "  " << plan << "\n";
  }
}

}  // namespace

namespace {

// What a plan's report needs besides the plan itself.
struct PlanReport {
  const Model& model;
  const PlanEvaluator& ev;
  const Planner& planner;
  Strategy strategy;
  std::int64_t budget;
  double seconds;
  std::optional<GpuPlan> gpu;  // --device cuda: the budget is the card's
};

void print_plan_json(const PlanReport& r, const PlanPoint& chosen,
                     const std::vector<PlanPoint>& points, const std::vector<PlanPoint>& front) {
  const RunSettings& st = r.ev.settings();
  nlohmann::json j{{"model", r.model.name},
                   {"budget_bytes", r.budget},
                   {"plain_peak_bytes", r.ev.baseline().peak_bytes},
                   {"times", r.ev.times_measured() ? "measured"
                             : r.ev.gpu_times()    ? "estimated-reference-gpu"
                                                   : "estimated"},
                   {"evaluations", r.ev.runs()},
                   {"policy", r.ev.policy().spelling()},
                   {"plan", point_json(chosen)}};
  if (st.fsdp.ranks > 0 || st.param_dtype != DType::f32)
    j["per_rank"] = {{"ranks", std::max(1, st.fsdp.ranks)},
                     {"param_dtype", dtype_name(st.param_dtype)},
                     {"measured", false},
                     {"note", kFsdpNotMeasured}};
  if (r.gpu)
    j["gpu"] = {{"card_bytes", r.gpu->card},
                {"reserved_peak_bytes", r.gpu->reserved_peak()},
                {"cuda_context_bytes_estimate", r.gpu->context},
                {"total_bytes", r.gpu->total()},
                {"allocated_budget_bytes", r.gpu->allocated_budget},
                {"rounds", r.gpu->rounds},
                {"fits", chosen.fits}};
  for (const auto& c : r.planner.candidates().items)
    j["candidates"].push_back({{"label", c.label},
                               {"range", c.is_range},
                               {"block", c.is_block},
                               {"kept_bytes", c.kept_bytes},
                               {"input_bytes", c.input_bytes},
                               {"rng_bytes", c.rng_bytes},
                               {"recompute_ms", static_cast<double>(c.recompute_ns) / 1e6},
                               {"recompute_ops", c.recompute_ops},
                               {"batchnorm", c.batchnorm},
                               {"policy", c.with_policy ? r.ev.policy().spelling() : "none"},
                               {"policy_kept_bytes", c.policy_kept_bytes},
                               {"offload", c.offload},
                               {"transfer_ms", static_cast<double>(c.transfer_ns) / 1e6}});
  for (const auto& p : points) j["points"].push_back(point_json(p));
  for (const auto& p : front) j["frontier"].push_back(point_json(p));
  std::cout << j.dump(2) << "\n";
}

void print_plan_text(const PlanReport& r, const PlanPoint& chosen,
                     const std::vector<PlanPoint>& points, const std::vector<PlanPoint>& front) {
  const auto& set = r.planner.candidates();
  std::cout << "model       " << r.model.name << "\n"
            << "candidates  " << set.items.size() << " (" << set.blocks.size() << " blocks under '"
            << (set.chain_parent.empty() ? "(root)" : set.chain_parent)
            << "', their children, ranges of blocks)\n"
            << "unplanned   peak " << format_bytes(r.ev.baseline().peak_bytes) << "\n";
  if (const RunSettings& st = r.ev.settings(); st.fsdp.ranks > 0 || st.param_dtype != DType::f32)
    std::cout << "per rank    every peak is one rank's under FSDP2 on "
              << std::max(1, st.fsdp.ranks) << " rank(s), param_dtype "
              << dtype_name(st.param_dtype) << ": " << kFsdpNotMeasured << "\n";
  std::cout << "budget      " << format_bytes(r.budget)
            << (r.gpu ? " of the GPU (reserved + CUDA context); allocated budget " +
                            format_bytes(r.gpu->allocated_budget)
                      : std::string())
            << "\n"
            << "strategy    " << strategy_name(r.strategy)
            << (chosen.detail.empty() ? "" : " (" + chosen.detail + ")")
            << (chosen.repaired && chosen.fits ? ", repaired to fit" : "") << "\n"
            << "plan        " << plan_text(chosen) << "\n";
  if (!r.ev.policy().empty()) {
    const std::size_t regions = chosen.plan.modules.size() + chosen.plan.ranges.size();
    std::size_t whole = 0;
    for (const auto& [region, own] : chosen.plan.policies) whole += own.empty() ? 1 : 0;
    std::cout << "policy      " << r.ev.policy().spelling()
              << " offered per region (--policy): " << regions - whole << " of " << regions
              << " regions under it, the rest recomputed whole\n";
  }
  if (r.ev.gpu_times()) {
    std::size_t offered = 0;
    for (const auto& c : set.items) offered += c.offload ? 1 : 0;
    std::cout << "offload     weighed against recompute (--weigh-offload): "
              << chosen.plan.offload.size() << " of " << offered << " modules offloaded; copies "
              << std::fixed << std::setprecision(3)
              << static_cast<double>(chosen.eval.transfer_ns) / 1e6 << " ms at "
              << std::setprecision(0) << r.ev.settings().pcie_gb_per_s
              << " GB/s, recompute at a reference GPU's rates (estimates)\n";
  }
  std::cout << "peak        " << format_bytes(chosen.eval.peak_bytes)
            << (chosen.fits ? "  fits" : "  OVER BUDGET") << "\n";
  if (r.gpu)
    std::cout << "on the GPU  reserved " << format_bytes(r.gpu->reserved_peak())
              << " + CUDA context ~" << format_bytes(r.gpu->context)
              << " (estimate) = " << format_bytes(r.gpu->total()) << " of "
              << format_bytes(r.gpu->card) << "\n";
  std::cout << "recompute   " << std::fixed << std::setprecision(3) << chosen.eval.recompute_ms()
            << (r.ev.times_measured() ? " ms (forward times measured per op), "
                : r.ev.gpu_times()    ? " ms (a reference GPU's forward times, estimated), "
                                      : " ms (forward times estimated per op), ")
            << chosen.eval.recompute_ops << " op executions\n"
            << "evaluated   " << r.ev.runs() << " runs in " << std::setprecision(2) << r.seconds
            << " s\n";
  if (!chosen.note.empty()) std::cout << "note        " << chosen.note << "\n";
  print_table(points, front);
}

}  // namespace

CommandDoc plan_command_doc() {
  return {
      "plan",
      "MODEL --budget B [options]",
      "what to checkpoint to fit a memory budget with the least recompute, and the "
      "memory/recompute frontier of every strategy",
      "Chooses what to checkpoint so that the run's peak memory fits the budget, with the least "
      "recompute. A model of the peak built from the plain run proposes; every plan shown or "
      "chosen is judged by a dry run of the engine (one thread), never by the model alone. "
      "--policy P offers a per-op policy the planner may give each region instead of "
      "recomputing it whole (PyTorch >= 2.4 to run the exported code).",
      {option_group("plan options", plan_rules())},
      TakesRunOptions::without_outputs,
      "0 a plan fits, 2 usage, 3 the model could not be loaded, 4 no plan fits the budget",
  };
}

int cmd_plan(const std::vector<std::string>& args) {
  if (has_help(args)) {
    std::cout << command_help(plan_command_doc());
    return 0;
  }
  PlanArgs pa = parse(args);
  std::vector<std::string> pos;
  const RunOptions o = parse_run_options(pa.rest, &pos, false);
  if (pos.size() != 1) throw UsageError("plan takes exactly one MODEL");
  if (pa.budget.empty()) throw UsageError("plan needs --budget (bytes such as 300MiB, or 60%)");
  Strategy strategy{};
  try {
    strategy = strategy_from_name(pa.strategy);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--strategy: ") + e.what());
  }
  int code = kExitOk;
  std::shared_ptr<Model> model = load_or_exit(pos[0], &code);
  if (!model) return code;
  RunOptions plain = o;
  const auto t0 = std::chrono::steady_clock::now();
  const RunRequest asked = make_request(*model, plain);
  if (pa.candidates.offload && asked.settings.device != Device::cuda)
    throw UsageError(
        "--weigh-offload needs --device cuda: on the cpu, host memory is the memory planned");
  if (pa.candidates.offload && pa.measure_times)
    throw UsageError(
        "--weigh-offload times recompute at a GPU's rates; --measure-times would "
        "time it on this machine's CPU");
  PlanEvaluator ev(model, asked.settings, asked.plan.policy, nullptr, pa.measure_times,
                   pa.candidates.offload);
  std::int64_t budget = 0;
  try {
    // A share is of what the unplanned run takes: on a GPU, from the card.
    const Evaluation& plain = ev.baseline();
    budget =
        parse_budget(pa.budget, plain.reserved_peak > 0 ? plain.reserved_peak + kCudaContextBytes
                                                        : plain.peak_bytes);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--budget: ") + e.what());
  }
  Planner planner(ev, pa.candidates, pa.params);
  // On a GPU the budget is what the process may take from the card; the planner's are
  // allocated bytes (plan_for_gpu translates, each round checked by the plan's dry run).
  const bool on_gpu = ev.baseline().reserved_peak > 0;
  // The frontier first: the plan is then never worse than a point it shows that fits.
  const auto points = planner.sweep(on_gpu ? allocated_budget_for_gpu(ev, budget) : budget);
  std::optional<GpuPlan> gpu;
  if (on_gpu) gpu = plan_for_gpu(planner, strategy, budget);
  const PlanPoint chosen = gpu ? gpu->point : planner.plan(strategy, budget);
  const auto front = pareto_frontier(points);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!pa.plot.empty()) write_frontier_svg(pa.plot, model->name, points, front, budget, chosen);
  if (!pa.code.empty()) {
    std::ofstream f(pa.code);
    f << plan_pytorch_code(*model, ev.request(chosen.plan));
    if (!f) throw std::runtime_error("--code: cannot write " + pa.code);
  }
  const PlanReport report{*model, ev, planner, strategy, budget, seconds, gpu};
  if (pa.json)
    print_plan_json(report, chosen, points, front);
  else
    print_plan_text(report, chosen, points, front);
  if (!chosen.fits) std::cerr << "ckptlab-cli: " << chosen.note << "\n";
  return chosen.fits ? 0 : 4;
}

}  // namespace ckpt::cli
