"""The ONNX that PyTorch 2.9+'s torch.export-based exporter writes (opsets 18 to 20), as graphs
written with onnx.helper (PyTorch 1.13 cannot export them), each beside the same computation
at opset 13 — issue 38. test_engine_onnx_opsets loads each pair and compares outputs,
gradients and the bytes kept for backward; the refusals must name the file, the node and the
attribute.

    /usr/bin/python3 tests/engine/onnx_opset_pairs.py OUT_DIR

OUT_DIR/<case>/ holds <case>_opsetN.onnx and <case>_opset13.onnx (a pair) or one file (a
refusal), and case.json:
  input     the shape of the float input "x" (the test makes its values);
  newer     the file at opset 18, 19 or 20, and older, the one at opset 13;
  ops       how many engine ops the newer file must load as (-1: not checked);
  saved     the bytes both must keep for backward, where the case knows them (-1: not checked);
  saved_difference  the bytes the newer file keeps beyond the older (its case says why);
  warning   the start of the load warning the newer file must give (empty: none);
  refused   for a refusal: its file, and the node, attribute and message its error names (no
            node nor attribute for a refusal of the whole file).
OUT_DIR/index.txt lists the cases.

The installed onnx (Debian's 1.12) knows opsets up to 17: the files import opset 18 to 20 by
hand and are not passed through onnx.checker, which would refuse the ops whose signature it
does not know yet (Reduce* axes as an input, Split's num_outputs, Pad's axes, Gelu, ...).
"""
import json
import math
import os
import sys

import numpy
from onnx import TensorProto, helper, numpy_helper, save

sys.dont_write_bytecode = True


class Graph:
    """One graph with a float input "x": initializers, Constant numbers, nodes in order."""

    def __init__(self, opset, x_shape):
        self.opset = opset
        self.x_shape = x_shape
        self.nodes, self.inits, self.outputs = [], [], []

    def weight(self, name, shape, scale=0.1):
        n = int(numpy.prod(shape))
        v = numpy.array([scale * ((i * 7) % 11 - 5) + 1.0 for i in range(n)], numpy.float32)
        self.inits.append(numpy_helper.from_array(v.reshape(shape), name))
        return self

    def tensor(self, name, values, dtype=numpy.float32):
        self.inits.append(numpy_helper.from_array(numpy.array(values, dtype), name))
        return self

    def ints(self, name, values):
        return self.tensor(name, values, numpy.int64)

    def floats(self, name, values):
        """A float tensor as a Constant node: a float initializer is a weight to the importer
        (ONNX does not tell them apart), so the exporters' constants are Constant nodes."""
        t = numpy_helper.from_array(numpy.array(values, numpy.float32), name)
        self.nodes.append(helper.make_node("Constant", [], [name], name="/Constant_" + name,
                                           value=t))
        return self

    def number(self, name, value, dtype=TensorProto.FLOAT):
        """A Constant node, as the exporters write a Python number."""
        self.nodes.append(helper.make_node(
            "Constant", [], [name], name="/Constant_" + name,
            value=helper.make_tensor(name, dtype, [], [value])))
        return self

    def node(self, op_type, inputs, outputs, **attrs):
        name = "/block/%s_%d" % (op_type, len(self.nodes))
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=name, **attrs))
        return self

    def output(self, *names):
        self.outputs.extend(names)
        return self

    def last_node_name(self):
        return self.nodes[-1].name

    def save(self, path):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, self.x_shape)
        outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in self.outputs]
        graph = helper.make_graph(self.nodes, os.path.splitext(os.path.basename(path))[0], [x],
                                  outs, initializer=self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  producer_name="onnx_opset_pairs.py")
        model.ir_version = 8
        save(model, path)


CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


# Each pair function returns (newer graph, older graph, {"ops": n, "warning": prefix}).

def reduce_pair(op_type, keep, axes):
    s = [2, 3, 4]
    newer, older = Graph(18, s), Graph(13, s)
    newer.ints("axes", axes).node(op_type, ["x", "axes"], ["y"], keepdims=keep).output("y")
    if op_type == "ReduceSum":  # its axes were an input from opset 13
        older.ints("axes", axes).node(op_type, ["x", "axes"], ["y"], keepdims=keep).output("y")
    else:
        older.node(op_type, ["x"], ["y"], axes=axes, keepdims=keep).output("y")
    return newer, older, {"ops": 1}


