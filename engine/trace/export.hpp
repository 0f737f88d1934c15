#pragma once

// Exporters of a Trace. All of them work on the trace of a failed run too (it simply ends at
// the step that failed). They stream: a 300,000-step trace is never built as a document.

#include <iosfwd>
#include <string>

#include "engine/trace/trace.hpp"

namespace ckpt {

enum class TraceFormat : std::uint8_t { json, csv, chrome, pytorch_snapshot };
// "json", "csv", "chrome" (also "perfetto"), "pickle" (also "snapshot"); throws
// std::invalid_argument otherwise.
TraceFormat trace_format_from_name(const std::string& name);

// The native JSON document, schema "ckptlab-trace" version 1:
// {
//   "format": "ckptlab-trace", "version": 1,
//   "categories": [9 names],          // the order of every per-category array below
//   "states": [6 names],              // activation states, for reference
//   "summary": {"steps", "events", "forward_end",
//               "counts": {"forward", "recompute", "backward"},
//               "peak": {"bytes", "step", "by_category": [8]}},
//   "initial_memory": [8],            // live bytes by category before the first event
//   "steps": [{"phase", "op", "node", "segment", "start_ns", "duration_ns",
//              "total", "memory": [8]}],   // memory: live bytes after the step's events
//   "events": [[step, kind, category, previous, bytes, allocation, tensor]],
//             // kind "alloc" | "free" | "recategorize"; previous is the category before a
//             // recategorize (equal to category otherwise); tensor indexes "tensors" or -1
//   "tensors": [{"name", "node", "bytes", "saved_at_step", "saved_by_op",
//                "transitions": [[step, state]]}],   // pending before the first transition
//   "messages": [{"step", "severity", "text"}],
//   "checkpoints": [{"segment", "begin_step", "end_step", "rng_bytes"}],  // forward of each
//                  segment; rng_bytes: the RNG state it stashed itself (nested ones apart)
//   "recomputes": [{"segment", "begin_step", "end_step"}]     // end_step is one past the last
// }
void write_trace_json(const Trace& trace, std::ostream& out);

// Memory by category per step: a header, a row "-1,setup,(before)" for the state before the
// first step, then one row per step: step,phase,op,node,total,<one column per category>.
void write_memory_csv(const Trace& trace, std::ostream& out);

// Chrome trace event format (opens in Perfetto and chrome://tracing): ops as complete ("X")
// slices on one track per phase, checkpoint segments and recomputes on their own track,
// memory as one counter track per category ("memory: activation", ...), warnings and errors
// as instant events. Times are the steps' measured times in microseconds.
void write_chrome_trace(const Trace& trace, std::ostream& out);

// A PyTorch CUDA memory snapshot (the pickle torch.cuda.memory._dump_snapshot() writes, which
// PyTorch's memory_viz page opens): every alloc and free in order, with frames naming the op,
// phase, module and category of each, and `category` set on each entry (memory_viz colours by
// it). The engine has no caching allocator, so each allocation is its own segment (rounded up
// to 512 bytes, as PyTorch rounds) and reserved follows allocated. What was live before the
// trace and never freed (parameters, inputs) is one block per category in `segments`.
void write_memory_snapshot(const Trace& trace, std::ostream& out);

// Writes `trace` to `path` in `format`; throws std::runtime_error naming the file on failure.
void export_trace(const Trace& trace, TraceFormat format, const std::string& path);

}  // namespace ckpt
