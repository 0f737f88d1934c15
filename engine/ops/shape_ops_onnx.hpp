#pragma once

// ONNX rules of the shape ops (rows in shape_ops_rows.cpp): translate a node on values
// computed at run time, or fold it when every input is known at load time.

#include "engine/ops/schema/onnx_node.hpp"

namespace ckpt::shape_onnx {

void translate_identity(OnnxNode& n);
bool fold_identity(OnnxNode& n);
void translate_cast(OnnxNode& n);
bool fold_cast(OnnxNode& n);
void translate_cast_like(OnnxNode& n);
bool fold_cast_like(OnnxNode& n);
void translate_flatten(OnnxNode& n);
void translate_reshape(OnnxNode& n);
bool fold_reshape(OnnxNode& n);
bool fold_flatten(OnnxNode& n);
void translate_transpose(OnnxNode& n);
bool fold_transpose(OnnxNode& n);
void translate_squeeze(OnnxNode& n);
bool fold_squeeze(OnnxNode& n);
void translate_unsqueeze(OnnxNode& n);
bool fold_unsqueeze(OnnxNode& n);
void translate_concat(OnnxNode& n);
bool fold_concat(OnnxNode& n);
void translate_gather(OnnxNode& n);
bool fold_gather(OnnxNode& n);
void translate_expand(OnnxNode& n);
bool fold_expand(OnnxNode& n);
void translate_tile(OnnxNode& n);
bool fold_tile(OnnxNode& n);
void translate_slice(OnnxNode& n);
bool fold_slice(OnnxNode& n);

}  // namespace ckpt::shape_onnx
