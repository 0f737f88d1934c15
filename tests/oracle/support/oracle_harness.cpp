#include "oracle_harness.hpp"

#include <QByteArray>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "engine/autograd/engine.hpp"
#include "engine/autograd/saved_tensors.hpp"
#include "engine/tensor/npy.hpp"

namespace ckpt::oracle {

namespace fs = std::filesystem;
using nlohmann::json;

struct OracleCase::Impl {
  json manifest;
  struct Entry {
    Tensor tensor;
    std::string role;
    bool has_grad = false;
  };
  std::map<std::string, Entry> tensors;
  std::vector<std::string> order;
};

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("oracle: cannot read " + p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

DType dtype_from_torch(const std::string& s) {
  if (s == "torch.float32") return DType::f32;
  if (s == "torch.float64") return DType::f64;
  if (s == "torch.int64") return DType::i64;
  throw std::runtime_error("oracle: unsupported dtype " + s);
}

// numpy.allclose: |ours - ref| <= atol + rtol * |ref|; reports the worst element.
std::string compare(const std::string& what, const Tensor& ours, const Tensor& ref, double rtol,
                    double atol) {
  if (!ours.defined()) return what + ": undefined in the engine, PyTorch has " + ref.str();
  if (ours.shape() != ref.shape() || ours.dtype() != ref.dtype())
    return what + ": engine " + ours.str() + ", PyTorch " + ref.str();
  const auto a = ours.to_vector();
  const auto b = ref.to_vector();
  std::size_t bad = 0, worst = 0;
  double worst_excess = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double err = std::abs(a[i] - b[i]);
    const double allowed = atol + rtol * std::abs(b[i]);
    if (!(err <= allowed)) {  // NaN counts as a mismatch
      ++bad;
      const double excess = std::isnan(err) ? INFINITY : err - allowed;
      if (bad == 1 || excess > worst_excess) {
        worst_excess = excess;
        worst = i;
      }
    }
  }
  if (bad == 0) return {};
  std::ostringstream os;
  os.precision(9);
  os << what << ": " << bad << " of " << a.size() << " elements differ (rtol " << rtol << ", atol "
     << atol << "); worst at flat index " << worst << ": engine " << a[worst] << ", PyTorch "
     << b[worst];
  return os.str();
}

std::string describe_saved(const std::vector<SavedStorage>& ours, const json& torch_saved,
                           const json& nodes) {
  std::ostringstream os;
  os << "\n  engine saved storages:";
  for (const auto& s : ours)
    os << "\n    " << s.node << ": " << dtype_name(s.dtype) << shape_str(s.shape) << " storage "
       << s.bytes << " B (" << category_name(s.category) << ")";
  os << "\n  PyTorch saved storages:";
  for (const auto& s : torch_saved)
    os << "\n    " << s["dtype"].get<std::string>() << s["shape"].dump() << " storage "
       << s["bytes"].get<std::int64_t>() << " B";
  os << "\n  PyTorch graph:";
  for (const auto& n : nodes) {
    if (n["saved"].empty()) continue;
    os << "\n    " << n["name"].get<std::string>() << ":";
    for (const auto& s : n["saved"]) os << " " << s["attr"].get<std::string>() << s["shape"].dump();
  }
  return os.str();
}

const json& attr_of(const json& m, const std::string& key, const std::string& name) {
  const auto& attrs = m.at("attrs");
  if (!attrs.contains(key))
    throw std::invalid_argument("oracle case " + name + ": no attribute '" + key + "'");
  return attrs.at(key);
}

}  // namespace

OracleCase::OracleCase(std::string dir) : dir_(std::move(dir)), impl_(std::make_unique<Impl>()) {
  impl_->manifest = json::parse(read_text(fs::path(dir_) / "manifest.json"));
  generator_.manual_seed(impl_->manifest.at("seed").get<std::uint64_t>());
  for (const auto& t : impl_->manifest.at("tensors")) {
    Impl::Entry e;
    const auto tname = t.at("name").get<std::string>();
    e.role = t.at("role").get<std::string>();
    e.has_grad = t.at("has_grad").get<bool>();
    const auto path = (fs::path(dir_) / (tname + ".npy")).string();
    if (e.role == "param" || e.role == "buffer") {
      CategoryScope as_parameter(MemoryCategory::parameter);
      e.tensor = load_npy(path);
    } else {
      CategoryScope as_input(MemoryCategory::input);
      e.tensor = load_npy(path);
    }
    if (e.tensor.dtype() != dtype_from_torch(t.at("dtype").get<std::string>()))
      throw std::runtime_error("oracle: " + path + " has dtype " + dtype_name(e.tensor.dtype()));
    if (t.at("requires_grad").get<bool>()) e.tensor.set_requires_grad(true);
    e.tensor.set_name(tname);
    impl_->order.push_back(tname);
    impl_->tensors.emplace(tname, std::move(e));
  }
}

