import Foundation
import Testing
@testable import LayerKit
import LayerKitONNX

/// Whole models from `Scripts/generate_model_fixtures.py`, against
/// onnxruntime's outputs (the standard-op twin for models with custom nodes).
@Suite struct ModelTests {
    static let runnable = ["article_beta1", "article_beta001", "article_perchannel", "article_demo", "small_cnn",
                           "small_cnn_batch2", "typed_fields", "dynamic_reshape"]

    static func input(_ name: String) throws -> Tensor {
        try Tensor(npyFile: ModelFixtures.directory.appendingPathComponent(name + ".input.npy").path)
    }

    static func expected(_ name: String) throws -> Tensor {
        try Tensor(npyFile: ModelFixtures.directory.appendingPathComponent(name + ".expected.npy").path)
    }

    /// The worst `|actual - expected| / max(floor, |expected|)` over all elements.
    static func worstError(_ actual: Tensor, _ expected: Tensor, floor: Double) throws -> Double {
        try #require(actual.shape == expected.shape, "shape \(actual.shape) vs \(expected.shape)")
        return zip(actual.values, expected.values).map { a, e in
            abs(Double(a) - Double(e)) / max(floor, abs(Double(e)))
        }.max() ?? 0
    }

    static func run(_ name: String, _ units: ComputeUnits, context: GPUContext? = nil,
                    input: Tensor? = nil) throws -> Tensor {
        let backend = try Backend(computeUnits: units, context: context)
        let model = try Model(contentsOf: ModelFixtures.url(name), backend: backend)
        let outputs = try model.predict(inputs: [model.inputs[0].name: input ?? ModelTests.input(name)])
        return try #require(outputs[model.outputs[0].name])
    }

    @Test(arguments: runnable)
    func cpuMatchesOnnxRuntime(_ name: String) throws {
        let error = try ModelTests.worstError(ModelTests.run(name, .cpuOnly), ModelTests.expected(name), floor: 1e-6)
        #expect(error <= 1e-4, "\(name): max relative error \(error)")
    }

