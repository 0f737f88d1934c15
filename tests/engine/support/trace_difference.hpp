#pragma once

// The first difference between two traces' memory events, for the tests that hold a dry run (or a
// second run) to a real run event for event: one loop, so that every such test compares the same
// fields. Each test compares the steps itself, by the fields that matter to it.

#include <cstdint>
#include <string>

#include "engine/trace/trace.hpp"

namespace ckpt::test {

// "event counts differ", "event <i> (step <k>)", or "" where every event matches.
inline std::string first_event_difference(const Trace& a, const Trace& b) {
  if (a.event_count() != b.event_count()) return "event counts differ";
  for (std::int64_t i = 0; i < a.event_count(); ++i) {
    const TraceEvent x = a.event(i), y = b.event(i);
    if (x.step != y.step || x.kind != y.kind || x.category != y.category || x.bytes != y.bytes)
      return "event " + std::to_string(i) + " (step " + std::to_string(x.step) + ")";
  }
  return {};
}

}  // namespace ckpt::test
