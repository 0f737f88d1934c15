// lstm, gru and rnn (one layer of nn.LSTM / nn.GRU / nn.RNN): their backward against central
// finite differences in f64 — both directions, initial states or none, ONNX's gate order,
// sequence lengths, a transposed (batch-first) input — and a dry run that allocates what the
// real run does.
#include <QtTest>

#include <optional>

#include "engine/autograd/saved_tensors.hpp"
#include "engine/ops/ops.hpp"
#include "engine/ops/schema/op_schema.hpp"
#include "support/gradcheck.hpp"

using namespace ckpt;
using ckpt::testing::Fn;
using ckpt::testing::gradcheck;
using ckpt::testing::random_leaf;

Q_DECLARE_METATYPE(ckpt::testing::Fn)
Q_DECLARE_METATYPE(ckpt::TensorList)

namespace {

struct Case {
  RecurrentCell cell = RecurrentCell::lstm;
  RecurrentDirection direction = RecurrentDirection::forward;
  bool onnx_gate_order = false;
  bool states = false;                // h0 (and c0) given, and differentiated
  std::vector<std::int64_t> lengths;  // ONNX sequence_lens, or none
  bool transposed = false;            // x given batch-first and transposed, as an export does
  bool biases = true;
};

constexpr std::int64_t kSteps = 3, kBatch = 2, kInput = 3, kHidden = 2;

// The leaves a case differentiates: x, per direction w_ih, w_hh (b_ih, b_hh), then h0 (c0).
TensorList leaves(const Case& c, std::uint64_t seed) {
  const std::int64_t dirs = recurrent_directions(c.direction);
  const std::int64_t gh = recurrent_gates(c.cell) * kHidden;
  TensorList in{random_leaf(
      c.transposed ? Shape{kBatch, kSteps, kInput} : Shape{kSteps, kBatch, kInput}, seed)};
  for (std::int64_t d = 0; d < dirs; ++d) {
    in.push_back(random_leaf({gh, kInput}, seed + 10 + d, -0.8, 0.8));
    in.push_back(random_leaf({gh, kHidden}, seed + 20 + d, -0.8, 0.8));
    if (c.biases) {
      in.push_back(random_leaf({gh}, seed + 30 + d, -0.5, 0.5));
      in.push_back(random_leaf({gh}, seed + 40 + d, -0.5, 0.5));
    }
  }
  if (c.states) {
    in.push_back(random_leaf({dirs, kBatch, kHidden}, seed + 50));
    if (c.cell == RecurrentCell::lstm)
      in.push_back(random_leaf({dirs, kBatch, kHidden}, seed + 51));
  }
  return in;
}

TensorList run(const Case& c, const TensorList& in) {
  const std::int64_t dirs = recurrent_directions(c.direction);
  std::size_t at = 1;
  std::vector<RecurrentWeights> w;
  for (std::int64_t d = 0; d < dirs; ++d) {
    RecurrentWeights r{in[at], in[at + 1], Tensor(), Tensor()};
    at += 2;
    if (c.biases) {
      r.b_ih = in[at++];
      r.b_hh = in[at++];
    }
    w.push_back(r);
  }
  const Tensor h0 = c.states ? in[at++] : Tensor();
  const Tensor c0 = c.states && c.cell == RecurrentCell::lstm ? in[at++] : Tensor();
  const Tensor lengths = c.lengths.empty() ? Tensor() : Tensor::from_vector(c.lengths, {kBatch});
  const Tensor x = c.transposed ? transpose(in[0], 0, 1) : in[0];
  return recurrent_layer({c.cell, c.direction, kHidden, c.onnx_gate_order}, x, h0, c0, lengths, w);
}

// Every output, flattened into one tensor (the check weights each element).
Fn outputs_of(Case c) {
  return [c](const TensorList& in) {
    TensorList parts;
    for (const Tensor& y : run(c, in)) parts.push_back(reshape(y, {-1}));
    return cat(parts, 0);
  };
}

}  // namespace

class TestGradcheckRecurrent : public QObject {
  Q_OBJECT
 private slots:
  void ops_data() {
    QTest::addColumn<Fn>("f");
    QTest::addColumn<TensorList>("inputs");
    using C = RecurrentCell;
    using D = RecurrentDirection;
    // A case: the default one (an LSTM forward, no states, PyTorch's gate order) as `set` makes it.
    auto row = [](const char* name, std::uint64_t seed, auto set) {
      Case c;
      set(c);
      QTest::newRow(name) << outputs_of(c) << leaves(c, seed);
    };
    row("lstm", 1, [](Case&) {});
    row("lstm bidirectional with states", 2, [](Case& c) {
      c.direction = D::bidirectional;
      c.states = true;
    });
    row("lstm onnx gate order reverse", 3, [](Case& c) {
      c.direction = D::reverse;
      c.onnx_gate_order = true;
    });
    row("lstm sequence lengths", 4, [](Case& c) {
      c.direction = D::bidirectional;
      c.states = true;
      c.lengths = {3, 1};
    });
    row("lstm transposed input no bias", 5, [](Case& c) {
      c.transposed = true;
      c.biases = false;
    });
    row("gru", 6, [](Case& c) { c.cell = C::gru; });
    row("gru bidirectional states lengths", 7, [](Case& c) {
      c.cell = C::gru;
      c.direction = D::bidirectional;
      c.states = true;
      c.lengths = {2, 3};
    });
    row("gru onnx gate order", 8, [](Case& c) {
      c.cell = C::gru;
      c.onnx_gate_order = true;
      c.states = true;
    });
    row("rnn tanh", 9, [](Case& c) {
      c.cell = C::rnn_tanh;
      c.states = true;
    });
    row("rnn tanh bidirectional lengths", 10, [](Case& c) {
      c.cell = C::rnn_tanh;
      c.direction = D::bidirectional;
      c.lengths = {1, 3};
    });
    row("rnn relu bidirectional", 11, [](Case& c) {
      c.cell = C::rnn_relu;
      c.direction = D::bidirectional;
      c.states = true;
    });
  }

