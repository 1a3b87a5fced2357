#!/usr/bin/env python3
"""A seeded, randomized differential of single ops against onnxruntime.

For each op below it draws attributes and shapes from the op's attribute
space (shrinking and growing axes, extent 1, negative and out-of-range
starts/pads/axes, and zero-size tensors where ONNX allows them), builds a
one-node model, runs onnxruntime on it (CPU, one thread, no graph
optimizations) and writes the case in the onnx package's backend-test
layout (CASE/model.onnx, CASE/test_data_set_0/input_K.pb, output_K.pb) under
OUT. A draw that onnxruntime itself rejects is redrawn, and so is one where
onnxruntime and ONNX's reference implementation (onnx.reference) give
different outputs: such a draw has no single expected answer (the counts are
printed; see references_agree). Then it runs
`layerkit conformance OUT --backend both` and judges each case:

    pass      the CPU matches onnxruntime (ONNX's rtol 1e-3, atol 1e-7) and
              the GPU the CPU (the parity rule)
    refused   LayerKit refused the model or its input with an error (listed,
              with the error: an unsupported attribute or a zero-size tensor
              is fine)
    WRONG     an output differs in a value or a shape, or the refusal reads
              like a LayerKit bug ("internal"): the run fails
    crash     layerkit died on a signal: the run fails, naming the case

Usage (from the repository root; `make test-op-differential` does this):
    python Scripts/op_differential.py --layerkit .build/debug/layerkit
    ... --seed 7 --per-op 30      another draw, more cases
    ... --only Resize,Pad         some ops only
Any Python with onnx 1.23.2, onnxruntime 1.32.0 and numpy works (the
Makefile's TEST_VENV). The same seed and versions write the same cases.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time
import warnings

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

OPSET = 19
ort.set_default_logger_severity(3)  # tf_half_pixel_for_nn's deprecation warning on every draw


class Rejected(Exception):
    """A draw outside what the op (or onnxruntime) accepts: draw again."""


def ints(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def floats(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.float32), name)


class Draw:
    """One case being drawn: the op, its attributes, constant inputs and data inputs."""

    def __init__(self, rng, op):
        self.rng, self.op = rng, op
        self.attrs, self.inputs, self.initializers, self.data, self.outputs = {}, [], [], {}, 1

    def data_input(self, shape, name='x'):
        self.inputs.append(name)
        self.data[name] = (self.rng.standard_normal(shape) * 3).astype(np.float32)
        return self.data[name]

    def constant(self, tensor):
        self.inputs.append(tensor.name)
        self.initializers.append(tensor)

    def omitted(self):
        self.inputs.append('')

    # Random pieces.
    def shape(self, rank=None, low=1, high=6, zero=0.04):
        """A shape of `rank` (1 to 4 when None); each extent 0 with probability `zero`."""
        rank = rank if rank is not None else int(self.rng.integers(1, 5))
        return [0 if self.rng.random() < zero else int(self.rng.integers(low, high + 1)) for _ in range(rank)]

    def pick(self, values):
        return values[int(self.rng.integers(len(values)))]

    def ints(self, low, high, count):
        return [int(v) for v in self.rng.integers(low, high + 1, size=count)]

    def axes(self, rank, at_least=1):
        count = int(self.rng.integers(at_least, rank + 1))
        axes = [int(a) for a in self.rng.permutation(rank)[:count]]
        return [a - rank if self.rng.random() < 0.3 else a for a in axes]


# MARK: - The ops: each fills a Draw.

def resize(d):
    x = d.data_input(d.shape(d.pick([2, 3, 4, 4, 4]), high=7, zero=0.0))
    rank = x.ndim
    mode = d.pick(['nearest', 'linear', 'cubic'])
    transform = d.pick(['half_pixel', 'half_pixel_symmetric', 'pytorch_half_pixel', 'align_corners', 'asymmetric',
                        'tf_half_pixel_for_nn', 'tf_crop_and_resize'])
    if transform == 'tf_half_pixel_for_nn' and mode != 'nearest':
        raise Rejected()
    d.attrs.update(mode=mode, coordinate_transformation_mode=transform)
    if mode == 'nearest':
        d.attrs['nearest_mode'] = d.pick(['round_prefer_floor', 'round_prefer_ceil', 'floor', 'ceil'])
    if mode == 'cubic':
        d.attrs['exclude_outside'] = int(d.rng.random() < 0.3)
        d.attrs['cubic_coeff_a'] = d.pick([-0.75, -0.5])
    # Spatial axes resized (the batch and channel axes too, now and then), each to 1, shrunk, kept or grown,
    # by sizes or by scales.
    resized = list(range(max(0, rank - 2), rank)) if d.rng.random() < 0.8 else list(range(rank))
    by_sizes = d.rng.random() < 0.5
    sizes, scales = [int(e) for e in x.shape], [1.0] * rank
    for a in resized:
        if by_sizes:
            sizes[a] = d.pick([1, max(1, x.shape[a] - 1), x.shape[a], x.shape[a] + 1, 2 * x.shape[a] + 1,
                               int(d.rng.integers(1, 13))])
        else:
            # Scales exact in binary: a ratio such as 8/7 rounds to a float whose x / scale lands a hair to
            # one side of a nearest-rounding tie, and onnxruntime does not always land on the same side as
            # its formula in float (4 / 1.1428572 is 3.4999998, yet it picks input 4 there).
            scales[a] = d.pick([0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0])
    # onnxruntime copies the input when the output has its shape (scales 1.25 on an extent of 1 or 2, say),
    # where ONNX's formulas still interpolate.
    if (sizes if by_sizes else [int(np.floor(e * s)) for e, s in zip(x.shape, scales)]) == list(x.shape):
        raise Rejected()
    # onnxruntime leaves an axis of scale 1 as it is; ONNX's formulas (and LayerKit) still map it, which moves it
    # under a roi or under tf_half_pixel_for_nn's (x + 0.5) / 1 rounded up. Draws where the two differ are redrawn.
    unchanged = [a for a in range(rank) if (sizes[a] == x.shape[a] if by_sizes else scales[a] == 1)]
    if transform == 'tf_half_pixel_for_nn' and d.attrs['nearest_mode'] in ('ceil', 'round_prefer_ceil') and unchanged:
        raise Rejected()
    if transform == 'tf_crop_and_resize':
        start = d.rng.uniform(-0.2, 0.5, rank).round(2)
        end = (start + d.rng.uniform(0.3, 1.0, rank)).round(2)
        start[unchanged], end[unchanged] = 0, 1
        d.constant(floats('roi', np.concatenate([start, end])))
        if mode == 'linear' or d.rng.random() < 0.5:
            d.attrs['extrapolation_value'] = float(d.pick([0.0, -1.5]))
    else:
        d.omitted()
    if by_sizes:
        d.omitted()
        d.constant(ints('sizes', sizes))
    else:
        d.constant(floats('scales', scales))


def pad(d):
    x = d.data_input(d.shape(high=6, zero=0.02))
    rank = x.ndim
    mode = d.pick(['constant', 'reflect', 'edge', 'wrap'])
    d.attrs['mode'] = mode
    axes = d.axes(rank) if d.rng.random() < 0.3 else None
    count = len(axes) if axes else rank
    pads = d.ints(-2, 3, 2 * count)
    d.constant(ints('pads', pads))
    if mode == 'constant' and d.rng.random() < 0.6:
        d.constant(floats('value', d.pick([0.5, -2.0, 1e30])))
    elif axes:
        d.omitted()
    if axes:
        d.constant(ints('axes', axes))


def slice_(d):
    x = d.data_input(d.shape(high=7, zero=0.02))
    rank = x.ndim
    axes = d.axes(rank)
    starts, ends, steps = [], [], []
    for a in axes:
        n = x.shape[a]
        steps.append(d.pick([1, 1, 2, 3, -1, -2]))
        starts.append(d.pick([0, 1, -1, -n - 2, n + 3, int(d.rng.integers(-n - 1, n + 2)), -2**63, 2**63 - 1]))
        ends.append(d.pick([n, -1, 0, n + 5, -n - 3, int(d.rng.integers(-n - 1, n + 2)), -2**63, 2**63 - 1]))
    d.constant(ints('starts', starts))
    d.constant(ints('ends', ends))
    d.constant(ints('axes', axes))
    if any(s != 1 for s in steps) or d.rng.random() < 0.5:
        d.constant(ints('steps', steps))


def gather(d):
    x = d.data_input(d.shape(high=6, zero=0.0))
    rank = x.ndim
    axis = int(d.rng.integers(-rank, rank))
    n = x.shape[axis]
    index_shape = d.pick([(), (1,), (3,), (2, 2), (0,)])
    indices = d.rng.integers(-n, n, size=index_shape)
    d.attrs['axis'] = axis
    d.constant(ints('indices', indices))


def transpose(d):
    x = d.data_input(d.shape(d.pick([1, 2, 3, 4, 5]), high=5, zero=0.02))
    if d.rng.random() < 0.85:
        d.attrs['perm'] = [int(a) for a in d.rng.permutation(x.ndim)]


def tile(d):
    x = d.data_input(d.shape(high=4, zero=0.02))
    repeats = [d.pick([1, 1, 2, 3, 0 if d.rng.random() < 0.1 else 1]) for _ in range(x.ndim)]
    d.constant(ints('repeats', repeats))


def expand(d):
    x = d.data_input([d.pick([1, 1, e]) for e in d.shape(high=4, zero=0.0)])
    target = [e if e != 1 else d.pick([1, 2, 3]) for e in x.shape]
    target = d.ints(1, 3, int(d.rng.integers(0, 2))) + target  # sometimes a higher rank
    if d.rng.random() < 0.3:  # a 1 in the target keeps the input's extent
        target = [1 if d.rng.random() < 0.3 else e for e in target]
    d.constant(ints('shape', target))


def concat(d):
    base = d.shape(high=5, zero=0.0)
    axis = int(d.rng.integers(-len(base), len(base)))
    for k in range(int(d.rng.integers(1, 4))):
        shape = list(base)
        shape[axis] = d.pick([1, 2, 3, 5, 0 if d.rng.random() < 0.2 else 1])
        d.data_input(shape, f'x{k}')
    d.attrs['axis'] = axis


def split(d):
    x = d.data_input(d.shape(high=7, zero=0.0))
    axis = int(d.rng.integers(-x.ndim, x.ndim))
    n = x.shape[axis]
    d.attrs['axis'] = axis
    if d.rng.random() < 0.5:
        parts = int(d.rng.integers(1, n + 1))
        d.attrs['num_outputs'] = parts
        d.outputs = parts
    else:
        cuts = sorted(d.ints(0, n, int(d.rng.integers(0, 3))))
        sizes = [b - a for a, b in zip([0] + cuts, cuts + [n])]
        d.constant(ints('split', sizes))
        d.outputs = len(sizes)


def pool(d):
    spatial = d.pick([1, 2, 2, 3])
    x = d.data_input([d.pick([1, 2]), d.pick([1, 3])] + d.shape(spatial, low=1, high=8, zero=0.0))
    kernel = d.ints(1, 3, spatial)
    d.attrs['kernel_shape'] = kernel
    if d.rng.random() < 0.6:
        d.attrs['strides'] = d.ints(1, 3, spatial)
    if d.rng.random() < 0.3:
        d.attrs['auto_pad'] = d.pick(['SAME_UPPER', 'SAME_LOWER', 'VALID'])
    elif d.rng.random() < 0.6:
        d.attrs['pads'] = [d.ints(0, k - 1, 1)[0] for k in kernel + kernel]
    if d.rng.random() < 0.4:
        d.attrs['ceil_mode'] = 1
    # ONNX (opset 19) counts the dilation in auto_pad's padding; onnxruntime and ONNX's reference do not, and
    # they agree with each other, so LayerKit (which follows the text) is not drawn there.
    if d.rng.random() < 0.4 and 'auto_pad' not in d.attrs:
        d.attrs['dilations'] = d.ints(1, 2, spatial)
    if d.op == 'AveragePool' and d.rng.random() < 0.5:
        d.attrs['count_include_pad'] = 1


def conv(d):
    spatial = d.pick([1, 2, 2, 3])
    group = d.pick([1, 1, 2, 3])
    channels = group * d.pick([1, 2])
    maps = group * d.pick([1, 2])
    x = d.data_input([d.pick([1, 2]), channels] + d.shape(spatial, low=1, high=7, zero=0.0))
    kernel = d.ints(1, 3, spatial)
    d.attrs['group'] = group
    if d.rng.random() < 0.6:
        d.attrs['strides'] = d.ints(1, 3, spatial)
    if d.rng.random() < 0.2:
        d.attrs['auto_pad'] = d.pick(['SAME_UPPER', 'SAME_LOWER', 'VALID'])
    elif d.rng.random() < 0.6:
        d.attrs['pads'] = d.ints(0, 2, 2 * spatial)
    if d.rng.random() < 0.4:
        d.attrs['dilations'] = d.ints(1, 2, spatial)
    w = (d.rng.standard_normal([maps, channels // group] + kernel)).astype(np.float32)
    d.constant(numpy_helper.from_array(w, 'w'))
    if d.rng.random() < 0.6:
        d.constant(floats('b', d.rng.standard_normal(maps)))


def reduce(d):
    x = d.data_input(d.shape(high=5, zero=0.03))
    if d.op in ('ReduceLogSumExp', 'ReduceProd', 'ReduceLogSum'):
        d.data[d.inputs[0]] = np.abs(x) * 0.3 + 0.1  # finite, positive: a log and a product stay in range
    d.attrs['keepdims'] = d.pick([0, 1])
    if d.rng.random() < 0.8:
        d.constant(ints('axes', d.axes(x.ndim)))
    elif d.rng.random() < 0.5:
        d.attrs['noop_with_empty_axes'] = d.pick([0, 1])


def softmax(d):
    x = d.data_input(d.shape(high=6, zero=0.02))
    d.attrs['axis'] = int(d.rng.integers(-x.ndim, x.ndim))


def depth_to_space(d):
    block = d.pick([1, 2, 3])
    d.data_input([d.pick([1, 2]), block * block * d.pick([1, 2, 3])] + d.shape(2, high=4, zero=0.0))
    d.attrs['blocksize'] = block
    d.attrs['mode'] = d.pick(['DCR', 'CRD'])


def space_to_depth(d):
    block = d.pick([1, 2, 3])
    d.data_input([d.pick([1, 2]), d.pick([1, 3])] + [block * e for e in d.shape(2, high=3, zero=0.0)])
    d.attrs['blocksize'] = block


OPS = {
    'Resize': resize, 'Pad': pad, 'Slice': slice_, 'Gather': gather, 'Transpose': transpose, 'Tile': tile,
    'Expand': expand, 'Concat': concat, 'Split': split, 'MaxPool': pool, 'AveragePool': pool, 'Conv': conv,
    'ReduceSum': reduce, 'ReduceMean': reduce, 'ReduceMax': reduce, 'ReduceMin': reduce, 'ReduceProd': reduce,
    'ReduceL1': reduce, 'ReduceL2': reduce, 'ReduceLogSumExp': reduce, 'ReduceSumSquare': reduce,
    'Softmax': softmax, 'DepthToSpace': depth_to_space, 'SpaceToDepth': space_to_depth,
}
# Resize has the largest attribute space (3 modes x 7 transforms x 4 rounding rules x shrink/grow).
WEIGHT = {'Resize': 5, 'Pad': 2, 'Slice': 2, 'MaxPool': 2, 'AveragePool': 2, 'Conv': 2}


def build(d, name):
    """The model of draw `d`, run in onnxruntime; raises Rejected when onnxruntime refuses it."""
    outputs = [f'y{k}' for k in range(d.outputs)]
    node = helper.make_node(d.op, d.inputs, outputs, name=name, **d.attrs)
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(v.shape)) for n, v in d.data.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs], d.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', OPSET)],
                              producer_name='layerkit-op-differential')
    model.ir_version = 9
    try:
        # The outputs' shapes, which onnx.checker requires, from ONNX's own shape inference.
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        model.graph.ClearField('output')
        model.graph.output.extend(inferred.graph.output)
        onnx.checker.check_model(model)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.intra_op_num_threads = 1
        options.log_severity_level = 4
        session = ort.InferenceSession(model.SerializeToString(), options, providers=['CPUExecutionProvider'])
        results = session.run(None, d.data)
    except Exception as error:  # onnx and onnxruntime raise many types for an invalid draw
        raise Rejected(str(error))
    if any(not np.all(np.isfinite(r)) for r in results):
        raise Rejected('non-finite reference')
    if not references_agree(model, d.data, results):
        DISAGREEMENTS[d.op] = DISAGREEMENTS.get(d.op, 0) + 1
        raise Rejected('onnxruntime and ONNX reference disagree')
    return model, results


# Draws redrawn because onnxruntime and ONNX's reference implementation disagree, per op.
DISAGREEMENTS = {}


def references_agree(model, data, results):
    """Whether ONNX's reference implementation (onnx.reference) gives onnxruntime's outputs, or cannot run
    the model. Where the two differ the draw has no single expected answer: onnxruntime copies the input of a
    Resize whose shape is unchanged and skips the coordinate transformation on axes of scale 1, makes a 2x3x1x0
    MaxPool from ceil_mode with auto_pad, reads a Slice end of INT64_MAX under a negative step as "to the end",
    and rounds some nearest-mode ties the other way."""
    try:
        with np.errstate(all='ignore'), warnings.catch_warnings():
            warnings.simplefilter('ignore')  # the reference's mean of an empty axis, NaN as onnxruntime's
            reference = ReferenceEvaluator(model).run(None, data)
    except Exception:  # an attribute the reference does not implement (tf_half_pixel_for_nn, ...)
        return True
    return all(np.shape(r) == np.shape(o) and np.allclose(r, o, rtol=1e-3, atol=1e-5)
               for r, o in zip(reference, results))


def write_case(folder, model, d, results):
    os.makedirs(os.path.join(folder, 'test_data_set_0'))
    onnx.save(model, os.path.join(folder, 'model.onnx'))
    for kind, values in (('input', list(d.data.values())), ('output', results)):
        for k, value in enumerate(values):
            with open(os.path.join(folder, 'test_data_set_0', f'{kind}_{k}.pb'), 'wb') as out:
                out.write(numpy_helper.from_array(value).SerializeToString())


def generate(out, seed, per_op, only):
    """Writes the cases under `out`; returns {case name: a one-line description}."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    cases = {}
    for op, draw_into in OPS.items():
        if only and op not in only:
            continue
        # A generator per op, so adding an op or a case to one op leaves the others' draws as they were.
        rng = np.random.default_rng([seed, sum(op.encode())])
        made, tries = 0, 0
        while made < per_op * WEIGHT.get(op, 1):
            tries += 1
            if tries > 50 * per_op * WEIGHT.get(op, 1):
                sys.exit(f'op_differential: {op}: onnxruntime rejected nearly every draw')
            d = Draw(rng, op)
            name = f'{op.lower()}_{made:03d}'
            try:
                draw_into(d)
                model, results = build(d, name)
            except Rejected:
                continue
            write_case(os.path.join(out, name), model, d, results)
            shapes = ' '.join('x'.join(map(str, v.shape)) or 'scalar' for v in d.data.values())
            cases[name] = f'{op} {d.attrs} on {shapes}' + (
                ' with ' + ', '.join(f'{t.name}={numpy_helper.to_array(t).tolist()}' for t in d.initializers
                                     if t.name != 'w') if d.initializers else '')
            made += 1
    return cases


