import Foundation
import LayerKit
import Testing

/// `layerkit run` as a user runs a model of several inputs, of none, and of
/// non-float types: inputs by name in any order, from `.npy` files in their
/// own dtype or `.pb` TensorProtos, outputs written in the model's declared
/// type. The expected outputs are onnxruntime's
/// (Scripts/generate_typed_fixtures.py).
struct TypedRunCommandTests {
    static let fixtures = ModelCommandTests.fixtures.deletingLastPathComponent().appendingPathComponent("typed")

    /// Runs case `name` with its inputs as `--input NAME=FILE` (from
    /// `format`, reversed when `reversed`) on `backend`, writing each output
    /// as `.pb`, and returns the outputs and the reference ones.
    static func run(_ name: String, format: String = "npy", reversed: Bool = false, backend: String = "cpu") throws
        -> (outputs: [TypedTensor], references: [TypedTensor], runner: CommandRunner) {
        let folder = fixtures.appendingPathComponent(name)
        let model = try Model(contentsOf: folder.appendingPathComponent("model.onnx"), computeUnits: .cpuOnly)
        let directory = try CommandRunner.scratchDirectory()
        var arguments = ["run", folder.appendingPathComponent("model.onnx").path, "--backend", backend]
        var inputs = model.inputs.enumerated().map { i, input in
            ["--input", "\(input.name)=" + folder.appendingPathComponent("input_\(i).\(format)").path]
        }
        if reversed { inputs.reverse() }
        arguments += inputs.flatMap { $0 }
        let files = model.outputs.map { "\(directory)/\($0.name).pb" }
        for (output, file) in zip(model.outputs, files) { arguments += ["--output", "\(output.name)=\(file)"] }
        let runner = CommandRunner()
        guard runner.run(arguments) == 0 else { return ([], [], runner) }
        let outputs = try files.map { try TypedTensor(tensorProto: [UInt8](Data(contentsOf: URL(fileURLWithPath: $0))), source: $0) }
        let references = try model.outputs.indices.map { i in
            let file = folder.appendingPathComponent("output_\(i).pb")
            return try TypedTensor(tensorProto: [UInt8](Data(contentsOf: file)), source: file.path)
        }
        return (outputs, references, runner)
    }

    /// `inspect` on a model whose int64 input runs at run time: its plan is
    /// made at load, and the node reading the ids says why it is on the CPU.
    @Test func inspectPlacesNodesOfIntegerValuesOnTheCPU() throws {
        let model = Self.fixtures.appendingPathComponent("gather_index/model.onnx").path
        let runner = CommandRunner()
        #expect(runner.run(["inspect", model, "--backend", "gpu"]) == 0, "\(runner.error)")
        for text in ["i     INT64  2", "Gather_0  Gather  2x2     CPU"] {
            #expect(runner.out.contains(text), "missing \(text) in \(runner.out)")
        }
        #expect(!runner.out.contains("planned per value") && !runner.out.contains("cannot run"))
    }

    /// `inspect` on a model whose int64 input is a reshape target, a value
    /// the plan needs at prepare: it runs (exit 0), planned per value, in
    /// text and JSON; never "cannot run".
    @Test func inspectSaysNodesNeedingAnInputsValueArePlannedPerValue() throws {
        let model = Self.fixtures.appendingPathComponent("reshape_by_input/model.onnx").path
        let runner = CommandRunner()
        #expect(runner.run(["inspect", model, "--backend", "cpu"]) == 0, "\(runner.error)")
        for text in ["shape  INT64  2", "Reshape_0  Reshape  runs, planned per value of 'shape'",
                     "runs: the plan is made from the values of 'shape'"] {
            #expect(runner.out.contains(text), "missing \(text) in \(runner.out)")
        }
        #expect(!runner.out.contains("cannot run"))
        let json = CommandRunner()
        #expect(json.run(["inspect", model, "--json"]) == 0, "\(json.error)")
        let record = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        let nodes = try #require(record["nodes"] as? [[String: Any]])
        #expect(nodes.map { $0["status"] as? String } == ["runs, planned per value of 'shape'"])
    }

    @Test(arguments: ["two_inputs", "gather_index"])
    func severalInputsByNameInEitherOrder(name: String) throws {
        for reversed in [false, true] {
            let (outputs, references, runner) = try Self.run(name, reversed: reversed)
            #expect(runner.error.isEmpty || !runner.error.contains("error"), "\(runner.error)")
            try #require(outputs.count == 1, "\(runner.error)")
            #expect(outputs[0].elementType == .float32 && outputs[0].shape == references[0].shape)
            for (y, reference) in zip(outputs[0].doubles(), references[0].doubles()) {
                #expect(abs(y - reference) <= 1e-6 * max(1, abs(reference)), "\(name): \(y) vs \(reference)")
            }
        }
    }

