#pragma once

// The C++ side of the oracle tests. A case is written once in PyTorch (tests/oracle/cases_*.py,
// run by /usr/bin/python3) and once here with the engine's API, under the same name:
//
//   CKPTLAB_ORACLE_CASE(mlp) {
//     Tensor h = c.input("x");
//     h = relu(linear(h, c.param("w0"), c.param("b0")));
//     return {h};
//   }
//
// The harness loads the tensors PyTorch declared (same values, from .npy), runs the case's
// forward on a fresh ledger, compares the outputs, the bytes saved for backward (distinct
// storages, parameters and buffers excluded), then runs backward with PyTorch's output
// gradients and compares every gradient and every buffer updated in place. A Python case
// "family@variant" runs the C++ case "family"; it reads the variant from attributes.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/autograd/node.hpp"
#include "engine/tensor/generator.hpp"

namespace ckpt::oracle {

class OracleCase {
 public:
  // Loads <dir>/manifest.json and every declared tensor (call under the case's ledger).
  explicit OracleCase(std::string dir);
  ~OracleCase();
  OracleCase(const OracleCase&) = delete;
  OracleCase& operator=(const OracleCase&) = delete;

  const std::string& name() const;
  const std::string& dir() const { return dir_; }

  // The tensors PyTorch declared, by role; asking for the wrong role is an error, so that the
  // two sides of a case cannot silently disagree.
  Tensor param(const std::string& name) const;   // category parameter, requires grad
  Tensor buffer(const std::string& name) const;  // category parameter, no grad; compared after
  Tensor input(const std::string& name) const;   // category input (also targets, indices)

  bool has_attr(const std::string& key) const;
  double attr_double(const std::string& key) const;
  std::int64_t attr_int(const std::string& key) const;
  bool attr_bool(const std::string& key) const;
  std::string attr_string(const std::string& key) const;
  std::vector<std::int64_t> attr_ints(const std::string& key) const;
  // A value the Python case reported with c.report(key, value) (numbers only).
  double reported(const std::string& key) const;

  // Seeded like torch.manual_seed before PyTorch's forward: dropout draws the same stream.
  Generator& generator() { return generator_; }

  // Extra checks a case makes beyond the standard ones; collected into the case's report.
  void check(bool ok, const std::string& what);
  const std::vector<std::string>& failures() const { return failures_; }

  struct Impl;
  Impl& impl() const { return *impl_; }

 private:
  Tensor get(const std::string& name, const char* role) const;
  std::string dir_;
  std::unique_ptr<Impl> impl_;
  Generator generator_;
  std::vector<std::string> failures_;
};

using CaseFn = std::function<TensorList(OracleCase&)>;

// Cases register themselves at static-initialisation time (CKPTLAB_ORACLE_CASE).
std::map<std::string, CaseFn>& registry();
struct Registrar {
  Registrar(const char* name, CaseFn fn);
};

struct CaseResult {
  std::vector<std::string> failures;
  std::int64_t ours_saved_bytes = 0;
  std::int64_t torch_saved_bytes = 0;
  bool ok() const { return failures.empty(); }
  std::string message() const;
};

// Runs one case whose PyTorch results are in <root>/<python_name>.
CaseResult run_case(const std::string& python_name, const std::string& root);

// Runs PyTorch on every Python case of the given families ("mlp" runs "mlp" and every
// "mlp@variant") through tests/oracle/run_oracle.py, writing into <root>; returns the Python
// case names written. The interpreter and the source dir come from CKPTLAB_PYTHON and
// CKPTLAB_SOURCE_DIR (set by CTest; the build's values otherwise). Throws with Python's output when
// the script fails.
std::vector<std::string> run_python(const std::string& root,
                                    const std::vector<std::string>& families);

}  // namespace ckpt::oracle

#define CKPTLAB_ORACLE_CASE(id)                                                                    \
  static ::ckpt::TensorList ckptlab_oracle_case_##id(::ckpt::oracle::OracleCase&);                 \
  static const ::ckpt::oracle::Registrar ckptlab_oracle_registrar_##id(#id,                        \
                                                                       &ckptlab_oracle_case_##id); \
  static ::ckpt::TensorList ckptlab_oracle_case_##id([[maybe_unused]] ::ckpt::oracle::OracleCase& c)
