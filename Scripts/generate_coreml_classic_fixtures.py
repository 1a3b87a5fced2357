#!/usr/bin/env python3
"""Writes Core ML classic models (coremltools' scikit-learn converter) and
scikit-learn's own float64 predictions into
Tests/LayerKitTests/Fixtures/coreml-classic: one folder per model, holding
model.mlmodel, x.npy (float64 rows), and sklearn_<output>.npy references
(predict as float64, labels as int64 or '<U' strings, predict_proba as
float64 in the model's class order). Named-feature models also get one <feature>.npy per
input column.

Needs a venv with coremltools 9 and the scikit-learn its converter accepts:
    python3 -m venv /tmp/coreml-sk-venv
    /tmp/coreml-sk-venv/bin/pip install coremltools==9.0 scikit-learn==1.5.1 numpy
    /tmp/coreml-sk-venv/bin/python Scripts/generate_coreml_classic_fixtures.py
The references are scikit-learn's, never LayerKit's.
"""
import os
import shutil

import numpy as np
import coremltools
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.svm import SVR, SVC, LinearSVR
from sklearn.tree import DecisionTreeRegressor, DecisionTreeClassifier
from sklearn.ensemble import (RandomForestRegressor, RandomForestClassifier, GradientBoostingRegressor,
                              GradientBoostingClassifier)
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler, Normalizer
from sklearn.impute import SimpleImputer
from sklearn.feature_extraction import DictVectorizer

ROOT = os.path.join(os.path.dirname(__file__), '..', 'Tests', 'LayerKitTests', 'Fixtures', 'coreml-classic')
BOSTON = ['CRIM', 'ZN', 'INDUS', 'CHAS', 'NOX', 'RM', 'AGE', 'DIS', 'RAD', 'TAX', 'PTRATIO', 'B', 'LSTAT']