  void ops() {
    QFETCH(Fn, f);
    QFETCH(TensorList, inputs);
    const auto r = gradcheck(f, inputs);
    QVERIFY2(r.ok(),
             qPrintable(QString::fromStdString(r.where) +
                        QString(" (abs %1, rel %2)").arg(r.max_abs_error).arg(r.max_rel_error)));
  }

  // The code export's spelling: PyTorch's own call for one layer (what nn.LSTM.forward calls),
  // weights back in PyTorch's gate order, Y as ONNX's [T, D, B, H]. (Run in PyTorch when this
  // was written: the same Y, Y_h and Y_c as the engine.)
  void pythonSpelling() {
    const OpSchema* row = OpTable::instance().find("lstm");
    QVERIFY(row && row->python);
    const std::string name = "rnn.LSTM", type = "lstm";
    const Attributes attrs{{"hidden_size", std::int64_t{4}},
                           {"direction", std::string("bidirectional")},
                           {"gate_order", std::string("onnx")}};
    const OpCall op{name, type, attrs};
    const std::vector<std::string> args{"x",  "w",   "r",   "b1", "b2", "w_",
                                        "r_", "b1_", "b2_", "",   "",   ""};
    const std::string py = row->python(op, args, {5, 3, 2});
    QCOMPARE(QString::fromStdString(py),
             QString("(lambda y, h, c: (y.unflatten(2, (2, 4)).transpose(1, 2), h, c))"
                     "(*torch._VF.lstm(x, (torch.zeros(2, 3, 4, dtype=x.dtype), "
                     "torch.zeros(2, 3, 4, dtype=x.dtype)), [torch.cat([w[0:4], w[8:12], "
                     "w[12:16], w[4:8]]), torch.cat([r[0:4], r[8:12], r[12:16], r[4:8]]), "
                     "torch.cat([b1[0:4], b1[8:12], b1[12:16], b1[4:8]]), torch.cat([b2[0:4], "
                     "b2[8:12], b2[12:16], b2[4:8]]), torch.cat([w_[0:4], w_[8:12], w_[12:16], "
                     "w_[4:8]]), torch.cat([r_[0:4], r_[8:12], r_[12:16], r_[4:8]]), "
                     "torch.cat([b1_[0:4], b1_[8:12], b1_[12:16], b1_[4:8]]), "
                     "torch.cat([b2_[0:4], b2_[8:12], b2_[12:16], b2_[4:8]])], True, 1, 0.0, "
                     "True, True, False))"));
  }

  // Padded steps output zeros and leave the state alone: Y_h is the state at each sequence's
  // last step, as ONNX says.
  void paddedStepsKeepTheState() {
    Case c;
    c.cell = RecurrentCell::gru;
    c.lengths = {3, 1};
    const TensorList in = leaves(c, 40);
    const TensorList ys = run(c, in);
    const auto y = ys[0].to_vector(), h = ys[1].to_vector();  // y [T, 1, B, H]
    for (std::int64_t t = 1; t < kSteps; ++t)
      for (std::int64_t j = 0; j < kHidden; ++j)
        QCOMPARE(y[static_cast<std::size_t>((t * kBatch + 1) * kHidden + j)], 0.0);
    for (std::int64_t j = 0; j < kHidden; ++j) {
      QCOMPARE(h[static_cast<std::size_t>(kHidden + j)], y[static_cast<std::size_t>(kHidden + j)]);
      QCOMPARE(h[static_cast<std::size_t>(j)],
               y[static_cast<std::size_t>((2 * kBatch) * kHidden + j)]);
    }
  }

  // On the meta device (a dry run) the layer allocates and saves what it does for real, forward
  // and backward, and computes nothing.
  void dryRunAllocatesAsTheRealRun_data() {
    QTest::addColumn<int>("cell");
    QTest::newRow("lstm") << static_cast<int>(RecurrentCell::lstm);
    QTest::newRow("gru") << static_cast<int>(RecurrentCell::gru);
    QTest::newRow("rnn") << static_cast<int>(RecurrentCell::rnn_tanh);
  }
  void dryRunAllocatesAsTheRealRun() {
    QFETCH(int, cell);
    Case c;
    c.cell = static_cast<RecurrentCell>(cell);
    c.direction = RecurrentDirection::bidirectional;
    c.lengths = {3, 2};
    c.transposed = true;
    const TensorList real_in = leaves(c, 60);
    auto measure = [&](bool meta) {
      auto ledger = std::make_shared<MemoryLedger>();
      LedgerScope scope(ledger);
      std::optional<DeviceScope> device;
      if (meta) device.emplace(Device::meta);
      TensorList in;
      for (const Tensor& t : real_in) {
        Tensor copy = Tensor::empty(t.shape(), t.dtype());
        copy.set_requires_grad(true);
        in.push_back(copy);
      }
      const TensorList ys = run(c, in);
      const std::int64_t saved = saved_tensor_bytes(ys);
      const std::int64_t after_forward = ledger->live_bytes();
      sum(ys[0]).backward();
      return std::vector<std::int64_t>{saved, after_forward, ledger->peak_bytes(),
                                       ledger->allocation_count()};
    };
    QCOMPARE(measure(true), measure(false));
  }
};

QTEST_GUILESS_MAIN(TestGradcheckRecurrent)
#include "test_gradcheck_recurrent.moc"
