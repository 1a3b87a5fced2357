#!/usr/bin/env python3
"""Core ML NeuralNetworkClassifiers and their predicted labels, for the
classLabel output LayerKit computes. Writes Tests/LayerKitTests/Fixtures/coreml-labels/:

    StringLabels.mlmodel   a neuralNetworkClassifier on a [4] multi-array: innerProduct to
                           4 classes, softmax; string labels (ant, bee, cod, doe)
    IntLabels.mlmodel      the same with int64 labels (7, -2, 40, 1000000007)
    x.npy                  the input rows, float32 [8, 4]
    <name>-classLabel.npy  the predicted label per row: the label at numpy's argmax of the
                           float64 probabilities computed here from the builder's weights
                           ('<U' strings, or int64); never LayerKit's
    <name>-probs.npy       those probabilities, float64 [8, 4]

coremltools builds the files but cannot run them on Linux. Weights come from a seeded
generator; the rows are chosen so that each row's largest probability leads the next by at
least 0.05, so float32 rounding cannot change a label. Run with a Python that has
coremltools 9 and numpy (a venv: pip install coremltools numpy).
"""
import os
import shutil

import numpy as np
from coremltools.models import MLModel, datatypes
from coremltools.models.neural_network import NeuralNetworkBuilder

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'Tests', 'LayerKitTests', 'Fixtures',
                    'coreml-labels')
LABELS = {'StringLabels': ['ant', 'bee', 'cod', 'doe'], 'IntLabels': [7, -2, 40, 1000000007]}


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main():
    shutil.rmtree(ROOT, ignore_errors=True)
    os.makedirs(ROOT)
    rng = np.random.default_rng(17)
    w = rng.standard_normal((4, 4)).astype(np.float32)
    b = (0.1 * rng.standard_normal(4)).astype(np.float32)
    rows = []
    while len(rows) < 8:
        x = rng.uniform(-2, 2, 4).astype(np.float32)
        p = np.sort(softmax((w.astype(np.float64) @ x + b)[None])[0])
        if p[-1] - p[-2] >= 0.05:
            rows.append(x)
    x = np.stack(rows)
    probs = softmax(x.astype(np.float64) @ w.T.astype(np.float64) + b)
    np.save(os.path.join(ROOT, 'x.npy'), x)
    for name, labels in LABELS.items():
        builder = NeuralNetworkBuilder([('x', datatypes.Array(4))], [('probs', datatypes.Array(4))], mode='classifier')
        builder.add_inner_product('dense', w, b, 4, 4, True, 'x', 'logits')
        builder.add_softmax('softmax', 'logits', 'probs')
        builder.set_class_labels(labels, predicted_feature_name='classLabel', prediction_blob='probs')
        MLModel(builder.spec).save(os.path.join(ROOT, f'{name}.mlmodel'))
        predicted = np.array(labels)[probs.argmax(axis=1)]
        np.save(os.path.join(ROOT, f'{name}-classLabel.npy'), predicted.astype(np.int64 if name == 'IntLabels' else str))
        np.save(os.path.join(ROOT, f'{name}-probs.npy'), probs)


if __name__ == '__main__':
    main()
