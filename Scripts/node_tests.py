#!/usr/bin/env python3
"""Runs the onnx package's backend node tests through the `layerkit` command line.

Every case written by Scripts/generate_node_tests.py runs as a user would
run it, one process per case and data set:

    layerkit run CASE/model.onnx --backend cpu|gpu \\
        --input NAME=CASE/test_data_set_0/input_0.pb ... \\
        --output NAME=TMP/out_0.pb ...

(one --input per graph input, in order, NAME the graph input's name; one
--output per graph output), then each output file (a TensorProto, or .npy) is
held to the reference:

    dtype   exactly the reference's ("dtype float32, reference int64" fails)
    shape   equal
    values  integers, bools and strings exactly; floats on the CPU within
            |y - ref| <= 1e-5 + 1e-3 |ref|, on the GPU within
            |y - ref| <= 2e-3 max(1, |ref|); NaN equals NaN

A case fails with a one-line cause: the first line of layerkit's stderr, the
comparison that failed, "timed out" or "crash (signal ...)". The cases in
skipped.txt (map values, which layerkit does not read or write as .pb)
fail without a run. --ort runs onnxruntime (CPUExecutionProvider, in this
process) on every case with the CPU tolerance, for comparison.

    Scripts/node_tests.py DIR --layerkit .build/debug/layerkit --backend both \\
        --expect Tests/Conformance/node-expected.txt [--ort] [--results r.json] [--markdown]

--expect FILE: exit status 1 when a listed "test_name cpu|gpu" fails (each is
named); passes missing from the list are printed. --write-expect FILE
rewrites the list from this run (entries of cases or backends not run are kept).
"""
import argparse
import collections
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

CPU_RTOL, CPU_ATOL = 1e-3, 1e-5
GPU_TOLERANCE = 2e-3
ORT_LABEL = "onnxruntime"


class Case:
    def __init__(self, root, name, skipped):
        self.name = name
        self.folder = os.path.join(root, name)
        self.model = os.path.join(self.folder, "model.onnx")
        graph = onnx.load(self.model, load_external_data=False).graph
        self.inputs, self.outputs = list(graph.input), list(graph.output)
        self.data_sets = sorted(
            os.path.join(self.folder, d) for d in os.listdir(self.folder) if d.startswith("test_data_set_")
        )
        self.skipped = skipped  # why layerkit cannot be given this case's values, or None


def load_cases(root, substring):
    skipped = {}
    path = os.path.join(root, "skipped.txt")
    if os.path.exists(path):
        with open(path) as f:
            skipped = dict(line.rstrip("\n").split("\t", 1) for line in f if line.strip())
    names = sorted(
        d for d in os.listdir(root) if substring in d and os.path.isfile(os.path.join(root, d, "model.onnx"))
    )
    return [Case(root, name, skipped.get(name)) for name in names]


def read_file(path, info=None):
    """A value from a .pb (TensorProto, or per `info` a SequenceProto/OptionalProto) or a .npy file."""
    with open(path, "rb") as f:
        data = f.read()
    if data.startswith(b"\x93NUMPY"):
        return np.load(path, allow_pickle=False)
    which = info.type.WhichOneof("value") if info is not None else "tensor_type"
    if which == "sequence_type":
        proto = onnx.SequenceProto()
        proto.ParseFromString(data)
        return numpy_helper.to_list(proto)
    if which == "optional_type":
        proto = onnx.OptionalProto()
        proto.ParseFromString(data)
        return numpy_helper.to_optional(proto)
    tensor = onnx.TensorProto()
    tensor.ParseFromString(data)
    return numpy_helper.to_array(tensor)


def compare(y, ref, backend):
    """None when y meets the reference, else why not (one line)."""
    # Sequences (lists) element by element; an empty optional is None.
    if isinstance(ref, list):
        if not isinstance(y, list) or len(y) != len(ref):
            return f"a sequence of {len(ref)} tensors was expected"
        return next(filter(None, (compare(a, b, backend) for a, b in zip(y, ref))), None)
    if ref is None:
        return None if y is None else "an empty optional was expected"
    y, ref = np.asarray(y), np.asarray(ref)
    if y.dtype != ref.dtype:
        return f"dtype {y.dtype}, reference {ref.dtype}"
    if y.shape != ref.shape:
        return f"shape {list(y.shape)}, reference {list(ref.shape)}"
    if ref.dtype.kind in "biuOSU" or ref.dtype.name.startswith(("int", "uint")):
        bad = y != ref
        return f"values differ at {int(np.sum(bad))}/{ref.size} elements (exact)" if np.any(bad) else None
    # float16/32/64, bfloat16, float8, complex: compare in float64 (complex128).
    wide = np.complex128 if ref.dtype.kind == "c" else np.float64
    a, b = y.astype(wide), ref.astype(wide)
    if backend == "gpu":
        tolerance = GPU_TOLERANCE * np.maximum(1.0, np.abs(b))
    else:
        tolerance = CPU_ATOL + CPU_RTOL * np.abs(b)
    # An infinity passes only by equality (inf <= 1e-3 * inf would let -inf match inf).
    with np.errstate(invalid="ignore"):
        difference = np.abs(a - b)
        ok = (a == b) | (np.isnan(a) & np.isnan(b)) | (np.isfinite(difference) & (difference <= tolerance))
    if np.all(ok):
        return None
    worst = np.unravel_index(np.argmax(np.where(ok, 0, np.nan_to_num(difference, nan=np.inf))), a.shape)
    return (
        f"values differ at {int(np.sum(~ok))}/{ref.size} elements "
        f"(e.g. at {list(map(int, worst))}: {a[worst]:.7g}, reference {b[worst]:.7g})"
    )


