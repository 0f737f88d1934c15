#include "engine/trace/export.hpp"

#include <cstdio>
#include <fstream>
#include <ostream>
#include <stdexcept>

namespace ckpt {

namespace {

// A JSON string literal (RFC 8259 escaping; UTF-8 passes through).
void json_string(std::ostream& out, std::string_view s) {
  out << '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out << "\\\"";
        break;
      case '\\':
        out << "\\\\";
        break;
      case '\n':
        out << "\\n";
        break;
      case '\r':
        out << "\\r";
        break;
      case '\t':
        out << "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out << buf;
        } else {
          out << ch;
        }
    }
  }
  out << '"';
}

void json_bytes(std::ostream& out, const CategoryBytes& b) {
  out << '[';
  for (std::size_t i = 0; i < b.size(); ++i) out << (i ? "," : "") << b[i];
  out << ']';
}

// Replays the events step by step, so that exporting is linear in the trace's size.
class MemoryReplay {
 public:
  explicit MemoryReplay(const Trace& t) : trace_(t), bytes_(t.initial_memory()) { advance_to(-1); }
  const CategoryBytes& advance_to(std::int64_t k) {
    const auto end = trace_.first_event(k + 1);
    for (; next_ < end; ++next_) {
      const TraceEvent e = trace_.event(next_);
      auto& cat = bytes_[static_cast<std::size_t>(e.category)];
      if (e.kind == TraceEventKind::alloc) cat += e.bytes;
      if (e.kind == TraceEventKind::free) cat -= e.bytes;
      if (e.kind == TraceEventKind::recategorize) {
        bytes_[static_cast<std::size_t>(e.previous)] -= e.bytes;
        cat += e.bytes;
      }
    }
    return bytes_;
  }

 private:
  const Trace& trace_;
  CategoryBytes bytes_;
  std::int64_t next_ = 0;
};

std::int64_t sum(const CategoryBytes& b) {
  std::int64_t s = 0;
  for (auto v : b) s += v;
  return s;
}

void csv_field(std::ostream& out, const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) {
    out << s;
    return;
  }
  out << '"';
  for (char c : s) out << (c == '"' ? "\"\"" : std::string(1, c));
  out << '"';
}

void spans_json(std::ostream& out, const char* key, const auto& spans) {
  out << ",\n\"" << key << "\":[";
  for (std::size_t i = 0; i < spans.size(); ++i) {
    out << (i ? ",\n" : "\n") << "{\"segment\":";
    json_string(out, spans[i].segment);
    out << ",\"begin_step\":" << spans[i].begin_step << ",\"end_step\":" << spans[i].end_step;
    if constexpr (requires { spans[i].rng_bytes; }) out << ",\"rng_bytes\":" << spans[i].rng_bytes;
    out << '}';
  }
  out << ']';
}

}  // namespace

TraceFormat trace_format_from_name(const std::string& name) {
  if (name == "json") return TraceFormat::json;
  if (name == "csv") return TraceFormat::csv;
  if (name == "chrome" || name == "perfetto") return TraceFormat::chrome;
  if (name == "pickle" || name == "snapshot") return TraceFormat::pytorch_snapshot;
  throw std::invalid_argument("unknown trace format '" + name +
                              "' (expected json, csv, chrome or pickle)");
}

namespace {

// Every step: its phase, op, node, segment, times and the live bytes by category after it.
void steps_json(const Trace& t, std::ostream& out) {
  MemoryReplay replay(t);
  for (std::int64_t k = 0; k < t.step_count(); ++k) {
    const TraceStep s = t.step(k);
    const auto& mem = replay.advance_to(k);
    out << (k ? ",\n" : "\n") << "{\"phase\":\"" << phase_name(s.phase) << "\",\"op\":";
    json_string(out, s.op);
    out << ",\"node\":";
    json_string(out, s.node);
    out << ",\"segment\":";
    json_string(out, s.segment);
    out << ",\"start_ns\":" << s.start_ns << ",\"duration_ns\":" << s.duration_ns
        << ",\"total\":" << sum(mem) << ",\"memory\":";
    json_bytes(out, mem);
    out << '}';
  }
}

// Every saved tensor's life: its states by step.
void tensors_json(const Trace& t, std::ostream& out) {
  const auto& tensors = t.tensors();
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorLife& l = tensors[i];
    out << (i ? ",\n" : "\n") << "{\"name\":";
    json_string(out, l.name);
    out << ",\"node\":";
    json_string(out, l.node);
    out << ",\"bytes\":" << l.bytes << ",\"saved_at_step\":" << l.saved_at_step
        << ",\"saved_by_op\":";
    json_string(out, l.saved_by_op);
    out << ",\"transitions\":[";
    for (std::size_t j = 0; j < l.transitions.size(); ++j)
      out << (j ? "," : "") << '[' << l.transitions[j].first << ",\""
          << activation_state_name(l.transitions[j].second) << "\"]";
    out << "]}";
  }
}

}  // namespace

