"""Fixtures of the `ml` family: scikit-learn models exported by skl2onnx
(the ai.onnx.ml domain: LinearRegressor, LinearClassifier, Scaler,
Normalizer), with onnxruntime's outputs, in the onnx backend-test layout
that Scripts/onnx_cases/common.py writes (its ROOT and reset are used):

    Tests/LayerKitTests/Fixtures/onnx-cases/ml/<case>/model.onnx
    .../<case>/test_data_set_0/input_0.pb, output_<i>.pb

The models are fitted on seeded data; classifiers are exported with
`options={id(model): {'zipmap': False}}` (ZipMap is refused by LayerKit), so
their outputs are `label` (int64) and `probabilities` (float). A few cases
are written node by node (post_transform NONE, SOFTMAX_ZERO, PROBIT) because
scikit-learn exports none of them. Run with /work/venv/bin/python (onnx,
onnxruntime, scikit-learn, skl2onnx).
"""
import os
import warnings

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper
from skl2onnx import to_onnx
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer, StandardScaler

from common import ROOT, reset

warnings.filterwarnings('ignore')
FAMILY = 'ml'


def save_model(name, model, x):
    """Runs onnxruntime (CPU, one thread, optimizations off) on `x` and
    writes the case, as common.save_case does for a model made of nodes
    (skl2onnx makes the whole model here)."""
    onnx.checker.check_model(model)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=['CPUExecutionProvider'])
    feed = {model.graph.input[0].name: x}
    results = session.run(None, feed)
    folder = os.path.join(ROOT, FAMILY, name)
    data = os.path.join(folder, 'test_data_set_0')
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(folder, 'model.onnx'))
    with open(os.path.join(data, 'input_0.pb'), 'wb') as f:
        f.write(numpy_helper.from_array(x, model.graph.input[0].name).SerializeToString())
    for i, (value, result) in enumerate(zip(model.graph.output, results)):
        with open(os.path.join(data, f'output_{i}.pb'), 'wb') as f:
            f.write(numpy_helper.from_array(np.asarray(result), value.name).SerializeToString())
    return results


def exported(model, x):
    return to_onnx(model, x[:1], target_opset={'': 17, 'ai.onnx.ml': 3},
                   options={id(model): {'zipmap': False}} if hasattr(model, 'predict_proba') else None)


def node_model(name, node, features, outputs):
    """A one-node ai.onnx.ml model on a [N, features] input."""
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info('X', onnx.TensorProto.FLOAT, ['N', features])],
                              outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17), helper.make_opsetid('ai.onnx.ml', 3)],
                              producer_name='layerkit-onnx-cases')
    model.ir_version = 8  # what skl2onnx writes; onnx 1.23's default (14) is past LayerKit's reader
    return model


