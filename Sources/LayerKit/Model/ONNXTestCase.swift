import LayerKitONNX
import Foundation

/// A test in the onnx package's backend-test layout: a folder holding
/// `model.onnx` and one or more `test_data_set_<k>/` folders of
/// `input_<i>.pb` and `output_<i>.pb` (serialized `TensorProto`s, inputs in
/// the order of the model's inputs). The onnx wheel ships hundreds of them
/// (`onnx/backend/test/data/`); LayerKit's own reference cases use the same
/// layout, so one reader runs both.
public struct ONNXTestCase: Sendable {
    /// The folder's name (`test_Conv2d`).
    public let name: String
    /// The folder.
    public let folder: URL

    /// The case in `folder`.
    public init(folder: URL) {
        self.folder = folder
        name = folder.lastPathComponent
    }

    /// Every case directly inside `folder` (sub-folders holding a
    /// `model.onnx`), by name.
    public static func cases(in folder: URL) throws -> [ONNXTestCase] {
        let entries: [URL]
        do {
            entries = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        } catch {
            throw LayerKitError.file("cannot list \(folder.path): \(error.localizedDescription)")
        }
        return entries.filter { FileManager.default.fileExists(atPath: $0.appendingPathComponent("model.onnx").path) }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
            .map(ONNXTestCase.init(folder:))
    }

    /// How one run of a case ended.
    public struct Outcome: Sendable {
        /// Whether every output of every data set was within tolerance.
        public let passed: Bool
        /// Why it failed (the first failure), or a summary when it passed.
        public let message: String
        /// The largest error seen, in the tolerance's own measure (≤ 1 passes).
        public let worstRatio: Double
        /// The model's nodes that do work, and how many of them ran on the GPU.
        public let nodes: Int
        public let gpuNodes: Int
    }

    /// Runs every data set on `backend` and compares with the stored outputs.
    ///
    /// On a CPU backend the outputs must be within ONNX's own backend-test
    /// tolerance of the stored ones (`|y - ref| <= 1e-7 + 1e-3 |ref|`, as
    /// `numpy.testing.assert_allclose` with rtol 1e-3, atol 1e-7). With
    /// `gpuParityAgainst`, a CPU backend, the case runs on `backend` and on
    /// that CPU backend from the same fp16-rounded inputs, and must meet the
    /// parity rule `|gpu - cpu| <= 1e-3 max(1, |cpu|)`: the GPU stores fp16,
    /// so it is held to the CPU reading what it reads.
    ///
    /// A whole model is a long chain of fp16 stores, so the per-layer rule
    /// does not bound it: a case folder may hold `tolerance.json` with
    /// `{"gpu": x}`, and then the GPU run is compared with the stored outputs
    /// instead, `|gpu - ref| <= x max(1, |ref|)`, where x is twice the error
    /// onnxruntime itself shows on the same graph with every node output
    /// rounded to fp16 (its "fp16 twin"; Scripts/model_zoo_common.py writes it).
    /// A `"cpu": y` there holds the CPU to `|y - ref| <= y max(1, |ref|)`.
    public func run(on backend: Backend, gpuParityAgainst cpu: Backend? = nil) -> Outcome {
        do {
            let given = try tolerance()
            let relative = cpu == nil ? given?.cpu : given?.gpu
            return try runChecked(on: backend, parityAgainst: cpu != nil && relative == nil ? cpu : nil,
                                  relativeTolerance: relative)
        } catch {
            return Outcome(passed: false, message: "\(error)", worstRatio: .infinity, nodes: 0, gpuNodes: 0)
        }
    }

    /// The tolerances of a case's optional `tolerance.json`.
    public struct Tolerance: Sendable, Equatable {
        /// The GPU's bound on `|gpu - ref| / max(1, |ref|)` against the stored outputs.
        public let gpu: Double?
        /// The CPU's bound on `|cpu - ref| / max(1, |ref|)`, replacing ONNX's
        /// rtol 1e-3 / atol 1e-7 (which a whole model's near-zero outputs,
        /// after a long chain of fp32 sums in another order, need not meet).
        public let cpu: Double?

