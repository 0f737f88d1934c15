"""Writes folds.onnx: load-time arithmetic (Mod both ways, Equal, Where, Expand) feeding one
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
    helper.make_node("Concat", ["m", "f", "e", "w", "ones"], ["all"], name="concat", axis=0),
    helper.make_node("Cast", ["all"], ["allf"], name="cast", to=TensorProto.FLOAT),
    helper.make_node("Add", ["x", "allf"], ["y"], name="add"),
]
graph = helper.make_graph(nodes, "folds", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [20])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [20])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, "folds.onnx")