def main():
    reset(FAMILY)
    rng = np.random.default_rng(7)

    # House prices: [N, 4] features (rooms, area, age, distance), a price.
    houses = np.column_stack([rng.integers(1, 8, 64), rng.uniform(30, 250, 64),
                              rng.uniform(0, 80, 64), rng.uniform(0.5, 30, 64)]).astype(np.float32)
    price = houses @ np.array([12.0, 2.1, -0.8, -3.5]) + 40 + rng.normal(0, 5, 64)
    regression = LinearRegression().fit(houses, price)
    save_model('house_price_regressor', exported(regression, houses[:7]), houses[:7])

    # The same data standardized first (Scaler -> LinearRegressor), two targets.
    targets = np.column_stack([price, price * 0.1 + houses[:, 2]])
    pipeline = make_pipeline(StandardScaler(), LinearRegression()).fit(houses, targets)
    save_model('scaler_regressor_pipeline', exported(pipeline, houses[:5]), houses[5:10])

    # Classifiers on 5 features with negative values.
    x = rng.normal(0, 2, (90, 5)).astype(np.float32)
    binary = (x[:, 0] - 0.5 * x[:, 3] > 0.2).astype(np.int64)
    model = LogisticRegression().fit(x, binary)
    save_model('logistic_binary', exported(model, x), x[:9])
    three = np.digitize(x[:, 1] + 0.3 * x[:, 4], [-1.0, 1.0]).astype(np.int64) * 3 + 2  # labels 2, 5, 8
    model = LogisticRegression().fit(x, three)
    save_model('logistic_multiclass', exported(model, x), x[10:17])
    model = LogisticRegression(multi_class='ovr').fit(x, three) if 'multi_class' in LogisticRegression().get_params() \
        else None
    if model is not None:
        save_model('logistic_multiclass_ovr', exported(model, x), x[20:26])

    # Normalizers: every norm, 6 features, zero rows, negatives.
    rows = rng.normal(0, 3, (6, 6)).astype(np.float32)
    rows[2] = 0
    for norm in ['l1', 'l2', 'max']:
        save_model(f'normalizer_{norm}', exported(Normalizer(norm=norm).fit(rows), rows), rows)

    # Node-level cases: the post_transforms scikit-learn does not export.
    features, classes = 5, 3
    coefficients = rng.normal(0, 1, classes * features).astype(np.float32)
    intercepts = rng.normal(0, 0.5, classes).astype(np.float32)
    for transform in ['NONE', 'LOGISTIC', 'SOFTMAX', 'SOFTMAX_ZERO', 'PROBIT']:
        scale = 0.1 if transform == 'PROBIT' else 1.0  # probit of a score needs 0 < score < 1 to be finite
        node = helper.make_node('LinearClassifier', ['X'], ['label', 'scores'], domain='ai.onnx.ml',
                                coefficients=(coefficients * scale).tolist(),
                                intercepts=(intercepts * scale + (0.5 if transform == 'PROBIT' else 0)).tolist(),
                                classlabels_ints=[-1, 4, 9], post_transform=transform, multi_class=0)
        outputs = [helper.make_tensor_value_info('label', onnx.TensorProto.INT64, ['N']),
                   helper.make_tensor_value_info('scores', onnx.TensorProto.FLOAT, ['N', classes])]
        sample = (rng.normal(0, 1, (4, features)) * (0.3 if transform == 'PROBIT' else 1)).astype(np.float32)
        if transform == 'SOFTMAX_ZERO':
            sample[1] = 0  # zero scores where the intercept is zero too
        save_model(f'classifier_{transform.lower()}', node_model('classifier', node, features, outputs), sample)
    # One score column with two labels: label from the sign, scores [1 - s, s].
    node = helper.make_node('LinearClassifier', ['X'], ['label', 'scores'], domain='ai.onnx.ml',
                            coefficients=coefficients[:features].tolist(), intercepts=[0.25],
                            classlabels_ints=[3, 7], post_transform='NONE')
    outputs = [helper.make_tensor_value_info('label', onnx.TensorProto.INT64, ['N']),
               helper.make_tensor_value_info('scores', onnx.TensorProto.FLOAT, ['N', 2])]
    save_model('classifier_one_score', node_model('classifier', node, features, outputs),
               rng.normal(0, 1, (5, features)).astype(np.float32))
    # LinearRegressor with 3 targets and no intercepts; Scaler with one offset and scale for every feature.
    node = helper.make_node('LinearRegressor', ['X'], ['Y'], domain='ai.onnx.ml', targets=3,
                            coefficients=rng.normal(0, 1, 3 * features).astype(np.float32).tolist())
    save_model('regressor_three_targets', node_model('regressor', node, features,
                                                     [helper.make_tensor_value_info('Y', onnx.TensorProto.FLOAT, ['N', 3])]),
               rng.normal(0, 1, (3, features)).astype(np.float32))
    node = helper.make_node('Scaler', ['X'], ['Y'], domain='ai.onnx.ml', offset=[1.5], scale=[-2.0])
    save_model('scaler_broadcast', node_model('scaler', node, features,
                                              [helper.make_tensor_value_info('Y', onnx.TensorProto.FLOAT, ['N', features])]),
               rng.normal(0, 1, (2, features)).astype(np.float32))


if __name__ == '__main__':
    main()
