"""Fixtures of scikit-learn classifiers exported by skl2onnx with its default
options, which end in ZipMap: the probabilities as a sequence of
{class label: probability} maps (Tests/LayerKitTests/Fixtures/zipmap):

    <case>/model.onnx                 skl2onnx's default export (zipmap=True)
    <case>/x.npy                      the input, iris's features (float32)
    <case>/sklearn_label.npy          scikit-learn's predict (int64, or '<U' strings)
    <case>/sklearn_probabilities.npy  scikit-learn's predict_proba (float64), one column per class
    <case>/classes.json               the classes in scikit-learn's order (classes_), as JSON strings

Cases: a LogisticRegression on iris's integer targets (ZipMap's
classlabels_int64s) and a RandomForestClassifier on its species names
(classlabels_strings). The script checks that onnxruntime agrees with
scikit-learn (labels exactly, probabilities within 1e-5) before writing.
Run with /tmp/classic-venv (scikit-learn, skl2onnx, onnxruntime, onnx):
    /tmp/classic-venv/bin/python -P Scripts/generate_zipmap_fixtures.py
"""
import json
import os
import shutil

import numpy as np
import onnxruntime as ort
from skl2onnx import to_onnx
from sklearn.datasets import load_iris
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'Tests', 'LayerKitTests', 'Fixtures', 'zipmap')


def write(name, model, x, y):
    model.fit(x, y)
    onx = to_onnx(model, x[:1], target_opset={'': 17, 'ai.onnx.ml': 3})  # default options: ZipMap on
    assert onx.graph.node[-1].op_type == 'ZipMap', [n.op_type for n in onx.graph.node]
    label, probabilities = model.predict(x), model.predict_proba(x).astype(np.float64)
    session = ort.InferenceSession(onx.SerializeToString(), providers=['CPUExecutionProvider'])
    ort_label, ort_maps = session.run(None, {onx.graph.input[0].name: x})
    assert list(ort_label) == list(label), name
    ort_probabilities = np.array([[m[c] for c in model.classes_] for m in ort_maps])
    assert np.max(np.abs(ort_probabilities - probabilities)) <= 1e-5, name
    folder = os.path.join(ROOT, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with open(os.path.join(folder, 'model.onnx'), 'wb') as f:
        f.write(onx.SerializeToString())
    np.save(os.path.join(folder, 'x.npy'), x)
    np.save(os.path.join(folder, 'sklearn_label.npy'), label.astype(np.int64) if label.dtype.kind in 'iu' else label.astype(str))
    np.save(os.path.join(folder, 'sklearn_probabilities.npy'), probabilities)
    with open(os.path.join(folder, 'classes.json'), 'w') as f:
        json.dump([str(c) for c in model.classes_], f)
    print(f'{name}: {len(x)} rows, classes {list(model.classes_)}')


def main():
    iris = load_iris()
    rng = np.random.default_rng(7)
    rows = rng.choice(len(iris.data), size=30, replace=False)  # every species, seeded
    x = iris.data[rows].astype(np.float32)
    write('logistic_regression_iris', LogisticRegression(max_iter=500), x, iris.target[rows].astype(np.int64))
    names = np.array(iris.target_names)[iris.target[rows]]
    write('random_forest_iris', RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0), x, names)


if __name__ == '__main__':
    main()
