#!/usr/bin/env python3
"""Writes the onnx package's backend *node* tests to disk.

The onnx 1.23 wheel no longer ships onnx/backend/test/data/node; the 1,884
one-node cases are built in memory by onnx.backend.test.loader. This writes
each in the backend-test layout that `layerkit conformance` and
Scripts/node_tests.py read:

    OUT/<test_name>/model.onnx
    OUT/<test_name>/test_data_set_<k>/input_<i>.pb, output_<i>.pb

Each .pb is a TensorProto named after the graph input or output it belongs
to. A sequence, optional or map input or output is written as onnx's own
tool writes it (SequenceProto, OptionalProto, MapProto), which `layerkit run`
reads and writes for sequences and optionals; a case with a map input or
output is listed in OUT/skipped.txt ("test_name<TAB>why"), which the runner
counts as a LayerKit failure rather than dropping it.

Usage: python Scripts/generate_node_tests.py --out .build/onnx-node-tests-1.23.2
The same onnx version writes the same bytes (onnx seeds numpy for every
case). Writing goes to OUT.partial, renamed to OUT at the end, so an
interrupted run never leaves a half-written OUT behind.
"""
import argparse
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.loader import load_model_tests


# 2: sequences and optionals are no longer skipped.
FORMAT = 2


def not_readable(graph):
    """Why layerkit cannot be given the case's values, or None: tensors, sequences and optionals are
    read (TensorProto, SequenceProto, OptionalProto files); a map input or output is not."""
    for kind, values in (("input", graph.input), ("output", graph.output)):
        for value in values:
            if value.type.WhichOneof("value") == "map_type":
                return f"{kind} '{value.name}' is a map"
    return None


def serialize(value, info):
    """The bytes of one input or output, named after its graph value `info`."""
    which = info.type.WhichOneof("value")
    if which == "sequence_type":
        return numpy_helper.from_list(value, info.name).SerializeToString()
    if which == "optional_type":
        return numpy_helper.from_optional(value, info.name).SerializeToString()
    if which == "map_type":
        return numpy_helper.from_dict(value, info.name).SerializeToString()
    if isinstance(value, onnx.TensorProto):
        # Types numpy has no dtype for (float4, int4, ...) come as TensorProtos already.
        tensor = onnx.TensorProto()
        tensor.CopyFrom(value)
        tensor.name = info.name
        return tensor.SerializeToString()
    # np.asarray: some references are numpy scalars (0-d outputs).
    return numpy_helper.from_array(np.asarray(value), info.name).SerializeToString()


def write_case(case, folder):
    os.makedirs(folder)
    with open(os.path.join(folder, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for k, (inputs, outputs) in enumerate(case.data_sets):
        data_set = os.path.join(folder, f"test_data_set_{k}")
        os.makedirs(data_set)
        for prefix, values, infos in (("input", inputs, graph.input), ("output", outputs, graph.output)):
            for i, (value, info) in enumerate(zip(values, infos, strict=True)):
                with open(os.path.join(data_set, f"{prefix}_{i}.pb"), "wb") as f:
                    f.write(serialize(value, info))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="the folder to write (replaced if present)")
    args = parser.parse_args()
    out = args.out.rstrip("/")
    partial = out + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    # Building the cases casts NaN and inf to integers on purpose; numpy warns.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = sorted(load_model_tests(kind="node"), key=lambda case: case.name)
    skipped = []
    for case in cases:
        write_case(case, os.path.join(partial, case.name))
        why = not_readable(case.model.graph)
        if why:
            skipped.append(f"{case.name}\t{why}\n")
    with open(os.path.join(partial, "skipped.txt"), "w") as f:
        f.writelines(skipped)
    # The layout's version: Scripts/node-conformance rewrites a folder of an older one.
    with open(os.path.join(partial, "format"), "w") as f:
        f.write(f"{FORMAT}\n")
    shutil.rmtree(out, ignore_errors=True)
    os.rename(partial, out)
    print(f"{out}: {len(cases)} node cases ({onnx.__version__}), {len(skipped)} with maps (skipped.txt)")


if __name__ == "__main__":
    sys.exit(main())