    @Test func aModelWithoutInputsRunsWithoutInput() throws {
        let (outputs, references, runner) = try Self.run("no_inputs")
        try #require(outputs.count == 1, "\(runner.error)")
        #expect(outputs == references)
    }

    /// int64 past 2^24, bool, uint8, float64 and int32 values come back
    /// exactly, in their type, from `.npy` and `.pb` inputs, on both backends:
    /// computed at run time in their own type (token ids through an
    /// embedding, position ids from a mask, float64 sums float32 would round).
    @Test(arguments: ["npy", "pb"], ["cpu", "gpu"])
    func integerAndBoolValuesKeepTheirType(format: String, backend: String) throws {
        for name in ["int64_add", "int64_identity", "int64_equal", "less_bool", "mixed_types", "token_embedding",
                     "float64_sum", "reshape_by_input"] {
            let (outputs, references, runner) = try Self.run(name, format: format, backend: backend)
            try #require(outputs.count == references.count && !outputs.isEmpty, "\(name): \(runner.error)")
            for (output, reference) in zip(outputs, references) {
                // A GPU stores float values in fp16: those within the parity rule, the rest exactly.
                let agrees = backend == "gpu" && reference.elementType.isFloatingPoint
                    ? output.elementType == reference.elementType && output.shape == reference.shape
                        && zip(output.doubles(), reference.doubles()).allSatisfy { abs($0 - $1) <= 2e-3 * max(1, abs($1)) }
                    : output == reference
                #expect(agrees, "\(name) on \(backend): \(output.doubles()) vs \(reference.doubles())")
            }
        }
    }

    @Test(arguments: ["cpu", "gpu"])
    func float16InAndOut(backend: String) throws {
        let (outputs, references, runner) = try Self.run("float16_relu", backend: backend)
        try #require(outputs.count == 1, "\(runner.error)")
        #expect(outputs[0].elementType == .float16)
        // As numbers: onnxruntime's Relu keeps -0, LayerKit's gives +0; both are right.
        #expect(outputs[0].doubles() == references[0].doubles(), "\(outputs[0].doubles()) vs \(references[0].doubles())")
    }

    /// The errors a user meets: a missing input named with what the model
    /// takes, a file of the wrong dtype with the numpy call that fixes it.
    @Test func missingInputsAndWrongTypesAreNamed() throws {
        let folder = Self.fixtures.appendingPathComponent("int64_add")
        let model = folder.appendingPathComponent("model.onnx").path
        let missing = CommandRunner()
        #expect(missing.run(["run", model, "--input", "a=" + folder.appendingPathComponent("input_0.npy").path]) == 2)
        #expect(missing.error.contains("missing --input for model input 'b' (the model takes a: int64, b: int64"), "\(missing.error)")
        let directory = try CommandRunner.scratchDirectory()
        try writeNPY([1, 2, 3], shape: [3], to: "\(directory)/floats.npy")
        let wrong = CommandRunner()
        #expect(wrong.run(["run", model, "--input", "a=\(directory)/floats.npy",
                           "--input", "b=" + folder.appendingPathComponent("input_1.npy").path]) == 2)
        #expect(wrong.error.contains("holds float32 values; model input 'a' is int64 (save it with a.astype(np.int64))"),
                "\(wrong.error)")
    }

    /// `run` on a model whose node reads a type its ONNX schema does not
    /// allow (Add of float32 and int64: Add's inputs share type T) exits 1
    /// with the load-time error naming the node, its inputs and their types,
    /// as onnxruntime refuses the model; the same model with a float32
    /// constant runs.
    @Test func aNodeOfTypesItsSchemaDoesNotAllowIsRefused() throws {
        let directory = try CommandRunner.scratchDirectory()
        try writeNPY([1, 2], shape: [2], to: "\(directory)/x.npy")
        for (type, expected) in [(UInt64(7), Int32(1)), (1, 0)] {
            let path = "\(directory)/add\(type).onnx"
            try TinyONNX.chain([TinyONNX.Node(opType: "Add", constants: ["b": [1]], constantType: type)], shape: [2])
                .write(to: URL(fileURLWithPath: path))
            let runner = CommandRunner()
            #expect(runner.run(["run", path, "--input", "\(directory)/x.npy", "--output", "\(directory)/y.npy",
                                "--backend", "cpu"]) == expected, "\(runner.error)")
            guard expected != 0 else { continue }
            #expect(runner.error.contains("node 'node0' (Add): input 0 ('x') is float32 and input 1 ('b') is int64, "
                                          + "but Add at opset 17 (its version 14) takes one type for both (type T) "
                                          + "(onnxruntime refuses it too)"), "\(runner.error)")
        }
    }
}
