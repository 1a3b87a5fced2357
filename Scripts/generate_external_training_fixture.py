"""Writes Tests/LayerKitTests/Fixtures/external-training/: a trainable model whose
frozen weight lives in an external-data file beside it (as torch writes large
models), for the tests that a training run never writes over a file it reads.

    /tmp/venv/bin/python Scripts/generate_external_training_fixture.py

net.onnx: x [N, 4] -> Add(bias [4], inline, 0.5 each) -> Mul(scale [4], in scale.bin:
1, 2, 3, 4 as little-endian float32) -> y [N, 4]. Opset 17, IR version 8.
"""
import os
import numpy as np
import onnx
from onnx import TensorProto, helper

folder = os.path.join(os.path.dirname(__file__), '..', 'Tests', 'LayerKitTests', 'Fixtures', 'external-training')
os.makedirs(folder, exist_ok=True)
np.array([1, 2, 3, 4], dtype='<f4').tofile(os.path.join(folder, 'scale.bin'))
scale = TensorProto(name='scale', data_type=TensorProto.FLOAT, dims=[4], data_location=TensorProto.EXTERNAL)
for key, value in (('location', 'scale.bin'), ('offset', '0'), ('length', '16')):
    entry = scale.external_data.add()
    entry.key, entry.value = key, value
bias = helper.make_tensor('bias', TensorProto.FLOAT, [4], [0.5] * 4)
graph = helper.make_graph(
    [helper.make_node('Add', ['x', 'bias'], ['shifted']), helper.make_node('Mul', ['shifted', 'scale'], ['y'])],
    'external', [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['N', 4])],
    [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['N', 4])], initializer=[bias, scale])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)], ir_version=8)
with open(os.path.join(folder, 'net.onnx'), 'wb') as f:
    f.write(model.SerializeToString())
onnx.checker.check_model(os.path.join(folder, 'net.onnx'))  # by path: the checker finds scale.bin beside it
