// libFuzzer target: see fuzz_entries.hpp.
#include "tests/fuzz/fuzz_entries.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ckpt::fuzz::capture_model(data, size);
  return 0;
}