        public init(gpu: Double?, cpu: Double? = nil) {
            self.gpu = gpu
            self.cpu = cpu
        }
    }

    /// The case's `tolerance.json`, or nil when it has none.
    public func tolerance() throws -> Tolerance? {
        let file = folder.appendingPathComponent("tolerance.json")
        guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        let bytes = try RegularFile.contents(file.path)
        let object = try? JSONSerialization.jsonObject(with: Data(bytes))
        guard let dictionary = object as? [String: Any] else {
            throw LayerKitError.file("\(file.path) is not a JSON object like {\"gpu\": 0.002}")
        }
        func bound(_ key: String) throws -> Double? {
            guard let value = dictionary[key] else { return nil }
            guard let number = value as? NSNumber,
                  number.doubleValue.isFinite, number.doubleValue > 0 else {
                throw LayerKitError.file("\(file.path): \"\(key)\" must be a positive finite number, got \(value)")
            }
            return number.doubleValue
        }
        return Tolerance(gpu: try bound("gpu"), cpu: try bound("cpu"))
    }

    private func runChecked(on backend: Backend, parityAgainst cpu: Backend?,
                            relativeTolerance: Double? = nil) throws -> Outcome {
        let model = try Model(contentsOf: folder.appendingPathComponent("model.onnx"), backend: backend)
        let reference = try cpu.map { try Model(contentsOf: folder.appendingPathComponent("model.onnx"), backend: $0) }
        var worst = 0.0
        for dataSet in try dataSets() {
            var inputs: [String: Tensor] = [:]
            for (input, file) in zip(model.inputs, dataSet.inputs) {
                let tensor = try ONNXTestCase.tensor(file)
                // Integer inputs (indices, shapes) run in their own type, never in fp16 images.
                let isFloat = !(input.dataType?.isInteger ?? false)
                inputs[input.name] = cpu == nil || !isFloat ? tensor : try tensor.roundedToHalf()
            }
            guard dataSet.inputs.count == model.inputs.count else {
                throw LayerKitError.invalidModel("\(dataSet.name) has \(dataSet.inputs.count) inputs; the model takes "
                                                 + "\(model.inputs.count)")
            }
            let results = try model.predict(inputs: inputs)
            let expected: [(values: [Float], shape: [Int])]
            if let reference {
                let outputs = try reference.predict(inputs: inputs)
                expected = try reference.outputs.map { output in
                    guard let tensor = outputs[output.name] else { throw LayerKitError.invalidModel("no output \(output.name)") }
                    return (tensor.values, tensor.shape)
                }
            } else {
                expected = try dataSet.outputs.map { file in
                    let tensor = try ONNXTestCase.decode(file)
                    return (try ONNXTestCase.values(of: tensor), tensor.dims)
                }
            }
            guard expected.count == model.outputs.count else {
                throw LayerKitError.invalidModel("\(dataSet.name) has \(expected.count) outputs; the model makes "
                                                 + "\(model.outputs.count)")
            }
            for (output, reference) in zip(model.outputs, expected) {
                guard let result = results[output.name] else {
                    throw LayerKitError.invalidModel("the model made no output '\(output.name)'")
                }
                guard result.count == reference.values.count,
                      result.shape.reduce(1, *) == reference.shape.reduce(1, *) else {
                    return failure("output '\(output.name)' has shape \(Tensor.describe(result.shape)); the reference "
                                   + "has \(Tensor.describe(reference.shape))", model: model)
                }
                for (i, (y, ref)) in zip(result.values, reference.values).enumerated() {
                    let ratio = relativeTolerance.map { ONNXTestCase.errorRatio(y, ref, relative: $0) }
                        ?? ONNXTestCase.errorRatio(y, ref, parity: cpu != nil)
                    worst = max(worst, ratio)
                    if ratio > 1 {
                        return failure("output '\(output.name)'[\(i)] is \(y), the reference \(ref) "
                                       + "(\(String(format: "%.3g", ratio))x the tolerance)", model: model)
                    }
                }
            }
        }
        return Outcome(passed: true, message: "passed", worstRatio: worst, nodes: ONNXTestCase.workNodes(model),
                       gpuNodes: ONNXTestCase.gpuNodes(model))
    }

