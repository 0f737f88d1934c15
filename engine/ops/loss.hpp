#pragma once

#include <cstdint>
#include <string>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// reduction: "mean" | "sum" | "none". Targets are int64 class indices; a target equal to
// ignore_index contributes nothing (and is not counted by "mean").
//
// cross_entropy = nll_loss(log_softmax(logits, class dim), target): LogSoftmaxBackward0 saves
// its result, NllLossBackward0 (NllLoss2DBackward0 beyond 2-D) saves that result, the target
// and a 0-d total_weight — as PyTorch 1.13.
Tensor cross_entropy(const Tensor& logits, const Tensor& target_i64,
                     const std::string& reduction = "mean", std::int64_t ignore_index = -100);
// log_probs [C], [N, C] or [N, C, d1, ...] with target [], [N] or [N, d1, ...].
Tensor nll_loss(const Tensor& log_probs, const Tensor& target_i64,
                const std::string& reduction = "mean", std::int64_t ignore_index = -100);
// Saves x and target (MseLossBackward0). Different shapes broadcast, with PyTorch's warning.
Tensor mse_loss(const Tensor& x, const Tensor& target, const std::string& reduction = "mean");

}  // namespace ckpt