OracleCase::~OracleCase() = default;

const std::string& OracleCase::name() const {
  return impl_->manifest.at("name").get_ref<const std::string&>();
}

Tensor OracleCase::get(const std::string& tname, const char* role) const {
  auto it = impl_->tensors.find(tname);
  if (it == impl_->tensors.end())
    throw std::invalid_argument("oracle case " + name() + ": PyTorch declared no tensor '" + tname +
                                "'");
  if (it->second.role != role)
    throw std::invalid_argument("oracle case " + name() + ": tensor '" + tname + "' is a " +
                                it->second.role + " in PyTorch, asked for as a " + role);
  return it->second.tensor;
}

Tensor OracleCase::param(const std::string& n) const {
  return get(n, "param");
}
Tensor OracleCase::buffer(const std::string& n) const {
  return get(n, "buffer");
}
Tensor OracleCase::input(const std::string& n) const {
  return get(n, "input");
}

bool OracleCase::has_attr(const std::string& key) const {
  return impl_->manifest.at("attrs").contains(key);
}
double OracleCase::attr_double(const std::string& key) const {
  return attr_of(impl_->manifest, key, name()).get<double>();
}
std::int64_t OracleCase::attr_int(const std::string& key) const {
  return attr_of(impl_->manifest, key, name()).get<std::int64_t>();
}
bool OracleCase::attr_bool(const std::string& key) const {
  return attr_of(impl_->manifest, key, name()).get<bool>();
}
std::string OracleCase::attr_string(const std::string& key) const {
  return attr_of(impl_->manifest, key, name()).get<std::string>();
}
std::vector<std::int64_t> OracleCase::attr_ints(const std::string& key) const {
  return attr_of(impl_->manifest, key, name()).get<std::vector<std::int64_t>>();
}
double OracleCase::reported(const std::string& key) const {
  const auto& m = impl_->manifest;
  if (!m.contains("reports") || !m.at("reports").contains(key))
    throw std::invalid_argument("oracle case " + name() + ": PyTorch reported no '" + key + "'");
  return m.at("reports").at(key).get<double>();
}

void OracleCase::check(bool ok, const std::string& what) {
  if (!ok) failures_.push_back(what);
}

std::map<std::string, CaseFn>& registry() {
  static std::map<std::string, CaseFn> r;
  return r;
}

Registrar::Registrar(const char* name, CaseFn fn) {
  if (!registry().emplace(name, std::move(fn)).second)
    throw std::logic_error(std::string("oracle case ") + name + " registered twice");
}

std::string CaseResult::message() const {
  std::string m;
  for (const auto& f : failures) m += (m.empty() ? "" : "\n") + f;
  return m;
}

