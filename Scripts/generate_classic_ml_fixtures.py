"""Fixtures of scikit-learn's classic models beyond the linear ones, exported
by skl2onnx: decision trees, random forests, gradient boosting, SVR and SVC
(every kernel), KMeans, the small preprocessors (Binarizer, SimpleImputer,
OneHotEncoder on integers) and a StandardScaler + tree pipeline.

Each case is a folder of Tests/LayerKitTests/Fixtures/classic-ml:

    <family>-<case>/model.onnx            skl2onnx's export, ZipMap off
    <family>-<case>/x.npy                 the input (float32, or int64)
    <family>-<case>/sklearn_<output>.npy  scikit-learn's own result for the model
                                          output named <output>, in float64 (labels
                                          int64, or '<U' strings for a model fitted
                                          on string targets): predict, predict_proba,
                                          decision_function or transform
    <family>-<case>/onnxruntime_<output>.npy  onnxruntime's result, for reference

A few cases are single nodes written here (`trees-node_*`): the comparison
modes, aggregate functions and transforms scikit-learn never exports, NaN
features with missing_value_tracks_true; they have onnxruntime's results
only, the reference there.

The models are fitted on seeded data, so reruns give the same values (skl2onnx
may name some nodes differently). The
script checks that onnxruntime agrees with scikit-learn (labels exactly,
scores within 1e-5 of max(1, |ref|)) before writing: a case where they
disagree would test nothing. Run with a Python that has scikit-learn,
skl2onnx, onnxruntime and onnx (a venv: pip install scikit-learn skl2onnx
onnxruntime onnx).
"""
import os
import shutil
import warnings

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper
from skl2onnx import to_onnx
from sklearn.base import is_classifier
from sklearn.cluster import KMeans
from sklearn.ensemble import (GradientBoostingClassifier, GradientBoostingRegressor, RandomForestClassifier,
                              RandomForestRegressor)
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Binarizer, OneHotEncoder, StandardScaler
from sklearn.svm import SVC, SVR
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

warnings.filterwarnings('ignore')
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'Tests', 'LayerKitTests', 'Fixtures',
                    'classic-ml')


def export(model, x):
    options = {id(model): {'zipmap': False}} if is_classifier(model) else None
    if hasattr(model, 'steps') and is_classifier(model.steps[-1][1]):
        options = {id(model.steps[-1][1]): {'zipmap': False}}
    return to_onnx(model, x[:1], target_opset={'': 17, 'ai.onnx.ml': 3}, options=options)


def onnxruntime_outputs(model, x):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=['CPUExecutionProvider'])
    return session.run(None, {model.graph.input[0].name: x})


def checked_reference(name, output, reference, result):
    """scikit-learn's `reference` as int64 or float64 in `result`'s shape, asserted equal to
    onnxruntime's `result` (integers) or within 1e-5 of max(1, |reference|)."""
    reference = np.asarray(reference)
    if reference.dtype.kind in 'UO':
        reference = reference.astype(str).reshape(result.shape)
        assert np.array_equal(reference, result.astype(str)), (name, output, reference, result)
        return reference
    reference = reference.astype(np.int64 if reference.dtype.kind in 'iu' else np.float64).reshape(result.shape)
    if reference.dtype == np.int64:
        assert np.array_equal(reference, result), (name, output, reference, result)
    else:
        error = np.abs(result.astype(np.float64) - reference) / np.maximum(1, np.abs(reference))
        assert error.max() <= 1e-5, (name, output, error.max())
    return reference


def save(name, model, x, expected):
    """Writes one case: `expected` is scikit-learn's result per model output,
    in the order of the model's outputs."""
    onnx.checker.check_model(model)
    outputs = [o.name for o in model.graph.output]
    assert len(outputs) == len(expected), (name, outputs)
    results = onnxruntime_outputs(model, x)
    folder = os.path.join(ROOT, name)
    os.makedirs(folder)
    onnx.save(model, os.path.join(folder, 'model.onnx'))
    np.save(os.path.join(folder, 'x.npy'), x)
    for output, reference, result in zip(outputs, expected, results):
        np.save(os.path.join(folder, f'sklearn_{output}.npy'), checked_reference(name, output, reference, result))
        # onnxruntime gives strings as objects; '<U' is what np.load reads without pickle.
        np.save(os.path.join(folder, f'onnxruntime_{output}.npy'), result.astype(str) if result.dtype == object else result)