for _op in ("ReduceMean", "ReduceMax", "ReduceSum"):
    for _keep in (0, 1):
        CASES["%s_axes_input_keepdims%d" % (_op, _keep)] = (
            lambda op=_op, keep=_keep: reduce_pair(op, keep, [-1, 1]))


def reduce_all(op_type, empty_input):
    """No axes (or an empty axes input) without noop_with_empty_axes: every axis."""
    s = [2, 3, 4]
    newer, older = Graph(18, s), Graph(13, s)
    if empty_input:
        newer.ints("axes", []).node(op_type, ["x", "axes"], ["y"]).output("y")
    else:
        newer.node(op_type, ["x"], ["y"]).output("y")
    older.node(op_type, ["x"], ["y"]).output("y")
    return newer, older, {"ops": 1}


def reduce_noop(op_type):
    """noop_with_empty_axes: the input itself."""
    s = [2, 3, 4]
    newer, older = Graph(18, s), Graph(13, s)
    newer.node("Relu", ["x"], ["r"]).node(op_type, ["r"], ["y"], noop_with_empty_axes=1)
    older.node("Relu", ["x"], ["y"])
    return newer.output("y"), older.output("y"), {"ops": 1}


for _op in ("ReduceMean", "ReduceMax", "ReduceSum"):
    CASES[_op + "_all_axes"] = lambda op=_op: reduce_all(op, False)
    CASES[_op + "_empty_axes_input"] = lambda op=_op: reduce_all(op, True)
    CASES[_op + "_noop_with_empty_axes"] = lambda op=_op: reduce_noop(op)


def split_pair(size, parts, sizes):
    s = [2, size]
    outs = ["y%d" % i for i in range(parts)]
    newer, older = Graph(18, s), Graph(13, s)
    newer.node("Split", ["x"], outs, axis=1, num_outputs=parts).output(*outs)
    older.ints("sizes", sizes).node("Split", ["x", "sizes"], outs, axis=1).output(*outs)
    return newer, older, {"ops": parts}


@case
def Split_num_outputs_even():
    return split_pair(6, 3, [2, 2, 2])


@case
def Split_num_outputs_uneven():
    """torch.chunk's sizes: ceil(7 / 3) = 3, the last part smaller."""
    return split_pair(7, 3, [3, 3, 1])


@case
def Split_num_outputs_uneven_four():
    return split_pair(10, 4, [3, 3, 3, 1])


def pad_pair(mode, opset=18, value=None):
    """Pad with an axes input (opset 18): the last two dims of a [1, 2, 4, 5], then Tanh (which
    keeps its result, so that the bytes kept are compared too)."""
    s = [1, 2, 4, 5]
    newer, older = Graph(opset, s), Graph(13, s)
    attrs = {"mode": mode}
    newer.ints("pads", [1, 2, 2, 1]).ints("axes", [2, 3])
    if value is not None:
        newer.floats("value", value)
        older.floats("value", value)
    newer.node("Pad", ["x", "pads", "value" if value is not None else "", "axes"], ["p"], **attrs)
    older.ints("pads", [0, 0, 1, 2, 0, 0, 2, 1])
    older.node("Pad", ["x", "pads"] + (["value"] if value is not None else []), ["p"], **attrs)
    for g in (newer, older):
        g.node("Tanh", ["p"], ["y"]).output("y")
    return newer, older, {"ops": 2}


@case
def Pad_axes_constant():
    return pad_pair("constant", value=0.75)


@case
def Pad_axes_reflect():
    return pad_pair("reflect")


@case
def Pad_axes_edge():
    return pad_pair("edge")