CaseResult run_case(const std::string& python_name, const std::string& root) {
  CaseResult r;
  const fs::path dir = fs::path(root) / python_name;
  if (fs::exists(dir / "error.txt")) {
    r.failures.push_back("PyTorch side of " + python_name + " failed:\n" +
                         read_text(dir / "error.txt"));
    return r;
  }
  const std::string family = python_name.substr(0, python_name.find('@'));
  auto fn = registry().find(family);
  if (fn == registry().end()) {
    r.failures.push_back("no C++ case registered for " + family);
    return r;
  }
  auto ledger = std::make_shared<MemoryLedger>();
  ExecutionScope use_ledger(ledger);
  try {
    OracleCase c(dir.string());
    const json& m = c.impl().manifest;
    const double rtol = m.at("rtol").get<double>();
    const double atol = m.at("atol").get<double>();
    const bool compare_saved = m.value("compare_saved", true);
    const bool compare_values = m.value("compare_values", true);

    // An expected error: the engine must throw in the same phase, with PyTorch's message in
    // its own (ours may add the op's name and shapes).
    const json& error = m.contains("error") ? m.at("error") : json();
    const std::string error_phase = error.is_null() ? "" : error.at("phase").get<std::string>();
    auto expect_throw = [&](const std::string& phase, auto&& body) {
      const std::string want = error.at("message").get<std::string>();
      try {
        body();
      } catch (const std::exception& ex) {
        const std::string got = ex.what();
        if (got.find(want) == std::string::npos)
          r.failures.push_back("the " + phase + " threw \"" + got + "\"; PyTorch's " +
                               error.at("type").get<std::string>() + " says \"" + want + "\"");
        return;
      }
      r.failures.push_back("the " + phase + " did not throw; PyTorch's " +
                           error.at("type").get<std::string>() + ": " + want);
    };

    // PyTorch has one global generator: a checkpoint's recomputation in backward draws from
    // it where the forward left it, so the case's generator stays current through backward.
    GeneratorScope gen(c.generator());
    TensorList outputs;
    {
      PhaseScope fwd(Phase::forward);
      if (error_phase == "forward") {
        expect_throw("forward", [&] { fn->second(c); });
        return r;
      }
      outputs = fn->second(c);
    }
    const auto& expected_outputs = m.at("outputs");
    if (outputs.size() != expected_outputs.size()) {
      r.failures.push_back("the engine returned " + std::to_string(outputs.size()) +
                           " outputs, PyTorch " + std::to_string(expected_outputs.size()));
      return r;
    }

    const auto saved = saved_tensor_storages(outputs);
    for (const auto& s : saved) r.ours_saved_bytes += s.bytes;
    r.torch_saved_bytes = m.at("saved").at("bytes").get<std::int64_t>();
    if (compare_saved && r.ours_saved_bytes != r.torch_saved_bytes)
      r.failures.push_back("saved for backward: engine " + std::to_string(r.ours_saved_bytes) +
                           " bytes, PyTorch " + std::to_string(r.torch_saved_bytes) + " bytes" +
                           describe_saved(saved, m.at("saved").at("storages"), m.at("nodes")));

    TensorList diff_outputs, grad_outputs;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const auto idx = std::to_string(i);
      Tensor ref = load_npy((dir / ("out." + idx + ".npy")).string());
      const std::string err = compare("output " + idx, outputs[i], ref, rtol, atol);
      if (!err.empty() && compare_values) r.failures.push_back(err);
      const bool torch_rg = expected_outputs[i].at("requires_grad").get<bool>();
      if (outputs[i].requires_grad() != torch_rg)
        r.failures.push_back("output " + idx + ": requires_grad is " +
                             (torch_rg ? "true" : "false") + " in PyTorch");
      if (torch_rg && outputs[i].requires_grad()) {
        diff_outputs.push_back(outputs[i]);
        grad_outputs.push_back(load_npy((dir / ("grad_out." + idx + ".npy")).string()));
      }
    }

    if (error_phase == "backward") {
      expect_throw("backward", [&] { backward(diff_outputs, grad_outputs); });
      return r;
    }
    if (!diff_outputs.empty()) backward(diff_outputs, grad_outputs);

    for (const auto& tname : c.impl().order) {
      const auto& e = c.impl().tensors.at(tname);
      if (e.tensor.requires_grad()) {
        const Tensor g = e.tensor.grad();
        if (e.has_grad) {
          const Tensor ref = load_npy((dir / ("grad." + tname + ".npy")).string());
          const std::string err = compare("grad of " + tname, g, ref, rtol, atol);
          if (!err.empty() && compare_values) r.failures.push_back(err);
        } else if (g.defined()) {
          r.failures.push_back("grad of " + tname + ": PyTorch has none, the engine has one");
        }
      }
      if (e.role == "buffer") {
        const Tensor ref = load_npy((dir / ("after." + tname + ".npy")).string());
        const std::string err =
            compare("buffer " + tname + " after the run", e.tensor, ref, rtol, atol);
        if (!err.empty() && compare_values) r.failures.push_back(err);
      }
    }
    for (const auto& f : c.failures()) r.failures.push_back(f);
  } catch (const std::exception& ex) {
    r.failures.push_back(std::string("the engine threw: ") + ex.what());
  }
  return r;
}

std::vector<std::string> run_python(const std::string& root,
                                    const std::vector<std::string>& families) {
  // CTest sets both; the build's values make the executable runnable on its own too.
  const char* py = std::getenv("CKPTLAB_PYTHON");
  const char* src = std::getenv("CKPTLAB_SOURCE_DIR");
  const QString python = QString::fromUtf8(py && *py ? py : CKPTLAB_ORACLE_PYTHON);
  const QString script = QString::fromUtf8(src && *src ? src : CKPTLAB_ORACLE_SOURCE_DIR) +
                         "/tests/oracle/run_oracle.py";
  QStringList args{script, QString::fromStdString(root), "--families"};
  for (const auto& f : families) args << QString::fromStdString(f);
  QProcess p;
  p.setProcessChannelMode(QProcess::MergedChannels);
  p.start(python, args);
  const bool finished = p.waitForFinished(10 * 60 * 1000);
  const QByteArray out = p.readAll();
  if (!finished || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0)
    throw std::runtime_error("oracle: " + python.toStdString() + " " + script.toStdString() +
                             " failed (exit " + std::to_string(p.exitCode()) +
                             "): " + out.toStdString());
  return json::parse(read_text(fs::path(root) / "index.json")).get<std::vector<std::string>>();
}

}  // namespace ckpt::oracle
