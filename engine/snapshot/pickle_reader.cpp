#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "engine/snapshot/pickle.hpp"
#include "engine/snapshot/pickle_opcodes.hpp"

namespace ckpt {

class PickleParser {
 public:
  PickleParser(std::string_view bytes, const std::string& source, const PickleLimits& limits)
      : in_(bytes), source_(source), limits_(limits) {}

  PickleDocument run() {
    while (true) {
      if (pos_ >= in_.size())
        fail(pos_, "the pickle ends without its STOP opcode (a truncated file?)");
      op_at_ = pos_;
      const auto op = static_cast<unsigned char>(in_[pos_++]);
      if (step(op)) break;
    }
    if (stack_.size() != 1)
      fail(op_at_, "STOP with " + std::to_string(stack_.size()) + " objects on the stack, not 1");
    if (!marks_.empty()) fail(op_at_, "STOP with a MARK still open");
    doc_.root_ = stack_.back();
    return std::move(doc_);
  }

 private:
  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    throw std::runtime_error(source_ + ": byte " + std::to_string(at) + ": " + what);
  }
  [[noreturn]] void fail_op(const std::string& what) const { fail(op_at_, what); }

  std::string_view take(std::uint64_t n, const char* what) {
    if (n > in_.size() - pos_)
      fail_op(std::string(what) + " of " + std::to_string(n) + " bytes runs past the end (" +
              std::to_string(in_.size() - pos_) + " bytes left)");
    const std::string_view s = in_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }
  std::uint64_t little(std::size_t n, const char* what) {
    const std::string_view s = take(n, what);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i)
      v |= std::uint64_t{static_cast<unsigned char>(s[i])} << (8 * i);
    return v;
  }
  std::string_view line(const char* what) {
    const std::size_t end = in_.find('\n', pos_);
    if (end == std::string_view::npos) fail_op(std::string(what) + " without its end of line");
    const std::string_view s = in_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }

  PickleNode* make(PickleKind kind) {
    if (doc_.nodes_.size() >= limits_.max_objects)
      fail_op("more than " + std::to_string(limits_.max_objects) + " objects");
    PickleNode& n = doc_.nodes_.emplace_back();
    n.kind = kind;
    return &n;
  }
  void push(PickleNode* n) { stack_.push_back(n); }
  PickleNode* pop(const char* op) {
    if (stack_.size() <= floor()) fail_op(std::string(op) + " on an empty stack");
    PickleNode* n = stack_.back();
    stack_.pop_back();
    return n;
  }
  PickleNode* top(const char* op) {
    if (stack_.size() <= floor()) fail_op(std::string(op) + " on an empty stack");
    return stack_.back();
  }
  // Objects below the innermost MARK are out of reach of everything but the MARK's own user.
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::size_t pop_mark(const char* op) {
    if (marks_.empty()) fail_op(std::string(op) + " without a MARK");
    const std::size_t m = marks_.back();
    marks_.pop_back();
    return m;
  }
  void push_int(std::int64_t v) {
    PickleNode* n = make(PickleKind::integer);
    n->integer = v;
    push(n);
  }
  void push_text(PickleKind kind, std::string_view s) {
    PickleNode* n = make(kind);
    n->text.assign(s);
    push(n);
  }
  // LONG1/LONG4: little-endian two's complement of any width.
  void push_long(std::string_view bytes) {
    if (bytes.size() > 8) {
      // Python's encoder writes the fewest bytes, but a padded number still fits when its
      // extra bytes only repeat the sign.
      const auto sign = static_cast<unsigned char>(bytes.back()) >= 0x80 ? '\xff' : '\0';
      bool fits = (static_cast<unsigned char>(bytes[7]) >= 0x80) == (sign != '\0');
      for (std::size_t i = 8; i < bytes.size() && fits; ++i) fits = bytes[i] == sign;
      if (!fits) return push_text(PickleKind::big_integer, bytes);
      bytes = bytes.substr(0, 8);
    }
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i)
      v |= std::uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
    if (!bytes.empty() && bytes.size() < 8 && static_cast<unsigned char>(bytes.back()) >= 0x80)
      v |= ~std::uint64_t{0} << (8 * bytes.size());
    push_int(static_cast<std::int64_t>(v));
  }
  void push_decimal(std::string_view s, const char* op) {
    if (!s.empty() && s.back() == 'L') s.remove_suffix(1);  // protocol 0's LONG
    if (s == "00" || s == "01") {                           // protocol 0's False / True
      PickleNode* n = make(PickleKind::boolean);
      n->integer = s == "01";
      return push(n);
    }
    bool negative = !s.empty() && (s[0] == '-' || s[0] == '+');
    std::string_view digits = negative ? s.substr(1) : s;
    negative = negative && s[0] == '-';
    if (digits.empty()) fail_op(std::string(op) + " without digits");
    std::uint64_t v = 0;
    bool wide = false;
    for (const char c : digits) {
      if (c < '0' || c > '9') fail_op(std::string(op) + " with '" + std::string(s) + "'");
      wide = wide || v > (std::numeric_limits<std::uint64_t>::max() - 9) / 10;
      if (!wide) v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    wide = wide || v > std::uint64_t{1} << 63 || (!negative && v == std::uint64_t{1} << 63);
    if (wide) return push_text(PickleKind::big_integer, s);
    push_int(negative ? static_cast<std::int64_t>(0 - v) : static_cast<std::int64_t>(v));
  }
  std::uint64_t decimal_index(std::string_view s, const char* op) {
    std::uint64_t v = 0;
    if (s.empty() || s.size() > 10)
      fail_op(std::string(op) + " with index '" + std::string(s) + "'");
    for (const char c : s) {
      if (c < '0' || c > '9') fail_op(std::string(op) + " with index '" + std::string(s) + "'");
      v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return v;
  }
  void put(std::uint64_t index, const char* op) {
    memo_[index] = top(op);
    if (memo_.size() > limits_.max_objects)
      fail_op("a memo of more than " + std::to_string(limits_.max_objects) + " entries");
  }
  void get(std::uint64_t index, const char* op) {
    const auto it = memo_.find(index);
    if (it == memo_.end())
      fail_op(std::string(op) + " of memo entry " + std::to_string(index) + ", never stored");
    push(it->second);
  }
  // The objects above the innermost MARK, which is removed.
  std::vector<PickleNode*> take_marked(const char* op) {
    const std::size_t m = pop_mark(op);
    std::vector<PickleNode*> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  PickleNode* container(const char* op, PickleKind kind) {
    PickleNode* n = top(op);
    if (n->kind != kind)
      fail_op(std::string(op) + " into " + pickle_kind_name(n->kind) + ", not " +
              pickle_kind_name(kind));
    return n;
  }
  void add_items(PickleNode* list, const std::vector<PickleNode*>& items) {
    list->items.insert(list->items.end(), items.begin(), items.end());
  }
  void set_items(PickleNode* dict, const std::vector<PickleNode*>& kv, const char* op) {
    if (kv.size() % 2 != 0) fail_op(std::string(op) + " with a key and no value");
    add_items(dict, kv);
  }
  PickleNode* tuple_of(std::vector<PickleNode*> items) {
    PickleNode* t = make(PickleKind::tuple);
    t->items.assign(items.begin(), items.end());
    return t;
  }
  // Protocol 0's UNICODE: raw-unicode-escape, i.e. Latin-1 bytes with \uXXXX and \UXXXXXXXX.
  std::string raw_unicode(std::string_view s) {
    std::string out;
    auto utf8 = [&](std::uint32_t c) {
      if (c < 0x80) {
        out += static_cast<char>(c);
      } else if (c < 0x800) {
        out += static_cast<char>(0xc0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3f));
      } else if (c < 0x10000) {
        out += static_cast<char>(0xe0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (c & 0x3f));
      } else {
        out += static_cast<char>(0xf0 | (c >> 18));
        out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (c & 0x3f));
      }
    };
    for (std::size_t i = 0; i < s.size(); ++i) {
      const std::size_t digits = s[i] == '\\' && i + 1 < s.size() ? (s[i + 1] == 'u'   ? 4
                                                                     : s[i + 1] == 'U' ? 8
                                                                                       : 0)
                                                                  : 0;
      if (digits == 0 || i + 2 + digits > s.size()) {
        utf8(static_cast<unsigned char>(s[i]));
        continue;
      }
      std::uint32_t c = 0;
      for (std::size_t k = 0; k < digits; ++k) {
        const char h = s[i + 2 + k];
        const int d = h >= '0' && h <= '9'   ? h - '0'
                      : h >= 'a' && h <= 'f' ? h - 'a' + 10
                      : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                             : -1;
        if (d < 0) fail_op("UNICODE with a bad \\u escape");
        c = c * 16 + static_cast<std::uint32_t>(d);
      }
      if (c > 0x10ffff) fail_op("UNICODE with a code point beyond U+10FFFF");
      utf8(c);
      i += 1 + digits;
    }
    return out;
  }
  // Protocol 0's STRING: a Python 2 str literal in quotes (its escapes kept as written).
  std::string_view quoted(std::string_view s) {
    if (s.size() < 2 || s.front() != s.back() || (s.front() != '\'' && s.front() != '"'))
      fail_op("STRING without its quotes");
    return s.substr(1, s.size() - 2);
  }

  // Runs one opcode; true at STOP.
  bool step(unsigned char op) {
    switch (op) {
      case 0x80: {  // PROTO
        const auto v = little(1, "PROTO");
        if (v > 5) fail_op("pickle protocol " + std::to_string(v) + " (this reader knows 0 to 5)");
        return false;
      }
      case 0x95: {  // FRAME: a length hint only
        const auto n = little(8, "FRAME");
        if (n > in_.size() - pos_)
          fail_op("FRAME of " + std::to_string(n) + " bytes runs past the end (" +
                  std::to_string(in_.size() - pos_) + " bytes left)");
        return false;
      }
      case '.':
        return true;
      case '(':
        if (marks_.size() >= limits_.max_marks)
          fail_op("nesting deeper than " + std::to_string(limits_.max_marks) + " MARKs");
        marks_.push_back(stack_.size());
        return false;
      case '0':
        pop("POP");
        return false;
      case '1':
        stack_.resize(pop_mark("POP_MARK"));
        return false;
      case '2':
        push(top("DUP"));
        return false;
      case 'N':
        push(make(PickleKind::none));
        return false;
      case 0x88:
      case 0x89: {
        PickleNode* n = make(PickleKind::boolean);
        n->integer = op == 0x88;
        push(n);
        return false;
      }
      case 'I':
        push_decimal(line("INT"), "INT");
        return false;
      case 'L':
        push_decimal(line("LONG"), "LONG");
        return false;
      case 'J':
        push_int(static_cast<std::int32_t>(static_cast<std::uint32_t>(little(4, "BININT"))));
        return false;
      case 'K':
        push_int(static_cast<std::int64_t>(little(1, "BININT1")));
        return false;
      case 'M':
        push_int(static_cast<std::int64_t>(little(2, "BININT2")));
        return false;
      case 0x8a: {
        const auto n = little(1, "LONG1");
        push_long(take(n, "LONG1"));
        return false;
      }
      case 0x8b: {
        const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(little(4, "LONG4")));
        if (n < 0) fail_op("LONG4 with a negative length");
        push_long(take(static_cast<std::uint64_t>(n), "LONG4"));
        return false;
      }
      case 'F': {
        // from_chars, not strtod: the app runs under the user's locale, whose decimal point
        // may be a comma.
        const std::string_view s = line("FLOAT");
        double v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc() || end != s.data() + s.size())
          fail_op("FLOAT with '" + std::string(s) + "'");
        PickleNode* n = make(PickleKind::real);
        n->real = v;
        push(n);
        return false;
      }
      case 'G': {
        const auto bits = little(8, "BINFLOAT");
        std::uint64_t big = 0;  // stored big-endian
        for (int i = 0; i < 8; ++i) big |= ((bits >> (8 * i)) & 0xff) << (8 * (7 - i));
        PickleNode* n = make(PickleKind::real);
        std::memcpy(&n->real, &big, sizeof big);
        push(n);
        return false;
      }
      case 'S':
        push_text(PickleKind::string, quoted(line("STRING")));
        return false;
      case 'T':
        push_text(PickleKind::string, take(little(4, "BINSTRING"), "BINSTRING"));
        return false;
      case 'U':
        push_text(PickleKind::string, take(little(1, "SHORT_BINSTRING"), "SHORT_BINSTRING"));
        return false;
      case 'V':
        push_text(PickleKind::string, raw_unicode(line("UNICODE")));
        return false;
      case 'X':
        push_text(PickleKind::string, take(little(4, "BINUNICODE"), "BINUNICODE"));
        return false;
      case 0x8c:
        push_text(PickleKind::string, take(little(1, "SHORT_BINUNICODE"), "SHORT_BINUNICODE"));
        return false;
      case 0x8d:
        push_text(PickleKind::string, take(little(8, "BINUNICODE8"), "BINUNICODE8"));
        return false;
      case 'B':
        push_text(PickleKind::bytes, take(little(4, "BINBYTES"), "BINBYTES"));
        return false;
      case 'C':
        push_text(PickleKind::bytes, take(little(1, "SHORT_BINBYTES"), "SHORT_BINBYTES"));
        return false;
      case 0x8e:
        push_text(PickleKind::bytes, take(little(8, "BINBYTES8"), "BINBYTES8"));
        return false;
      case 0x96:
        push_text(PickleKind::bytes, take(little(8, "BYTEARRAY8"), "BYTEARRAY8"));
        return false;
      case ']':
        push(make(PickleKind::list));
        return false;
      case ')':
        push(make(PickleKind::tuple));
        return false;
      case '}':
        push(make(PickleKind::dict));
        return false;
      case 'a': {
        PickleNode* v = pop("APPEND");
        container("APPEND", PickleKind::list)->items.push_back(v);
        return false;
      }
      case 'e': {
        const auto items = take_marked("APPENDS");
        add_items(container("APPENDS", PickleKind::list), items);
        return false;
      }
      case 'l': {
        const auto items = take_marked("LIST");
        PickleNode* l = make(PickleKind::list);
        l->items.assign(items.begin(), items.end());
        push(l);
        return false;
      }
      case 't':
        push(tuple_of(take_marked("TUPLE")));
        return false;
      case 0x85:
      case 0x86:
      case 0x87: {
        const std::size_t n = op - 0x84u;
        if (stack_.size() < floor() + n)
          fail_op("TUPLE" + std::to_string(n) + " with fewer than " + std::to_string(n) +
                  " objects on the stack");
        std::vector<PickleNode*> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
        stack_.resize(stack_.size() - n);
        push(tuple_of(std::move(items)));
        return false;
      }
      case 'd': {
        const auto kv = take_marked("DICT");
        PickleNode* d = make(PickleKind::dict);
        set_items(d, kv, "DICT");
        push(d);
        return false;
      }
      case 's': {
        PickleNode* v = pop("SETITEM");
        PickleNode* k = pop("SETITEM");
        PickleNode* d = container("SETITEM", PickleKind::dict);
        d->items.push_back(k);
        d->items.push_back(v);
        return false;
      }
      case 'u': {
        const auto kv = take_marked("SETITEMS");
        set_items(container("SETITEMS", PickleKind::dict), kv, "SETITEMS");
        return false;
      }
      case 'p':
        put(decimal_index(line("PUT"), "PUT"), "PUT");
        return false;
      case 'q':
        put(little(1, "BINPUT"), "BINPUT");
        return false;
      case 'r':
        put(little(4, "LONG_BINPUT"), "LONG_BINPUT");
        return false;
      case 0x94:
        put(memo_.size(), "MEMOIZE");
        return false;
      case 'g':
        get(decimal_index(line("GET"), "GET"), "GET");
        return false;
      case 'h':
        get(little(1, "BINGET"), "BINGET");
        return false;
      case 'j':
        get(little(4, "LONG_BINGET"), "LONG_BINGET");
        return false;
      default:
        break;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op);
    if (const char* name = pickle_code_opcode_name(op))
      fail_op(std::string("opcode ") + name + " (" + hex +
              ") builds a Python object by calling code; a memory snapshot holds only plain "
              "data (dicts, lists, strings, numbers), so this is not one, and nothing was run");
    fail_op(std::string("unknown pickle opcode ") + hex);
  }

  std::string_view in_;
  const std::string& source_;
  PickleLimits limits_;
  std::size_t pos_ = 0;
  std::size_t op_at_ = 0;
  PickleDocument doc_;
  std::vector<PickleNode*> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, PickleNode*> memo_;
};

PickleDocument parse_pickle(std::string_view bytes, const std::string& source,
                            const PickleLimits& limits) {
  return PickleParser(bytes, source, limits).run();
}

}  // namespace ckpt