@case
def Pad_wrap():
    """Wrap (opset 19) is F.pad's circular; at opset 13 the same is what 1.13 writes for it: the
    ends sliced off and concatenated around x, dim by dim."""
    s = [1, 2, 4, 5]
    newer, older = Graph(19, s), Graph(13, s)
    newer.ints("pads", [1, 2, 2, 1]).ints("axes", [2, 3])
    newer.node("Pad", ["x", "pads", "", "axes"], ["p"], mode="wrap")
    # dim 2: one row from its end before, two from its start after; dim 3: two and one.
    older.ints("s2a", [-1]).ints("e2a", [4]).ints("s2b", [0]).ints("e2b", [2]).ints("ax2", [2])
    older.ints("s3a", [-2]).ints("e3a", [5]).ints("s3b", [0]).ints("e3b", [1]).ints("ax3", [3])
    older.node("Slice", ["x", "s2a", "e2a", "ax2"], ["a2"])
    older.node("Slice", ["x", "s2b", "e2b", "ax2"], ["b2"])
    older.node("Concat", ["a2", "x", "b2"], ["c2"], axis=2)
    older.node("Slice", ["c2", "s3a", "e3a", "ax3"], ["a3"])
    older.node("Slice", ["c2", "s3b", "e3b", "ax3"], ["b3"])
    older.node("Concat", ["a3", "c2", "b3"], ["p"], axis=3)
    for g in (newer, older):
        g.node("Tanh", ["p"], ["y"]).output("y")
    return newer, older, {"ops": 2}


def resize_pair(mode, by_sizes, coordinates):
    """Resize with an axes attribute (opset 18): only the spatial dims' sizes or scales."""
    s = [1, 2, 3, 4]
    newer, older = Graph(18, s), Graph(13, s)
    attrs = {"mode": mode, "coordinate_transformation_mode": coordinates}
    if mode == "nearest":
        attrs["nearest_mode"] = "floor"
    newer_attrs = dict(attrs, axes=[2, 3])
    if by_sizes:
        newer.ints("sizes", [6, 8])
        newer.node("Resize", ["x", "", "", "sizes"], ["r"], **newer_attrs)
        older.ints("sizes", [1, 2, 6, 8])
        older.node("Resize", ["x", "", "", "sizes"], ["r"], **attrs)
    else:
        newer.floats("scales", [2.0, 2.0])
        newer.node("Resize", ["x", "", "scales"], ["r"], **newer_attrs)
        older.floats("scales", [1.0, 1.0, 2.0, 2.0])
        older.node("Resize", ["x", "", "scales"], ["r"], **attrs)
    for g in (newer, older):
        g.node("Tanh", ["r"], ["y"]).output("y")
    return newer, older, {"ops": 2}


@case
def Resize_axes_nearest_sizes():
    return resize_pair("nearest", True, "asymmetric")


@case
def Resize_axes_nearest_scales():
    return resize_pair("nearest", False, "asymmetric")


@case
def Resize_axes_linear_sizes():
    return resize_pair("linear", True, "half_pixel")


@case
def Resize_axes_linear_scales_align_corners():
    return resize_pair("linear", False, "align_corners")


@case
def Resize_keep_aspect_ratio_stretch():
    """keep_aspect_ratio_policy "stretch" (the default, opset 18) is F.interpolate's."""
    newer, older, expect = resize_pair("linear", True, "half_pixel")
    newer.nodes[-2].attribute.append(helper.make_attribute("keep_aspect_ratio_policy", "stretch"))
    return newer, older, expect


def gelu_erf_13(g):
    g.number("sqrt2", math.sqrt(2.0)).number("one", 1.0).number("half", 0.5)
    g.node("Div", ["x", "sqrt2"], ["d"]).node("Erf", ["d"], ["e"])
    g.node("Add", ["e", "one"], ["p"]).node("Mul", ["x", "p"], ["m"])
    return g.node("Mul", ["m", "half"], ["y"]).output("y")


@case
def Gelu():
    s = [3, 5]
    newer = Graph(20, s).node("Gelu", ["x"], ["y"]).output("y")
    return newer, gelu_erf_13(Graph(13, s)), {"ops": 1}


@case
def Gelu_approximate_none():
    s = [3, 5]
    newer = Graph(20, s).node("Gelu", ["x"], ["y"], approximate="none").output("y")
    return newer, gelu_erf_13(Graph(13, s)), {"ops": 1}


