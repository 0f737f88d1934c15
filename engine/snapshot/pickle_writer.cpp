#include <cstring>
#include <limits>
#include <stdexcept>

#include "engine/snapshot/pickle.hpp"

namespace ckpt {

namespace {

// Python's pickler batches APPENDS/SETITEMS every 1,000 items; so do we.
constexpr std::size_t kBatch = 1000;

void put_little(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

PickleWriter::PickleWriter() {
  out_ += '\x80';  // PROTO 4: MEMOIZE and no FRAME needed; memory_viz reads protocols 2 to 4
  out_ += '\x04';
}

// A full batch is flushed before the next item, not after the last one, so that a MEMOIZE
// right after an item still finds that item on top of the stack.
void PickleWriter::before_item() {
  if (open_.empty()) return;
  Open& o = open_.back();
  if (o.items == (o.dict ? 2 * kBatch : kBatch)) {
    out_ += o.dict ? 'u' : 'e';  // SETITEMS / APPENDS, then a new MARK for the next batch
    out_ += '(';
    o.items = 0;
  }
}

void PickleWriter::item_written() {
  if (!open_.empty()) ++open_.back().items;
}

void PickleWriter::none() {
  before_item();
  out_ += 'N';
  item_written();
}

void PickleWriter::boolean(bool v) {
  before_item();
  out_ += v ? '\x88' : '\x89';
  item_written();
}

void PickleWriter::integer(std::int64_t v) {
  before_item();
  if (v >= 0 && v < 256) {
    out_ += 'K';
    put_little(out_, static_cast<std::uint64_t>(v), 1);
  } else if (v >= 0 && v < 65536) {
    out_ += 'M';
    put_little(out_, static_cast<std::uint64_t>(v), 2);
  } else if (v >= std::numeric_limits<std::int32_t>::min() &&
             v <= std::numeric_limits<std::int32_t>::max()) {
    out_ += 'J';
    put_little(out_, static_cast<std::uint32_t>(static_cast<std::int32_t>(v)), 4);
  } else {
    // LONG1: the fewest little-endian two's-complement bytes that keep the sign.
    int n = 1;
    while (n < 8) {
      const std::int64_t lo = -(std::int64_t{1} << (8 * n - 1));
      const std::int64_t hi = (std::int64_t{1} << (8 * n - 1)) - 1;
      if (v >= lo && v <= hi) break;
      ++n;
    }
    out_ += '\x8a';
    out_ += static_cast<char>(n);
    put_little(out_, static_cast<std::uint64_t>(v), n);
  }
  item_written();
}

void PickleWriter::real(double v) {
  before_item();
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  out_ += 'G';
  for (int i = 7; i >= 0; --i) out_ += static_cast<char>((bits >> (8 * i)) & 0xff);
  item_written();
}

void PickleWriter::string(std::string_view s) {
  before_item();
  if (s.size() < 256) {
    out_ += '\x8c';
    put_little(out_, s.size(), 1);
  } else {
    if (s.size() > std::numeric_limits<std::uint32_t>::max())
      throw std::invalid_argument("a string of more than 4 GiB does not fit a BINUNICODE");
    out_ += 'X';
    put_little(out_, s.size(), 4);
  }
  out_ += s;
  item_written();
}

void PickleWriter::begin_list() {
  before_item();
  out_ += "](";  // EMPTY_LIST, MARK
  open_.push_back({false, 0});
}

void PickleWriter::end_list() {
  if (open_.empty() || open_.back().dict) throw std::logic_error("PickleWriter: no list open");
  out_ += 'e';
  open_.pop_back();
  item_written();
}

void PickleWriter::begin_dict() {
  before_item();
  out_ += "}(";  // EMPTY_DICT, MARK
  open_.push_back({true, 0});
}

void PickleWriter::end_dict() {
  if (open_.empty() || !open_.back().dict) throw std::logic_error("PickleWriter: no dict open");
  if (open_.back().items % 2 != 0) throw std::logic_error("PickleWriter: a key without a value");
  out_ += 'u';
  open_.pop_back();
  item_written();
}

std::uint32_t PickleWriter::memoize() {
  out_ += '\x94';
  return next_memo_++;
}

void PickleWriter::get(std::uint32_t index) {
  before_item();
  if (index >= next_memo_) throw std::logic_error("PickleWriter: get of an unwritten memo entry");
  if (index < 256) {
    out_ += 'h';
    put_little(out_, index, 1);
  } else {
    out_ += 'j';
    put_little(out_, index, 4);
  }
  item_written();
}

std::string PickleWriter::finish() {
  if (!open_.empty()) throw std::logic_error("PickleWriter: a container is still open");
  out_ += '.';
  return std::move(out_);
}

}  // namespace ckpt
