#!/usr/bin/env python3
"""Control-flow fixtures (ONNX If, Loop, Scan) with onnxruntime's outputs as
references, for ControlFlowTests (Tests/LayerKitTests).

What it writes (Tests/LayerKitTests/Fixtures/control-flow/, stale cases removed
first), one folder per case:
    model.onnx            the model (onnx.helper, opset 17)
    <input name>.npy      each graph input, seeded
    <output name>.npy     onnxruntime 1.32's output on the CPU
    case.json             {"inputs": [...], "outputs": [...]}: the names, in the model's order
and hostile models without references, hostile-<name>/model.onnx, which
LayerKit must refuse with a clear error.

The cases: bodies reading outer values (a graph input, an initializer, a value
computed earlier in the outer graph), an If nested in a Loop's body, a Loop
whose carried value grows every iteration and whose condition ends it before
a huge trip count, a Scan with input and output axes and directions, and an If
and a Loop whose bodies declare no output types feeding a CastLike.

How to run (from the repository root), with onnx 1.23.2, onnxruntime 1.32.0, numpy 2.4.6:
    python3 Scripts/generate_control_flow_fixtures.py
"""
import json
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T, helper as h, numpy_helper

OPSET = 17
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "LayerKitTests", "Fixtures",
                   "control-flow")
rng = np.random.default_rng(7)


def model(nodes, inputs, outputs, initializers=()):
    graph = h.make_graph(nodes, "main", inputs, outputs, initializer=list(initializers))
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", OPSET)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def save(name, m, feeds=None):
    folder = os.path.join(OUT, name)
    os.makedirs(folder)
    onnx.save(m, os.path.join(folder, "model.onnx"))
    if feeds is None:
        return
    session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    for key, value in feeds.items():
        np.save(os.path.join(folder, key + ".npy"), value)
    for key, value in zip(names, session.run(None, feeds)):
        np.save(os.path.join(folder, key + ".npy"), value)
    with open(os.path.join(folder, "case.json"), "w") as f:
        json.dump({"inputs": list(feeds), "outputs": names}, f)


def vi(name, elem, shape):
    return h.make_tensor_value_info(name, elem, shape)