@case
def Gelu_tanh():
    s = [3, 5]
    newer = Graph(20, s).node("Gelu", ["x"], ["y"], approximate="tanh").output("y")
    older = Graph(13, s)
    older.number("c", 0.044715).number("k", math.sqrt(2.0 / math.pi))
    older.number("one", 1.0).number("half", 0.5)
    older.node("Mul", ["x", "x"], ["x2"]).node("Mul", ["x", "x2"], ["x3"])
    older.node("Mul", ["c", "x3"], ["cx3"]).node("Add", ["x", "cx3"], ["in"])
    older.node("Mul", ["k", "in"], ["kin"]).node("Tanh", ["kin"], ["t"])
    older.node("Add", ["one", "t"], ["p"]).node("Mul", ["x", "p"], ["m"])
    older.node("Mul", ["half", "m"], ["y"]).output("y")
    return newer, older, {"ops": 1}


@case
def Mish():
    s = [4, 3]
    newer = Graph(18, s).node("Mish", ["x"], ["y"]).output("y")
    older = Graph(13, s).node("Softplus", ["x"], ["sp"]).node("Tanh", ["sp"], ["t"])
    older.node("Mul", ["x", "t"], ["y"]).output("y")
    return newer, older, {"ops": 1}


@case
def LayerNormalization():
    """LayerNormalization as one op (the exporters' form from opset 17), against its opset-13
    decomposition, which the importer fuses into the same op."""
    s = [2, 3, 8]
    newer, older = Graph(18, s), Graph(13, s)
    newer.weight("w", [8]).weight("b", [8], 0.05)
    newer.node("LayerNormalization", ["x", "w", "b"], ["y"], axis=-1, epsilon=1e-5).output("y")
    older.weight("w", [8]).weight("b", [8], 0.05).number("two", 2.0).number("eps", 1e-5)
    older.node("ReduceMean", ["x"], ["mean"], axes=[-1]).node("Sub", ["x", "mean"], ["d"])
    older.node("Pow", ["d", "two"], ["sq"]).node("ReduceMean", ["sq"], ["var"], axes=[-1])
    older.node("Add", ["var", "eps"], ["ve"]).node("Sqrt", ["ve"], ["std"])
    older.node("Div", ["d", "std"], ["n"]).node("Mul", ["n", "w"], ["nw"])
    older.node("Add", ["nw", "b"], ["y"]).output("y")
    return newer, older, {"ops": 1}


@case
def GroupNormalization_group_per_channel():
    """GroupNormalization (opset 18) with one group per channel (wav2vec 2.0's feature
    extractor): its per-group scale and bias are per channel. At opset 13 what 1.13 writes for
    nn.GroupNorm: InstanceNormalization over the grouped view, the affine after."""
    s = [2, 4, 6]
    newer, older = Graph(18, s), Graph(13, s)
    newer.weight("gn.weight", [4]).weight("gn.bias", [4], 0.05)
    newer.node("GroupNormalization", ["x", "gn.weight", "gn.bias"], ["y"], num_groups=4,
               epsilon=1e-5).output("y")
    older.weight("gn.weight", [4]).weight("gn.bias", [4], 0.05)
    older.ints("grouping", [0, 4, -1]).floats("ones", [1.0] * 4).floats("zeros", [0.0] * 4)
    older.ints("axes", [1])
    older.node("Reshape", ["x", "grouping"], ["g"])
    older.node("InstanceNormalization", ["g", "ones", "zeros"], ["n"], epsilon=1e-5)
    older.node("Shape", ["x"], ["shape"]).node("Reshape", ["n", "shape"], ["back"])
    older.node("Unsqueeze", ["gn.weight", "axes"], ["w"])
    older.node("Unsqueeze", ["gn.bias", "axes"], ["b"])
    older.node("Mul", ["back", "w"], ["scaled"]).node("Add", ["scaled", "b"], ["y"]).output("y")
    return newer, older, {"ops": 1}