def save(name, model, x, outputs, columns=None):
    folder = os.path.join(ROOT, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    model.save(os.path.join(folder, 'model.mlmodel'))
    np.save(os.path.join(folder, 'x.npy'), np.ascontiguousarray(x, dtype=np.float64))
    for column, values in (columns or {}).items():
        np.save(os.path.join(folder, column + '.npy'), values.astype(np.float64).reshape(-1, 1))
    for output, values in outputs.items():
        np.save(os.path.join(folder, 'sklearn_' + output + '.npy'), np.ascontiguousarray(values))


def regressor(name, estimator, x, y, test, **convert):
    estimator.fit(x, y)
    model = coremltools.converters.sklearn.convert(estimator, **convert)
    save(name, model, test, {'prediction': estimator.predict(test).astype(np.float64)})


def classifier(name, estimator, x, y, test, probabilities=True):
    estimator.fit(x, y)
    model = coremltools.converters.sklearn.convert(estimator)
    labels = estimator.predict(test)
    outputs = {'classLabel': labels.astype(str) if labels.dtype.kind in 'UO' else labels.astype(np.int64)}
    if probabilities:
        outputs['classProbability'] = estimator.predict_proba(test).astype(np.float64)
    save(name, model, test, outputs)


def main():
    rng = np.random.default_rng(26)
    # BostonPricer-like: 13 named double features, LinearRegression, output 'price'.
    x = rng.uniform(0, 1, size=(64, 13)) * np.array([90, 100, 28, 1, 0.9, 9, 100, 12, 24, 710, 22, 400, 38])
    y = x @ rng.normal(size=13) + 22 + rng.normal(size=64)
    test = rng.uniform(0, 1, size=(5, 13)) * np.array([90, 100, 28, 1, 0.9, 9, 100, 12, 24, 710, 22, 400, 38])
    linear = LinearRegression().fit(x, y)
    model = coremltools.converters.sklearn.convert(linear, BOSTON, 'price')
    model.short_description = 'Predicts the price of a house (a BostonPricer-like model on seeded data)'
    save('boston_pricer', model, test, {'price': linear.predict(test)},
         columns={name: test[:, i] for i, name in enumerate(BOSTON)})

    features = rng.normal(size=(120, 4))
    test4 = rng.normal(size=(6, 4))
    target = features @ np.array([1.5, -2.0, 0.5, 1.0]) + 0.1 * rng.normal(size=120)
    three = np.digitize(features[:, 0] + 0.5 * features[:, 1], [-0.5, 0.5])  # classes 0, 1, 2
    two = (features[:, 0] - features[:, 2] > 0).astype(np.int64)

    regressor('linear_svr', LinearSVR(random_state=0, max_iter=10000, dual='auto'), features, target, test4)
    regressor('svr_rbf', SVR(kernel='rbf', gamma=0.3), features, target, test4)
    regressor('decision_tree_regressor', DecisionTreeRegressor(max_depth=4, random_state=0), features, target, test4)
    regressor('random_forest_regressor', RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0),
              features, target, test4)
    regressor('gradient_boosting_regressor', GradientBoostingRegressor(n_estimators=6, max_depth=2, random_state=0),
              features, target, test4)

    # Labels as coremltools keeps them: int64 for integer classes, strings for string ones.
    labels = np.array(['setosa', 'versicolor', 'virginica'])
    logistic = LogisticRegression(multi_class='ovr').fit(features, labels[three])
    model = coremltools.converters.sklearn.convert(logistic)
    save('logistic_strings', model, test4, {'classLabel': logistic.predict(test4).astype(str),
                                            'classProbability': logistic.predict_proba(test4)})
    classifier('logistic_binary', LogisticRegression(multi_class='ovr'), features, two, test4)
    classifier('svc_rbf_three', SVC(kernel='rbf', gamma=0.5, random_state=0), features, three, test4, probabilities=False)
    classifier('svc_linear_binary', SVC(kernel='linear', random_state=0), features, two, test4, probabilities=False)
    classifier('decision_tree_three', DecisionTreeClassifier(max_depth=3, random_state=0), features, three, test4)
    classifier('random_forest_binary', RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0),
               features, two, test4)
    # A multiclass forest: coremltools writes each tree's class fractions undivided (it scales
    # only a binary forest's leaves by 1 / trees), and Core ML sums them, so its classProbability
    # is the trees' count times predict_proba (coremltools issue #1541). The reference is that sum;
    # predict_proba.npy keeps scikit-learn's own probabilities for the test that relates the two.
    forest = RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0).fit(features, three)
    save('random_forest_three', coremltools.converters.sklearn.convert(forest), test4,
         {'classLabel': forest.predict(test4).astype(np.int64),
          'classProbability': len(forest.estimators_) * forest.predict_proba(test4).astype(np.float64)})
    np.save(os.path.join(ROOT, 'random_forest_three', 'predict_proba.npy'), forest.predict_proba(test4).astype(np.float64))
    classifier('gradient_boosting_three', GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0),
               features, three, test4)
    classifier('gradient_boosting_binary', GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0),
               features, two, test4)

    classifier('svc_rbf_strings', SVC(kernel='rbf', gamma=0.5, random_state=0), features, labels[three], test4,
               probabilities=False)
    classifier('decision_tree_strings', DecisionTreeClassifier(max_depth=3, random_state=0), features, labels[three], test4)

    # A pipeline of preprocessors before a regressor; one test value missing.
    missing = features.copy()
    missing[::7, 1] = np.nan
    test_missing = test4.copy()
    test_missing[2, 1] = np.nan
    pipeline = Pipeline([('impute', SimpleImputer()), ('scale', StandardScaler()), ('normalize', Normalizer()),
                         ('regress', LinearRegression())]).fit(missing, target)
    model = coremltools.converters.sklearn.convert(pipeline)
    save('pipeline_imputer_scaler_normalizer', model, test_missing,
         {'prediction': pipeline.predict(test_missing).astype(np.float64)})

    # Refused: a dictionary input (DictVectorizer), which LayerKit's numeric values cannot hold.
    rows = [{'a': 1.0, 'b': 2.0}, {'a': 3.0, 'c': 1.0}, {'b': 1.0, 'c': 4.0}]
    dictionary = Pipeline([('vectorize', DictVectorizer()), ('regress', LinearRegression())]).fit(rows, [1.0, 2.0, 3.0])
    folder = os.path.join(ROOT, 'refused_dict_vectorizer')
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    coremltools.converters.sklearn.convert(dictionary).save(os.path.join(folder, 'model.mlmodel'))


if __name__ == '__main__':
    main()
