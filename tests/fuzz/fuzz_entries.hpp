#pragma once

// The readers of outside bytes as fuzz entries (issue 17): one function per reader, shared by
// the libFuzzer targets (fuzz_*.cpp, clang with -fsanitize=fuzzer) and the ordinary test that
// replays every committed regression input (test_fuzz_regressions.cpp, the normal build).
//
// An entry returns normally when the reader accepted the bytes or rejected them with a named
// error (an exception whose message names the source); anything else (a crash, a sanitizer
// report, an error without the source's name) is a finding: it aborts.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ckpt::fuzz {

struct Target {
  const char* name;  // also the folder of its regressions and seeds
  void (*entry)(const std::uint8_t* data, std::size_t size);
};

void onnx_model(const std::uint8_t* data, std::size_t size);
void json_model(const std::uint8_t* data, std::size_t size);
// A capture of ckptlab_capture (engine/model/capture_loader.hpp).
void capture_model(const std::uint8_t* data, std::size_t size);
void npy(const std::uint8_t* data, std::size_t size);
void dot_json(const std::uint8_t* data, std::size_t size);
// In fuzz_snapshot_entry.cpp, which needs only the snapshot floor: its fuzz target builds in
// seconds instead of the whole engine's minutes.
void memory_snapshot(const std::uint8_t* data, std::size_t size);

const std::vector<Target>& targets();

}  // namespace ckpt::fuzz