def node_case(name, node, features, outputs, x, input_type=onnx.TensorProto.FLOAT):
    """A one-node ai.onnx.ml model on `x`, with onnxruntime's outputs."""
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info('X', input_type, ['N', features])], outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17), helper.make_opsetid('ai.onnx.ml', 3)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    folder = os.path.join(ROOT, name)
    os.makedirs(folder)
    onnx.save(model, os.path.join(folder, 'model.onnx'))
    np.save(os.path.join(folder, 'x.npy'), x)
    for output, result in zip(outputs, onnxruntime_outputs(model, x)):
        np.save(os.path.join(folder, f'onnxruntime_{output.name}.npy'), result)


def node_trees(rng):
    """Two trees over 3 features using every comparison, two targets."""
    tree = dict(
        nodes_treeids=[0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1],
        nodes_nodeids=[0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 5, 6],
        nodes_featureids=[0, 1, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0],
        nodes_values=[0.5, -0.25, 0, 0, 0, 1.0, 0.0, 2.0, 0, 0, 0, 0],
        nodes_modes=['BRANCH_LT', 'BRANCH_GTE', 'LEAF', 'LEAF', 'LEAF',
                     'BRANCH_GT', 'BRANCH_EQ', 'BRANCH_NEQ', 'LEAF', 'LEAF', 'LEAF', 'LEAF'],
        nodes_truenodeids=[1, 2, 0, 0, 0, 1, 3, 5, 0, 0, 0, 0],
        nodes_falsenodeids=[4, 3, 0, 0, 0, 2, 4, 6, 0, 0, 0, 0],
        nodes_missing_value_tracks_true=[1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0])
    leaves = [(0, 2), (0, 3), (0, 4), (1, 3), (1, 4), (1, 5), (1, 6)]
    weights = dict(target_treeids=[t for t, _ in leaves for _ in range(2)],
                   target_nodeids=[n for _, n in leaves for _ in range(2)],
                   target_ids=[0, 1] * len(leaves),
                   target_weights=rng.normal(0, 1, 2 * len(leaves)).round(3).tolist())
    x = rng.normal(0, 1, (12, 3)).astype(np.float32)
    x[[1, 5], 0] = np.nan
    x[2, 2], x[3, 0], x[4, 1] = 1.0, 0.0, 2.0  # exactly at thresholds
    x[6, 1] = -0.25
    return tree, weights, x


def node_cases(rng):
    tree, weights, x = node_trees(rng)
    two = [helper.make_tensor_value_info('Y', onnx.TensorProto.FLOAT, ['N', 2])]
    for aggregate, transform in [('SUM', 'NONE'), ('AVERAGE', 'NONE'), ('MIN', 'NONE'), ('MAX', 'NONE'),
                                 ('SUM', 'SOFTMAX'), ('SUM', 'LOGISTIC')]:
        node = helper.make_node('TreeEnsembleRegressor', ['X'], ['Y'], domain='ai.onnx.ml', n_targets=2,
                                aggregate_function=aggregate, post_transform=transform, base_values=[0.5, -1.0],
                                **tree, **weights)
        node_case(f'trees-node_regressor_{aggregate.lower()}_{transform.lower()}', node, 3, two, x)
    # A binary classifier scoring one class with mixed signs (a margin), LOGISTIC, one base value.
    classes = dict(class_treeids=weights['target_treeids'][::2], class_nodeids=weights['target_nodeids'][::2],
                   class_ids=[0] * 7, class_weights=weights['target_weights'][::2])
    node = helper.make_node('TreeEnsembleClassifier', ['X'], ['label', 'scores'], domain='ai.onnx.ml',
                            classlabels_int64s=[4, 7], post_transform='LOGISTIC', base_values=[0.1], **tree, **classes)
    outputs = [helper.make_tensor_value_info('label', onnx.TensorProto.INT64, ['N']),
               helper.make_tensor_value_info('scores', onnx.TensorProto.FLOAT, ['N', 2])]
    node_case('trees-node_classifier_margin_logistic', node, 3, outputs, x)
    # Three classes, SOFTMAX_ZERO, base values.
    classes = dict(class_treeids=weights['target_treeids'], class_nodeids=weights['target_nodeids'],
                   class_ids=[0, 2] * 7, class_weights=weights['target_weights'])
    node = helper.make_node('TreeEnsembleClassifier', ['X'], ['label', 'scores'], domain='ai.onnx.ml',
                            classlabels_int64s=[1, 2, 3], post_transform='SOFTMAX_ZERO', base_values=[0.0, 0.2, -0.2],
                            **tree, **classes)
    outputs = [helper.make_tensor_value_info('label', onnx.TensorProto.INT64, ['N']),
               helper.make_tensor_value_info('scores', onnx.TensorProto.FLOAT, ['N', 3])]
    node_case('trees-node_classifier_three_softmax_zero', node, 3, outputs, x)


