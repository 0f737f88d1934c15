// C++ halves of the foundation oracle cases (cases_core.py).
#include "engine/ops/ops.hpp"
#include "support/oracle_harness.hpp"

using namespace ckpt;

CKPTLAB_ORACLE_CASE(mlp) {
  Tensor h = c.input("x");
  for (int i = 0; i < 3; ++i) {
    const auto k = std::to_string(i);
    h = linear(h, c.param("w" + k), c.param("b" + k));
    if (i < 2) h = relu(h);
  }
  return {h};
}
