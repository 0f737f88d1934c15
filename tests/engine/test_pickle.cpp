// The pickle reader and writer (engine/snapshot/pickle.hpp) on pickles Python itself wrote,
// and on broken ones: every malformed input is a named error, never a crash or a hang.
#include <QtTest>

#include "engine/snapshot/pickle.hpp"

using namespace ckpt;

namespace {

// pickle.dumps(obj, protocol=p) by CPython 3.11 for
//   obj = {'a': [1, -1, 255, 256, 65535, 65536, -2**31, 2**31, 2**63-1, -2**63, 2**64, -2**70],
//          'b': (1.5, None, True, False), 's': 'h\u00e9\u20ac', 'e': (), 't1': (1,),
//          't3': (1, 2, 3), 'big': 139595075289088, 'shared': [shared, shared]}
//   with shared = [{'x': 1}] (one object, reached twice through the memo).
const std::string kProtocol0(
    "\x28\x64\x70\x30\x0a\x56\x61\x0a\x70\x31\x0a\x28\x6c\x70\x32\x0a\x49\x31\x0a\x61\x49\x2d\x31"
    "\x0a\x61\x49\x32\x35\x35\x0a\x61\x49\x32\x35\x36\x0a\x61\x49\x36\x35\x35\x33\x35\x0a\x61\x49"
    "\x36\x35\x35\x33\x36\x0a\x61\x49\x2d\x32\x31\x34\x37\x34\x38\x33\x36\x34\x38\x0a\x61\x4c\x32"
    "\x31\x34\x37\x34\x38\x33\x36\x34\x38\x4c\x0a\x61\x4c\x39\x32\x32\x33\x33\x37\x32\x30\x33\x36"
    "\x38\x35\x34\x37\x37\x35\x38\x30\x37\x4c\x0a\x61\x4c\x2d\x39\x32\x32\x33\x33\x37\x32\x30\x33"
    "\x36\x38\x35\x34\x37\x37\x35\x38\x30\x38\x4c\x0a\x61\x4c\x31\x38\x34\x34\x36\x37\x34\x34\x30"
    "\x37\x33\x37\x30\x39\x35\x35\x31\x36\x31\x36\x4c\x0a\x61\x4c\x2d\x31\x31\x38\x30\x35\x39\x31"
    "\x36\x32\x30\x37\x31\x37\x34\x31\x31\x33\x30\x33\x34\x32\x34\x4c\x0a\x61\x73\x56\x62\x0a\x70"
    "\x33\x0a\x28\x46\x31\x2e\x35\x0a\x4e\x49\x30\x31\x0a\x49\x30\x30\x0a\x74\x70\x34\x0a\x73\x56"
    "\x73\x0a\x70\x35\x0a\x56\x68\xe9\x5c\x75\x32\x30\x61\x63\x0a\x70\x36\x0a\x73\x56\x65\x0a\x70"
    "\x37\x0a\x28\x74\x73\x56\x74\x31\x0a\x70\x38\x0a\x28\x49\x31\x0a\x74\x70\x39\x0a\x73\x56\x74"
    "\x33\x0a\x70\x31\x30\x0a\x28\x49\x31\x0a\x49\x32\x0a\x49\x33\x0a\x74\x70\x31\x31\x0a\x73\x56"
    "\x62\x69\x67\x0a\x70\x31\x32\x0a\x4c\x31\x33\x39\x35\x39\x35\x30\x37\x35\x32\x38\x39\x30\x38"
    "\x38\x4c\x0a\x73\x56\x73\x68\x61\x72\x65\x64\x0a\x70\x31\x33\x0a\x28\x6c\x70\x31\x34\x0a\x28"
    "\x6c\x70\x31\x35\x0a\x28\x64\x70\x31\x36\x0a\x56\x78\x0a\x70\x31\x37\x0a\x49\x31\x0a\x73\x61"
    "\x61\x67\x31\x35\x0a\x61\x73\x2e",
    353);
const std::string kProtocol2(
    "\x80\x02\x7d\x71\x00\x28\x58\x01\x00\x00\x00\x61\x71\x01\x5d\x71\x02\x28\x4b\x01\x4a\xff\xff"
    "\xff\xff\x4b\xff\x4d\x00\x01\x4d\xff\xff\x4a\x00\x00\x01\x00\x4a\x00\x00\x00\x80\x8a\x05\x00"
    "\x00\x00\x80\x00\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f\x8a\x08\x00\x00\x00\x00\x00\x00\x00"
    "\x80\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\xc0"
    "\x65\x58\x01\x00\x00\x00\x62\x71\x03\x28\x47\x3f\xf8\x00\x00\x00\x00\x00\x00\x4e\x88\x89\x74"
    "\x71\x04\x58\x01\x00\x00\x00\x73\x71\x05\x58\x06\x00\x00\x00\x68\xc3\xa9\xe2\x82\xac\x71\x06"
    "\x58\x01\x00\x00\x00\x65\x71\x07\x29\x58\x02\x00\x00\x00\x74\x31\x71\x08\x4b\x01\x85\x71\x09"
    "\x58\x02\x00\x00\x00\x74\x33\x71\x0a\x4b\x01\x4b\x02\x4b\x03\x87\x71\x0b\x58\x03\x00\x00\x00"
    "\x62\x69\x67\x71\x0c\x8a\x06\x00\x00\xe0\x02\xf6\x7e\x58\x06\x00\x00\x00\x73\x68\x61\x72\x65"
    "\x64\x71\x0d\x5d\x71\x0e\x28\x5d\x71\x0f\x7d\x71\x10\x58\x01\x00\x00\x00\x78\x71\x11\x4b\x01"
    "\x73\x61\x68\x0f\x65\x75\x2e",
    237);
const std::string kProtocol4(
    "\x80\x04\x95\xbb\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x01\x61\x94\x5d\x94\x28\x4b\x01"
    "\x4a\xff\xff\xff\xff\x4b\xff\x4d\x00\x01\x4d\xff\xff\x4a\x00\x00\x01\x00\x4a\x00\x00\x00\x80"
    "\x8a\x05\x00\x00\x00\x80\x00\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f\x8a\x08\x00\x00\x00\x00"
    "\x00\x00\x00\x80\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01\x8a\x09\x00\x00\x00\x00\x00\x00"
    "\x00\x00\xc0\x65\x8c\x01\x62\x94\x28\x47\x3f\xf8\x00\x00\x00\x00\x00\x00\x4e\x88\x89\x74\x94"
    "\x8c\x01\x73\x94\x8c\x06\x68\xc3\xa9\xe2\x82\xac\x94\x8c\x01\x65\x94\x29\x8c\x02\x74\x31\x94"
    "\x4b\x01\x85\x94\x8c\x02\x74\x33\x94\x4b\x01\x4b\x02\x4b\x03\x87\x94\x8c\x03\x62\x69\x67\x94"
    "\x8a\x06\x00\x00\xe0\x02\xf6\x7e\x8c\x06\x73\x68\x61\x72\x65\x64\x94\x5d\x94\x28\x5d\x94\x7d"
    "\x94\x8c\x01\x78\x94\x4b\x01\x73\x61\x68\x0f\x65\x75\x2e",
    198);
// {'by': b'\x00\x01', 'ba': bytearray(b'xy')}, protocol 5.
const std::string kBytes5 = std::string(
    "\x80\x05\x95\x20\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x02\x62\x79\x94\x43\x02\x00\x01"
    "\x94\x8c\x02\x62\x61\x94\x96\x02\x00\x00\x00\x00\x00\x00\x00\x78\x79\x94\x75\x2e",
    43);
// collections.OrderedDict(a=1), protocol 4: STACK_GLOBAL at byte 39.
const std::string kGlobal = std::string(
    "\x80\x04\x95\x29\x00\x00\x00\x00\x00\x00\x00\x8c\x0b\x63\x6f\x6c\x6c\x65\x63\x74\x69\x6f\x6e"
    "\x73\x94\x8c\x0b\x4f\x72\x64\x65\x72\x65\x64\x44\x69\x63\x74\x94\x93\x94\x29\x52\x94\x8c\x01"
    "\x61\x94\x4b\x01\x73\x2e",
    52);

std::string error_of(const std::string& bytes, const PickleLimits& limits = {}) {
  try {
    parse_pickle(bytes, "t.pickle", limits);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

class TestPickle : public QObject {
  Q_OBJECT
 private slots:
  void reads_what_python_wrote_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::newRow("protocol 0") << QByteArray::fromStdString(kProtocol0);
    QTest::newRow("protocol 2") << QByteArray::fromStdString(kProtocol2);
    QTest::newRow("protocol 4") << QByteArray::fromStdString(kProtocol4);
  }
  void reads_what_python_wrote() {
    QFETCH(QByteArray, bytes);
    const PickleDocument doc = parse_pickle(bytes.toStdString(), "t.pickle");
    const PickleNode& root = doc.root();
    QCOMPARE(root.kind, PickleKind::dict);
    const PickleNode* a = root.find("a");
    QVERIFY(a && a->kind == PickleKind::list);
    QCOMPARE(a->items.size(), std::size_t{12});
    const std::vector<std::int64_t> small = {1,     -1,           255,       256,       65535,
                                             65536, -(1LL << 31), 1LL << 31, INT64_MAX, INT64_MIN};
    for (std::size_t i = 0; i < small.size(); ++i) {
      QCOMPARE(a->items[i]->kind, PickleKind::integer);
      QCOMPARE(a->items[i]->integer, small[i]);
    }
    QCOMPARE(a->items[10]->kind, PickleKind::big_integer);  // 2**64
    QCOMPARE(a->items[11]->kind, PickleKind::big_integer);  // -2**70
    const PickleNode* b = root.find("b");
    QVERIFY(b && b->kind == PickleKind::tuple && b->items.size() == 4);
    QCOMPARE(b->items[0]->real, 1.5);
    QCOMPARE(b->items[1]->kind, PickleKind::none);
    QCOMPARE(b->items[2]->kind, PickleKind::boolean);
    QCOMPARE(b->items[2]->integer, 1);
    QCOMPARE(b->items[3]->integer, 0);
    QCOMPARE(root.find("s")->text, std::string("h\xc3\xa9\xe2\x82\xac"));
    QCOMPARE(root.find("e")->kind, PickleKind::tuple);
    QCOMPARE(root.find("t1")->items.size(), std::size_t{1});
    QCOMPARE(root.find("t3")->items[2]->integer, 3);
    QCOMPARE(root.find("big")->integer, std::int64_t{139595075289088});
    const PickleNode* shared = root.find("shared");
    QCOMPARE(shared->items.size(), std::size_t{2});
    QCOMPARE(shared->items[0], shared->items[1]);  // one object, as Python has it
    QCOMPARE(shared->items[0]->items[0]->find("x")->integer, 1);
    QVERIFY(root.find("missing") == nullptr);
  }

  void reads_bytes_and_bytearrays() {
    const PickleDocument doc = parse_pickle(kBytes5, "t.pickle");
    QCOMPARE(doc.root().find("by")->kind, PickleKind::bytes);
    QCOMPARE(doc.root().find("by")->text, std::string("\0\1", 2));
    QCOMPARE(doc.root().find("ba")->text, std::string("xy"));
  }

  // Nothing is ever executed: an opcode that would import or call code is refused by name.
  void refuses_code() {
    const std::string e = error_of(kGlobal);
    QVERIFY2(e.find("t.pickle: byte 39: opcode STACK_GLOBAL") == 0, e.c_str());
    QVERIFY2(e.find("nothing was run") != std::string::npos, e.c_str());
    for (const char op : {'c', 'R', 'b', 'i', 'o', 'P', 'Q'}) {
      const std::string bytes = std::string("\x80\x02", 2) + "N" + op + "0000\n0000\n.";
      const std::string err = error_of(bytes);
      QVERIFY2(err.find("t.pickle: byte 3: opcode ") == 0, err.c_str());
    }
    QVERIFY(error_of(std::string("\x80\x04\x81.", 4)).find("NEWOBJ") != std::string::npos);
  }

  // Every prefix of a good pickle is a named error (a truncated file), and so is every
  // one-byte change that breaks it; none crashes (the fuzz target does this at scale).
  void truncated_and_mutated() {
    for (std::size_t n = 0; n < kProtocol4.size(); ++n) {
      const std::string e = error_of(kProtocol4.substr(0, n));
      QVERIFY2(e.rfind("t.pickle: byte ", 0) == 0,
               qPrintable(QString::number(n) + ": " + e.c_str()));
    }
    int rejected = 0;
    for (std::size_t i = 0; i < kProtocol4.size(); ++i)
      for (const int v : {0x00, 0x28, 0x2e, 0x65, 0x75, 0x94, 0xff}) {
        std::string m = kProtocol4;
        m[i] = static_cast<char>(v);
        const std::string e = error_of(m);
        if (!e.empty()) {
          QVERIFY2(e.rfind("t.pickle: byte ", 0) == 0, e.c_str());
          ++rejected;
        }
      }
    QVERIFY(rejected > 100);
  }

  void bad_lengths_and_limits() {
    QVERIFY(error_of("").find("byte 0: the pickle ends without its STOP") != std::string::npos);
    // A BINUNICODE that claims 4 GiB, a FRAME and a BINBYTES8 that claim 2^64 - 1 bytes.
    QVERIFY(error_of(std::string("X\xff\xff\xff\xff"
                                 "abc.",
                                 9))
                .find("runs past the end") != std::string::npos);
    QVERIFY(error_of(std::string("\x95\xff\xff\xff\xff\xff\xff\xff\xffN.", 11))
                .find("FRAME of 18446744073709551615 bytes runs past the end") !=
            std::string::npos);
    QVERIFY(error_of(std::string("\x8e\xff\xff\xff\xff\xff\xff\xff\xff.", 10)).find("BINBYTES8") !=
            std::string::npos);
    QVERIFY(error_of(std::string("\x8b\xff\xff\xff\xff.", 6)).find("negative length") !=
            std::string::npos);
    QVERIFY(error_of(std::string(20000, '(') + "N.").find("nesting deeper than 10000") !=
            std::string::npos);
    QVERIFY(error_of(std::string("h\x07.", 3)).find("BINGET of memo entry 7, never stored") !=
            std::string::npos);
    QVERIFY(error_of("]Ne.").find("APPENDS without a MARK") != std::string::npos);
    QVERIFY(error_of("N(Na.").find("APPEND on an empty stack") != std::string::npos ||
            error_of("N(Na.").find("APPEND into None") != std::string::npos);
    QVERIFY(error_of(").").empty());
    QVERIFY(error_of("NN.").find("2 objects on the stack") != std::string::npos);
    QVERIFY(error_of("\xff.").find("byte 0: unknown pickle opcode 0xff") != std::string::npos);
    QVERIFY(error_of("\x80\x06N.").find("protocol 6") != std::string::npos);
    QVERIFY(error_of(")Na.").find("APPEND into a tuple, not a list") != std::string::npos);
    QVERIFY(error_of("}(Nu.").find("a key and no value") != std::string::npos);
    PickleLimits few;
    few.max_objects = 100;
    QVERIFY(error_of(std::string(200, ']') + ".", few).find("more than 100 objects") !=
            std::string::npos);
    // A list that holds itself is data (Python allows it); it decodes without recursing.
    const PickleDocument self = parse_pickle(std::string("]\x94h\x00\x61.", 6), "t.pickle");
    QCOMPARE(self.root().items[0], &self.root());
  }

  void writer_round_trip() {
    PickleWriter w;
    w.begin_dict();
    w.string("list");
    w.begin_list();
    for (int i = 0; i < 2500; ++i) w.integer(i * 1000003LL - 1250000000LL);
    w.end_list();
    w.string("frame");
    w.begin_dict();
    w.string("name");
    w.string(std::string(300, 'n'));
    w.end_dict();
    const std::uint32_t frame = w.memoize();
    w.string("again");
    w.get(frame);
    w.string("scalars");
    w.begin_list();
    w.none();
    w.boolean(true);
    w.real(-0.25);
    w.integer(INT64_MIN);
    w.integer(139595075289088);
    w.end_list();
    w.end_dict();
    const std::string bytes = w.finish();
    const PickleDocument doc = parse_pickle(bytes, "w.pickle");
    const PickleNode& root = doc.root();
    const PickleNode* list = root.find("list");
    QCOMPARE(list->items.size(), std::size_t{2500});
    for (int i = 0; i < 2500; ++i) QCOMPARE(list->items[i]->integer, i * 1000003LL - 1250000000LL);
    QCOMPARE(root.find("again"), root.find("frame"));
    QCOMPARE(root.find("frame")->find("name")->text.size(), std::size_t{300});
    const PickleNode* s = root.find("scalars");
    QCOMPARE(s->items[0]->kind, PickleKind::none);
    QCOMPARE(s->items[1]->integer, 1);
    QCOMPARE(s->items[2]->real, -0.25);
    QCOMPARE(s->items[3]->integer, INT64_MIN);
    QCOMPARE(s->items[4]->integer, 139595075289088LL);
  }
};

QTEST_GUILESS_MAIN(TestPickle)
#include "test_pickle.moc"
