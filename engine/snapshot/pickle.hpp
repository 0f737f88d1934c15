#pragma once

// Python pickles of plain data, read and written without Python and without executing anything:
// the subset that PyTorch's torch.cuda.memory._snapshot() / _dump_snapshot() writes (dicts,
// lists, tuples, strings, bytes, ints of any size, floats, bools, None; protocols 0-5, with the
// memo and frames). Opcodes that would import or call Python code (GLOBAL, REDUCE, BUILD, ...)
// are an error naming the opcode and its byte offset, never run: a memory snapshot is data.

#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt {

enum class PickleKind : std::uint8_t {
  none,
  boolean,
  integer,      // fits in 64 bits
  big_integer,  // wider than 64 bits: `text` holds it as read (LONG1/LONG4's bytes, or digits)
  real,
  string,
  bytes,
  list,
  tuple,
  dict,
};
const char* pickle_kind_name(PickleKind k);

// One decoded object. Lists and tuples hold their items; a dict holds key, value, key, value...
// in insertion order. Objects reached through the memo are shared, as in Python, so a document
// is a graph (even a cyclic one), owned as a whole by its PickleDocument.
struct PickleNode {
  PickleKind kind = PickleKind::none;
  std::int64_t integer = 0;  // integer, boolean
  double real = 0;
  std::string text;  // string (UTF-8), bytes, big_integer
  std::vector<const PickleNode*> items;

  // The value of `key` in a dict (the last one, as Python keeps), or null.
  const PickleNode* find(std::string_view key) const;
};

class PickleDocument {
 public:
  const PickleNode& root() const { return *root_; }
  // How many objects were decoded (memo references not counted).
  std::size_t object_count() const { return nodes_.size(); }

 private:
  friend class PickleParser;
  std::deque<PickleNode> nodes_;
  const PickleNode* root_ = nullptr;
};

struct PickleLimits {
  // Decoded objects (and memo entries) at most, each ~80 bytes: one opcode byte can make an
  // object, so without a bound a 1 GiB pickle of EMPTY_LIST opcodes would take 80 GB. A
  // 200,000-entry snapshot (PyTorch's usual max_entries) decodes to about 2 million objects.
  std::size_t max_objects = std::size_t{1} << 24;
  // MARKs open at once (nesting).
  std::size_t max_marks = 10000;
};

// Decodes `bytes`; `source` (a file name) starts every error message, followed by the byte
// offset of the opcode at fault: "snap.pickle: byte 1234: ...". Throws std::runtime_error.
PickleDocument parse_pickle(std::string_view bytes, const std::string& source,
                            const PickleLimits& limits = {});

// A pickle (protocol 4, no frames) of plain data, built in order: what PyTorch's memory_viz
// page reads. Containers are opened and closed explicitly; dict entries are key then value.
class PickleWriter {
 public:
  PickleWriter();
  void none();
  void boolean(bool v);
  void integer(std::int64_t v);
  void real(double v);
  void string(std::string_view s);
  void begin_list();
  void end_list();
  void begin_dict();
  void end_dict();
  // Remembers the object just written (a dict, a list) under the next memo index, which it
  // returns; `get(index)` then writes a reference to it instead of a copy.
  std::uint32_t memoize();
  void get(std::uint32_t index);
  // The finished pickle (STOP appended); the writer is spent.
  std::string finish();

 private:
  struct Open {
    bool dict;
    std::size_t items;  // items (or key/value halves) since the last batch
  };
  void before_item();
  void item_written();
  std::string out_;
  std::vector<Open> open_;
  std::uint32_t next_memo_ = 0;
};

}  // namespace ckpt