@case
def BatchNormalization_inference_form():
    """The torch.export-based exporter writes BatchNorm in its inference form (one output,
    training_mode 0) whatever the module's mode: it runs in training mode, as the training-mode
    export (three outputs) does, and the load warning counts the nodes it changed."""
    s = [2, 3, 4, 4]
    newer, older = Graph(18, s), Graph(13, s)
    for g in (newer, older):
        g.weight("bn.weight", [3]).weight("bn.bias", [3], 0.02)
        g.weight("bn.running_mean", [3], 0.0).weight("bn.running_var", [3], 0.0)
    inputs = ["x", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"]
    newer.node("BatchNormalization", inputs, ["y"], training_mode=0).output("y")
    older.node("BatchNormalization", inputs, ["y", "rm", "rv"]).output("y")
    return newer, older, {"ops": 1,
                          "warning": "1 node: BatchNormalization in inference form"}


@case
def CastLike():
    """CastLike (opset 15): the torch.export exporter casts a Python number like the tensor it
    meets (here a double 0.5 like float32 x, folded at load time) and writes type_as as
    CastLike of a float32 value to a float32 one (nothing to do)."""
    s = [3, 4]
    newer, older = Graph(18, s), Graph(13, s)
    newer.number("half", 0.5, TensorProto.DOUBLE).node("CastLike", ["half", "x"], ["h"])
    newer.node("Mul", ["x", "h"], ["m"]).node("CastLike", ["m", "x"], ["c"])
    newer.node("Tanh", ["c"], ["y"]).output("y")
    older.number("half", 0.5).node("Mul", ["x", "half"], ["m"]).node("Tanh", ["m"], ["y"])
    return newer, older.output("y"), {"ops": 2}


@case
def Attention_sqrt_scale_on_q_and_k():
    """The exporters' F.scaled_dot_product_attention (PyTorch 2.x, opset 18): q and kᵀ each times
    sqrt(scale), MatMul, Softmax, MatMul; at opset 13 nn.MultiheadAttention's q / sqrt(d). Both
    are one attention op keeping the same."""
    s = [2, 2, 4, 8]
    newer, older = Graph(18, s), Graph(13, s)
    for g in (newer, older):
        g.node("Transpose", ["x"], ["kt"], perm=[0, 1, 3, 2])
        g.node("Tanh", ["x"], ["v"])
    root = 8.0 ** -0.25
    newer.number("root_scale", root)
    newer.node("Mul", ["x", "root_scale"], ["qs"]).node("Mul", ["kt", "root_scale"], ["kts"])
    newer.node("MatMul", ["qs", "kts"], ["scores"])
    older.number("sqrt_d", math.sqrt(8.0)).node("Div", ["x", "sqrt_d"], ["qs"])
    older.node("MatMul", ["qs", "kt"], ["scores"])
    for g in (newer, older):
        g.node("Softmax", ["scores"], ["p"], axis=-1).node("MatMul", ["p", "v"], ["y"])
        g.output("y")
    # On the CPU the attention op keeps what the written-out ops keep in 1.13 (its math path):
    # kᵀ scaled is a tensor of its own where kᵀ alone was a view of x (the same bytes), and each
    # multiplication by a Python number keeps that number as a 0-d float64 tensor: two here,
    # one for the division at opset 13.
    return newer, older, {"ops": 3, "saved_difference": 8}


@case
def Rsqrt_as_Reciprocal_of_Sqrt():
    """rsqrt: Reciprocal(Sqrt(x)) (PyTorch 2.x) and Div(1, Sqrt(x)) (1.13) are both torch.rsqrt,
    which keeps its result alone, as RMSNorm's e * rsqrt(e) shows: exp's result and rsqrt's,
    not the square root as well (2 x 2 x 6 float32)."""
    s = [2, 6]
    newer, older = Graph(18, s), Graph(13, s)
    newer.node("Exp", ["x"], ["e"]).node("Sqrt", ["e"], ["r"]).node("Reciprocal", ["r"], ["q"])
    older.number("one", 1.0).node("Exp", ["x"], ["e"]).node("Sqrt", ["e"], ["r"])
    older.node("Div", ["one", "r"], ["q"])
    for g in (newer, older):
        g.node("Mul", ["e", "q"], ["y"]).output("y")
    return newer, older, {"ops": 3, "saved": 2 * 2 * 6 * 4}


# Refusals: (graph, the attribute the error must name, a part of its message).

REFUSALS = {}


def refusal(fn):
    REFUSALS[fn.__name__] = fn
    return fn


@refusal
def Pad_wrap_before_opset19():
    g = Graph(18, [1, 2, 4])
    g.ints("pads", [0, 0, 1, 0, 0, 1]).node("Pad", ["x", "pads"], ["y"], mode="wrap")
    return g.output("y"), "mode", "mode 'wrap' is not supported at opset 18"


@refusal
def Resize_antialias():
    g = Graph(18, [1, 1, 4, 4])
    g.floats("scales", [0.5, 0.5])
    g.node("Resize", ["x", "", "scales"], ["y"], mode="linear", antialias=1, axes=[2, 3])
    return g.output("y"), "antialias", "antialias is not supported"


@refusal
def Resize_keep_aspect_ratio_not_larger():
    g = Graph(18, [1, 1, 4, 6])
    g.ints("sizes", [8, 8])
    g.node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear", axes=[2, 3],
           keep_aspect_ratio_policy="not_larger")
    return g.output("y"), "keep_aspect_ratio_policy", "'not_larger' is not supported"


