"""Checks an updatable Core ML model that `layerkit train` wrote back, with coremltools.

    python Scripts/check_updated_mlmodel.py ORIGINAL.mlmodel UPDATED.mlmodel [--expected PREFIX]

coremltools loads UPDATED (`coremltools.utils.load_spec`, and `MLModel(..., skip_model_load=True)`,
which validates the specification without running it: Core ML itself does not run on Linux), and:

- with the weights of every updatable layer (`isUpdatable` on the layer and its `WeightParams`)
  cleared in both, the two specifications are equal: nothing else changed (the description, the
  update parameters, the frozen weights, every other field);
- every updatable weight keeps its encoding (float32 `floatValue`, or float16 `float16Value`) and
  its count, and the files have the same length (LayerKit patches values in place);
- with --expected PREFIX, each updatable weight equals numpy's float64 reference `PREFIX-trained-
  OUTPUT.weights.npy` / `.bias.npy` (the names LayerKit gives them: the layer's output blob, then
  `.weights` or `.bias`) within 1e-5 relative, or within half a float16 step for float16 weights.

The fixtures' references come from Scripts/generate_coreml_fixtures.py; e.g.

    layerkit train Tests/LayerKitTests/Fixtures/coreml/UpdatableRegressor.mlmodel \\
        --data Tests/LayerKitTests/Fixtures/coreml/UpdatableRegressor-data.npy \\
        --labels Tests/LayerKitTests/Fixtures/coreml/UpdatableRegressor-labels.npy --output /tmp/updated.mlmodel
    python Scripts/check_updated_mlmodel.py Tests/LayerKitTests/Fixtures/coreml/UpdatableRegressor.mlmodel \\
        /tmp/updated.mlmodel --expected Tests/LayerKitTests/Fixtures/coreml/UpdatableRegressor

Exits 1 naming the first difference. Needs a Python with coremltools and numpy.
"""
import argparse
import os
import sys

import numpy as np
import coremltools
from coremltools.proto import NeuralNetwork_pb2


def network(spec):
    kind = spec.WhichOneof('Type')
    if kind not in ('neuralNetwork', 'neuralNetworkClassifier', 'neuralNetworkRegressor'):
        sys.exit(f'not a neural network: {kind}')
    return getattr(spec, kind)


def updatable_weights(spec):
    """(layer, field name, WeightParams) of every updatable weight, in layer order."""
    found = []
    for layer in network(spec).layers:
        if not layer.isUpdatable:
            continue
        params = getattr(layer, layer.WhichOneof('layer'))
        for field in params.DESCRIPTOR.fields:
            value = getattr(params, field.name)
            if isinstance(value, NeuralNetwork_pb2.WeightParams) and value.isUpdatable:
                found.append((layer, field.name, value))
    return found


def values(weights):
    if len(weights.float16Value):
        return np.frombuffer(weights.float16Value, dtype='<f2').astype(np.float64), True
    return np.array(weights.floatValue, dtype=np.float64), False


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('original')
    parser.add_argument('updated')
    parser.add_argument('--expected', help='PREFIX of the reference weights, PREFIX-trained-NAME.npy')
    args = parser.parse_args()

    if os.path.getsize(args.original) != os.path.getsize(args.updated):
        sys.exit(f'{args.updated}: {os.path.getsize(args.updated)} bytes, the original has '
                 f'{os.path.getsize(args.original)}')
    coremltools.models.MLModel(args.updated, skip_model_load=True)
    original, updated = coremltools.utils.load_spec(args.original), coremltools.utils.load_spec(args.updated)
    before, after = updatable_weights(original), updatable_weights(updated)
    if [(l.name, f) for l, f, _ in before] != [(l.name, f) for l, f, _ in after]:
        sys.exit('the updatable weights differ in name or number')
    if not after:
        sys.exit('the model has no updatable weight')
    for (layer, field, old), (_, _, new) in zip(before, after):
        (old_values, old_half), (new_values, new_half) = values(old), values(new)
        name = f"{layer.output[0]}.{'weights' if field == 'weights' else field}"
        if old_half != new_half or old_values.shape != new_values.shape:
            sys.exit(f'{name}: the encoding or count changed')
        changed = int((old_values != new_values).sum())
        print(f'{name}: {new_values.size} {"float16" if new_half else "float32"} values, {changed} changed')
        if args.expected:
            reference = np.load(f'{args.expected}-trained-{name}.npy').reshape(-1)
            if new_half:
                # Half a float16 step of the reference's magnitude, and float32 training's own difference.
                limit = np.abs(reference.astype(np.float16).astype(np.float64)) * 2.0 ** -11 + 1e-5
            else:
                limit = 1e-5 * np.maximum(0.1, np.abs(reference))
            worst = np.abs(new_values - reference) - limit
            if worst.max() > 0:
                i = int(worst.argmax())
                sys.exit(f'{name}[{i}] is {new_values[i]}, numpy computed {reference[i]}')
        old.Clear()
        new.Clear()
    if original != updated:
        sys.exit('the specifications differ beyond the updatable weights')
    print(f'{args.updated}: coremltools loads it; only the {len(after)} updatable weights differ from {args.original}')


if __name__ == '__main__':
    main()
