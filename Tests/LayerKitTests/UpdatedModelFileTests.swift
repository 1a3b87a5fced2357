import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// The fixtures of `Scripts/generate_training_references.py` (PyTorch float64).
enum TrainingFixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/Training")

    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    static func npy(_ name: String) throws -> Tensor { try Tensor(npyFile: path(name)) }
}

/// Writing a trained model: only the updated initializers change, every
/// other byte of the ONNX file is copied.
@Suite struct UpdatedModelFileTests {
    static let swishNet = TrainingFixtures.path("swish_net.onnx")

    static func initializers(_ path: String) throws -> ONNXGraph {
        try ONNXModel(contentsOf: URL(fileURLWithPath: path)).graph
    }

    static func error(_ body: () throws -> Void) -> String {
        do { try body(); return "no error" } catch { return "\(error)" }
    }

    /// `shape`'s worth of distinct values, none of them the fixture's.
    static func tensor(_ shape: [Int], offset: Float) throws -> Tensor {
        let count = shape.reduce(1, *)
        return try Tensor(shape: shape, values: (0..<count).map { Float($0) * 0.03125 - offset })
    }

    @Test func replacingWithTheSameValuesGivesTheSameBytes() throws {
        // The fixtures hold raw_data in protobuf's field order, which the writer also uses.
        let original = try Data(contentsOf: URL(fileURLWithPath: Self.swishNet))
        let graph = try Self.initializers(Self.swishNet)
        var same: [String: Tensor] = [:]
        for name in graph.initializerNames {
            let tensor = try #require(graph.initializers[name])
            same[name] = try Tensor(shape: tensor.dims, values: tensor.floats())
        }
        #expect(try ONNXModel.replacingInitializers(same, in: original, source: "swish_net.onnx") == original)
    }

    @Test func theUpdatedValuesComeBackAndEverythingElseIsAsItWas() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let output = folder.file("updated.onnx")
        let beta = try Tensor(shape: [4], values: [0.25, 0.75, 1.25, 3.5])
        let fcBias = try Self.tensor([5], offset: 1)
        try UpdatedModelFile.write(["swish.beta": beta, "fc.bias": fcBias], intoCopyOf: Self.swishNet, to: output)

        let before = try ONNXModel(contentsOf: URL(fileURLWithPath: Self.swishNet))
        let after = try ONNXModel(contentsOf: URL(fileURLWithPath: output))
        #expect(try after.graph.initializers["swish.beta"]?.floats() == beta.values)
        #expect(try after.graph.initializers["fc.bias"]?.floats() == fcBias.values)
        #expect(after.graph.initializerNames == before.graph.initializerNames)
        for name in ["conv.weight", "conv.bias", "fc.weight"] {
            let old = try #require(before.graph.initializers[name]), new = try #require(after.graph.initializers[name])
            #expect(new.rawData != nil && new.rawData == old.rawData, "\(name)'s bytes changed")
            #expect(new.dims == old.dims && new.dataType == old.dataType)
        }
        #expect(after.graph.nodes == before.graph.nodes)
        #expect(after.graph.inputs == before.graph.inputs && after.graph.outputs == before.graph.outputs)
        #expect(after.opsetImports.map(\.domain) == before.opsetImports.map(\.domain))
        #expect(after.opsetImports.map(\.version) == before.opsetImports.map(\.version))
        #expect(after.irVersion == before.irVersion && after.producerName == before.producerName)

        // LayerKit runs the written model: the Gemm's bias moves the logits by the bias change.
        let x = try TrainingFixtures.npy("x.npy")
        let old = try Model(contentsOf: URL(fileURLWithPath: Self.swishNet), computeUnits: .cpuOnly)
            .predict(inputs: ["x": x])["logits"]
        let new = try Model(contentsOf: URL(fileURLWithPath: output), computeUnits: .cpuOnly)
            .predict(inputs: ["x": x])["logits"]
        let unchanged = try Model(data: try ONNXModel.replacingInitializers(["fc.bias": fcBias],
            in: Data(contentsOf: URL(fileURLWithPath: Self.swishNet))), name: "fc.onnx", computeUnits: .cpuOnly)
            .predict(inputs: ["x": x])["logits"]
        let (o, n, u) = (try #require(old).values, try #require(new).values, try #require(unchanged).values)
        let oldBias = try #require(before.graph.initializers["fc.bias"]).floats()
        for i in 0..<20 {
            let expected = Double(o[i]) - Double(oldBias[i % 5]) + Double(fcBias[i % 5])
            #expect(abs(Double(u[i]) - expected) <= 1e-5, "logit \(i): \(u[i]) vs \(expected)")
        }
        #expect(n != u, "beta's update must change the logits")
    }