@refusal
def Resize_half_pixel_symmetric():
    g = Graph(19, [1, 1, 4, 4])
    g.ints("sizes", [1, 1, 8, 8])
    g.node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear",
           coordinate_transformation_mode="half_pixel_symmetric")
    return (g.output("y"), "coordinate_transformation_mode",
            "'half_pixel_symmetric' is not supported")


@refusal
def Gelu_approximate_unknown():
    g = Graph(20, [3, 5]).node("Gelu", ["x"], ["y"], approximate="sigmoid").output("y")
    return g, "approximate", "approximate must be 'none' or 'tanh'"


@refusal
def Split_num_outputs_not_the_outputs():
    g = Graph(18, [2, 7]).node("Split", ["x"], ["a", "b"], axis=1, num_outputs=3)
    return g.output("a", "b"), "num_outputs", "num_outputs is 3 but the node has 2 outputs"


@refusal
def GroupNormalization_scale_per_group():
    g = Graph(18, [2, 4, 6]).weight("gn.weight", [2]).weight("gn.bias", [2])
    g.node("GroupNormalization", ["x", "gn.weight", "gn.bias"], ["y"], num_groups=2)
    return g.output("y"), "scale", "a scale and bias per group"


@refusal
def AveragePool_dilations():
    g = Graph(19, [1, 1, 6, 6])
    g.node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2])
    return g.output("y"), "dilations", "dilations [2, 2] are not supported"


@refusal
def Opset21():
    """Beyond the opsets the importer reads: refused for the file, before any node."""
    g = Graph(21, [2]).node("Relu", ["x"], ["y"]).output("y")
    return g, "", "opset 21 is not supported (opsets 11 to 20 are)"


def write(out):
    names = []
    for name, make in CASES.items():
        newer, older, expect = make()
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        newer_file = "%s_opset%d.onnx" % (name, newer.opset)
        older_file = "%s_opset13.onnx" % name
        newer.save(os.path.join(d, newer_file))
        older.save(os.path.join(d, older_file))
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump({"input": newer.x_shape, "newer": newer_file, "older": older_file,
                       "ops": expect.get("ops", -1), "warning": expect.get("warning", ""),
                       "saved": expect.get("saved", -1),
                       "saved_difference": expect.get("saved_difference", 0)}, f)
        names.append(name)
    for name, make in REFUSALS.items():
        g, attribute, message = make()
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        file = "%s_opset%d.onnx" % (name, g.opset)
        g.save(os.path.join(d, file))
        with open(os.path.join(d, "case.json"), "w") as f:
            node = g.last_node_name() if attribute else ""
            json.dump({"input": g.x_shape, "refused": {"file": file, "node": node,
                                                       "attribute": attribute,
                                                       "message": message}}, f)
        names.append(name)
    with open(os.path.join(out, "index.txt"), "w") as f:
        f.write("\n".join(names) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    write(sys.argv[1])