def classifier(name, model, x):
    save(name, export(model, x), x, [model.predict(x), model.predict_proba(x)])


def regressor(name, model, x):
    save(name, export(model, x), x, [model.predict(x).reshape(len(x), -1)])


def main():
    shutil.rmtree(ROOT, ignore_errors=True)
    rng = np.random.default_rng(11)
    # 6 features with negatives; 3 classes labelled 2, 5, 9 (not 0..n-1), 2 classes 0/1.
    x = rng.normal(0, 2, (200, 6)).astype(np.float32)
    test = rng.normal(0, 2, (16, 6)).astype(np.float32)
    binary = (x[:, 0] - 0.5 * x[:, 3] + 0.3 * x[:, 1] ** 2 > 0.5).astype(np.int64)
    three = np.array([2, 5, 9])[np.digitize(x[:, 1] + 0.4 * x[:, 4] - 0.2 * x[:, 2] * x[:, 5], [-1.0, 1.2])]
    target = 3 * np.sin(x[:, 0]) + x[:, 2] * x[:, 3] - 2 * x[:, 5] + rng.normal(0, 0.1, 200)
    targets = np.column_stack([target, x[:, 1] - x[:, 4]])

    classifier('trees-decision_tree_binary', DecisionTreeClassifier(max_depth=5, random_state=0).fit(x, binary), test)
    classifier('trees-decision_tree_three', DecisionTreeClassifier(max_depth=6, random_state=0).fit(x, three), test)
    regressor('trees-decision_tree_regressor', DecisionTreeRegressor(max_depth=6, random_state=0).fit(x, target), test)
    regressor('trees-decision_tree_two_targets',
              DecisionTreeRegressor(max_depth=4, random_state=0).fit(x, targets), test)
    classifier('trees-random_forest_binary',
               RandomForestClassifier(n_estimators=12, max_depth=5, random_state=0).fit(x, binary), test)
    classifier('trees-random_forest_three',
               RandomForestClassifier(n_estimators=12, max_depth=5, random_state=0).fit(x, three), test)
    regressor('trees-random_forest_regressor',
              RandomForestRegressor(n_estimators=12, max_depth=5, random_state=0).fit(x, target), test)
    classifier('trees-gradient_boosting_binary',
               GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=0).fit(x, binary), test)
    classifier('trees-gradient_boosting_three',
               GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0).fit(x, three), test)
    regressor('trees-gradient_boosting_regressor',
              GradientBoostingRegressor(n_estimators=25, max_depth=3, random_state=0).fit(x, target), test)

    # SVMs on standardized-looking data (the kernels' scales suit it).
    small = x[:80] / 2
    small_test = test / 2
    for kernel in ['rbf', 'linear', 'poly', 'sigmoid']:
        model = SVR(kernel=kernel, C=2.0, degree=3, coef0=0.5 if kernel != 'rbf' else 0.0).fit(small, target[:80])
        regressor(f'svm-svr_{kernel}', model, small_test)
    for kernel in ['rbf', 'linear', 'poly']:
        model = SVC(kernel=kernel, C=1.5, coef0=0.5 if kernel == 'poly' else 0.0).fit(small, binary[:80])
        d = model.decision_function(small_test)
        # The binary SVC's scores are [d, -d] for sklearn's decision function d: the
        # one pairwise score s = -d (positive for the first class), written [-s, s].
        save(f'svm-svc_{kernel}_binary', export(model, small), small_test,
             [model.predict(small_test), np.column_stack([d, -d])])
        model = SVC(kernel=kernel, C=1.5, coef0=0.5 if kernel == 'poly' else 0.0).fit(small, three[:80])
        save(f'svm-svc_{kernel}_three', export(model, small), small_test,
             [model.predict(small_test), model.decision_function(small_test)])
    model = SVC(kernel='rbf', probability=True, random_state=0).fit(small, three[:80])
    classifier('svm-svc_rbf_probabilities', model, small_test)

    # KMeans: the label and the distance to every centre.
    model = KMeans(n_clusters=4, n_init=3, random_state=0).fit(x)
    save('kmeans-four_clusters', export(model, test), test, [model.predict(test), model.transform(test)])

    # Preprocessing.
    model = Binarizer(threshold=0.25).fit(x)
    save('preprocessing-binarizer', export(model, test), test, [model.transform(test)])
    holes = test.copy()
    holes[[1, 4, 7], [0, 3, 5]] = np.nan
    model = SimpleImputer(strategy='mean').fit(x)
    save('preprocessing-imputer', export(model, holes), holes, [model.transform(holes)])
    categories = rng.integers(0, 4, (40, 2)).astype(np.int64) * np.array([1, 3])
    model = OneHotEncoder(handle_unknown='ignore').fit(categories)
    sample = categories[:9].copy()
    sample[2, 1] = 7  # unseen: all zeros
    save('preprocessing-one_hot_encoder', export(model, sample), sample, [model.transform(sample).toarray()])
    model = make_pipeline(StandardScaler(), DecisionTreeClassifier(max_depth=5, random_state=0)).fit(x, three)
    classifier('trees-pipeline_scaler_tree', model, test)
    node_cases(rng)

    # String labels (classlabels_strings): the classes above, named; sklearn_label.npy is '<U'.
    names = np.array(['alpha', 'beta', 'gamma'])[np.searchsorted([2, 5, 9], three)]
    sides = np.array(['no', 'yes'])[binary]
    classifier('labels-logistic_three', LogisticRegression(max_iter=1000).fit(x, names), test)
    classifier('labels-svc_probabilities', SVC(kernel='rbf', probability=True, random_state=0).fit(small, names[:80]),
               small_test)
    classifier('labels-random_forest_three',
               RandomForestClassifier(n_estimators=8, max_depth=4, random_state=0).fit(x, names), test)
    classifier('labels-gradient_boosting_binary',
               GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0).fit(x, sides), test)
    double_tree(x.astype(np.float64), target, test.astype(np.float64))