    /// The GPU stores every tensor, the model's input included, in fp16, so
    /// it is held to the parity rule against the CPU run on the same
    /// fp16-rounded input; against onnxruntime's fp32 run the input's
    /// rounding alone moves outputs by up to 1.2e-3 (typed_fields, measured
    /// with the CPU on the rounded input), so the bound there is 2e-3.
    @Test(.enabled(if: TestGPU.isEnabled), arguments: runnable)
    func gpuMatchesOnnxRuntime(_ name: String) throws {
        let input = try ModelTests.input(name).roundedToHalf()
        let gpu = try ModelTests.run(name, .gpu, context: TestGPU.get(), input: input)
        let cpu = try ModelTests.run(name, .cpuOnly, input: input)
        let parity = try ModelTests.worstError(gpu, cpu, floor: 1)
        #expect(parity <= 1e-3, "\(name): max |gpu - cpu| / max(1, |cpu|) = \(parity)")
        let error = try ModelTests.worstError(gpu, ModelTests.expected(name), floor: 1)
        #expect(error <= 2e-3, "\(name): max |gpu - ref| / max(1, |ref|) = \(error)")
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func everyLayerOfTheFixturesRunsOnTheGPU() throws {
        for name in ["article_beta1", "article_perchannel", "small_cnn"] {
            let model = try Model(contentsOf: ModelFixtures.url(name),
                                  backend: try Backend(computeUnits: .gpu, context: TestGPU.get()))
            for node in model.nodes where node.placement != nil {
                #expect(node.placement == .gpu, "\(name): \(node.name) (\(node.opType)) runs on \(String(describing: node.placement))")
            }
        }
    }

    /// A Swish that has no GPU path: the model must run it on the CPU in the
    /// middle of GPU layers and still agree with onnxruntime.
    final class CPUOnlySwish: CustomLayer {
        static let name = "Swish"
        let inner: Swish
        init(parameters: [String: Any]) throws { inner = try Swish(parameters: parameters) }
        func setWeightData(_ weights: [Data]) throws { try inner.setWeightData(weights) }
        func outputShapes(forInputShapes shapes: [[Int]]) throws -> [[Int]] { shapes }
        func evaluate(inputs: [Tensor], outputs: [Tensor]) throws { try inner.evaluate(inputs: inputs, outputs: outputs) }
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func aLayerWithoutGPUCodeRunsOnTheCPUBetweenGPULayers() throws {
        let registry = LayerRegistry()
        registry.register(CPUOnlySwish.self)
        let notices = BackendTests.Notices()
        let backend = try Backend(computeUnits: .gpu, context: try TestGPU.get(), notice: notices.append)
        let model = try Model(contentsOf: ModelFixtures.url("article_perchannel"), backend: backend, registry: registry)
        #expect(notices.all == ["article_perchannel.onnx: layer swish runs on the CPU: it has no GPU implementation (encode)"])
        let placements = model.nodes.map(\.placement)
        #expect(placements.map { $0?.isGPU } == [true, false, true, true, true, true])
        let profiler = Profiler()
        let outputs = try model.predict(inputs: ["image": ModelTests.input("article_perchannel")], profiler: profiler)
        let error = try ModelTests.worstError(#require(outputs["probabilities"]), ModelTests.expected("article_perchannel"),
                                              floor: 1)
        #expect(error <= 1e-3)
        // The profile shows the round trip: the Conv's output downloaded
        // before the CPU layer, Swish's uploaded after it.
        let spans = profiler.spans.sorted { $0.start < $1.start }
        let cpu = try #require(spans.first { $0.kind == .cpuLayer })
        #expect(cpu.op == "swish (layerkit.Swish)")
        #expect(spans.contains { $0.kind == .download && $0.end <= cpu.start && $0.op == "swish (layerkit.Swish)" })
        #expect(spans.contains { $0.kind == .upload && $0.start >= cpu.end && $0.op == "pool (GlobalAveragePool)" })
        let layers = ProfileSummary(spans: profiler.spans).layers
        #expect(layers.map(\.op) == ["conv (Conv)", "swish (layerkit.Swish)", "pool (GlobalAveragePool)",
                                     "flatten (Flatten)", "fc (Gemm)", "softmax (Softmax)"])
        #expect(layers.map(\.onGPU) == [true, false, true, true, true, true])
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func imagesArePlannedByLivenessAndMadeOnce() throws {
        // A device of its own: other tests' objects would move the counts.
        let context = try GPUContext(validation: true)
        let backend = try Backend(computeUnits: .gpu, context: context)
        let model = try Model(contentsOf: ModelFixtures.url("small_cnn"), backend: backend)
        // The plan the model made at load, rebuilt here to look at its images.
        let onnx = try ONNXModel(data: Data(contentsOf: ModelFixtures.url("small_cnn")), source: "small_cnn")
        let shapes = Dictionary(uniqueKeysWithValues: model.inputs.map { ($0.name, $0.shapeWithSymbolsAsOne) })
        let plan = try ModelPlan(graph: ONNXImporter(model: onnx, registry: .shared).graph(inputShapes: shapes),
                                 backend: backend)
        let gpuValues = plan.slots.compactMap { $0 }.count
        #expect(plan.slotShapes.count < gpuValues, "\(plan.slotShapes.count) images for \(gpuValues) values")
        // Values sharing an image are never alive at once.
        let input = try ModelTests.input("small_cnn")
        let pipelines = context.pipelineCount
        let objects = context.device.liveObjectCount
        for _ in 0..<3 { _ = try model.predict(inputs: ["x": input]) }
        #expect(context.pipelineCount == pipelines, "pipelines are made at load, not per run")
        #expect(context.device.liveObjectCount == objects, "runs allocate no images or buffers")
    }

    /// `layerkit demo`'s model is the article_demo fixture, whose outputs
    /// onnxruntime computed.
    @Test func theBuiltInModelIsTheArticleFixture() throws {
        let builtIn = try #require(BuiltInModels.data(named: BuiltInModels.articleName))
        #expect([UInt8](builtIn) == (try ModelFixtures.bytes("article_demo")))
    }

    @Test func errorsNameTheNodeAndOp() throws {
        let cases: [(String, String)] = [
            ("unsupported_op", "node 'random' (RandomUniformLike): op 'RandomUniformLike' is not supported"),
            ("custom_missing", "a custom layer implementation for op type 'MyLayer' (domain 'com.example') was not found"),
            ("opset_too_new", "opset 99 is not supported"),
        ]
        for (name, message) in cases {
            do {
                _ = try Model(contentsOf: ModelFixtures.url(name), computeUnits: .cpuOnly)
                Issue.record("\(name) loaded")
            } catch let error as LayerKitError {
                guard case .invalidModel(let text) = error else { Issue.record("\(name): \(error)"); continue }
                #expect(text.hasPrefix("\(name).onnx: ") && text.contains(message), "\(text)")
            }
        }
    }

    @Test func truncatedAndCorruptedFilesAreErrorsNotCrashes() throws {
        let bytes = try ModelFixtures.bytes("article_beta1")
        var generator = SeededGenerator(seed: 5)
        for cut in stride(from: 0, to: bytes.count, by: max(1, bytes.count / 150)) {
            #expect(throws: LayerKitError.self) { _ = try Model(data: Data(bytes[..<cut]), computeUnits: .cpuOnly) }
        }
        for _ in 0..<200 {
            var corrupted = bytes
            for _ in 0..<4 { corrupted[Int.random(in: 0..<corrupted.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            do { _ = try Model(data: Data(corrupted), computeUnits: .cpuOnly) } catch is LayerKitError {}
        }
    }

    @Test func predictChecksItsInputs() throws {
        let model = try Model(contentsOf: ModelFixtures.url("article_beta1"), computeUnits: .cpuOnly)
        #expect(throws: LayerKitError.self) { _ = try model.predict(inputs: [:]) }
        #expect(throws: LayerKitError.self) { _ = try model.predict(inputs: ["image": Tensor(shape: [1, 3, 31, 32])]) }
        #expect(throws: LayerKitError.self) {
            _ = try model.predict(inputs: ["image": Tensor(shape: [1, 3, 32, 32]), "other": Tensor(shape: [1])])
        }
    }
}

