"""PROVISIONAL stand-in for the lead's Scripts/onnx_cases/common.py, with the save_case signature of the helper brief,
so norm.py runs from this branch; when the lead's lands, take theirs (norm.py fills in output shapes itself)."""
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'Tests', 'LayerKitTests', 'Fixtures',
                    'onnx-cases')


def save_case(family, name, nodes, inputs, outputs, initializers=[], opset=17, input_data={}):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)], producer_name='layerkit-cases')
    model.ir_version = 8
    onnx.checker.check_model(model)
    folder = os.path.join(ROOT, family, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, 'test_data_set_0'))
    onnx.save(model, os.path.join(folder, 'model.onnx'))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=['CPUExecutionProvider'])
    feeds = {i.name: input_data[i.name] for i in inputs}
    results = session.run([o.name for o in outputs], feeds)
    for k, i in enumerate(inputs):
        with open(os.path.join(folder, 'test_data_set_0', f'input_{k}.pb'), 'wb') as f:
            f.write(numpy_helper.from_array(input_data[i.name], i.name).SerializeToString())
    for k, (o, r) in enumerate(zip(outputs, results)):
        with open(os.path.join(folder, 'test_data_set_0', f'output_{k}.pb'), 'wb') as f:
            f.write(numpy_helper.from_array(r, o.name).SerializeToString())
