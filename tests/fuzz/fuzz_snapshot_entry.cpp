// The fuzz entry of PyTorch memory snapshots (issue 29); see fuzz_entries.hpp.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "engine/snapshot/measured_timeline.hpp"
#include "engine/snapshot/memory_snapshot.hpp"
#include "tests/fuzz/fuzz_entries.hpp"

namespace ckpt::fuzz {

// Decoded, then measured on every device it names, the way `ckptlab-cli snapshot` and the app
// read one. A rejection must name the file ("fuzz.pickle").
void memory_snapshot(const std::uint8_t* data, std::size_t size) {
  try {
    const MemorySnapshot s = parse_memory_snapshot(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.pickle");
    for (const std::int64_t device : s.devices()) measure_timeline(s, device);
  } catch (const std::exception& e) {
    if (std::string_view(e.what()).find("fuzz.pickle") == std::string_view::npos) {
      std::fprintf(stderr, "fuzz memory_snapshot: an error that does not name the file: %s\n",
                   e.what());
      std::abort();
    }
  }
}

}  // namespace ckpt::fuzz
