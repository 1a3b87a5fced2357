import Foundation
import Testing
@testable import LayerKit
import LayerKitONNX

/// Fused epilogues (ModelGraph+ConvolutionEpilogue.swift): which steps a
/// model becomes, that the fused steps run on the GPU and match
/// onnxruntime on both backends (the `epilogue` fixtures, written by
/// Scripts/onnx_cases/epilogue.py), that the fused CPU result is the
/// unfused one bit for bit where the operations are the same, and that
/// BatchNormalization folded into the weights stays within its stated bound.
@Suite struct EpilogueTests {

    /// Each fixture's steps after import, by op type, in order.
    static let fixtures = FusionFixtures(family: "epilogue", expected: [
        "conv_bn": ["Conv+BatchNormalization"],
        "conv_bn_relu": ["Conv+BatchNormalization+Relu"],
        "conv1d_bn_relu": ["Conv+BatchNormalization+Relu"],
        // conv4's Add reads the downsample conv's output, made after conv4 in node order.
        "resnet_blocks": ["Conv+BatchNormalization+Relu", "Conv+BatchNormalization+Add+Relu", "Conv+BatchNormalization+Relu",
                          "Conv+BatchNormalization", "Conv+BatchNormalization+Add+Relu"],
        "mobilenet_block": ["Conv+Clip", "Conv+Clip", "Conv+Add"],
        "conv_silu": ["Conv+Swish"],
        "conv_chain_add": ["Conv+PRelu+LeakyRelu+HardSwish+Add"],
        "gemm_relu": ["Gemm+Relu"],
        "gemm_bn_sigmoid": ["Gemm+BatchNormalization+Sigmoid"],
        "flattened_gemm_clip": ["Gemm+Clip"],
        // Not fused: the conv output has two readers / is a graph output.
        "two_readers": ["Conv", "Relu", "Add"],
        "output_read_again": ["Conv", "Relu"],
        // Dilated: the padded taps skipped (Convolution+ValidTaps.swift), the Relu still fused.
        "aspp_dilated": ["Conv+Relu", "Conv+Relu", "Conv+Relu", "Conv+Relu", "Concat"],
        "conv1d_dilated_relu": ["Conv+Relu"],
    ])
    static let names = fixtures.names

    @Test func everyFixtureIsChecked() throws {
        try Self.fixtures.expectEveryFixtureListed()
    }