def judge(layerkit, out, cases):
    """Runs `layerkit conformance` on the cases; returns the exit status for the run."""
    command = [layerkit, 'conformance', out, '--backend', 'both']
    run = subprocess.run(command, capture_output=True, text=True)
    label = os.path.basename(os.path.normpath(out))
    rows = {}
    for line in run.stdout.splitlines():
        if line.startswith('[') and f'] {label}/' in line:
            name, _, rest = line.split(f'] {label}/', 1)[1].partition('  ')
            rows[name] = rest
    wrong, refused, passed = [], [], 0
    for name, rest in rows.items():
        fields = rest.split('  ')
        results, why = [f for f in fields if f.startswith(('pass', 'FAIL'))], fields[-1]
        if all(r.startswith('pass') for r in results):
            passed += 1
        elif why.startswith('output ') or 'internal' in why:
            wrong.append(f'{name}: {why}\n    {cases[name]}')
        else:
            refused.append(f'{name}: {why}')
    for line in refused:
        print('refused ' + line)
    for line in wrong:
        print('WRONG ' + line)
    print(f'op differential: {len(cases)} cases, {passed} pass, {len(refused)} refused with an error, '
          f'{len(wrong)} wrong')
    if run.returncode not in (0, 1) or len(rows) != len(cases):
        missing = sorted(set(cases) - set(rows))
        print(run.stderr[-3000:], file=sys.stderr)
        print(f'CRASH: layerkit conformance exited with {run.returncode} at '
              f'{missing[0] if missing else "?"} ({cases.get(missing[0], "") if missing else ""})', file=sys.stderr)
        return 1
    return 1 if wrong else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--layerkit', default='.build/debug/layerkit', help='the layerkit executable')
    parser.add_argument('--out', default='.build/op-differential', help='where the cases are written')
    parser.add_argument('--seed', type=int, default=27)
    parser.add_argument('--per-op', type=int, default=16, help='cases per op (Resize 5x, a few ops 2x)')
    parser.add_argument('--only', default='', help='comma-separated ops (default: all)')
    parser.add_argument('--generate-only', action='store_true', help='write the cases, do not run layerkit')
    args = parser.parse_args()
    start = time.monotonic()
    cases = generate(args.out, args.seed, args.per_op, set(filter(None, args.only.split(','))))
    generated = time.monotonic()
    print(f'op differential: wrote {len(cases)} cases to {args.out} in {generated - start:.1f} s (seed {args.seed}); '
          f'redrawn where onnxruntime and ONNX\'s reference disagree: {DISAGREEMENTS or "none"}')
    if args.generate_only:
        return 0
    status = judge(args.layerkit, args.out, cases)
    print(f'op differential: layerkit took {time.monotonic() - generated:.1f} s')
    return status


if __name__ == '__main__':
    sys.exit(main())
