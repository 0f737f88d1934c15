// The names of pickle objects and of the opcodes the reader refuses (pickle_reader.cpp).
#include "engine/snapshot/pickle_opcodes.hpp"
#include "engine/snapshot/pickle.hpp"

namespace ckpt {

const char* pickle_kind_name(PickleKind k) {
  switch (k) {
    case PickleKind::none:
      return "None";
    case PickleKind::boolean:
      return "a bool";
    case PickleKind::integer:
    case PickleKind::big_integer:
      return "an int";
    case PickleKind::real:
      return "a float";
    case PickleKind::string:
      return "a str";
    case PickleKind::bytes:
      return "bytes";
    case PickleKind::list:
      return "a list";
    case PickleKind::tuple:
      return "a tuple";
    case PickleKind::dict:
      return "a dict";
  }
  return "?";
}

const PickleNode* PickleNode::find(std::string_view key) const {
  if (kind != PickleKind::dict) return nullptr;
  for (std::size_t i = items.size(); i >= 2; i -= 2) {
    const PickleNode* k = items[i - 2];
    if (k->kind == PickleKind::string && k->text == key) return items[i - 1];
  }
  return nullptr;
}

// Opcodes that would make the unpickler import, call or build arbitrary Python objects, or
// reach outside the bytes: refused by name, never run.
const char* pickle_code_opcode_name(unsigned char op) {
  switch (op) {
    case 'c':
      return "GLOBAL";
    case 0x93:
      return "STACK_GLOBAL";
    case 'R':
      return "REDUCE";
    case 'b':
      return "BUILD";
    case 'i':
      return "INST";
    case 'o':
      return "OBJ";
    case 0x81:
      return "NEWOBJ";
    case 0x92:
      return "NEWOBJ_EX";
    case 'P':
      return "PERSID";
    case 'Q':
      return "BINPERSID";
    case 0x82:
      return "EXT1";
    case 0x83:
      return "EXT2";
    case 0x84:
      return "EXT4";
    case 0x97:
      return "NEXT_BUFFER";
    case 0x98:
      return "READONLY_BUFFER";
    case 0x8f:
      return "EMPTY_SET";
    case 0x90:
      return "ADDITEMS";
    case 0x91:
      return "FROZENSET";
    default:
      return nullptr;
  }
}

}  // namespace ckpt