    private func failure(_ message: String, model: Model) -> Outcome {
        Outcome(passed: false, message: message, worstRatio: .infinity, nodes: ONNXTestCase.workNodes(model),
                gpuNodes: ONNXTestCase.gpuNodes(model))
    }

    private static func workNodes(_ model: Model) -> Int { model.nodes.filter { $0.placement != nil }.count }
    private static func gpuNodes(_ model: Model) -> Int { model.nodes.filter { $0.placement == .gpu }.count }

    /// The error of `y` against `reference` over its tolerance: ≤ 1 passes.
    /// NaN matches NaN and an infinity the same infinity, as in numpy.
    static func errorRatio(_ y: Float, _ reference: Float, parity: Bool) -> Double {
        if y.isNaN || reference.isNaN { return y.isNaN && reference.isNaN ? 0 : .infinity }
        if y.isInfinite || reference.isInfinite { return y == reference ? 0 : .infinity }
        let error = abs(Double(y) - Double(reference))
        let tolerance = parity ? 1e-3 * max(1, abs(Double(reference))) : 1e-7 + 1e-3 * abs(Double(reference))
        return error / tolerance
    }

    /// `|y - ref| / (tolerance max(1, |ref|))`: ≤ 1 passes; NaN and
    /// infinities as in `errorRatio(_:_:parity:)`.
    static func errorRatio(_ y: Float, _ reference: Float, relative tolerance: Double) -> Double {
        if y.isNaN || reference.isNaN { return y.isNaN && reference.isNaN ? 0 : .infinity }
        if y.isInfinite || reference.isInfinite { return y == reference ? 0 : .infinity }
        return abs(Double(y) - Double(reference)) / (tolerance * max(1, abs(Double(reference))))
    }

    private struct DataSet { let name: String; let inputs: [URL]; let outputs: [URL] }

    /// The `test_data_set_<k>` folders, each with its numbered files.
    private func dataSets() throws -> [DataSet] {
        let manager = FileManager.default
        let sets = ((try? manager.contentsOfDirectory(atPath: folder.path)) ?? [])
            .filter { $0.hasPrefix("test_data_set_") }.sorted()
        guard !sets.isEmpty else { throw LayerKitError.file("\(folder.path) has no test_data_set_0 folder") }
        return sets.map { set in
            let directory = folder.appendingPathComponent(set)
            func numbered(_ prefix: String) -> [URL] {
                var files: [URL] = []
                while case let file = directory.appendingPathComponent("\(prefix)_\(files.count).pb"),
                      manager.fileExists(atPath: file.path) {
                    files.append(file)
                }
                return files
            }
            return DataSet(name: set, inputs: numbered("input"), outputs: numbered("output"))
        }
    }

    private static func decode(_ file: URL) throws -> ONNXTensor {
        try ONNXTensor(protobuf: RegularFile.bytes(file.path), source: file.lastPathComponent)
    }

    /// A stored tensor's values as Float32: floating types converted,
    /// integer and boolean types as their values.
    static func values(of tensor: ONNXTensor) throws -> [Float] {
        switch tensor.dataType {
        case .float, .float16, .double: return try tensor.floats()
        default: return try tensor.int64s().map(Float.init)
        }
    }

    /// An input file as a Float32 tensor.
    static func tensor(_ file: URL) throws -> Tensor {
        let tensor = try decode(file)
        return try Tensor(shape: tensor.dims, values: values(of: tensor))
    }
}