def if_outer_scope():
    """If whose branches read a graph input, an initializer and a value the outer graph computed."""
    w = numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "w")
    then_branch = h.make_graph([h.make_node("Add", ["a", "w"], ["t"])], "then", [], [vi("t", T.FLOAT, None)])
    else_branch = h.make_graph([h.make_node("Mul", ["x", "w"], ["e"])], "else", [], [vi("e", T.FLOAT, None)])
    nodes = [h.make_node("Relu", ["x"], ["a"]),
             h.make_node("If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch)]
    m = model(nodes, [vi("x", T.FLOAT, [2, 3]), vi("c", T.BOOL, [])], [vi("y", T.FLOAT, [2, 3])], [w])
    x = rng.standard_normal((2, 3)).astype(np.float32)
    save("if_then", m, {"x": x, "c": np.array(True)})
    save("if_else", m, {"x": x, "c": np.array(False)})


def loop_nested_if():
    """Loop of M iterations: a carried sum, a carried value growing by one element an iteration,
    a scan output, and an If on the iteration's parity reading the main graph's x."""
    even = h.make_graph([h.make_node("Add", ["s_in", "x"], ["s_even"])], "even", [], [vi("s_even", T.FLOAT, None)])
    odd = h.make_graph([h.make_node("Sub", ["s_in", "x"], ["s_odd"])], "odd", [], [vi("s_odd", T.FLOAT, None)])
    two = numpy_helper.from_array(np.array(2, np.int64), "two")
    zero = numpy_helper.from_array(np.array(0, np.int64), "zero")
    body = h.make_graph([
        h.make_node("Mod", ["i", "two"], ["r"]),
        h.make_node("Equal", ["r", "zero"], ["is_even"]),
        h.make_node("If", ["is_even"], ["s_out"], then_branch=even, else_branch=odd),
        h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
        h.make_node("Unsqueeze", ["fi", "axes0"], ["fi1"]),
        h.make_node("Concat", ["g_in", "fi1"], ["g_out"], axis=0),
        h.make_node("Mul", ["s_out", "fi"], ["scan"]),
        h.make_node("Identity", ["cond_in"], ["cond_out"]),
    ], "body", [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("s_in", T.FLOAT, None), vi("g_in", T.FLOAT, None)],
        [vi("cond_out", T.BOOL, []), vi("s_out", T.FLOAT, None), vi("g_out", T.FLOAT, None), vi("scan", T.FLOAT, None)],
        [two, zero, numpy_helper.from_array(np.array([0], np.int64), "axes0")])
    nodes = [h.make_node("Loop", ["M", "", "s0", "g0"], ["s", "g", "scans"], body=body)]
    m = model(nodes, [vi("M", T.INT64, []), vi("x", T.FLOAT, [3]), vi("s0", T.FLOAT, [3]), vi("g0", T.FLOAT, [1])],
              [vi("s", T.FLOAT, [3]), vi("g", T.FLOAT, ["n"]), vi("scans", T.FLOAT, ["m", 3])])
    save("loop_nested_if", m, {"M": np.array(5, np.int64), "x": rng.standard_normal(3).astype(np.float32),
                               "s0": rng.standard_normal(3).astype(np.float32), "g0": np.array([-1], np.float32)})


def loop_condition_ends():
    """Loop with a trip count of 2^62 whose body's condition ends it after 4 iterations."""
    body = h.make_graph([
        h.make_node("Add", ["v_in", "x"], ["v_out"]),
        h.make_node("Less", ["i", "three"], ["cond_out"]),
    ], "body", [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("v_in", T.FLOAT, None)],
        [vi("cond_out", T.BOOL, []), vi("v_out", T.FLOAT, None)],
        [numpy_helper.from_array(np.array(3, np.int64), "three")])
    huge = numpy_helper.from_array(np.array(1 << 62, np.int64), "M")
    yes = numpy_helper.from_array(np.array(True), "go")
    nodes = [h.make_node("Loop", ["M", "go", "x"], ["v"], body=body)]
    m = model(nodes, [vi("x", T.FLOAT, [2])], [vi("v", T.FLOAT, [2])], [huge, yes])
    save("loop_condition_ends", m, {"x": rng.standard_normal(2).astype(np.float32)})


def scan_axes_directions():
    """Scan over two inputs (one along axis 1, reversed), a state, and two scan outputs
    (one stacked along axis 1, one reversed)."""
    body = h.make_graph([
        h.make_node("Add", ["state_in", "a"], ["t"]),
        h.make_node("Mul", ["t", "b"], ["state_out"]),
        h.make_node("Identity", ["state_out"], ["out_a"]),
        h.make_node("Sub", ["a", "b"], ["out_b"]),
    ], "body", [vi("state_in", T.FLOAT, [2]), vi("a", T.FLOAT, [2]), vi("b", T.FLOAT, [2])],
        [vi("state_out", T.FLOAT, [2]), vi("out_a", T.FLOAT, [2]), vi("out_b", T.FLOAT, [2])])
    nodes = [h.make_node("Scan", ["s0", "A", "B"], ["s", "YA", "YB"], body=body, num_scan_inputs=2,
                         scan_input_axes=[0, 1], scan_input_directions=[0, 1],
                         scan_output_axes=[1, 0], scan_output_directions=[0, 1])]
    m = model(nodes, [vi("s0", T.FLOAT, [2]), vi("A", T.FLOAT, [4, 2]), vi("B", T.FLOAT, [2, 4])],
              [vi("s", T.FLOAT, [2]), vi("YA", T.FLOAT, [2, 4]), vi("YB", T.FLOAT, [4, 2])])
    save("scan_axes_directions", m, {"s0": rng.standard_normal(2).astype(np.float32),
                                     "A": rng.standard_normal((4, 2)).astype(np.float32),
                                     "B": rng.standard_normal((2, 4)).astype(np.float32)})


def hostile():
    """Models LayerKit must refuse with a clear error: a branch reading a name no graph makes,
    a Loop whose condition never ends before a trip count of 2^62, and Ifs nested past the
    reader's depth limit."""
    then_branch = h.make_graph([h.make_node("Identity", ["nowhere"], ["t"])], "then", [], [vi("t", T.FLOAT, None)])
    else_branch = h.make_graph([h.make_node("Identity", ["x"], ["e"])], "else", [], [vi("e", T.FLOAT, None)])
    graph = h.make_graph([h.make_node("If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch)], "main",
                         [vi("x", T.FLOAT, [1]), vi("c", T.BOOL, [])], [vi("y", T.FLOAT, [1])])
    save("hostile-missing_outer_name", h.make_model(graph, opset_imports=[h.make_opsetid("", OPSET)]))

    body = h.make_graph([h.make_node("Identity", ["cond_in"], ["cond_out"]), h.make_node("Identity", ["v_in"], ["v_out"])],
                        "body", [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("v_in", T.FLOAT, None)],
                        [vi("cond_out", T.BOOL, []), vi("v_out", T.FLOAT, None)])
    graph = h.make_graph([h.make_node("Loop", ["M", "go", "x"], ["v"], body=body)], "main", [vi("x", T.FLOAT, [1])],
                         [vi("v", T.FLOAT, [1])], [numpy_helper.from_array(np.array(1 << 62, np.int64), "M"),
                                                   numpy_helper.from_array(np.array(True), "go")])
    save("hostile-endless_loop", h.make_model(graph, opset_imports=[h.make_opsetid("", OPSET)]))

    leaf = h.make_graph([h.make_node("Identity", ["x"], ["y0"])], "leaf", [], [vi("y0", T.FLOAT, None)])
    inner = leaf
    for depth in range(1, 30):
        inner = h.make_graph([h.make_node("If", ["c"], [f"y{depth}"], then_branch=inner, else_branch=leaf)],
                             f"level{depth}", [], [vi(f"y{depth}", T.FLOAT, None)])
    graph = h.make_graph(inner.node, "main", [vi("x", T.FLOAT, [1]), vi("c", T.BOOL, [])], [vi("y29", T.FLOAT, [1])])
    save("hostile-deep_nesting", h.make_model(graph, opset_imports=[h.make_opsetid("", OPSET)]))


def untyped_bodies_into_castlike():
    """An If (its condition a constant) and a Loop whose bodies declare no output types, each
    output the target of a CastLike: the output's type must come from the body's nodes (a
    CastLike to the If's float output once took the condition's bool, and 2.5 became 1)."""
    yes = numpy_helper.from_array(np.array(True), "yes")
    half = numpy_helper.from_array(np.array(2.5, np.float64), "k")
    then_branch = h.make_graph([h.make_node("Neg", ["x"], ["t"])], "then", [], [h.make_empty_tensor_value_info("t")])
    else_branch = h.make_graph([h.make_node("Identity", ["x"], ["e"])], "else", [], [h.make_empty_tensor_value_info("e")])
    nodes = [h.make_node("If", ["yes"], ["y"], then_branch=then_branch, else_branch=else_branch),
             h.make_node("CastLike", ["k", "y"], ["k_like"]),
             h.make_node("Mul", ["y", "k_like"], ["z"])]
    m = model(nodes, [vi("x", T.FLOAT, [2, 3])], [vi("z", T.FLOAT, [2, 3])], [yes, half])
    save("if_untyped_castlike", m, {"x": rng.standard_normal((2, 3)).astype(np.float32)})

    body = h.make_graph([h.make_node("Add", ["v_in", "x"], ["v_out"]), h.make_node("Identity", ["cond_in"], ["cond_out"])],
                        "body", [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), h.make_empty_tensor_value_info("v_in")],
                        [h.make_empty_tensor_value_info("cond_out"), h.make_empty_tensor_value_info("v_out")])
    nodes = [h.make_node("Loop", ["M", "", "x"], ["v"], body=body),
             h.make_node("CastLike", ["k", "v"], ["k_like"]),
             h.make_node("Mul", ["v", "k_like"], ["z"])]
    m = model(nodes, [vi("x", T.FLOAT, [3])], [vi("z", T.FLOAT, [3])],
              [numpy_helper.from_array(np.array(3, np.int64), "M"), half])
    save("loop_untyped_castlike", m, {"x": rng.standard_normal(3).astype(np.float32)})


if __name__ == "__main__":
    shutil.rmtree(OUT, ignore_errors=True)
    if_outer_scope()
    loop_nested_if()
    loop_condition_ends()
    scan_axes_directions()
    hostile()
    untyped_bodies_into_castlike()
    with open(os.path.join(OUT, "README.md"), "w") as f:
        f.write(f"Written by Scripts/generate_control_flow_fixtures.py with onnx {onnx.__version__}, "
                f"onnxruntime {ort.__version__}, numpy {np.__version__}.\n")
