#include "engine/ops/schema/native_layer.hpp"

#include <stdexcept>

namespace ckpt {

void NativeLayerCall::fail(const std::string& what) const {
  throw std::invalid_argument(where() + ": " + what);
}

}  // namespace ckpt