    @Test(arguments: names)
    func theGraphHasTheFusedStepsAndMatchesOnnxRuntime(_ name: String) throws {
        let (model, outcome) = try Self.fixtures.loadedOnTheCPU(name)
        // Fused steps keep the product's node name.
        for node in model.nodes where node.opType.contains("+") {
            #expect(["conv", "conv1", "conv2", "conv3", "conv4", "down", "expand", "depthwise", "project", "gemm", "fc",
                     "aspp0", "aspp3", "aspp6", "aspp12"]
                .contains(node.name), "\(name): \(node.name)")
        }
        #expect(outcome.passed, "\(name): \(outcome.message)")
    }

    @Test(.enabled(if: TestGPU.isEnabled), arguments: names)
    func fusedStepsRunOnTheGPUWithinTheParityRule(_ name: String) throws {
        try Self.fixtures.expectEveryStepOnTheGPUWithinTheParityRule(name)
    }

    /// The fixtures whose fused steps fold no BatchNormalization: the same
    /// primitives in the same order per element as the unfused steps.
    static let sameOperations = ["aspp_dilated", "conv1d_dilated_relu", "conv_chain_add", "conv_silu",
                                 "flattened_gemm_clip", "gemm_relu", "mobilenet_block", "output_read_again", "two_readers"]

    @Test(arguments: sameOperations)
    func fusedCPUIsUnfusedCPUBitForBit(_ name: String) throws {
        let data = try Data(contentsOf: Self.fixtures.model(name))
        let inputs = try Self.inputs(name)
        let fused = try Self.run(data, fusing: true, inputs: inputs)
        let unfused = try Self.run(data, fusing: false, inputs: inputs)
        #expect(fused.steps < unfused.steps || Self.fixtures.expected[name]?.contains(where: { $0.contains("+") }) == false)
        for (f, u) in zip(fused.outputs, unfused.outputs) {
            #expect(f.shape == u.shape)
            #expect(zip(f.values, u.values).allSatisfy { $0.bitPattern == $1.bitPattern }, "\(name)")
        }
    }

    /// A model large enough that the convolution splits its output into
    /// several chunks per image over threads (the epilogue runs per chunk),
    /// with odd channels and a row length that is no multiple of the vector:
    /// Conv -> Add(skip) -> Relu -> HardSwish, the same bits as unfused
    /// at 1 and 2 threads; then the same on the GPU within the parity rule.
    @Test func chunkedConvolutionEpilogueIsUnfusedBitForBit() throws {
        let (n, c, m, h, w) = (2, 13, 19, 43, 41)
        var generator = SeededGenerator(seed: 5)
        func values(_ count: Int, _ scale: Float) -> [Float] {
            (0..<count).map { _ in Float(Float16(Float.random(in: -scale...scale, using: &generator))) }
        }
        let weights = values(m * c * 9, 0.15), bias = values(m, 0.5)
        let floats = { (name: String, dims: [Int64], v: [Float]) in
            ONNXBytes.tensor(name, dims: dims, type: 1, PB.bytes(9, PB.littleEndian(v.map(\.bitPattern))))
        }
        let (oh, ow) = (h - 2, w - 2)
        let data = ModelGraphTests.model(
            nodes: [ONNXBytes.node("Conv", inputs: ["x", "w", "b"], outputs: ["c"], name: "conv"),
                    ONNXBytes.node("Add", inputs: ["skip", "c"], outputs: ["a"], name: "add"),
                    ONNXBytes.node("Relu", inputs: ["a"], outputs: ["r"], name: "relu"),
                    ONNXBytes.node("HardSwish", inputs: ["r"], outputs: ["y"], name: "hswish")],
            inputs: [ModelGraphTests.value("x", [n, c, h, w]), ModelGraphTests.value("skip", [n, m, oh, ow])],
            outputs: [ModelGraphTests.value("y", [n, m, oh, ow])],
            initializers: [floats("w", [Int64(m), Int64(c), 3, 3], weights), floats("b", [Int64(m)], bias)])
        let inputs = ["x": try Tensor(shape: [n, c, h, w], values: values(n * c * h * w, 1)),
                      "skip": try Tensor(shape: [n, m, oh, ow], values: values(n * m * oh * ow, 1))]
        // Each CPU algorithm (the direct loop's tiles, Winograd's row chunks)
        // calls the epilogue at its own point.
        for algorithm in [Convolution.CPUAlgorithm.automatic, .direct, .winograd2, .winograd4] {
            try Convolution.$forcedCPUAlgorithm.withValue(algorithm) {
                let unfused = try Self.run(data, fusing: false, inputs: inputs)
                #expect(unfused.steps == 4)
                for threads in [1, 2] {
                    let fused = try Self.run(data, fusing: true, inputs: inputs, threads: threads)
                    #expect(fused.steps == 1)
                    #expect(zip(fused.outputs[0].values, unfused.outputs[0].values).allSatisfy { $0.bitPattern == $1.bitPattern },
                            "\(algorithm), threads \(threads)")
                }
            }
        }
        let unfused = try Self.run(data, fusing: false, inputs: inputs)
        guard TestGPU.isEnabled else { return }
        let gpu = try Model(data: data, backend: Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in }))
        #expect(gpu.nodes.map(\.opType) == ["Conv+Add+Relu+HardSwish"] && gpu.nodes[0].placement == .gpu)
        let y = try #require(try gpu.predict(inputs: inputs)["y"])
        let reference = unfused.outputs[0]
        // Parity rule: the GPU sums in fp32 and stores fp16 once (the unfused
        // CPU result is the fp32 one; inputs are fp16 values already).
        let worst = zip(y.values, reference.values).map { abs($0 - $1) / max(1, abs($1)) }.max() ?? 0
        #expect(worst <= 1e-3, "worst \(worst)")
    }

    /// BatchNormalization folded into a convolution's weights and bias, in
    /// float32 against float64 reference math of the unfused pair, within the
    /// stated bound: |y - y64| <= (K + 3) * 2^-24 * (|a| (sum |w x| + |b|) + |c|),
    /// K the terms of each sum (the same bound the unfused float32 pair meets).
    @Test func batchNormalizationFoldingStaysWithinItsBound() throws {
        let (n, c, m, h, w, k) = (2, 7, 5, 9, 8, 3)
        var generator = SeededGenerator(seed: 21)
        func values(_ count: Int, _ range: ClosedRange<Float>) -> [Float] {
            (0..<count).map { _ in Float.random(in: range, using: &generator) }
        }
        let weights = try Tensor(shape: [m, c, k, k], values: values(m * c * k * k, -0.5...0.5))
        let bias = try Tensor(shape: [m], values: values(m, -1...1))
        let conv = try Convolution(weights: weights, bias: bias, padding: .explicit([1, 1, 1, 1]))
        let bn = try BatchNormalization(scale: Tensor(shape: [m], values: values(m, -3...3)),
                                        bias: Tensor(shape: [m], values: values(m, -1...1)),
                                        mean: Tensor(shape: [m], values: values(m, -1...1)),
                                        variance: Tensor(shape: [m], values: values(m, 0.01...2)))
        guard case .convolution(let folded) = try #require(EpilogueLayer.Producer.convolution(conv).folding(bn)) else {
            Issue.record("not a convolution"); return
        }
        let x = try Tensor(shape: [n, c, h, w], values: values(n * c * h * w, -2...2))
        let y = try Tensor(shape: [n, m, h, w])
        try folded.evaluate(inputs: [x], outputs: [y])
        var worst = 0.0
        for b in 0..<n {
            for o in 0..<m {
                for i in 0..<h {
                    for j in 0..<w {
                        var sum = 0.0, magnitude = 0.0
                        for ci in 0..<c {
                            for ky in 0..<k {
                                for kx in 0..<k {
                                    let (iy, ix) = (i + ky - 1, j + kx - 1)
                                    guard (0..<h).contains(iy), (0..<w).contains(ix) else { continue }
                                    let term = Double(weights[((o * c + ci) * k + ky) * k + kx]) * Double(x[((b * c + ci) * h + iy) * w + ix])
                                    sum += term
                                    magnitude += abs(term)
                                }
                            }
                        }
                        let (a, shift) = (Double(bn.multipliers[o]), Double(bn.offsets[o]))
                        let reference = a * (sum + Double(bias[o])) + shift
                        let bound = Double(c * k * k + 3) * 0x1p-24
                            * (abs(a) * (magnitude + abs(Double(bias[o]))) + abs(shift))
                        let error = abs(Double(y[((b * m + o) * h + i) * w + j]) - reference)
                        #expect(error <= bound, "(\(b), \(o), \(i), \(j)): error \(error), bound \(bound)")
                        worst = max(worst, error / bound)
                    }
                }
            }
        }
        #expect(worst < 1)
    }

    /// One conv kernel per chain of formulas, shared by the same chain with
    /// other values (they are in the values buffer, not the kernel's text);
    /// a residual or another chain is another kernel.
    @Test(.enabled(if: TestGPU.isEnabled)) func kernelKeysTellChainsApart() throws {
        let context = try TestGPU.get()
        let conv = try Convolution(weights: Tensor(shape: [6, 5, 3, 3]), padding: .explicit([1, 1, 1, 1]))
        func epilogue(_ op: String, _ parameters: [String: Any], residual: Bool = false) throws -> Epilogue {
            let chain = try ElementwiseLayer(parameters: ["op": op].merging(parameters) { a, _ in a }).chain
            return try Epilogue(before: chain, residual: residual, after: FormulaChain(stages: []), channels: 6)
        }
        let relu6 = try conv.kernel(on: context, inputShape: [1, 5, 8, 8], epilogue: epilogue("Clip", ["min": 0, "max": 6]))
        let relu1 = try conv.kernel(on: context, inputShape: [1, 5, 8, 8], epilogue: epilogue("Clip", ["min": -1, "max": 1]))
        #expect(relu6.pipeline === relu1.pipeline)
        let relu = try conv.kernel(on: context, inputShape: [1, 5, 8, 8], epilogue: epilogue("Relu", [:]))
        let residual = try conv.kernel(on: context, inputShape: [1, 5, 8, 8], epilogue: epilogue("Clip", ["min": 0, "max": 6], residual: true))
        #expect(relu.pipeline !== relu6.pipeline && residual.pipeline !== relu6.pipeline && residual.pipeline !== relu.pipeline)
        // The values differ in the buffer: scalars from index 4, after zero and the slice count.
        #expect(try epilogue("Clip", ["min": -1, "max": 1]).deviceValues == [0, 2, 0, 0, -1, 1])
    }

    /// The fixture's inputs by name.
    static func inputs(_ name: String) throws -> [String: Tensor] {
        let folder = fixtures.root.appendingPathComponent(name)
        let model = try Model(contentsOf: Self.fixtures.model(name), computeUnits: .cpuOnly, notice: { _ in })
        var inputs: [String: Tensor] = [:]
        for (i, input) in model.inputs.enumerated() {
            inputs[input.name] = try ONNXTestCase.tensor(folder.appendingPathComponent("test_data_set_0/input_\(i).pb"))
        }
        return inputs
    }

    /// The model's graph, fused or not, run on the CPU: its outputs and step count.
    static func run(_ data: Data, fusing: Bool, inputs: [String: Tensor], threads: Int? = nil) throws
        -> (outputs: [Tensor], steps: Int) {
        var importer = try ONNXImporter(model: ONNXModel(data: data, source: "m"), registry: .shared)
        importer.fusesEpilogues = fusing
        let graph = try importer.graph(inputShapes: inputs.mapValues(\.shape))
        let backend = try Backend(computeUnits: .cpuOnly, threads: threads, notice: { _ in })
        let plan = try ModelPlan(graph: graph, backend: backend)
        let tensors = try graph.inputs.map { v in
            try #require(inputs[graph.values[v].name], "input \(graph.values[v].name)")
        }
        let outputs = try CPUThreads.with(threads) {
            try ModelRun(plan: plan, gpu: nil, inputs: tensors, profiler: nil).run()
        }
        return (outputs, graph.steps.filter { $0.layer != nil }.count)
    }
}
