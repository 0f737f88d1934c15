#include "engine/request/memory_guard.hpp"

#include <fstream>
#include <sstream>

#include "engine/report/figures.hpp"
#include "engine/report/run_summary.hpp"

namespace ckpt {

std::int64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

std::int64_t default_memory_limit() {
  return static_cast<std::int64_t>(kDefaultMemoryShare *
                                   static_cast<double>(available_memory_bytes()));
}

std::int64_t predicted_process_bytes(const Model& model, std::int64_t dry_peak) {
  std::int64_t weights = 0;
  for (const auto& p : model.parameters) weights += p.initial.nbytes();
  // The storage pool rounds each block up to one of four classes per power of two: at most a
  // quarter more address space, a little more resident memory, which 1/8 covers in practice.
  return dry_peak + dry_peak / 8 + weights;
}

namespace {

GuardVerdict judge_gpu(const RunResult& dry, const GpuFit& gpu) {
  GuardVerdict v;
  v.dry_peak = dry.trace.peak().bytes;
  v.predicted = gpu.total();
  v.limit = gpu.capacity;
  if (!dry.ok || gpu.fits()) return v;
  v.fits = false;
  v.message = "not run: on the GPU this configuration would take about " +
              format_bytes(gpu.total()) + " (the caching allocator reserves " +
              format_bytes(gpu.reserved_peak) + " for a peak of " + format_bytes(v.dry_peak) +
              " allocated, exactly as its dry run replays it, plus about " +
              format_bytes(gpu.context) + " of CUDA context, an estimate), over the " +
              format_bytes(gpu.capacity) +
              " of GPU memory (--gpu-memory). Checkpointing more blocks or a smaller batch "
              "lowers it.";
  return v;
}

// The CUDA engine runs no whole model yet (README, "Devices behind one seam"), on a GPU or not:
// a CUDA request's figures are its dry run's, exact, and no real run follows.
GuardVerdict no_real_run_on(Device device, GuardVerdict v) {
  if (!v.fits || device != Device::cuda) return v;
  v.fits = false;
  v.message =
      "dry run only: a real CUDA run needs the CUDA engine on a GPU, which runs no whole model "
      "yet; the bytes are the dry run's, exact, as PyTorch 2.x would hold them";
  return v;
}

// A capture made on meta tensors (ckptlab_capture without weights) holds its weights' shapes,
// not their values: its figures are its dry run's, and no real run follows. A weight an ONNX
// file lacks is different: the loader said how a real run makes it (ParameterInfo::made_at_run).
GuardVerdict no_real_run_without_weights(const Model& model, GuardVerdict v) {
  if (!v.fits) return v;
  for (const auto& p : model.parameters)
    if (p.initial.is_meta() && !p.made_at_run) {
      v.fits = false;
      v.message = "dry run only: the weights were not captured ('" + p.name +
                  "' has a shape and no values; capture with weights=True for a real run); the "
                  "bytes are the dry run's, exact";
      return v;
    }
  return v;
}

// What the device's memory allows.
GuardVerdict judge_memory_of_device(const Model& model, const RunResult& dry,
                                    const RunSettings& settings);

}  // namespace

GuardVerdict judge_memory(const Model& model, const RunResult& dry, const RunSettings& settings) {
  return no_real_run_without_weights(model, judge_memory_of_device(model, dry, settings));
}

namespace {

GuardVerdict judge_memory_of_device(const Model& model, const RunResult& dry,
                                    const RunSettings& settings) {
  if (const auto gpu = gpu_fit(dry, settings)) {
    // Sharded (FSDP2), a GPU holds one rank's bytes (engine/report/fsdp_memory.hpp), not the
    // whole run's: the one-GPU fit would judge a configuration nobody runs.
    if (settings.fsdp.ranks > 0) {
      GuardVerdict v;
      v.dry_peak = dry.trace.peak().bytes;
      v.limit = gpu->capacity;
      return no_real_run_on(settings.device, v);
    }
    return no_real_run_on(settings.device, judge_gpu(dry, *gpu));
  }
  const std::int64_t limit = settings.max_memory;
  GuardVerdict v;
  v.limit = limit > 0 ? limit : default_memory_limit();
  v.dry_peak = dry.trace.peak().bytes;
  v.predicted = predicted_process_bytes(model, v.dry_peak);
  if (!dry.ok || v.limit <= 0 || v.predicted <= v.limit) return v;
  v.fits = false;
  std::ostringstream m;
  m << "not run: this configuration would need about " << format_bytes(v.predicted)
    << " (its dry run peaks at " << format_bytes(v.dry_peak)
    << ", exactly; plus the model's weights and allocator slack), over the memory limit of "
    << format_bytes(v.limit)
    << (limit > 0 ? " that was set"
                  : " (" + std::to_string(static_cast<int>(kDefaultMemoryShare * 100)) +
                        " % of the memory available now)")
    << ". A dry run shows its exact memory without computing it; checkpointing more blocks or a "
       "smaller batch lowers it.";
  v.message = m.str();
  return v;
}

}  // namespace

}  // namespace ckpt
