#include "sample_path.hpp"

#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace ckpt::cli {

namespace fs = std::filesystem;

namespace {

// The installed samples first; the source tree only for an executable inside the build tree,
// so that an installed ckptlab-cli never reads a stale checkout.
std::vector<fs::path> sample_dirs() {
  std::vector<fs::path> dirs;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return dirs;
  dirs.push_back((exe.parent_path() / ".." / "share" / "ckptlab" / "samples").lexically_normal());
#if defined(CKPTLAB_BUILD_DIR) && defined(CKPTLAB_SOURCE_SAMPLES_DIR)
  const fs::path build = fs::weakly_canonical(CKPTLAB_BUILD_DIR, ec);
  const fs::path rel = exe.lexically_relative(build);
  if (!ec && !rel.empty() && *rel.begin() != "..") dirs.emplace_back(CKPTLAB_SOURCE_SAMPLES_DIR);
#endif
  return dirs;
}

}  // namespace

std::string resolve_model_path(const std::string& arg) {
  std::error_code ec;
  if (arg.empty() || fs::exists(arg, ec) || arg.find('/') != std::string::npos) return arg;
  const std::vector<fs::path> dirs = sample_dirs();
  for (const fs::path& dir : dirs)
    for (const char* ext : {"", ".json", ".onnx"})
      if (const fs::path p = dir / (arg + ext); fs::is_regular_file(p, ec)) return p.string();
  std::string searched;
  for (const fs::path& dir : dirs) searched += (searched.empty() ? "" : ", ") + dir.string();
  throw std::runtime_error("no file '" + arg + "', and no sample of that name in " +
                           (searched.empty() ? std::string("(no samples folder)") : searched));
}

}  // namespace ckpt::cli
