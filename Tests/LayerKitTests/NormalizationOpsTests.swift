import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// The `norm` family's reference cases (Scripts/onnx_cases/norm.py, expected
/// values from onnxruntime; ONNXCaseTests runs them all), the GPU against
/// onnxruntime directly, and what the cases cannot show: GPU placement of the
/// models that must run entirely on the GPU, errors that name the node, an
/// even LRN size (onnxruntime refuses one), the GPU forms on larger planes.
struct NormalizationOpsTests {
    static let family = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/onnx-cases/norm")

    static let cases: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: family.path)) ?? []).sorted()

    /// A case's inputs and onnxruntime's outputs, in file order.
    static func tensors(_ name: String, _ kind: String) throws -> [Tensor] {
        let folder = family.appendingPathComponent(name).appendingPathComponent("test_data_set_0")
        var result: [Tensor] = []
        var i = 0
        while case let url = folder.appendingPathComponent("\(kind)_\(i).pb"), FileManager.default.fileExists(atPath: url.path) {
            let proto = try ONNXTensor(protobuf: Array(Data(contentsOf: url)), source: url.lastPathComponent)
            result.append(try Tensor(shape: proto.dims, values: proto.floats()))
            i += 1
        }
        return result
    }

    static func run(_ name: String, _ units: ComputeUnits, inputs: [Tensor]) throws -> (Model, [Tensor]) {
        let backend = try Backend(computeUnits: units, context: units == .cpuOnly ? nil : TestGPU.get(), notice: { _ in })
        let model = try Model(contentsOf: family.appendingPathComponent(name).appendingPathComponent("model.onnx"),
                              backend: backend, notice: { _ in })
        let feeds = Dictionary(uniqueKeysWithValues: zip(model.inputs.map(\.name), inputs))
        let outputs = try model.predict(inputs: feeds)
        return (model, try model.outputs.map { try #require(outputs[$0.name]) })
    }

    /// The worst `|a - e| - bound(e)` excess, nil when every element is within.
    static func excess(_ actual: Tensor, _ expected: Tensor, bound: (Double) -> Double) -> String? {
        guard actual.shape == expected.shape else { return "shape \(actual.shape), expected \(expected.shape)" }
        for i in 0..<actual.count {
            let (a, e) = (Double(actual[i]), Double(expected[i]))
            if a.isNaN && e.isNaN || a == e { continue }
            if !(abs(a - e) <= bound(e)) { return "element \(i) is \(a), expected \(e)" }
        }
        return nil
    }

    @Test func everyCaseIsThere() { #expect(Self.cases.count >= 100) }

    /// ONNXCaseTests runs every case on the CPU against onnxruntime and on
    /// the GPU against the CPU; the norm cases' inputs are fp16-exact, so the
    /// GPU is also held to the parity rule against onnxruntime itself.
    @Test(.enabled(if: TestGPU.isEnabled), arguments: cases)
    func gpuMeetsTheParityRuleAgainstOnnxRuntime(_ name: String) throws {
        let inputs = try Self.tensors(name, "input")
        #expect(try inputs.allSatisfy { try $0.roundedToHalf().values == $0.values },
                "\(name): inputs not fp16-exact")
        let (_, gpu) = try Self.run(name, .gpu, inputs: inputs)
        for (k, (g, e)) in zip(gpu, try Self.tensors(name, "output")).enumerated() {
            let failure = Self.excess(g, e) { 1e-3 * max(1, abs($0)) }
            #expect(failure == nil, "\(name) output \(k): \(failure ?? "")")
        }
    }

    /// Which ops the GPU runs: every node of these cases and models.
    @Test(.enabled(if: TestGPU.isEnabled), arguments: [
        "model_conv_reducemean_flatten_gemm", "model_conv_lrn_instancenorm", "reducemean_hw_neg_keep_opset18",
        "reducemean_hw_nokeep_opset18", "reducemean_hw_keep_opset13", "reducelogsumexp_channels_keep_opset18",
        "reducemean_rank2_channels_nokeep_opset18", "reducemean_rank3_spatial_keep_opset18", "softmax_axis1_c5_n2",
        "logsoftmax_axis1_c5_n2", "hardmax_axis1_c5", "softmax_opset11_default_nc", "softmax_opset11_axis1_trailing1",
        "instancenorm_c3_n2", "instancenorm_rank3_c5", "lrn_size5_alexnet_c7", "layernorm_last_bias",
        "layernorm_axis_neg2_rank4_nobias", "layernorm_last_d96", "softmax_axis2_rank4", "softmax_axis3_rank4_scores",
        "logsoftmax_axis3_rank4_scores", "softmax_opset11_axis3_last", "hardmax_axis3_rank4", "hardmax_axis_neg1",
        "layernorm_channels_last",
    ])
    func runsEntirelyOnTheGPU(_ name: String) throws {
        let (model, _) = try Self.run(name, .gpu, inputs: Self.tensors(name, "input").map { try $0.roundedToHalf() })
        let placed = model.nodes.filter { $0.placement != nil }
        #expect(!placed.isEmpty)
        for node in placed {
            #expect(node.placement == .gpu, "\(name): \(node.name) (\(node.opType)) runs on \(String(describing: node.placement))")
        }
    }

    /// Forms the GPU does not hold run on the CPU, each for its reason.
    @Test(.enabled(if: TestGPU.isEnabled), arguments: [
        "softmax_opset11_axis1_flattens", "softmax_axis0_rank2", "reducemean_channels_nokeep_rank4_opset18",
        "reducemax_axes0_last_nokeep_opset18", "layernorm_axis1_rank3", "layernorm_mean_invstddev",
        "instancenorm_rank5_c6",
    ])
    func otherFormsRunOnTheCPU(_ name: String) throws {
        let (model, _) = try Self.run(name, .gpu, inputs: Self.tensors(name, "input"))
        #expect(model.nodes.allSatisfy { $0.placement != .gpu }, "\(name): \(model.nodes.map(\.placement))")
        let reasons = ["instancenorm_rank5_c6": "a rank-5 tensor cannot be a slice image",
                       "layernorm_axis1_rank3": "it normalizes axes 1 to 2 of a rank-3 input, which are not an image's H and W",
                       "layernorm_mean_invstddev": "it also gives the Mean and InvStdDev outputs"]
        if let expected = reasons[name] {
            let reason = model.nodes.first?.cpuReason ?? ""
            #expect(reason.contains(expected), "\(reason)")
        }
    }

    // MARK: - Errors that name the node

    static func node(_ op: String, inputs: [String] = ["x"], outputs: [String] = ["y"], attributes: [[UInt8]] = [])
        -> [UInt8] {
        ONNXBytes.node(op, inputs: inputs, outputs: outputs, name: "n1", attributes: attributes)
    }

    static func load(_ node: [UInt8], opset: Int64 = 18, initializers: [[UInt8]] = [], shape: [Int] = [2, 3, 4, 5])
        throws -> Model {
        let graph = ONNXBytes.graph(nodes: [node], initializers: initializers,
                                    inputs: [ModelGraphTests.value("x", shape)],
                                    extra: PB.bytes(12, ModelGraphTests.value("y", nil)))
        return try Model(data: ONNXBytes.model(opsets: [("", opset)], graph: graph), computeUnits: .cpuOnly,
                         notice: { _ in })
    }

    /// The error of loading the model of `node`, or of its first run on
    /// zeros (an input whose value a node needs is read at prepare, so that
    /// node's error comes then); "loaded" when both succeed.
    static func loadError(_ node: [UInt8], opset: Int64 = 18, initializers: [[UInt8]] = [],
                          shape: [Int] = [2, 3, 4, 5]) -> String {
        do {
            let model = try load(node, opset: opset, initializers: initializers, shape: shape)
            _ = try model.predict(inputs: ["x": Tensor(shape: shape)])
            return "loaded"
        } catch {
            return "\(error)"
        }
    }

    static func floats(_ name: String, _ dims: [Int64], _ values: [Float]) -> [UInt8] {
        ONNXBytes.tensor(name, dims: dims, type: 1, PB.bytes(9, PB.littleEndian(values.map(\.bitPattern))))
    }

    @Test func badNodesAreErrorsNamingTheNode() {
        let cases: [(String, String)] = [
            (Self.loadError(Self.node("ReduceMean", attributes: [RankRuleTests.ints("axes", [1, -3])]), opset: 13),
             "node 'n1' (ReduceMean): axes [1, -3] name axis 1 twice"),
            (Self.loadError(Self.node("ReduceMean", attributes: [RankRuleTests.ints("axes", [4])]), opset: 13),
             "node 'n1' (ReduceMean): axis 4 is out of range for rank 4"),
            (Self.loadError(Self.node("ReduceSum", inputs: ["x", "x"])),
             "node 'n1' (ReduceSum): input 1 ('x') is float32, which ReduceSum at opset 18 (its version 13) does not allow for axes"),
            (Self.loadError(Self.node("ReduceMean", attributes: [RankRuleTests.ints("axes", [1])])),
             "node 'n1' (ReduceMean): attribute 'axes' is not supported"),
            (Self.loadError(Self.node("LRN")), "node 'n1' (LRN): size is required"),
            (Self.loadError(Self.node("LRN", attributes: [RankRuleTests.int("size", 0)])),
             "node 'n1' (LRN): LRN: size must be from 1 to"),
            (Self.loadError(Self.node("Softmax", attributes: [RankRuleTests.int("axis", 4)])),
             "node 'n1' (Softmax): axis 4 is out of range for rank 4"),
            (Self.loadError(Self.node("InstanceNormalization", inputs: ["x", "s", "b"]),
                            initializers: [Self.floats("s", [4], [1, 1, 1, 1]),
                                           Self.floats("b", [3], [0, 0, 0])]),
             "node 'n1' (InstanceNormalization): scale has shape 4; the input has 3 channels"),
            (Self.loadError(Self.node("LayerNormalization", inputs: ["x", "s"], outputs: ["y", "", "inv"]),
                            initializers: [Self.floats("s", [5], [1, 1, 1, 1, 1])]),
             "node 'n1' (LayerNormalization): an omitted (empty-named) output is not supported"),
            (Self.loadError(Self.node("LayerNormalization", inputs: ["x", "s"]),
                            initializers: [Self.floats("s", [3], [1, 1, 1])]),
             "node 'n1' (LayerNormalization): Scale of shape 3 does not broadcast to the normalized axes 5"),
        ]
        for (error, expected) in cases {
            #expect(error.contains(expected), "\(error)")
        }
    }

    // MARK: - Layers on their own

    /// ONNX's LRN formula in float64, any size (even ones included).
    static func lrnReference(_ x: Tensor, size: Int, alpha: Double, beta: Double, bias: Double) -> [Double] {
        let (channels, plane) = (x.shape[1], x.shape[2...].reduce(1, *))
        return (0..<x.count).map { i in
            let c = (i / plane) % channels, base = i - c * plane
            let window = max(0, c - (size - 1) / 2)...min(channels - 1, c + size / 2)
            let sum = window.map { Double(x[base + $0 * plane]) }.map { $0 * $0 }.reduce(0, +)
            return Double(x[i]) / pow(bias + alpha / Double(size) * sum, beta)
        }
    }

    @Test func lrnWithAnEvenSizeTakesOneMoreChannelAbove() throws {
        let x = try OpLayerTest.tensor([2, 6, 2, 3], seed: 7, half: true)
        let layer = try LRN(size: 4, alpha: 0.5, beta: 0.75, bias: 2)
        let expected = Self.lrnReference(x, size: 4, alpha: 0.5, beta: 0.75, bias: 2)
        OpLayerTest.expectClose(try OpLayerTest.cpu(layer, [x])[0], expected, tolerance: OpLayerTest.cpuTolerance, "CPU")
        if TestGPU.isEnabled {
            OpLayerTest.expectClose(try OpLayerTest.gpu(layer, [x])[0], expected, tolerance: OpLayerTest.gpuTolerance, "GPU")
        }
    }

    /// Spatial reductions over planes far larger than a workgroup's 64
    /// invocations, and channel reductions, against float64.
    @Test(.enabled(if: TestGPU.isEnabled))
    func gpuReductionsOnLargerPlanes() throws {
        let x = try OpLayerTest.tensor([2, 5, 33, 31], seed: 3, in: -2...2, half: true)
        let (plane, channels) = (33 * 31, 5)
        for operation in Reduce.Operation.allCases {
            let input = operation == .logSum ? try Tensor(shape: x.shape, values: x.elements.map { abs($0) + 0.5 }) : x
            let spatial = try Reduce(operation, axes: [2, 3], keepDims: true, rank: 4)
            let rows = (0..<10).map { p in (0..<plane).map { Double(input[p * plane + $0]) } }
            OpLayerTest.expectClose(try OpLayerTest.gpu(spatial, [input])[0], rows.map { Self.reduce(operation, $0) },
                                    tolerance: OpLayerTest.gpuTolerance, "\(operation) over H, W")
            let across = try Reduce(operation, axes: [1], keepDims: true, rank: 4)
            let columns = (0..<(2 * plane)).map { i in
                (0..<channels).map { Double(input[(i / plane * channels + $0) * plane + i % plane]) }
            }
            OpLayerTest.expectClose(try OpLayerTest.gpu(across, [input])[0], columns.map { Self.reduce(operation, $0) },
                                    tolerance: OpLayerTest.gpuTolerance, "\(operation) over C")
        }
    }

    static func reduce(_ operation: Reduce.Operation, _ v: [Double]) -> Double {
        switch operation {
        case .sum: v.reduce(0, +)
        case .mean: v.reduce(0, +) / Double(v.count)
        case .max: v.max()!
        case .min: v.min()!
        case .product: v.reduce(1, *)
        case .l1: v.map(abs).reduce(0, +)
        case .l2: v.map { $0 * $0 }.reduce(0, +).squareRoot()
        case .sumSquare: v.map { $0 * $0 }.reduce(0, +)
        case .logSum: log(v.reduce(0, +))
        case .logSumExp: log(v.map { exp($0 - v.max()!) }.reduce(0, +)) + v.max()!
        }
    }

    @Test func gpuFormsFollowTheImageLayout() throws {
        #expect(try Reduce(.mean, axes: [2, 3], keepDims: false, rank: 4).hasGPUImplementation)
        #expect(try Reduce(.mean, axes: [2], keepDims: true, rank: 3).hasGPUImplementation)
        #expect(try Reduce(.sum, axes: [1], keepDims: true, rank: 4).hasGPUImplementation)
        #expect(try Reduce(.sum, axes: [1], keepDims: false, rank: 2).hasGPUImplementation)
        #expect(!(try Reduce(.sum, axes: [1], keepDims: false, rank: 4)).hasGPUImplementation)
        #expect(!(try Reduce(.sum, axes: [3], keepDims: true, rank: 4)).hasGPUImplementation)
        #expect(!(try Reduce(.sum, axes: [2, 3, 4], keepDims: true, rank: 5)).hasGPUImplementation)
        #expect(try Softmax(axis: 1, flattensTrailingAxes: true).whyNotGPU(inputShapes: [[2, 3, 4]],
                                                                           outputShapes: [[2, 3, 4]]) != nil)
        #expect(try Softmax(axis: 1, kind: .logSoftmax).hasGPUImplementation)
        #expect(throws: LayerKitError.invalidParameter("ReduceMax: axes [1, 1] list an axis twice")) {
            try Reduce(.max, axes: [1, 1], keepDims: true, rank: 3)
        }
    }
}
