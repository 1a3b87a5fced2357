import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// Core ML NeuralNetwork models (`Scripts/generate_coreml_fixtures.py`)
/// loaded by `Model`, run on the CPU and the GPU against numpy's float64
/// results from the same weights; and the files LayerKit refuses, each
/// named as what it is.
@Suite struct CoreMLModelTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/coreml")

    static func fixture(_ name: String) -> URL { fixtures.appendingPathComponent(name) }

    /// Each model's outputs against numpy's: within 1e-4 of the float64
    /// result on the CPU; on the GPU within 2e-3 · max(1, |ref|) of the
    /// result with every layer's output stored in fp16 (`reference` "-fp16"), as the GPU stores them.
    /// An image output (StyleNet's, 0...255) is judged against its full scale: within 2e-3 of 255,
    /// half an 8-bit level, on the GPU, where instance normalization amplifies fp16's rounding.
    static func expectReferences(_ model: Model, _ name: String, outputs: [String], reference suffix: String = "",
                                 tolerance: Double, fullScale: Double = 1) throws {
        let input = try Tensor(npyFile: fixture("\(name)-input.npy").path)
        let results = try model.predict(inputs: [model.inputs[0].name: input])
        for output in outputs {
            let reference = try TypedTensor(npyFile: fixture("\(name)-\(output)\(suffix).npy").path)
            let result = try #require(results[output], "\(name): no output \(output)")
            #expect(result.shape == reference.shape, "\(name) \(output)")
            for (y, expected) in zip(result.elements, reference.doubles()) {
                #expect(abs(Double(y) - expected) <= tolerance * max(fullScale, abs(expected)),
                        "\(name) \(output): \(y) vs \(expected)")
            }
        }
    }

    /// Models of one layer family each, every layer an output (`Scripts/generate_coreml_fixtures.py`).
    static let layerCases = ["DeconvolutionNet", "LayoutNet", "ElementwiseNet", "EmbeddingNet", "NDNet"]

    /// Every output of `name` against its reference: the input from `NAME-input.npy` (one input) or
    /// `NAME-input-INPUT.npy` (several).
    static func expectEveryOutput(_ model: Model, _ name: String, reference suffix: String = "",
                                  tolerance: Double) throws {
        var inputs: [String: Tensor] = [:]
        for input in model.inputs {
            let file = model.inputs.count == 1 ? "\(name)-input.npy" : "\(name)-input-\(input.name).npy"
            inputs[input.name] = try Tensor(npyFile: fixture(file).path)
        }
        let results = try model.predict(inputs: inputs)
        #expect(model.outputs.count >= 2, "\(name): \(model.outputs.count) outputs")
        for output in model.outputs.map(\.name) {
            let reference = try TypedTensor(npyFile: fixture("\(name)-\(output)\(suffix).npy").path)
            let result = try #require(results[output], "\(name): no output \(output)")
            #expect(result.shape == reference.shape, "\(name) \(output): \(result.shape) vs \(reference.shape)")
            var worst = 0.0
            for (y, expected) in zip(result.elements, reference.doubles()) {
                worst = max(worst, abs(Double(y) - expected) / max(1, abs(expected)))
            }
            #expect(worst <= tolerance, "\(name) \(output): off by \(worst)")
        }
    }

    @Test(arguments: layerCases)
    func everyLayerRunsAsNumpyComputesOnTheCPU(_ name: String) throws {
        let model = try Model(contentsOf: Self.fixture("\(name).mlmodel"), computeUnits: .cpuOnly, notice: { _ in })
        try Self.expectEveryOutput(model, name, tolerance: 1e-4)
    }

    @Test(.enabled(if: TestGPU.isEnabled), arguments: layerCases)
    func everyLayerRunsAsNumpyComputesOnTheGPU(_ name: String) throws {
        let model = try Model(contentsOf: Self.fixture("\(name).mlmodel"), computeUnits: .gpu, notice: { _ in })
        try Self.expectEveryOutput(model, name, reference: "-fp16", tolerance: 2e-3)
    }

    /// parametricSoftplus, alpha · log(1 + exp(beta · x)), per channel and with one alpha and
    /// beta, against numpy's float64 result within 1e-5 on the CPU.
    @Test func parametricSoftplusRunsAsNumpyComputes() throws {
        let model = try Model(contentsOf: Self.fixture("ParametricSoftplus.mlmodel"), computeUnits: .cpuOnly,
                              notice: { _ in })
        try Self.expectEveryOutput(model, "ParametricSoftplus", tolerance: 1e-5)
    }

    /// On the GPU: within 2e-3 · max(1, |ref|) of numpy's result with the input and each
    /// activation's output rounded to fp16, as the GPU stores them (`-fp16`).
    @Test(.enabled(if: TestGPU.isEnabled)) func parametricSoftplusRunsAsNumpyComputesOnTheGPU() throws {
        let model = try Model(contentsOf: Self.fixture("ParametricSoftplus.mlmodel"), computeUnits: .gpu,
                              notice: { _ in })
        #expect(model.nodes.contains { $0.opType == "Softplus" && $0.placement?.isGPU == true })
        try Self.expectEveryOutput(model, "ParametricSoftplus", reference: "-fp16", tolerance: 2e-3)
    }

    // MARK: Recurrent layers

    /// Core ML's four recurrent layers (`RecurrentNet`: simpleRecurrent, gru with reverseInput,
    /// uniDirectionalLSTM with peepholes, forgetBias and a cell clip that bites, biDirectionalLSTM
    /// with coupled gates), the batch axis read as the sequence: every output, y and the states,
    /// against numpy's float64 result of NeuralNetwork.proto's equations, within 1e-5 on the CPU.
    @Test func recurrentLayersRunAsNumpyComputesOnTheCPU() throws {
        let model = try Model(contentsOf: Self.fixture("RecurrentNet.mlmodel"), computeUnits: .cpuOnly, notice: { _ in })
        #expect(model.nodes.map(\.opType).filter { ["RNN", "GRU", "LSTM"].contains($0) } == ["RNN", "GRU", "LSTM", "LSTM"])
        try Self.expectEveryOutput(model, "RecurrentNet", tolerance: 1e-5)
    }

    /// An exact-mapping network's rank-5 blob [Seq, Batch, C, 1, 1]: a batch of two sequences, each on its own.
    @Test func aRecurrentLayerReadsCoreMLsRank5BlobInAnExactMappingNetwork() throws {
        let model = try Model(contentsOf: Self.fixture("RecurrentND.mlmodel"), computeUnits: .cpuOnly, notice: { _ in })
        try Self.expectEveryOutput(model, "RecurrentND", tolerance: 1e-5)
    }

    /// The recurrent layers have no GPU kernel: under `.gpu` they run on the CPU, the reshapes
    /// around them on the GPU, whose fp16 storage the parity rule's 2e-3 allows for.
    @Test(.enabled(if: TestGPU.isEnabled)) func recurrentLayersRunOnTheCPUInAGPUModel() throws {
        let model = try Model(contentsOf: Self.fixture("RecurrentNet.mlmodel"), computeUnits: .gpu, notice: { _ in })
        let recurrent = model.nodes.filter { ["RNN", "GRU", "LSTM"].contains($0.opType) }
        #expect(recurrent.count == 4 && recurrent.allSatisfy { $0.placement?.isGPU != true })
        try Self.expectEveryOutput(model, "RecurrentNet", tolerance: 2e-3)
    }

    /// An activation Core ML's recurrent layers do not take is refused by name.
    @Test func aRecurrentLayersUnlistedActivationIsRefused() throws {
        #expect {
            _ = try Model(contentsOf: Self.fixture("RecurrentRefused.mlmodel"), computeUnits: .cpuOnly, notice: { _ in })
        } throws: { error in
            let text = "\(error)"
            return text.contains("layer 'rnn' (simpleRecurrent)") && text.contains("leakyReLU")
        }
    }

    static let cases: [(name: String, outputs: [String])] = [("NeuralMcNeuralNet", ["output", "logits"]),
                                                             ("PlainNet", ["probabilities", "logits"]),
                                                             ("ImageClassifier", ["probs"]), ("ReshapeND", ["y"]),
                                                             ("StyleNet", ["stylized"]), ("NNRegressor", ["y"])]

    @Test(arguments: cases.map(\.name))
    func runsAsNumpyComputesOnTheCPU(_ name: String) throws {
        let model = try Model(contentsOf: Self.fixture("\(name).mlmodel"), computeUnits: .cpuOnly, notice: { _ in })
        try Self.expectReferences(model, name, outputs: Self.cases.first { $0.name == name }?.outputs ?? [],
                                  tolerance: 1e-4)
    }

    @Test(.enabled(if: TestGPU.isEnabled), arguments: cases.map(\.name))
    func runsAsNumpyComputesOnTheGPU(_ name: String) throws {
        // `.gpu` puts every layer with a GPU kernel on the GPU, even on an emulated device.
        let model = try Model(contentsOf: Self.fixture("\(name).mlmodel"), computeUnits: .gpu, notice: { _ in })
        #expect(model.nodes.contains { $0.placement?.isGPU == true }, "\(name): nothing ran on the GPU")
        try Self.expectReferences(model, name, outputs: Self.cases.first { $0.name == name }?.outputs ?? [],
                                  reference: "-fp16", tolerance: 2e-3, fullScale: name == "StyleNet" ? 255 : 1)
    }

    /// The article's className resolves to the formula registered for it,
    /// its `beta` parameter bound by name, as `--layer Swish=...` does.
    @Test func theCustomLayerIsTheFormulaRegisteredForItsClassName() throws {
        let registry = LayerRegistry()
        try registry.register(formula: "x * sigmoid(beta * x)", forNodesOfType: "Swish")
        let model = try Model(contentsOf: Self.fixture("NeuralMcNeuralNet.mlmodel"), computeUnits: .cpuOnly,
                              registry: registry, notice: { _ in })
        #expect(model.nodes.filter { $0.opType == "Swish" && $0.domain == CoreMLModel.customDomain }.count == 2)
        try Self.expectReferences(model, "NeuralMcNeuralNet", outputs: ["logits"], tolerance: 1e-4)
    }

    /// Docs/COREML.md's walk-through: the article's Swift class (the landing
    /// page's `BetaSwish`, CPU `evaluate` and GPU `encode`) registered under
    /// the file's className runs the file, against numpy's float64 reference
    /// on the CPU and its fp16-rounded one on the GPU.
    @Test func theArticlesSwiftClassRunsTheFile() throws {
        let registry = LayerRegistry()
        registry.register(named: "Swish") { try BetaSwish(parameters: $0) }
        let cpu = try Model(contentsOf: Self.fixture("NeuralMcNeuralNet.mlmodel"), computeUnits: .cpuOnly,
                            registry: registry, notice: { _ in })
        try Self.expectReferences(cpu, "NeuralMcNeuralNet", outputs: ["logits"], tolerance: 1e-4)
        guard TestGPU.isEnabled else { return }
        let gpu = try Model(contentsOf: Self.fixture("NeuralMcNeuralNet.mlmodel"), backend: Backend(computeUnits: .gpu,
                            context: TestGPU.get()), registry: registry, notice: { _ in })
        #expect(gpu.nodes.filter { $0.opType == "Swish" }.allSatisfy { $0.placement?.isGPU == true })
        try Self.expectReferences(gpu, "NeuralMcNeuralNet", outputs: ["logits"], reference: "-fp16", tolerance: 2e-3)
    }

    @Test func theDescriptionIsRead() throws {
        let data = try Data(contentsOf: Self.fixture("PlainNet.mlmodel"))
        let coreML = try CoreMLModel(data: data, source: "PlainNet.mlmodel")
        // coremltools writes DOUBLE (65600) multi-arrays unless asked for FLOAT32; the network computes in float32.
        #expect(coreML.inputs == [CoreMLFeature(name: "data", kind: .multiArray(shape: [4, 8, 8], dataType: 65600))])
        #expect(coreML.outputs.map(\.name) == ["probabilities", "logits"])
        #expect(coreML.specificationVersion >= 1)
        let model = try Model(data: data, name: "PlainNet.mlmodel", computeUnits: .cpuOnly, notice: { _ in })
        #expect(model.inputs.map(\.description) == ["data: float32 [N, 4, 8, 8]"])
        #expect(model.outputs.map(\.description) == ["probabilities: float32 [1, 10]", "logits: float32 [1, 10]"])
    }

    /// A classifier on an image: the image's shape, its scaler applied, the
    /// probabilities its output, and the predicted label (`CoreMLClassifierLabelTests`).
    @Test func anImageClassifiersProbabilitiesAreItsOutput() throws {
        let data = try Data(contentsOf: Self.fixture("ImageClassifier.mlmodel"))
        let coreML = try CoreMLModel(data: data, source: "ImageClassifier.mlmodel")
        #expect(coreML.inputs == [CoreMLFeature(name: "image", kind: .image(width: 7, height: 7, colorSpace: 20))])
        #expect(coreML.outputs.map(\.name) == ["probs", "classLabel"])
        let model = try Model(data: data, name: "ImageClassifier.mlmodel", computeUnits: .cpuOnly, notice: { _ in })
        #expect(model.inputs.map(\.description) == ["image: float32 [N, 3, 7, 7]"])
        #expect(model.outputs.map(\.description) == ["probs: float32 [1, 5]", "classLabel: string [1]"])
    }

    /// An N-D network (exact array mapping) takes its input's shape as declared, no batch added.
    @Test func anExactMappingInputKeepsItsShape() throws {
        let model = try Model(contentsOf: Self.fixture("ReshapeND.mlmodel"), computeUnits: .cpuOnly, notice: { _ in })
        #expect(model.inputs.map(\.description) == ["x: float32 [2, 6]"])
        #expect(model.outputs.map(\.description) == ["y: float32 [3, 4]"])
    }

    @Test func theFormatIsChosenByContent() throws {
        let fixtures = Self.fixtures
        let coreML = try Data(contentsOf: Self.fixture("PlainNet.mlmodel"))
        #expect(ModelFileFormat.of(coreML, name: "model.bin") == .coreML)
        let onnx = try Data(contentsOf: fixtures.deletingLastPathComponent().appendingPathComponent("models/small_cnn.onnx"))
        #expect(ModelFileFormat.of(onnx, name: "model.mlmodel") == .onnx)
        #expect(ModelFileFormat.of(Data([0x1C, 0, 0, 0] + Array("TFL3".utf8) + [0, 0]), name: "model.onnx")
                == .tensorFlowLite)
        // A renamed Core ML file still loads.
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let renamed = URL(fileURLWithPath: directory.file("classifier.onnx"))
        try coreML.write(to: renamed)
        #expect(try Model(contentsOf: renamed, computeUnits: .cpuOnly, notice: { _ in }).outputs.count == 2)
    }

    @Test func otherFormatsAreNamedAsWhatTheyAre() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let tflite = URL(fileURLWithPath: directory.file("mobilenet.tflite"))
        try Data([0x1C, 0, 0, 0] + Array("TFL3".utf8) + [UInt8](repeating: 0, count: 24)).write(to: tflite)
        let package = URL(fileURLWithPath: directory.file("Classifier.mlpackage"))
        try FileManager.default.createDirectory(at: package, withIntermediateDirectories: false)
        for (url, text) in [(tflite, "mobilenet.tflite: a vtable of 0 bytes at byte 28 while reading Model"),
                            (package, "Classifier.mlpackage: the package has no Manifest.json")] {
            #expect { try Model(contentsOf: url, computeUnits: .cpuOnly, notice: { _ in }) } throws: { error in
                "\(error)".contains(text)
            }
        }
    }

    /// A className no layer is registered for: the error names it and says how to register one.
    @Test func aMissingCustomLayerIsNamed() throws {
        let data = try Data(contentsOf: Self.fixture("NeuralMcNeuralNet.mlmodel"))
        #expect { try Model(data: Self.renamingSwish(data), name: "net.mlmodel", computeUnits: .cpuOnly, notice: { _ in }) }
            throws: { error in
                let text = "\(error)"
                return text.contains("'Swash'") && text.contains(LayerRegistry.missingLayerAdvice("Swash"))
            }
    }

    /// The model with className "Swash" for "Swish": the same length, so the protobuf framing holds.
    static func renamingSwish(_ data: Data) -> Data {
        var bytes = [UInt8](data)
        let from = Array("Swish".utf8), to = Array("Swash".utf8)
        for i in 0...(bytes.count - from.count) where Array(bytes[i..<i + from.count]) == from {
            bytes.replaceSubrange(i..<i + from.count, with: to)
        }
        return Data(bytes)
    }

    @Test func anUnsupportedLayerIsRefusedByNameAndType() throws {
        #expect { try Model(contentsOf: Self.fixture("Unsupported.mlmodel"), computeUnits: .cpuOnly, notice: { _ in }) }
            throws: { error in
                "\(error)".contains("Unsupported.mlmodel: layer 'repeat' (sequenceRepeat): layers of type sequenceRepeat "
                                     + "are not supported")
            }
    }

    /// Every prefix cut at a ninth of the file, and bytes overwritten:
    /// each load succeeds or throws a LayerKitError, never traps.
    @Test(arguments: ["NeuralMcNeuralNet.mlmodel", "PlainNet.mlmodel", "DeconvolutionNet.mlmodel", "LayoutNet.mlmodel",
                      "ElementwiseNet.mlmodel", "NDNet.mlmodel", "UpdatableClassifier.mlmodel"])
    func cutAndCorruptedFilesAreErrors(_ name: String) throws {
        let bytes = try [UInt8](Data(contentsOf: Self.fixture(name)))
        var generator = SeededGenerator(seed: UInt64(bytes.count))
        var variants: [[UInt8]] = (1...8).map { Array(bytes.prefix(bytes.count * $0 / 9)) }
        for _ in 0..<24 {
            var spoiled = bytes
            for _ in 0..<3 {
                spoiled[Int.random(in: 0..<spoiled.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            variants.append(spoiled)
        }
        var refused = 0
        for variant in variants {
            do {
                _ = try Model(data: Data(variant), name: name, computeUnits: .cpuOnly, notice: { _ in })
            } catch is LayerKitError {
                refused += 1
            }
        }
        // Every cut loses the network's end: each is refused.
        #expect(refused >= 8)
    }

    @Test func aTruncatedFileNamesWhereItEnds() throws {
        let bytes = try Data(contentsOf: Self.fixture("PlainNet.mlmodel")).prefix(100)
        #expect { try Model(data: bytes, name: "cut.mlmodel", computeUnits: .cpuOnly, notice: { _ in }) } throws: { error in
            "\(error)".contains("cut.mlmodel: length") && "\(error)".contains("runs past the end")
                && "\(error)".contains("while reading Model.neuralNetwork")
        }
    }

    /// Fields of the wrong wire type are refused naming the field.
    @Test(arguments: [
        (1, ProtobufReader.WireType.lengthDelimited, "Model.specificationVersion"),
        (500, .varint, "Model.neuralNetwork"),
        (2, .fixed32, "Model.description"),
    ])
    func wrongFieldTypesAreRefused(_ number: Int, _ wireType: ProtobufReader.WireType, _ field: String) throws {
        var writer = ProtobufWriter()
        writer.int64(1, 4)  // specificationVersion, then the field of the wrong type
        writer.tag(number, wireType)
        switch wireType {
        case .varint: writer.varint(7)
        case .lengthDelimited: writer.varint(0)
        case .fixed32: writer.raw([0, 0, 0, 0])
        case .fixed64: writer.raw([UInt8](repeating: 0, count: 8))
        }
        writer.bytes(500, [] as [UInt8])  // an empty neuralNetwork: the fields read as Core ML's
        #expect { try Model(data: Data(writer.bytes), name: "bad.mlmodel", computeUnits: .cpuOnly, notice: { _ in }) }
            throws: { error in "\(error)".contains("where") && "\(error)".contains(field) }
    }

    /// A convolution whose sizes multiply past Int: refused as a count mismatch, not a trap.
    @Test func sizesThatOverflowAreRefused() throws {
        func message(_ write: (inout ProtobufWriter) -> Void) -> [UInt8] {
            var writer = ProtobufWriter()
            write(&writer)
            return writer.bytes
        }
        let shape = message { $0.int64(1, 1); $0.int64(1, 1); $0.int64(1, 1) }
        let input = message { w in
            w.string(1, "x")
            w.bytes(3, message { $0.bytes(5, message { $0.raw(shape) }) })
        }
        let convolution = message { w in
            w.int64(1, 1 << 24)
            w.int64(2, 1 << 24)
            w.int64(20, 65536)
            w.int64(20, 65536)
            w.bytes(90, message { $0.raw([0x0D, 0, 0, 0, 0]) })  // one floatValue
        }
        let layer = message { w in
            w.string(1, "huge")
            w.string(2, "x")
            w.string(3, "y")
            w.bytes(100, convolution)
        }
        let model = message { w in
            w.int64(1, 4)
            w.bytes(2, message { $0.bytes(1, input) })
            w.bytes(500, message { $0.bytes(1, layer) })
        }
        #expect { try Model(data: Data(model), name: "huge.mlmodel", computeUnits: .cpuOnly, notice: { _ in }) }
            throws: { error in
                "\(error)".contains("layer 'huge' (convolution): weights holds 1 values where")
            }
    }
}
