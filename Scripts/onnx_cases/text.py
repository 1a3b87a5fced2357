#!/usr/bin/env python3
"""ONNX reference cases for LayerKit's value-driven and text ops: Unique of
int64 rows, sorted and in order of first appearance, and TfIdfVectorizer's
IDF and TFIDF weights over int32 tokens with skips (folder `text`); and the
cases that read strings, which the backend-test reader does not take, in
`Fixtures/text-strings/<case>/` (model.onnx, x.npy, onnxruntime_<output>.npy,
read by TextOpTests as MLStringModelTests reads its own): Unique of strings,
TfIdfVectorizer over strings, RegexFullMatch with classes, alternation,
named groups and case-insensitivity.

Run from the repository root with `python -P` (this folder's math.py would
hide Python's own module; see common.py for the versions). Seeded, so
reruns write the same bytes.
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import reset, rng, run_onnxruntime, save_case, tensor_info, typed_info as info  # noqa: E402

FAMILY = 'text'
reset(FAMILY)
STRINGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'Tests', 'LayerKitTests', 'Fixtures',
                       'text-strings')
shutil.rmtree(STRINGS, ignore_errors=True)
random = rng(20261207)


def save_string_case(name, node, x, outputs, opset):
    """A case whose input x is strings: the model, x.npy and onnxruntime's outputs as .npy files."""
    graph = helper.make_graph([node], name, [info('x', x)], outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)], producer_name='layerkit-onnx-cases')
    results = run_onnxruntime(model, {'x': x})
    folder = os.path.join(STRINGS, name)
    os.makedirs(folder)
    onnx.save(model, os.path.join(folder, 'model.onnx'))
    np.save(os.path.join(folder, 'x.npy'), x.astype(str))
    for output, result in zip(outputs, results):
        np.save(os.path.join(folder, f'onnxruntime_{output.name}.npy'), result.astype(str) if result.dtype == object else result)


def unshaped(name, rank, element=TensorProto.FLOAT):
    """A graph output whose extents its values decide."""
    return helper.make_tensor_value_info(name, element, [f'{name}_{i}' for i in range(rank)])


def unique_case(name, x, opset=11, **attrs):
    node = helper.make_node('Unique', ['x'], ['y', 'first', 'inverse', 'counts'], name=name, **attrs)
    element = helper.np_dtype_to_tensor_dtype(x.dtype)
    rank = x.ndim if 'axis' in attrs else 1
    outputs = [unshaped('y', rank, element)] + [unshaped(k, 1, TensorProto.INT64) for k in ['first', 'inverse', 'counts']]
    if x.dtype == object:
        save_string_case(name, node, x, outputs, opset)
    else:
        save_case(FAMILY, name, [node], [info('x', x)], outputs, opset=opset, input_data={'x': x})


words = np.array(['b', 'a', 'c', 'a', 'B', 'b', '', 'c'], dtype=object)
unique_case('unique_strings_sorted', words)
unique_case('unique_strings_first_seen', words, sorted=0)
rows = random.integers(0, 3, size=(3, 6)).astype(np.int64)
rows[:, 4] = rows[:, 1]
unique_case('unique_int64_columns_first_seen', rows, axis=1, sorted=0)
unique_case('unique_int64_columns_sorted', rows, axis=-1)


def tfidf_case(name, x, **attrs):
    node = helper.make_node('TfIdfVectorizer', ['x'], ['y'], name=name, **attrs)
    if x.dtype == object:
        save_string_case(name, node, x, [unshaped('y', x.ndim)], 9)
    else:
        save_case(FAMILY, name, [node], [info('x', x)], [unshaped('y', x.ndim)], opset=9, input_data={'x': x})


tokens = np.array([[2, 3, 5, 4, 2, 3, 5, 4, 3, 2], [5, 5, 4, 2, 3, 2, 4, 5, 3, 3]], dtype=np.int32)
# 1-grams 2, 3, 4; 2-grams (2, 3), (5, 4), (3, 2); 3-gram (2, 3, 5).
pool = dict(pool_int64s=[2, 3, 4, 2, 3, 5, 4, 3, 2, 2, 3, 5], ngram_counts=[0, 3, 9],
            ngram_indexes=[6, 0, 1, 2, 5, 3, 4], max_skip_count=2)
tfidf_case('tfidf_int32_tfidf_skips', tokens, mode='TFIDF', min_gram_length=1, max_gram_length=3,
           weights=[0.5, 2, 1.5, 1, 3, 0.25, 4], **pool)
tfidf_case('tfidf_int32_idf_bigrams', tokens, mode='IDF', min_gram_length=2, max_gram_length=2, weights=[1.0] * 7, **pool)
text = np.array(['the', 'cat', 'sat', 'on', 'the', 'mat', 'the', 'cat'], dtype=object)
tfidf_case('tfidf_strings_tf', text, mode='TF', min_gram_length=1, max_gram_length=2, max_skip_count=1,
           pool_strings=['cat', 'the', 'the', 'cat', 'sat', 'the'], ngram_counts=[0, 2], ngram_indexes=[0, 1, 2, 3])

emails = np.array([['ann@example.com', 'bob@EXAMPLE.org', 'x@y'], ['no at sign', 'a.b@c.io', '']], dtype=object)
for name, pattern in [('regex_email_classes', r'[\w.+-]+@[a-z0-9-]+\.(com|org|io)'),
                      ('regex_case_insensitive_named_group', r'(?i)(?P<user>[a-z.]+)@example\.(?:COM|ORG)'),
                      ('regex_posix_class_and_bracket', r'[[:alpha:][]*( [[:alpha:]]+)*')]:
    node = helper.make_node('RegexFullMatch', ['x'], ['y'], name=name, pattern=pattern)
    save_string_case(name, node, emails, [tensor_info('y', [2, 3], TensorProto.BOOL)], 20)
