"""Shared by the fixture scripts in this folder: one case is one small ONNX
model with its inputs and onnxruntime's outputs, written in the onnx
package's backend-test layout, so the Swift tests read our cases and the
onnx package's own backend tests with one reader:

    Tests/LayerKitTests/Fixtures/onnx-cases/<family>/<case>/model.onnx
    .../<case>/test_data_set_0/input_<i>.pb     (serialized TensorProto)
    .../<case>/test_data_set_0/output_<i>.pb

onnxruntime runs on the CPU, one thread, graph optimizations off, so each
op runs as its own kernel. Run a family's script with a Python that has
onnx 1.23.2, onnxruntime 1.32.0 and numpy (see Docs/TESTING.md); the inputs
are seeded, so reruns write the same bytes.
"""
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                    'Tests', 'LayerKitTests', 'Fixtures', 'onnx-cases')


def reset(family):
    """Removes the family's old cases, so a renamed case leaves no stale folder."""
    shutil.rmtree(os.path.join(ROOT, family), ignore_errors=True)


def rng(seed=0):
    return np.random.default_rng(seed)


def run_onnxruntime(model, feeds):
    """The checked model's outputs on `feeds` from onnxruntime: CPU, one thread, no graph optimizations."""
    onnx.checker.check_model(model)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=['CPUExecutionProvider'])
    return session.run(None, feeds)


def save_case(family, name, nodes, inputs, outputs, initializers=(), opset=17, input_data=None,
              extra_opsets=(), ir_version=None, external_data=None):
    """Builds the model, runs onnxruntime on `input_data` (name -> array, in
    the order of `inputs`) and writes the case. With `external_data` (a
    file name), every initializer is stored in that file beside the model,
    as torch saves large models. Returns the outputs."""
    opsets = [helper.make_opsetid('', opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=opsets, producer_name='layerkit-onnx-cases')
    if ir_version is not None:
        model.ir_version = ir_version
    feeds = {i.name: input_data[i.name] for i in inputs}
    results = run_onnxruntime(model, feeds)
    folder = os.path.join(ROOT, family, name)
    data = os.path.join(folder, 'test_data_set_0')
    os.makedirs(data, exist_ok=True)
    if external_data:
        onnx.save_model(model, os.path.join(folder, 'model.onnx'), save_as_external_data=True,
                        all_tensors_to_one_file=True, location=external_data, size_threshold=0)
    else:
        onnx.save(model, os.path.join(folder, 'model.onnx'))
    for i, value in enumerate(inputs):
        tensor = numpy_helper.from_array(np.asarray(feeds[value.name]), value.name)
        with open(os.path.join(data, f'input_{i}.pb'), 'wb') as f:
            f.write(tensor.SerializeToString())
    for i, (value, result) in enumerate(zip(outputs, results)):
        tensor = numpy_helper.from_array(np.asarray(result), value.name)
        with open(os.path.join(data, f'output_{i}.pb'), 'wb') as f:
            f.write(tensor.SerializeToString())
    return results


def tensor_info(name, array_or_shape, elem_type=onnx.TensorProto.FLOAT):
    """A graph input/output description."""
    shape = array_or_shape.shape if hasattr(array_or_shape, 'shape') else array_or_shape
    return helper.make_tensor_value_info(name, elem_type, list(shape))


def typed_info(name, array):
    """A graph input of `array`'s shape and element type."""
    return tensor_info(name, array, helper.np_dtype_to_tensor_dtype(array.dtype))