void write_trace_json(const Trace& t, std::ostream& out) {
  out << "{\"format\":\"ckptlab-trace\",\"version\":1,\n\"categories\":[";
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c)
    out << (c ? "," : "") << '"' << category_name(static_cast<MemoryCategory>(c)) << '"';
  out << "],\n\"states\":[";
  for (int s = 0; s <= static_cast<int>(ActivationState::freed); ++s)
    out << (s ? "," : "") << '"' << activation_state_name(static_cast<ActivationState>(s)) << '"';
  const auto counts = t.counts();
  const auto peak = t.peak();
  out << "],\n\"summary\":{\"steps\":" << t.step_count() << ",\"events\":" << t.event_count()
      << ",\"forward_end\":" << t.forward_end() << ",\"counts\":{\"forward\":" << counts.forward
      << ",\"recompute\":" << counts.recompute << ",\"backward\":" << counts.backward;
  if (counts.optimizer > 0) out << ",\"optimizer\":" << counts.optimizer;
  out << "},\"peak\":{\"bytes\":" << peak.bytes << ",\"step\":" << peak.step << ",\"by_category\":";
  json_bytes(out, peak.by_category);
  out << "}},\n\"initial_memory\":";
  json_bytes(out, t.initial_memory());

  out << ",\n\"steps\":[";
  steps_json(t, out);
  out << "],\n\"events\":[";
  for (std::int64_t i = 0; i < t.event_count(); ++i) {
    const TraceEvent e = t.event(i);
    out << (i ? ",\n" : "\n") << '[' << e.step << ",\"" << trace_event_kind_name(e.kind) << "\",\""
        << category_name(e.category) << "\",\"" << category_name(e.previous) << "\"," << e.bytes
        << ',' << e.allocation << ',' << e.tensor << ']';
  }
  out << "],\n\"tensors\":[";
  tensors_json(t, out);
  out << "],\n\"messages\":[";
  const auto& messages = t.messages();
  for (std::size_t i = 0; i < messages.size(); ++i) {
    out << (i ? ",\n" : "\n") << "{\"step\":" << messages[i].step << ",\"severity\":\""
        << severity_name(messages[i].severity) << "\",\"text\":";
    json_string(out, messages[i].text);
    out << '}';
  }
  out << ']';
  spans_json(out, "checkpoints", t.checkpoints());
  spans_json(out, "recomputes", t.recomputes());
  out << "}\n";
}

void write_memory_csv(const Trace& t, std::ostream& out) {
  out << "step,phase,op,node,total";
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c)
    out << ',' << category_name(static_cast<MemoryCategory>(c));
  out << '\n';
  MemoryReplay replay(t);
  auto row = [&](const CategoryBytes& mem) {
    out << ',' << sum(mem);
    for (auto b : mem) out << ',' << b;
    out << '\n';
  };
  out << "-1,setup,(before),";
  row(replay.advance_to(-1));
  for (std::int64_t k = 0; k < t.step_count(); ++k) {
    const TraceStep s = t.step(k);
    out << k << ',' << phase_name(s.phase) << ',';
    csv_field(out, s.op);
    out << ',';
    csv_field(out, s.node);
    row(replay.advance_to(k));
  }
}

