"""Writes folds.onnx: load-time arithmetic (Mod both ways, Equal, Where, Expand, And,
Or, Xor) feeding one
runtime Add, so the loaded model's output shows what each fold computed (test_onnx_loader)."""
import onnx
from onnx import TensorProto, helper

def const(name, values):
    return helper.make_node("Constant", [], [name], name=name,
                            value=helper.make_tensor(name + "_v", TensorProto.INT64, [len(values)], values))

nodes = [
    const("a", [-7, 7, -7, 7]), const("b", [3, 3, -3, -3]), const("z", [-7, 0, 0, 7]),
    helper.make_node("Mod", ["a", "b"], ["m"], name="mod", fmod=0),     # [2, 1, -1, -2]
    helper.make_node("Mod", ["a", "b"], ["f"], name="fmod", fmod=1),    # [-1, 1, -1, 1]
    helper.make_node("Equal", ["a", "z"], ["e"], name="equal"),         # [1, 0, 0, 1]
    helper.make_node("Where", ["e", "a", "b"], ["w"], name="where"),    # [-7, 3, -3, 7]
    const("one", [1]), const("shape4", [4]),
    helper.make_node("Expand", ["one", "shape4"], ["ones"], name="expand"),  # [1, 1, 1, 1]
    # nn.MultiheadAttention's attn_mask.logical_or(key_padding_mask), on booleans (Cast from e)
    helper.make_node("Cast", ["e"], ["eb"], name="eb", to=TensorProto.BOOL),           # [T, F, F, T]
    const("p", [1, 1, 0, 0]), helper.make_node("Cast", ["p"], ["pb"], name="pb", to=TensorProto.BOOL),
    helper.make_node("And", ["eb", "pb"], ["and"], name="and"),         # [1, 0, 0, 0]
    helper.make_node("Or", ["eb", "pb"], ["or"], name="or"),            # [1, 1, 0, 1]
    helper.make_node("Xor", ["eb", "pb"], ["xor"], name="xor"),         # [0, 1, 0, 1]
    helper.make_node("Cast", ["and"], ["andi"], name="andi", to=TensorProto.INT64),
    helper.make_node("Cast", ["or"], ["ori"], name="ori", to=TensorProto.INT64),
    helper.make_node("Cast", ["xor"], ["xori"], name="xori", to=TensorProto.INT64),
    helper.make_node("Concat", ["m", "f", "e", "w", "ones", "andi", "ori", "xori"], ["all"],
                     name="concat", axis=0),
    helper.make_node("Cast", ["all"], ["allf"], name="cast", to=TensorProto.FLOAT),
    helper.make_node("Add", ["x", "allf"], ["y"], name="add"),
]
graph = helper.make_graph(nodes, "folds", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, "folds.onnx")
