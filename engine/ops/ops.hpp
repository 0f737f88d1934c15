#pragma once

// Every op of the engine, for callers that want them all.
#include "engine/autograd/engine.hpp"
#include "engine/autograd/grad_mode.hpp"
#include "engine/ops/conv.hpp"
#include "engine/ops/dropout.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/embedding.hpp"
#include "engine/ops/inplace.hpp"
#include "engine/ops/loss.hpp"
#include "engine/ops/matmul.hpp"
#include "engine/ops/norm.hpp"
#include "engine/ops/pool.hpp"
#include "engine/ops/reduce.hpp"
#include "engine/ops/resize.hpp"
#include "engine/ops/shape_ops.hpp"
#include "engine/ops/softmax.hpp"
#include "engine/ops/unary.hpp"