    @Test func theFixtureRunsAsPyTorchComputedIt() throws {
        let logits = try Model(contentsOf: URL(fileURLWithPath: Self.swishNet), computeUnits: .cpuOnly)
            .predict(inputs: ["x": try TrainingFixtures.npy("x.npy")])["logits"]
        let reference = try TrainingFixtures.npy("swish_net.logits.npy")
        let error = zip(try #require(logits).values, reference.values).map { abs(Double($0) - Double($1)) }.max() ?? 1
        #expect(error <= 1e-5, "max error \(error)")
    }

    @Test func badUpdatesAreRefusedAndNothingIsWritten() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let output = folder.file("updated.onnx")
        func refusal(_ updates: [String: Tensor]) -> String {
            Self.error { try UpdatedModelFile.write(updates, intoCopyOf: Self.swishNet, to: output) }
        }
        let unknown = refusal(["fc.weights": try Self.tensor([5, 64], offset: 0)])
        #expect(unknown.contains("no initializer is named 'fc.weights' (did you mean 'fc.weight'?)"), "\(unknown)")
        let shape = refusal(["fc.weight": try Self.tensor([64, 5], offset: 0)])
        #expect(shape.contains("initializer 'fc.weight' has dims [5, 64] but its update has shape [64, 5]"), "\(shape)")
        #expect(try folder.contents().isEmpty)

        // An INT64 initializer cannot take Float32 values.
        let int64 = ONNXBytes.tensor("shape", dims: [2], type: 7, PB.bytes(9, PB.littleEndian([Int64(1), -1])))
        let model = ONNXBytes.model(graph: ONNXBytes.graph(initializers: [int64]))
        let typed = Self.error { _ = try ONNXModel.replacingInitializers(["shape": try Self.tensor([2], offset: 0)], in: model) }
        #expect(typed.contains("initializer 'shape' is INT64, not FLOAT"), "\(typed)")
        let damaged = Self.error { _ = try ONNXModel.replacingInitializers([:], in: Data([0x3A, 0x05])) }
        #expect(damaged.contains("length 5 runs past the end"), "\(damaged)")
    }

    @Test func theInputModelIsNeverOverwritten() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let model = folder.file("model.onnx")
        try FileManager.default.copyItem(atPath: Self.swishNet, toPath: model)
        let link = folder.file("link.onnx")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: model)
        let original = try Data(contentsOf: URL(fileURLWithPath: model))
        for output in [model, link, folder.path + "/../" + URL(fileURLWithPath: folder.path).lastPathComponent + "/model.onnx"] {
            let text = Self.error {
                try UpdatedModelFile.write(["fc.bias": try Self.tensor([5], offset: 2)], intoCopyOf: model, to: output)
            }
            #expect(text.contains("is also an input") && text.contains("refusing to overwrite it"), "\(text)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: model)) == original)
    }

    @Test func externalInitializersAreCopiedAsReferencesAndNeverReplaced() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let source = ONNXCaseTests.root.appendingPathComponent("core/external_data")
        for name in ["model.onnx", "weights.bin"] {
            try FileManager.default.copyItem(atPath: source.appendingPathComponent(name).path, toPath: folder.file(name))
        }
        // An inline initializer beside the two external ones, to replace.
        let modelData = try Data(contentsOf: URL(fileURLWithPath: folder.file("model.onnx")))
        let inline = ONNXBytes.tensor("extra", dims: [2], type: 1, PB.bytes(9, PB.littleEndian([Float(1).bitPattern, 0])))
        let withExtra = try Self.appendingInitializer(inline, to: modelData)
        try withExtra.write(to: URL(fileURLWithPath: folder.file("with_extra.onnx")))

        let external = Self.error {
            try UpdatedModelFile.write(["w": try Self.tensor([4, 3, 3, 3], offset: 0)],
                                       intoCopyOf: folder.file("with_extra.onnx"), to: folder.file("out.onnx"))
        }
        #expect(external.contains("initializer 'w' is stored in an external data file"), "\(external)")
        let intoData = Self.error {
            try UpdatedModelFile.write([:], intoCopyOf: folder.file("with_extra.onnx"), to: folder.file("weights.bin"))
        }
        #expect(intoData.contains("is also an input"), "\(intoData)")

        let extra = try Tensor(shape: [2], values: [-3, 7])
        try UpdatedModelFile.write(["extra": extra], intoCopyOf: folder.file("with_extra.onnx"), to: folder.file("out.onnx"))
        let written = try ONNXModel(contentsOf: URL(fileURLWithPath: folder.file("out.onnx")))
        let original = try ONNXModel(contentsOf: URL(fileURLWithPath: folder.file("model.onnx")))
        #expect(try written.graph.initializers["extra"]?.floats() == [-3, 7])
        #expect(try written.graph.initializers["w"]?.floats() == original.graph.initializers["w"]?.floats())
        #expect(try written.graph.initializers["b"]?.floats() == original.graph.initializers["b"]?.floats())
    }

    @Test func aTypedTensorBecomesRawDataAndKeepsItsDocString() throws {
        let typed = ONNXBytes.tensor("w", dims: [3], type: 1, PB.float(4, 1) + PB.float(4, 2) + PB.float(4, 3)
                                     + PB.string(12, "the weights"))
        let model = ONNXBytes.model(graph: ONNXBytes.graph(initializers: [typed]))
        let updated = try ONNXModel.replacingInitializers(["w": try Tensor(shape: [3], values: [4, -5, 0.5])], in: model)
        let expected = PB.int(1, 3) + PB.int(2, 1) + PB.string(8, "w")
            + PB.bytes(9, PB.littleEndian([Float(4), -5, 0.5].map(\.bitPattern))) + PB.string(12, "the weights")
        #expect(updated == ONNXBytes.model(graph: ONNXBytes.graph(initializers: [expected])))
    }

    /// `model` with `tensor` appended to its graph's fields, built by hand.
    static func appendingInitializer(_ tensor: [UInt8], to model: Data) throws -> Data {
        let bytes = [UInt8](model)
        var result: [UInt8] = [], start = 0
        for end in PB.fieldBoundaries(bytes) {
            defer { start = end }
            guard bytes[start] == 0x3A else { result += bytes[start..<end]; continue }  // field 7, wire type 2
            var offset = start + 1, length = 0, shift = 0
            while true {
                let byte = bytes[offset]; offset += 1
                length |= Int(byte & 0x7F) << shift; shift += 7
                if byte < 0x80 { break }
            }
            result += PB.bytes(7, Array(bytes[offset..<offset + length]) + PB.bytes(5, tensor))
        }
        return Data(result)
    }
}