def first_line(stderr):
    """The error's line of layerkit's stderr ("layerkit: error: ..."), else its first line, prefixes cut.

    Notices ("layerkit: input 'x' is read at prepare ...") can come before the error."""
    lines = [line.strip() for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    line = next((line for line in lines if line.startswith(("layerkit: error: ", "error: "))), lines[0] if lines else "")
    for prefix in ("layerkit: ", "error: "):
        line = line.removeprefix(prefix)
    return line


def run_layerkit(layerkit, case, backend, timeout):
    """None when every data set passes on `backend`, else the first failure's cause."""
    if case.skipped:
        return f"not run: {case.skipped}"
    scratch = tempfile.mkdtemp(prefix=f"{case.name}-{backend}-")
    try:
        for data_set in case.data_sets:
            command = [layerkit, "run", case.model, "--backend", backend]
            for i, info in enumerate(case.inputs):
                command += ["--input", f"{info.name}={data_set}/input_{i}.pb"]
            results = [os.path.join(scratch, f"out_{i}.pb") for i in range(len(case.outputs))]
            for info, path in zip(case.outputs, results):
                command += ["--output", f"{info.name}={path}"]
            try:
                process = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
            except subprocess.TimeoutExpired:
                return f"timed out (over {timeout:g} s)"
            if process.returncode < 0:
                name = signal.Signals(-process.returncode).name
                return f"crash (signal {name}) {first_line(process.stderr)}".strip()
            if process.returncode != 0:
                return first_line(process.stderr) or f"exit status {process.returncode} without a message"
            for i, (info, path) in enumerate(zip(case.outputs, results)):
                if not os.path.exists(path):
                    return f"output '{info.name}': no file written"
                try:
                    y = read_file(path, info)
                except Exception as error:  # an unreadable file is LayerKit's failure, not the runner's
                    return f"output '{info.name}': unreadable ({type(error).__name__}: {error})"
                cause = compare(y, read_file(f"{data_set}/output_{i}.pb", info), backend)
                if cause:
                    return f"output '{info.name}': {cause}"
        return None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_ort(case):
    """The same judgement for onnxruntime, in this process, with the CPU tolerance."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1  # the cases run --jobs at a time already
    options.log_severity_level = 4  # its errors become causes; its log would bury the progress
    try:
        session = onnxruntime.InferenceSession(case.model, options, providers=["CPUExecutionProvider"])
        for data_set in case.data_sets:
            feeds = {
                info.name: read_file(f"{data_set}/input_{i}.pb", info) for i, info in enumerate(case.inputs)
            }
            outputs = session.run([info.name for info in case.outputs], feeds)
            for i, (info, y) in enumerate(zip(case.outputs, outputs)):
                cause = compare(y, read_file(f"{data_set}/output_{i}.pb", info), "cpu")
                if cause:
                    return f"output '{info.name}': {cause}"
    except Exception as error:
        return first_line(str(error).encode()) or type(error).__name__
    return None


def cause_class(cause):
    """The histogram's class of a failure: similar causes of different cases share one."""
    if m := re.search(r"op '([^']+)' is not supported|custom layer implementation for op type '([^']+)'", cause):
        return f"missing op {m.group(1) or m.group(2)}"
    if m := re.search(r"dtype (\S+), reference (\S+)", cause):
        return f"dtype mismatch (reference {m.group(2)})"
    if m := re.search(r"input '[^']*' is ([A-Z0-9_]+); LayerKit runs", cause):
        return f"input dtype {m.group(1)} refused"
    for pattern, label in (
        (r"^not run: .* is an? (\w+), not a tensor", "not a tensor: {}"),
        (r"\.(\w+): unknown (input|output) type", "--{1} .{0} file not accepted"),
        (r"is computed by the graph; LayerKit needs it as an initializer|must be an initializer|must be known at load",
         "an input must be a constant (initializer)"),
        (r"is a graph \(subgraphs of If, Loop, Scan\)", "subgraph attribute (If, Loop, Scan)"),
        (r"Cast to (\w+) is not supported", "Cast to {} refused"),
        (r"^missing --input$", "missing --input (the model has no inputs)"),
        (r"^timed out", "timed out"),
        (r"^crash \(signal (\w+)\)", "crash ({})"),
        (r": shape \[", "shape mismatch"),
        (r": values differ", "values differ"),
        # onnxruntime's own failures (--ort):
        (r"^Numpy_type \d+ can't be converted|^No corresponding Numpy type",
         "onnxruntime's Python API has no numpy type for it (bfloat16, float8, int4, ...)"),
        (r"(?:implementation|kernel) for \w+\(|:\w+\(-?\d+\) is not a registered",
         "no onnxruntime kernel (for the op, its type or its opset)"),
    ):
        if m := re.search(pattern, cause):
            return label.format(*filter(None, m.groups()))
    # Other messages: names, paths and numbers blanked so one message per kind remains.
    cause = re.sub(r"'[^']*'", "'…'", cause)
    cause = re.sub(r"\S*/\S+", "FILE", cause)
    return "other: " + re.sub(r"(?<![\w.])\d+(\.\d+)?\b", "N", cause)[:120]


def read_expect(path):
    with open(path) as f:
        return {tuple(line.split()) for line in f if line.strip() and not line.startswith("#")}


def write_expect(path, results, ran):
    header = (
        "# ONNX node tests that pass through `layerkit run` (Scripts/node_tests.py --expect: a listed\n"
        "# case that fails is exit status 1). Regenerate from a full run on both backends:\n"
        "#   Scripts/node-conformance --write-expect Tests/Conformance/node-expected.txt\n"
    )
    kept = {entry for entry in (read_expect(path) if os.path.exists(path) else set()) if entry not in ran}
    passes = {(name, backend) for (name, backend), cause in results.items() if cause is None and backend != ORT_LABEL}
    with open(path, "w") as f:
        f.write(header + "".join(f"{name} {backend}\n" for name, backend in sorted(kept | passes)))
    print(f"wrote {path}: {len(kept | passes)} entries")


def summarize(cases, results, columns, markdown, top):
    labels = {"cpu": "LayerKit CPU", "gpu": "LayerKit GPU", ORT_LABEL: "onnxruntime 1.32"}
    passed = {c: sum(results[(case.name, c)] is None for case in cases) for c in columns}
    # Failures per class and column; every missing op is also counted in one class of its own,
    # so the histogram shows what missing ops weigh together and the op list which ones.
    histogram = {c: collections.Counter() for c in columns}
    missing = collections.defaultdict(set)  # op -> the cases LayerKit refused for it
    for (name, column), cause in results.items():
        if cause is not None:
            kind = cause_class(cause)
            if kind.startswith("missing op "):
                missing[kind.removeprefix("missing op ")].add(name)
                kind = "missing op (any)"
            histogram[column][kind] += 1
    missing = collections.Counter({op: len(names) for op, names in missing.items()})
    rows = [kind for kind, _ in sum(histogram.values(), collections.Counter()).most_common()]
    missing_note = f"missing ops ({len(missing)}, with the cases each fails)"
    if markdown:
        print("| | passed |\n|---|---|")
        for c in columns:
            print(f"| {labels[c]} | {passed[c]}/{len(cases)} |")
        print("\n| failure cause | " + " | ".join(labels[c] for c in columns) + " |")
        print("|---|" + "---:|" * len(columns))
        for kind in rows[:top]:
            print(f"| {kind.replace('|', '/')} | " + " | ".join(str(histogram[c][kind]) for c in columns) + " |")
        if len(rows) > top:
            rest = rows[top:]
            print(f"| {len(rest)} other causes | " + " | ".join(str(sum(histogram[c][k] for k in rest)) for c in columns) + " |")
        if missing:
            print(f"\n{missing_note.capitalize()}: " + ", ".join(f"{op} {n}" for op, n in missing.most_common()))
        return
    print("passed: " + ", ".join(f"{labels[c]} {passed[c]}/{len(cases)}" for c in columns))
    if rows:
        print("failures by cause (" + " / ".join(labels[c] for c in columns) + "):")
    for kind in rows[:top]:
        print("  " + " / ".join(f"{histogram[c][kind]:5d}" for c in columns) + f"  {kind}")
    if len(rows) > top:
        print(f"  ... {len(rows) - top} more (--top N; --results FILE has every case's cause)")
    if missing:
        print(f"top {missing_note}: " + ", ".join(f"{op} {n}" for op, n in missing.most_common(top)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cases", help="the folder Scripts/generate_node_tests.py wrote")
    parser.add_argument("--layerkit", default=".build/debug/layerkit", help="the layerkit binary")
    parser.add_argument("--backend", choices=["cpu", "gpu", "both"], default="cpu")
    parser.add_argument("--ort", action="store_true", help="also run onnxruntime, in process")
    parser.add_argument("--jobs", type=int, default=os.cpu_count(), help="cases at a time (default: the CPUs)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds a case may run (default 60)")
    parser.add_argument("--filter", default="", metavar="SUBSTRING", help="only cases whose name holds SUBSTRING")
    parser.add_argument("--results", metavar="FILE", help="write every case's result per backend as JSON")
    parser.add_argument("--expect", metavar="FILE", help="the regression list: a listed pass that fails is exit status 1")
    parser.add_argument("--write-expect", metavar="FILE", help="rewrite this list from the run's passes")
    parser.add_argument("--markdown", action="store_true", help="print the summary as Markdown tables")
    parser.add_argument("--top", type=int, default=15, help="causes and missing ops printed (default 15)")
    args = parser.parse_args()

    cases = load_cases(args.cases, args.filter)
    if not cases:
        sys.exit(f"node_tests.py: no case in {args.cases} matches '{args.filter}'")
    layerkit = os.path.abspath(args.layerkit)
    backends = ["cpu", "gpu"] if args.backend == "both" else [args.backend]
    columns = backends + ([ORT_LABEL] if args.ort else [])
    tasks = [(case, column) for case in cases for column in columns]
    results, started = {}, time.monotonic()
    elapsed = {c: 0.0 for c in columns}  # summed seconds per column, to see where time goes

    def work(case, column):
        begin = time.monotonic()
        cause = run_ort(case) if column == ORT_LABEL else run_layerkit(layerkit, case, column, args.timeout)
        return case, column, cause, time.monotonic() - begin

    tty = sys.stderr.isatty()  # progress goes to stderr: stdout keeps the summary (--markdown's tables)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for done, future in enumerate(concurrent.futures.as_completed([pool.submit(work, *t) for t in tasks]), 1):
            case, column, cause, seconds = future.result()
            results[(case.name, column)] = cause
            elapsed[column] += seconds
            if tty or done % 250 == 0 or done == len(tasks):
                failed = sum(c is not None for c in results.values())
                line = f"[{done}/{len(tasks)}] {done - failed} passed, {failed} failed, {time.monotonic() - started:.0f} s"
                print(("\r" + line) if tty else line, end="\n" if done == len(tasks) or not tty else "",
                      file=sys.stderr, flush=True)
    print(f"wall {time.monotonic() - started:.0f} s with --jobs {args.jobs}; summed per case: "
          + ", ".join(f"{c} {elapsed[c]:.0f} s ({1000 * elapsed[c] / len(cases):.0f} ms a case)" for c in columns), file=sys.stderr)

    if args.results:
        with open(args.results, "w") as f:
            json.dump({case.name: {c: {"pass": results[(case.name, c)] is None, "cause": results[(case.name, c)]}
                                   for c in columns} for case in cases}, f, indent=1, sort_keys=True)
    summarize(cases, results, columns, args.markdown, args.top)

    status = 0
    ran = set(results)
    if args.expect:
        names = {case.name for case in cases}
        listed = {(n, b) for n, b in read_expect(args.expect) if b in backends and args.filter in n}
        broken = sorted((n, b, results.get((n, b), "no such case") if n in names else "no such case")
                        for n, b in listed if (n, b) not in ran or results[(n, b)] is not None)
        for name, backend, cause in broken:
            print(f"REGRESSION: {name} {backend} is listed in {args.expect} but failed: {cause}")
        new = sorted(k for k in ran if k[1] != ORT_LABEL and results[k] is None and k not in listed)
        if new:
            print(f"{len(new)} passes not in {args.expect}: " + ", ".join(f"{n} {b}" for n, b in new[:20])
                  + (" ..." if len(new) > 20 else ""))
            print(f"  update the list: --write-expect {args.expect} (Scripts/node-conformance --write-expect {args.expect})")
        print(f"{args.expect}: {len(listed) - len(broken)}/{len(listed)} listed passes held")
        status = 1 if broken else 0
    if args.write_expect:
        write_expect(args.write_expect, results, ran)
    return status


if __name__ == "__main__":
    sys.exit(main())
