#pragma once

// Internal to the ONNX loader: reading a TensorProto's bytes (onnx_tensors.cpp) for the
// Importer (onnx_importer.cpp). tensor_from_proto itself is declared in onnx_import.hpp.

#include <onnx/onnx_pb.h>

#include <string>

namespace ckpt::onnx_import {

// The name of an ONNX element type, for messages.
std::string type_name(int t);

// Models over 2 GB keep their weights in files beside the model (`location`, `offset`, `length`
// entries): `t` with those bytes read in as raw data. The file must stay inside the model's
// folder: a location that leaves it, a missing file or a range the file does not hold is an
// error naming the tensor.
onnx::TensorProto with_external_data(const onnx::TensorProto& t, const std::string& model_path);

// Why the file does not hold `t`'s values, or "" when it does (or when what it holds is wrong,
// which reading it reports): its external data file is absent (how large models travel), or it
// has a shape and no data at all (initializers stripped).
std::string absent_data(const onnx::TensorProto& t, const std::string& model_path);

}  // namespace ckpt::onnx_import
