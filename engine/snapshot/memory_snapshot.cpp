#include "engine/snapshot/memory_snapshot.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "engine/snapshot/pickle.hpp"

namespace ckpt {

const char* snapshot_action_name(SnapshotAction a) {
  switch (a) {
    case SnapshotAction::alloc:
      return "alloc";
    case SnapshotAction::free_requested:
      return "free_requested";
    case SnapshotAction::free_completed:
      return "free_completed";
    case SnapshotAction::segment_alloc:
      return "segment_alloc";
    case SnapshotAction::segment_free:
      return "segment_free";
    case SnapshotAction::segment_map:
      return "segment_map";
    case SnapshotAction::segment_unmap:
      return "segment_unmap";
    case SnapshotAction::oom:
      return "oom";
    case SnapshotAction::snapshot:
      return "snapshot";
    case SnapshotAction::other:
      return "other";
  }
  return "?";
}

std::vector<std::int64_t> MemorySnapshot::devices() const {
  std::vector<std::int64_t> out;
  for (std::size_t d = 0; d < device_traces.size(); ++d)
    if (!device_traces[d].empty()) out.push_back(static_cast<std::int64_t>(d));
  for (const auto& s : segments) out.push_back(s.device);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<const SnapshotFrame*> MemorySnapshot::user_frames(StackId id, std::size_t max) const {
  std::vector<const SnapshotFrame*> python, native;
  for (const auto f : stacks[id]) {
    const SnapshotFrame& frame = frames[f];
    if (frame.filename.ends_with(".py") || frame.filename.starts_with("<frozen")) {
      // PyTorch's own plumbing between a module and its op: the call machinery, the default
      // device's hook, TorchScript's wrappers, runpy.
      static const char* const plumbing[] = {"torch/nn/modules/module.py", "torch/utils/_device.py",
                                             "torch/_jit_internal.py", "<frozen"};
      bool skip = false;
      for (const char* p : plumbing) skip = skip || frame.filename.find(p) != std::string::npos;
      if (!skip) python.push_back(&frame);
      continue;
    }
    // The allocator's, the unwinder's and the interpreter's own frames say nothing about the
    // program; neither do frames without a name.
    static const char* const skip[] = {
        "unwind",  "CapturedTraceback", "gather_with_cpp", "CachingAllocator",
        "_PyEval", "PyEval_",           "PyObject_",       "_start",
        "__libc_", "Py_RunMain",        "Py_BytesMain",    "_PyRun"};
    bool internal = frame.name.empty() || frame.name == "??";
    for (const char* k : skip) internal = internal || frame.name.find(k) != std::string::npos;
    if (!internal) native.push_back(&frame);
  }
  std::vector<const SnapshotFrame*>& out = python.empty() ? native : python;
  if (out.size() > max) out.resize(max);
  return out;
}

namespace {

// Where a field is, for messages ("device_traces[0][12].size"), built only when one is needed.
struct Path {
  const Path* parent = nullptr;
  const char* key = nullptr;  // a dict key, or null for a list index
  std::size_t index = 0;

  Path at(const char* k) const { return Path{this, k, 0}; }
  Path at(std::size_t i) const { return Path{this, nullptr, i}; }
  // "" for the top-level object.
  std::string str() const {
    if (!parent) return "";
    const std::string up = parent->str();
    if (key) return up.empty() ? key : up + "." + key;
    return up + "[" + std::to_string(index) + "]";
  }
};

class SnapshotBuilder {
 public:
  explicit SnapshotBuilder(const std::string& source) { out_.source = source; }

  MemorySnapshot build(const PickleNode& root) {
    out_.stacks.emplace_back();  // kNoStack
    const Path top;
    if (root.kind == PickleKind::list) {  // PyTorch 1.13: the segments alone
      read_segments(root, top);
      return std::move(out_);
    }
    if (root.kind != PickleKind::dict)
      fail(top, std::string("a memory snapshot is a dict (or 1.13's list of segments), not ") +
                    pickle_kind_name(root.kind));
    const PickleNode* segments = root.find("segments");
    if (!segments) fail(top, "no 'segments': not a snapshot from torch.cuda.memory._snapshot()");
    read_segments(*segments, top.at("segments"));
    if (const PickleNode* traces = root.find("device_traces")) {
      const Path tp = top.at("device_traces");
      for (std::size_t d = 0; d < list(*traces, tp).size(); ++d) {
        const Path dp = tp.at(d);
        auto& events = out_.device_traces.emplace_back();
        const auto& entries = list(*traces->items[d], dp);
        events.reserve(entries.size());
        for (std::size_t i = 0; i < entries.size(); ++i)
          events.push_back(read_event(*entries[i], dp.at(i)));
      }
    }
    if (const PickleNode* s = root.find("allocator_settings"); s && s->kind == PickleKind::dict)
      read_settings(*s);
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const Path& at, const std::string& what) const {
    const std::string where = at.str();
    throw std::runtime_error(out_.source + ": " + (where.empty() ? "the top-level object" : where) +
                             ": " + what);
  }
  const std::vector<const PickleNode*>& list(const PickleNode& n, const Path& at) const {
    if (n.kind != PickleKind::list && n.kind != PickleKind::tuple)
      fail(at, std::string("expected a list, got ") + pickle_kind_name(n.kind));
    return n.items;
  }
  const PickleNode& dict(const PickleNode& n, const Path& at) const {
    if (n.kind != PickleKind::dict)
      fail(at, std::string("expected a dict, got ") + pickle_kind_name(n.kind));
    return n;
  }
  const PickleNode& field(const PickleNode& d, const char* key, const Path& at) const {
    const PickleNode* v = d.find(key);
    if (!v) fail(at, std::string("no '") + key + "'");
    return *v;
  }
  std::int64_t integer(const PickleNode& n, const Path& at) const {
    if (n.kind == PickleKind::integer || n.kind == PickleKind::boolean) return n.integer;
    if (n.kind == PickleKind::big_integer) fail(at, "an integer beyond 64 bits");
    fail(at, std::string("expected an int, got ") + pickle_kind_name(n.kind));
  }
  std::int64_t integer_field(const PickleNode& d, const char* key, const Path& at) const {
    return integer(field(d, key, at), at.at(key));
  }
  std::int64_t size_field(const PickleNode& d, const char* key, const Path& at) const {
    const std::int64_t v = integer_field(d, key, at);
    if (v < 0) fail(at.at(key), "a negative size, " + std::to_string(v));
    if (v > kMaxSnapshotSize) fail(at.at(key), std::to_string(v) + " bytes, more than 256 TiB");
    return v;
  }
  std::int64_t address_field(const PickleNode& d, const char* key, const Path& at) const {
    return address(integer_field(d, key, at), at.at(key));
  }
  std::int64_t address(std::int64_t v, const Path& at) const {
    if (v < 0 || v >= kMaxSnapshotAddress)
      fail(at, "address " + std::to_string(v) + " out of range");
    return v;
  }
  const std::string& string(const PickleNode& n, const Path& at) const {
    if (n.kind != PickleKind::string)
      fail(at, std::string("expected a str, got ") + pickle_kind_name(n.kind));
    return n.text;
  }
  // A stream is a number in PyTorch's snapshots (0 for the default stream, else the
  // cudaStream_t); other writers may omit it or write None.
  std::int64_t stream(const PickleNode& d, const Path& at) const {
    const PickleNode* s = d.find("stream");
    if (!s || s->kind == PickleKind::none) return 0;
    if (s->kind == PickleKind::big_integer) return -1;
    return integer(*s, at.at("stream"));
  }

  StackId frames(const PickleNode* list_node, const Path& at) {
    if (!list_node || list_node->kind == PickleKind::none) return kNoStack;
    const auto& items = list(*list_node, at);
    if (const auto it = stack_of_node_.find(list_node); it != stack_of_node_.end())
      return it->second;
    std::vector<std::uint32_t> ids;
    ids.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) ids.push_back(frame(*items[i], at.at(i)));
    const auto [it, added] = stack_ids_.try_emplace(ids, static_cast<StackId>(out_.stacks.size()));
    if (added) out_.stacks.push_back(std::move(ids));
    stack_of_node_.emplace(list_node, it->second);
    return it->second;
  }
  std::uint32_t frame(const PickleNode& n, const Path& at) {
    if (const auto it = frame_of_node_.find(&n); it != frame_of_node_.end()) return it->second;
    const PickleNode& d = dict(n, at);
    SnapshotFrame f;
    f.filename = string(field(d, "filename", at), at.at("filename"));
    f.name = string(field(d, "name", at), at.at("name"));
    f.line = integer_field(d, "line", at);
    const std::string key = f.filename + '\n' + std::to_string(f.line) + '\n' + f.name;
    const auto [it, added] =
        frame_ids_.try_emplace(key, static_cast<std::uint32_t>(out_.frames.size()));
    if (added) out_.frames.push_back(std::move(f));
    frame_of_node_.emplace(&n, it->second);
    return it->second;
  }

  void read_segments(const PickleNode& segments, const Path& at) {
    const auto& items = list(segments, at);
    out_.segments.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      const Path sp = at.at(i);
      const PickleNode& s = dict(*items[i], sp);
      SnapshotSegment seg;
      seg.device = s.find("device") ? integer_field(s, "device", sp) : 0;
      if (seg.device < 0 || seg.device > 4096) fail(sp.at("device"), "not a device index");
      seg.address = address_field(s, "address", sp);
      seg.total_size = size_field(s, "total_size", sp);
      seg.stream = stream(s, sp);
      if (const PickleNode* t = s.find("segment_type"); t && t->kind == PickleKind::string)
        seg.segment_type = t->text;
      if (const PickleNode* e = s.find("is_expandable"); e && e->kind == PickleKind::boolean)
        seg.is_expandable = e->integer != 0;
      const Path bp = sp.at("blocks");
      const auto& blocks = list(field(s, "blocks", sp), bp);
      std::int64_t addr = seg.address;
      for (std::size_t k = 0; k < blocks.size(); ++k)
        seg.blocks.push_back(read_block(*blocks[k], bp.at(k), addr));
      out_.segments.push_back(std::move(seg));
    }
  }

  SnapshotBlock read_block(const PickleNode& n, const Path& at, std::int64_t& next_addr) {
    const PickleNode& b = dict(n, at);
    SnapshotBlock block;
    block.size = size_field(b, "size", at);
    // PyTorch 2.x writes each block's address; 1.13's blocks follow each other in the segment.
    block.address =
        address(b.find("address") ? integer(*b.find("address"), at.at("address")) : next_addr,
                at.at("address"));
    next_addr = block.address + block.size;
    const std::string& state = string(field(b, "state", at), at.at("state"));
    if (state == "active_allocated")
      block.state = BlockState::active_allocated;
    else if (state == "active_pending_free" || state == "active_awaiting_free")
      block.state = BlockState::active_pending_free;
    else if (state == "inactive")
      block.state = BlockState::inactive;
    else
      fail(at.at("state"), "unknown block state '" + state +
                               "' (known: active_allocated, active_pending_free, "
                               "active_awaiting_free, inactive)");
    if (b.find("requested_size")) {
      block.requested_size = size_field(b, "requested_size", at);
    } else if (const PickleNode* h = b.find("history");
               h && (h->kind == PickleKind::list) && !h->items.empty()) {
      const Path hp = at.at("history").at(std::size_t{0});
      const PickleNode& first = dict(*h->items[0], hp);
      block.requested_size = first.find("real_size") ? size_field(first, "real_size", hp) : 0;
      block.stack = frames(first.find("frames"), hp.at("frames"));
    } else {
      block.requested_size = block.size;
    }
    if (const PickleNode* f = b.find("frames")) block.stack = frames(f, at.at("frames"));
    return block;
  }

  SnapshotEvent read_event(const PickleNode& n, const Path& at) {
    static const std::map<std::string, SnapshotAction, std::less<>> actions = {
        {"alloc", SnapshotAction::alloc},
        {"free_requested", SnapshotAction::free_requested},
        {"free_completed", SnapshotAction::free_completed},
        {"segment_alloc", SnapshotAction::segment_alloc},
        {"segment_free", SnapshotAction::segment_free},
        {"segment_map", SnapshotAction::segment_map},
        {"segment_unmap", SnapshotAction::segment_unmap},
        {"oom", SnapshotAction::oom},
        {"snapshot", SnapshotAction::snapshot},
    };
    const PickleNode& e = dict(n, at);
    SnapshotEvent ev;
    const std::string& action = string(field(e, "action", at), at.at("action"));
    const auto it = actions.find(action);
    ev.action = it == actions.end() ? SnapshotAction::other : it->second;
    if (ev.action == SnapshotAction::other || ev.action == SnapshotAction::snapshot) {
      // Nothing to count: only the stack and the time are kept.
    } else if (ev.action == SnapshotAction::oom) {
      ev.size = size_field(e, "size", at);
      if (e.find("device_free")) ev.addr = integer_field(e, "device_free", at);
    } else {
      ev.addr = address_field(e, "addr", at);
      ev.size = size_field(e, "size", at);
    }
    ev.stream = stream(e, at);
    if (const PickleNode* t = e.find("time_us"); t && t->kind == PickleKind::integer)
      ev.time_us = t->integer;
    ev.stack = frames(e.find("frames"), at.at("frames"));
    return ev;
  }

  void read_settings(const PickleNode& s) {
    out_.settings.known = true;
    if (const PickleNode* m = s.find("max_split_size"); m && m->kind == PickleKind::integer)
      out_.settings.max_split_size = m->integer > 0 ? m->integer : 0;
    if (const PickleNode* m = s.find("max_split_size"); m && m->kind == PickleKind::big_integer)
      out_.settings.max_split_size = 0;  // SIZE_MAX: no limit
    if (const PickleNode* e = s.find("expandable_segments"); e && e->kind == PickleKind::boolean)
      out_.settings.expandable_segments = e->integer != 0;
    if (const PickleNode* r = s.find("roundup_power2_divisions")) {
      const bool any = r->kind == PickleKind::integer ? r->integer > 1 : false;
      bool in_dict = false;
      if (r->kind == PickleKind::dict)
        for (std::size_t i = 1; i < r->items.size(); i += 2)
          in_dict =
              in_dict || (r->items[i]->kind == PickleKind::integer && r->items[i]->integer > 1);
      out_.settings.power2_rounding = any || in_dict;
    }
  }

  struct VectorHash {
    std::size_t operator()(const std::vector<std::uint32_t>& v) const {
      std::size_t h = v.size();
      for (const auto x : v) h = h * 1000003u ^ x;
      return h;
    }
  };

  MemorySnapshot out_;
  std::unordered_map<const PickleNode*, std::uint32_t> frame_of_node_;
  std::unordered_map<std::string, std::uint32_t> frame_ids_;
  std::unordered_map<const PickleNode*, StackId> stack_of_node_;
  std::unordered_map<std::vector<std::uint32_t>, StackId, VectorHash> stack_ids_;
};

std::string megabytes(std::int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

}  // namespace

MemorySnapshot parse_memory_snapshot(std::string_view bytes, const std::string& source) {
  const PickleDocument doc = parse_pickle(bytes, source);
  return SnapshotBuilder(source).build(doc.root());
}

MemorySnapshot read_memory_snapshot(const std::string& path, std::int64_t max_bytes) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw std::runtime_error(path + ": cannot read: " + ec.message());
  if (static_cast<std::int64_t>(size) > max_bytes)
    throw std::runtime_error(
        path + ": " + megabytes(static_cast<std::int64_t>(size)) + " (" + std::to_string(size) +
        " bytes) is more than the " + megabytes(max_bytes) +
        " a snapshot may be here: it would be held in memory whole, with the objects decoded "
        "from it; nothing was read. Record fewer events "
        "(torch.cuda.memory._record_memory_history(max_entries=...))");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::string bytes(size, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size))
    throw std::runtime_error(path + ": read " + std::to_string(in.gcount()) + " of " +
                             std::to_string(size) + " bytes");
  return parse_memory_snapshot(bytes, path);
}

}  // namespace ckpt
