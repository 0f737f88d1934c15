#pragma once

// What pickle_reader.cpp refuses by name: the opcodes that would make an unpickler import, call
// or build arbitrary Python objects, or reach outside the bytes.

namespace ckpt {

// The opcode's name ("GLOBAL", "REDUCE", ...) when the reader refuses it, else null.
const char* pickle_code_opcode_name(unsigned char op);

}  // namespace ckpt