def double_tree(x, target, test):
    """A DecisionTreeRegressor fitted in float64, as a TreeEnsembleRegressor of
    double input whose thresholds and leaf values are `_as_tensor` doubles
    (scikit-learn's own): skl2onnx 1.20's DoubleTensorType export of a tree is
    refused by onnxruntime, so the node is written here from `tree_`. Its
    output is float, as the op's schema says: onnxruntime walks the tree in
    double and rounds the leaf value once. The reference is onnxruntime's:
    scikit-learn's trees round their input to float32 first."""
    model = DecisionTreeRegressor(max_depth=6, random_state=0).fit(x, target)
    tree = model.tree_
    leaf = tree.children_left == -1
    ids = list(range(tree.node_count))
    node = helper.make_node(
        'TreeEnsembleRegressor', ['X'], ['Y'], domain='ai.onnx.ml', n_targets=1,
        nodes_treeids=[0] * tree.node_count, nodes_nodeids=ids,
        nodes_featureids=[int(f) if f >= 0 else 0 for f in tree.feature],
        nodes_modes=['LEAF' if is_leaf else 'BRANCH_LEQ' for is_leaf in leaf],
        nodes_truenodeids=[int(c) if c >= 0 else 0 for c in tree.children_left],
        nodes_falsenodeids=[int(c) if c >= 0 else 0 for c in tree.children_right],
        nodes_values_as_tensor=helper.make_tensor('t', onnx.TensorProto.DOUBLE, [tree.node_count],
                                                  np.where(leaf, 0, tree.threshold)),
        target_treeids=[0] * int(leaf.sum()), target_nodeids=[i for i in ids if leaf[i]], target_ids=[0] * int(leaf.sum()),
        target_weights_as_tensor=helper.make_tensor('w', onnx.TensorProto.DOUBLE, [int(leaf.sum())],
                                                    tree.value[leaf, 0, 0]))
    # Rows one double ulp past the root's threshold: right of it in double, left in float32.
    edge = test[:4].copy()
    edge[:, tree.feature[0]] = np.nextafter(tree.threshold[0], np.inf)
    assert np.float32(edge[0, tree.feature[0]]) == np.float32(tree.threshold[0])
    node_case('double-decision_tree_regressor', node, x.shape[1],
              [helper.make_tensor_value_info('Y', onnx.TensorProto.FLOAT, ['N', 1])], np.concatenate([test, edge]),
              input_type=onnx.TensorProto.DOUBLE)


if __name__ == '__main__':
    main()
