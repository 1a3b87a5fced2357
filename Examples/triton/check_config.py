"""Checks Examples/triton's model repository the way Triton would read it,
without Triton (it needs Docker): each config.pbtxt parsed with tritonclient's
model_config_pb2 (an unknown or misspelt field is an error), its fields
compared with the model's ONNX file, the committed model compared with the
one make_model.py builds, and, given --ort-library, the model run through
onnxruntime with LayerKit's op library registered (what Triton's onnxruntime
backend does with model_operations) against numpy float64.

    python Examples/triton/check_config.py [--ort-library PATH/liblayerkit_ort.so]

Exit status 0 when every check passes, 1 otherwise.
"""

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

import make_model

REPOSITORY = Path(__file__).resolve().parent / "model_repository"
OP_LIBRARY = "liblayerkit_ort.so"
# ONNX element types -> Triton data types, for the types these models use.
TRITON_TYPES = {onnx.TensorProto.FLOAT: model_config_pb2.TYPE_FP32,
                onnx.TensorProto.FLOAT16: model_config_pb2.TYPE_FP16,
                onnx.TensorProto.INT64: model_config_pb2.TYPE_INT64}


def onnx_dims(value: onnx.ValueInfoProto) -> list:
    """A tensor's dimensions: ints, or None where the dimension is symbolic."""
    return [d.dim_value if d.HasField("dim_value") else None for d in value.type.tensor_type.shape.dim]


def check_tensors(kind: str, configured, declared, max_batch_size: int) -> list:
    """Problems between a config's inputs or outputs and the model's."""
    problems = []
    by_name = {t.name: t for t in configured}
    if set(by_name) != {v.name for v in declared}:
        return [f"{kind}s {sorted(by_name)} in config.pbtxt, {sorted(v.name for v in declared)} in the model"]
    for value in declared:
        tensor = by_name[value.name]
        if TRITON_TYPES.get(value.type.tensor_type.elem_type) != tensor.data_type:
            problems.append(f"{kind} {value.name}: config type {model_config_pb2.DataType.Name(tensor.data_type)}, "
                            f"model type {onnx.TensorProto.DataType.Name(value.type.tensor_type.elem_type)}")
        dims = onnx_dims(value)
        if max_batch_size > 0:
            # Triton adds the batch dimension, which the model must leave open.
            if not dims or dims[0] is not None:
                problems.append(f"{kind} {value.name}: max_batch_size > 0 needs a symbolic first dimension, model has {dims}")
            dims = dims[1:]
        if [-1 if d is None else d for d in dims] != list(tensor.dims):
            problems.append(f"{kind} {value.name}: config dims {list(tensor.dims)}, model dims {dims}")
    return problems


def check_model_directory(directory: Path) -> tuple[list, model_config_pb2.ModelConfig]:
    """Problems in one model's config.pbtxt and version folders."""
    config = text_format.Parse((directory / "config.pbtxt").read_text(), model_config_pb2.ModelConfig())
    problems = []
    if config.name != directory.name:
        problems.append(f"name {config.name!r} is not the folder's, {directory.name!r}")
    if config.backend != "onnxruntime":
        problems.append(f"backend {config.backend!r}, want 'onnxruntime'")
    libraries = list(config.model_operations.op_library_filename)
    if len(libraries) != 1 or not libraries[0].startswith("/") or Path(libraries[0]).name != OP_LIBRARY:
        problems.append(f"model_operations.op_library_filename {libraries}: want one absolute path to {OP_LIBRARY}")
    if any(group.kind != model_config_pb2.ModelInstanceGroup.KIND_CPU for group in config.instance_group):
        problems.append("an instance group is not KIND_CPU (LayerKit's ops are registered on the CPU provider)")
    versions = sorted(p for p in directory.iterdir() if p.is_dir() and p.name.isdigit())
    if not versions:
        problems.append("no numbered version folder")
    for version in versions:
        model_file = version / (config.default_model_filename or "model.onnx")
        if not model_file.is_file():
            problems.append(f"{model_file.relative_to(REPOSITORY)} is missing")
            continue
        model = onnx.load(str(model_file))
        onnx.checker.check_model(model)
        if not any(node.domain == "layerkit" for node in model.graph.node):
            problems.append(f"{model_file.name} has no layerkit node")
        if not any(opset.domain == "layerkit" for opset in model.opset_import):
            problems.append(f"{model_file.name} imports no layerkit opset")
        initializers = {i.name for i in model.graph.initializer}
        inputs = [v for v in model.graph.input if v.name not in initializers]
        problems += check_tensors("input", config.input, inputs, config.max_batch_size)
        problems += check_tensors("output", config.output, model.graph.output, config.max_batch_size)
    return problems, config


def reference(x: np.ndarray) -> np.ndarray:
    """make_model's network in numpy float64."""
    weights = {t.name: onnx.numpy_helper.to_array(t).astype(np.float64) for t in make_model.build_model().graph.initializer}
    hidden = x.astype(np.float64) @ weights["w1"] + weights["b1"]
    activated = hidden / (1 + np.exp(-make_model.BETA * hidden))
    return activated @ weights["w2"] + weights["b2"]


def run_with_library(library: Path, model_file: Path) -> list:
    """Runs the model through onnxruntime with the op library registered."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.register_custom_ops_library(str(library))
    session = onnxruntime.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(5).uniform(-4, 4, size=(8, make_model.FEATURES)).astype(np.float32)
    (y,) = session.run(["y"], {"x": x})
    error = float(np.max(np.abs(y - reference(x))))
    print(f"onnxruntime {onnxruntime.__version__} with {library.name}: batch 8, max |y - float64| = {error:.3e}")
    return [] if error <= 1e-5 else [f"max error {error:.3e} over 1e-5"]


def main() -> int:
    parser = argparse.ArgumentParser(description="Check the Triton example's model repository.")
    parser.add_argument("--ort-library", type=Path, help=f"{OP_LIBRARY} to run the model with")
    args = parser.parse_args()

    failures = []
    models = sorted(p for p in REPOSITORY.iterdir() if (p / "config.pbtxt").is_file())
    for directory in models:
        try:
            problems, config = check_model_directory(directory)
        except text_format.ParseError as error:
            failures.append(f"{directory.name}/config.pbtxt: {error}")
            continue
        failures += [f"{directory.name}: {p}" for p in problems]
        print(f"{directory.name}: backend {config.backend}, op library "
              f"{', '.join(config.model_operations.op_library_filename)}, "
              f"{len(config.input)} input(s), {len(config.output)} output(s): {'ok' if not problems else 'FAIL'}")
    if not models:
        failures.append(f"no config.pbtxt under {REPOSITORY}")
    if make_model.MODEL_PATH.read_bytes() != make_model.build_model().SerializeToString():
        failures.append(f"{make_model.MODEL_PATH.relative_to(REPOSITORY)} differs from make_model.py's model (rerun it)")
    if args.ort_library:
        failures += run_with_library(args.ort_library, make_model.MODEL_PATH)
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