namespace {

// Chrome's threads: one per phase (tid 1-4), the checkpoint segments apart from them.
constexpr int kSegmentsTid = 10;
int phase_tid(Phase p) {
  return static_cast<int>(p) + 1;
}
double micros(std::int64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

void chrome_metadata(const Trace& t, std::ostream& out) {
  out << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"Checkpoint Lab\"},"
         "\"traceEvents\":[\n"
         "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":"
         "\"Checkpoint Lab run\"}}";
  for (Phase p :
       {Phase::setup, Phase::forward, Phase::recompute, Phase::backward, Phase::optimizer}) {
    if (p == Phase::optimizer && t.counts().optimizer == 0) continue;
    out << ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":" << phase_tid(p)
        << ",\"name\":\"thread_name\",\"args\":{\"name\":\"" << phase_name(p) << "\"}}";
    out << ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":" << phase_tid(p)
        << ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":" << phase_tid(p) << "}}";
  }
  out << ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":" << kSegmentsTid
      << ",\"name\":\"thread_name\",\"args\":{\"name\":\"checkpoint segments\"}}";
}

// One slice per step, each followed by the memory counters that changed in it (all of them
// at time 0). Returns each step's end time in microseconds.
std::vector<double> chrome_steps(const Trace& t, std::ostream& out) {
  MemoryReplay replay(t);
  CategoryBytes last = replay.advance_to(-1);
  auto counters = [&](double ts, const CategoryBytes& mem, bool all) {
    for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
      if (!all && mem[c] == last[c]) continue;
      out << ",\n{\"ph\":\"C\",\"pid\":1,\"ts\":" << ts
          << ",\"name\":\"memory: " << category_name(static_cast<MemoryCategory>(c))
          << "\",\"args\":{\"bytes\":" << mem[c] << "}}";
    }
    last = mem;
  };
  counters(0.0, last, true);
  std::vector<double> step_end_us(static_cast<std::size_t>(t.step_count()));
  for (std::int64_t k = 0; k < t.step_count(); ++k) {
    const TraceStep s = t.step(k);
    const double ts = micros(s.start_ns);
    const double dur = micros(s.duration_ns);
    step_end_us[static_cast<std::size_t>(k)] = ts + dur;
    out << ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":" << phase_tid(s.phase) << ",\"ts\":" << ts
        << ",\"dur\":" << dur << ",\"name\":";
    json_string(out, s.op);
    out << ",\"cat\":\"" << phase_name(s.phase) << "\",\"args\":{\"step\":" << k << ",\"node\":";
    json_string(out, s.node);
    out << ",\"segment\":";
    json_string(out, s.segment);
    out << "}}";
    counters(ts + dur, replay.advance_to(k), false);
  }
  return step_end_us;
}

// A span covers the steps [begin, end); an empty one sits where it happened.
std::pair<double, double> span_time(const Trace& t, const std::vector<double>& step_end_us,
                                    std::int64_t begin, std::int64_t end) {
  const auto n = static_cast<std::int64_t>(step_end_us.size());
  const double from = begin < n ? micros(t.step(begin).start_ns) : n > 0 ? step_end_us.back() : 0.0;
  const double to =
      end > begin && end - 1 < n ? step_end_us[static_cast<std::size_t>(end - 1)] : from;
  return std::pair{from, to};
}

void chrome_spans(const Trace& t, const std::vector<double>& step_end_us, const auto& spans,
                  const char* what, std::ostream& out) {
  for (const auto& sp : spans) {
    auto [from, to] = span_time(t, step_end_us, sp.begin_step, sp.end_step);
    out << ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":" << kSegmentsTid << ",\"ts\":" << from
        << ",\"dur\":" << (to - from) << ",\"name\":";
    json_string(out, std::string(what) + " " + sp.segment);
    out << ",\"cat\":\"" << what << "\",\"args\":{\"begin_step\":" << sp.begin_step
        << ",\"end_step\":" << sp.end_step << "}}";
  }
}

// Messages are instants at the end of their step; one without a step sits at time 0.
void chrome_messages(const Trace& t, const std::vector<double>& step_end_us, std::ostream& out) {
  for (const auto& m : t.messages()) {
    const double ts =
        m.step >= 0 && m.step < t.step_count() ? step_end_us[static_cast<std::size_t>(m.step)] : 0;
    out << ",\n{\"ph\":\"i\",\"s\":\"g\",\"pid\":1,\"tid\":0,\"ts\":" << ts << ",\"name\":";
    json_string(out, m.text);
    out << ",\"cat\":\"" << severity_name(m.severity) << "\",\"args\":{\"step\":" << m.step << "}}";
  }
}

}  // namespace

void write_chrome_trace(const Trace& t, std::ostream& out) {
  out.precision(15);
  chrome_metadata(t, out);
  const std::vector<double> step_end_us = chrome_steps(t, out);
  chrome_spans(t, step_end_us, t.checkpoints(), "checkpoint", out);
  chrome_spans(t, step_end_us, t.recomputes(), "recompute", out);
  chrome_messages(t, step_end_us, out);
  out << "\n]}\n";
}

void export_trace(const Trace& trace, TraceFormat format, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot open '" + path + "' for writing the trace");
  switch (format) {
    case TraceFormat::json:
      write_trace_json(trace, out);
      break;
    case TraceFormat::csv:
      write_memory_csv(trace, out);
      break;
    case TraceFormat::chrome:
      write_chrome_trace(trace, out);
      break;
    case TraceFormat::pytorch_snapshot:
      write_memory_snapshot(trace, out);
      break;
  }
  out.flush();
  if (!out) throw std::runtime_error("writing the trace to '" + path + "' failed");
}

}  // namespace ckpt
