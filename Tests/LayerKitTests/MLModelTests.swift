import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// The ai.onnx.ml ops (scikit-learn exports) against onnxruntime: every case
/// of `Fixtures/onnx-cases/ml` (`Scripts/onnx_cases/ml.py`) on the CPU, int64
/// labels compared as the floats LayerKit gives them; and the errors a user
/// meets (ZipMap's label count, string labels, bad attribute lengths).
@Suite struct MLModelTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/onnx-cases/ml")

    static let cases: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()

    static func tensor(_ path: URL) throws -> (name: String, tensor: Tensor) {
        let proto = try ONNXTensor(protobuf: [UInt8](try Data(contentsOf: path)), source: path.path)
        let values = proto.dataType == .int64 ? try proto.int64s().map(Float.init) : try proto.floats()
        return (proto.name, try Tensor(shape: proto.dims, values: values))
    }

    @Test func everyCaseIsThere() {
        #expect(Self.cases.count >= 14, "\(Self.cases)")
    }

    @Test(arguments: cases) func matchesOnnxruntime(_ name: String) throws {
        let folder = Self.directory.appendingPathComponent(name)
        let model = try Model(contentsOf: folder.appendingPathComponent("model.onnx"), computeUnits: .cpuOnly)
        let input = try Self.tensor(folder.appendingPathComponent("test_data_set_0/input_0.pb"))
        let outputs = try model.predict(inputs: [model.inputs[0].name: input.tensor])
        #expect(model.nodes.allSatisfy { $0.placement?.isGPU == false })
        for (i, description) in model.outputs.enumerated() {
            let reference = try Self.tensor(folder.appendingPathComponent("test_data_set_0/output_\(i).pb")).tensor
            let output = try #require(outputs[description.name])
            #expect(output.shape == reference.shape, "\(name) output \(description.name)")
            guard output.shape == reference.shape else { continue }
            var worst: Float = 0
            for k in 0..<reference.count {
                let error = abs(output[k] - reference[k])
                #expect(error <= 1e-7 + 1e-3 * abs(reference[k]),
                        "\(name) \(description.name)[\(k)]: \(output[k]) vs onnxruntime \(reference[k])")
                worst = max(worst, error)
            }
            print("ml \(name) \(description.name): max |error| \(worst)")
        }
    }

    /// A one-node ai.onnx.ml model on a [1, features] input of ONNX element
    /// type `elementType` (float unless told).
    static func model(_ opType: String, outputs: [String] = ["Y"], features: Int = 3, elementType: Int64 = 1,
                      attributes: [[UInt8]]) -> Data {
        let node = ONNXBytes.node(opType, inputs: ["X"], outputs: outputs, name: "skl", attributes: attributes)
            + PB.string(7, "ai.onnx.ml")
        let input = PB.string(1, "X") + PB.bytes(2, PB.bytes(1, PB.int(1, elementType) + PB.bytes(2, PB.bytes(1, PB.int(1, 1))
                                                                                      + PB.bytes(1, PB.int(1, Int64(features))))))
        let graph = ONNXBytes.graph(nodes: [node], inputs: [input],
                                    extra: outputs.flatMap { PB.bytes(12, PB.string(1, $0)) })
        return ONNXBytes.model(opsets: [("", 17), ("ai.onnx.ml", 1)], graph: graph)
    }

    static func floats(_ name: String, _ values: [Float]) -> [UInt8] {
        PB.string(1, name) + PB.bytes(7, PB.littleEndian(values.map(\.bitPattern))) + PB.int(20, 6)
    }

    static func ints(_ name: String, _ values: [Int64]) -> [UInt8] {
        PB.string(1, name) + values.flatMap { PB.int(8, $0) } + PB.int(20, 7)
    }

    static func int(_ name: String, _ value: Int64) -> [UInt8] { PB.string(1, name) + PB.int(3, value) + PB.int(20, 2) }

    static func strings(_ name: String, _ values: [String]) -> [UInt8] {
        PB.string(1, name) + values.flatMap { PB.string(9, $0) } + PB.int(20, 8)
    }

    static func failure(_ data: Data) -> String {
        do {
            _ = try Model(data: data, computeUnits: .cpuOnly)
            return "loaded"
        } catch {
            return "\(error)"
        }
    }

    /// ZipMap's maps hold its input's rows under its labels (scikit-learn's
    /// exports run through `ZipMapRunCommandTests`); labels that do not
    /// match the columns are a load error naming the node and both counts.
    @Test func zipMapMapsRowsAndRefusesALabelCountOffTheColumns() throws {
        let fits = try Model(data: Self.model("ZipMap", attributes: [Self.ints("classlabels_int64s", [4, 5, 6])]),
                             computeUnits: .cpuOnly, notice: { _ in })
        let x = try TypedTensor(.float32, shape: [1, 3], doubles: [0.25, 0.5, 0.125])
        let maps = try #require(try fits.predict(typed: ["X": x])["Y"]?.sequenceElements)
        guard maps.count == 1, case .map(let keys, let values)? = maps[0].container else {
            Issue.record("not one map: \(maps)")
            return
        }
        #expect(keys.integers() == [4, 5, 6] && values.doubles() == [0.25, 0.5, 0.125])
        // Refused at load: the plan computes ZipMap once on zeros of the input's shape.
        let message = Self.failure(Self.model("ZipMap", attributes: [Self.strings("classlabels_strings", ["cat", "dog"])]))
        #expect(message.contains("node 'skl' (ZipMap)") && message.contains("2 class labels for 3 columns"), "\(message)")
    }

    /// String labels load (`ClassicMLModelTests` runs them); a count that does not fit the scores is refused by name.
    @Test func stringLabelsOfTheWrongCountAreRefusedByName() {
        let coefficients = Self.floats("coefficients", [1, 2, 3, 4, 5, 6])
        #expect(Self.failure(Self.model("LinearClassifier", outputs: ["label", "scores"], attributes: [
            coefficients, Self.strings("classlabels_strings", ["cat", "dog"]),
        ])) == "loaded")
        let message = Self.failure(Self.model("LinearClassifier", outputs: ["label", "scores"], attributes: [
            coefficients, Self.strings("classlabels_strings", ["cat", "dog", "owl"]),
        ]))
        #expect(message.contains("node 'skl' (LinearClassifier)") && message.contains("classlabels_strings"), "\(message)")
    }

    @Test func wrongCoefficientCountsNameTheNode() {
        let message = Self.failure(Self.model("LinearRegressor", attributes: [
            Self.floats("coefficients", [1, 2, 3, 4]), Self.int("targets", 2),
        ]))
        #expect(message.contains("node 'skl' (LinearRegressor)") && message.contains("4 coefficients"), "\(message)")
        let scaler = Self.failure(Self.model("Scaler", attributes: [Self.floats("scale", [1, 2])]))
        #expect(scaler.contains("node 'skl' (Scaler)") && scaler.contains("2 scale values for 3 feature(s)"), "\(scaler)")
        let labels = Self.failure(Self.model("LinearClassifier", outputs: ["label", "scores"], attributes: [
            Self.floats("coefficients", [1, 2, 3, 4, 5, 6]), Self.ints("classlabels_ints", [0, 1, 2]),
        ]))
        #expect(labels.contains("3 class labels"), "\(labels)")
    }

    @Test func unknownMLOpsListTheSupportedOnes() {
        let message = Self.failure(Self.model("DictVectorizer", attributes: []))
        #expect(message.contains("ai.onnx.ml op 'DictVectorizer' is not supported"), "\(message)")
        #expect(message.contains("LinearClassifier, LinearRegressor, Normalizer, OneHotEncoder, SVMClassifier"), "\(message)")
    }

    @Test func arityIsCheckedAtLoad() {
        let message = Self.failure(Self.model("LinearClassifier", outputs: ["label"], attributes: [
            Self.floats("coefficients", [1, 2, 3, 4, 5, 6]), Self.ints("classlabels_ints", [0, 1]),
        ]))
        #expect(message.contains("lists 1 outputs; LinearClassifier at opset 1 takes 2"), "\(message)")
    }
}
