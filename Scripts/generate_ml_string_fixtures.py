#!/usr/bin/env python3
"""Fixtures of ai.onnx.ml models that read or write strings, into
Tests/LayerKitTests/Fixtures/ml-strings: one folder per case, holding

    <case>/model.onnx                the model (skl2onnx's export, or one node written here)
    <case>/x.npy                     the input: numpy fixed-width unicode ('<U'n)
    <case>/sklearn_<output>.npy      scikit-learn's own result for output <output>
                                     (labels int64, scores float64), where it has one
    <case>/onnxruntime_<output>.npy  onnxruntime's result (strings as '<U'n)

Cases: a scikit-learn pipeline of OneHotEncoder on two string columns and a
LogisticRegression (skl2onnx: Gather, OneHotEncoder with cats_strings,
LinearClassifier), scikit-learn's LabelEncoder (a LabelEncoder node, strings
to int64), and single nodes scikit-learn never exports: LabelEncoder int64
to strings with a default, CategoryMapper both ways, LabelEncoder
(ai.onnx.ml 4) through keys_tensor/values_tensor/default_tensor.

The script checks that onnxruntime agrees with scikit-learn (labels exactly,
scores within 1e-5 of max(1, |ref|)) before writing. Run with a Python that
has scikit-learn, skl2onnx, onnxruntime and onnx (a venv: pip install
scikit-learn skl2onnx onnxruntime onnx numpy).
"""
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper
from skl2onnx import to_onnx
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import LabelEncoder, OneHotEncoder

from generate_classic_ml_fixtures import checked_reference

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'Tests', 'LayerKitTests', 'Fixtures',
                    'ml-strings')


def onnxruntime_outputs(model, x):
    session = ort.InferenceSession(model.SerializeToString(), providers=['CPUExecutionProvider'])
    return session.run(None, {model.graph.input[0].name: x})


def save(name, model, x, expected=None):
    """Writes one case; `expected` is scikit-learn's result per output (or None)."""
    onnx.checker.check_model(model)
    outputs = [o.name for o in model.graph.output]
    results = onnxruntime_outputs(model, x)
    folder = os.path.join(ROOT, name)
    os.makedirs(folder)
    onnx.save(model, os.path.join(folder, 'model.onnx'))
    np.save(os.path.join(folder, 'x.npy'), x)
    for i, (output, result) in enumerate(zip(outputs, results)):
        result = np.asarray(result)
        np.save(os.path.join(folder, f'onnxruntime_{output}.npy'), result.astype(str) if result.dtype == object else result)
        if expected is None:
            continue
        np.save(os.path.join(folder, f'sklearn_{output}.npy'), checked_reference(name, output, expected[i], result))


def node_model(node, input_type, input_shape, outputs, ml_opset):
    graph = helper.make_graph([node], node.op_type, [helper.make_tensor_value_info('X', input_type, input_shape)],
                              outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17),
                                                    helper.make_opsetid('ai.onnx.ml', ml_opset)])
    model.ir_version = 9
    return model


def main():
    shutil.rmtree(ROOT, ignore_errors=True)
    rng = np.random.default_rng(5)
    colors = np.array(['red', 'green', 'blue', 'grün'])
    sizes = np.array(['S', 'M', 'L'])
    x = np.column_stack([rng.choice(colors, 80), rng.choice(sizes, 80)])
    y = np.array([3, 7, 11])[((x[:, 0] == 'red') | (x[:, 1] == 'L')).astype(int) + (x[:, 0] == 'blue')]
    pipeline = make_pipeline(OneHotEncoder(handle_unknown='ignore'), LogisticRegression()).fit(x, y)
    # Two rows of categories the encoder never saw: all-zero rows, as handle_unknown='ignore'.
    test = np.concatenate([np.column_stack([rng.choice(colors, 10), rng.choice(sizes, 10)]),
                           [['purple', 'M'], ['red', 'XL']]])
    model = to_onnx(pipeline, test[:1], options={id(pipeline.steps[-1][1]): {'zipmap': False}},
                    target_opset={'': 17, 'ai.onnx.ml': 3})
    save('one_hot_logistic', model, test, [pipeline.predict(test), pipeline.predict_proba(test)])

    words = np.array(['pear', 'apple', 'fig', 'kiwi', 'äpfel'])
    encoder = LabelEncoder().fit(words)
    sample = rng.choice(words, 9)
    save('label_encoder', to_onnx(encoder, sample, target_opset={'': 17, 'ai.onnx.ml': 2}), sample,
         [encoder.transform(sample)])

    ints = np.array([[4, -1, 9], [0, 4, 2]], dtype=np.int64)
    node = helper.make_node('LabelEncoder', ['X'], ['Y'], domain='ai.onnx.ml', keys_int64s=[0, 4, 9],
                            values_strings=['zero', 'four', 'nine'], default_string='other')
    save('label_encoder_to_strings', node_model(node, onnx.TensorProto.INT64, [2, 3],
                                                [helper.make_tensor_value_info('Y', onnx.TensorProto.STRING, [2, 3])], 2),
         ints)

    node = helper.make_node('CategoryMapper', ['X'], ['Y'], domain='ai.onnx.ml', cats_strings=['cat', 'dog', 'emu'],
                            cats_int64s=[10, 20, 30], default_int64=-7)
    save('category_mapper_to_ints', node_model(node, onnx.TensorProto.STRING, [5],
                                               [helper.make_tensor_value_info('Y', onnx.TensorProto.INT64, [5])], 1),
         np.array(['dog', 'cow', 'emu', 'cat', '']))
    node = helper.make_node('CategoryMapper', ['X'], ['Y'], domain='ai.onnx.ml', cats_strings=['cat', 'dog', 'emu'],
                            cats_int64s=[10, 20, 30], default_string='none')
    save('category_mapper_to_strings', node_model(node, onnx.TensorProto.INT64, [4],
                                                  [helper.make_tensor_value_info('Y', onnx.TensorProto.STRING, [4])], 1),
         np.array([30, 10, 5, 20], dtype=np.int64))

    node = helper.make_node('LabelEncoder', ['X'], ['Y'], domain='ai.onnx.ml',
                            keys_tensor=numpy_helper.from_array(np.array(['a', 'b', 'c'], dtype=object), 'keys'),
                            values_tensor=numpy_helper.from_array(np.array([0.5, -2.25, 8.0]), 'values'),
                            default_tensor=numpy_helper.from_array(np.array([42.0]), 'default'))
    save('label_encoder_tensors', node_model(node, onnx.TensorProto.STRING, [2, 2],
                                             [helper.make_tensor_value_info('Y', onnx.TensorProto.DOUBLE, [2, 2])], 4),
         np.array([['c', 'a'], ['z', 'b']]))


if __name__ == '__main__':
    main()
