import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// The layout family (Transpose, channel shuffle, Pad, Resize, Upsample)
/// beyond what `ONNXCaseTests` checks of the cases of
/// `Scripts/onnx_cases/layout.py`: where each step runs and what is
/// announced, the GPU against onnxruntime, the channel-shuffle rewrite, and
/// errors that name the node.
struct LayoutOpTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/onnx-cases/layout")

    static let cases: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()

    static func tensor(_ url: URL) throws -> Tensor {
        let proto = try ONNXTensor(protobuf: [UInt8](try Data(contentsOf: url)), source: url.lastPathComponent)
        return try Tensor(shape: proto.dims, values: proto.floats())
    }

    /// The case's model, inputs by name (in the model's order) and expected outputs.
    static func load(_ name: String, backend: Backend) throws -> (Model, [String: Tensor], [Tensor]) {
        let folder = directory.appendingPathComponent(name)
        let model = try Model(contentsOf: folder.appendingPathComponent("model.onnx"), backend: backend)
        let data = folder.appendingPathComponent("test_data_set_0")
        var inputs: [String: Tensor] = [:]
        for (i, input) in model.inputs.enumerated() {
            inputs[input.name] = try tensor(data.appendingPathComponent("input_\(i).pb"))
        }
        let expected = try model.outputs.indices.map { try tensor(data.appendingPathComponent("output_\($0).pb")) }
        return (model, inputs, expected)
    }

    /// Cases a step of which runs on the CPU under `.gpu`, with the reason's words.
    static let cpuCases: [String: String] = [
        "transpose_rank5": "a rank-5 tensor cannot be a slice image",
        "transpose_rank6": "a rank-6 tensor cannot be a slice image",
        "pixel_shuffle": "a rank-6 tensor cannot be a slice image",
        "pad_huge_constant": "is one fp16 storage cannot keep",
        "resize_linear_rank2": "resizes the spatial axes only",
        // Before the fix its channel table (3 to 1, asymmetric) passed for the identity and it was put on the GPU.
        "resize_shrink_channels_to_1_nearest": "resizes the spatial axes only",
        "pad_rank5": "a rank-5 tensor cannot be a slice image",
        "resize_nearest_channels": "resizes the spatial axes only",
        "resize_nearest_rank5": "a rank-5 tensor cannot be a slice image",
        "resize_linear_rank5": "a rank-5 tensor cannot be a slice image",
    ]

    @Test func thereAreCases() { #expect(Self.cases.count >= 60) }

    /// GPU (every step it can hold, the rest announced) against the CPU on
    /// the same fp16-rounded input, by the parity rule, and against
    /// onnxruntime within 2e-3 max(1, |ref|) (the input's rounding moves
    /// interpolated outputs a little).
    @Test(.enabled(if: TestGPU.isEnabled), arguments: cases)
    func gpuMatchesTheCPUAndOnnxRuntime(_ name: String) throws {
        let notices = BackendTests.Notices()
        let backend = try Backend(computeUnits: .gpu, context: TestGPU.get(), notice: notices.append)
        let (model, inputs, expected) = try Self.load(name, backend: backend)
        let rounded = try inputs.mapValues { try $0.roundedToHalf() }
        let gpu = try model.predict(inputs: rounded)
        let (cpuModel, _, _) = try Self.load(name, backend: Backend(computeUnits: .cpuOnly))
        let cpu = try cpuModel.predict(inputs: rounded)
        for (output, reference) in zip(model.outputs, expected) {
            let (g, c) = (try #require(gpu[output.name]), try #require(cpu[output.name]))
            #expect(g.shape == reference.shape && c.shape == reference.shape)
            guard g.shape == reference.shape, c.shape == reference.shape else { continue }
            var parity = 0.0, error = 0.0
            for i in 0..<g.count {
                parity = max(parity, abs(Double(g[i]) - Double(c[i])) / max(1, abs(Double(c[i]))))
                error = max(error, abs(Double(g[i]) - Double(reference[i])) / max(1, abs(Double(reference[i]))))
            }
            #expect(parity <= 1e-3, "\(name): max |gpu - cpu| / max(1, |cpu|) = \(parity)")
            #expect(error <= 2e-3, "\(name): max |gpu - ref| / max(1, |ref|) = \(error)")
        }
        // Placement: every step on the GPU unless the case is one the GPU cannot hold.
        let placed = model.nodes.filter { $0.placement != nil }
        if let reason = Self.cpuCases[name] {
            #expect(placed.contains { !($0.placement?.isGPU ?? true) }, "\(name) should run a step on the CPU")
            #expect(notices.all.contains { $0.contains(reason) }, "\(name): notices \(notices.all)")
        } else {
            for node in placed {
                #expect(node.placement == .gpu, "\(name): \(node.name) (\(node.opType)) runs on \(String(describing: node.placement))")
            }
            #expect(notices.all.isEmpty, "\(name): \(notices.all)")
        }
    }

    /// The shufflenet block's Reshape -> Transpose -> Reshape becomes one
    /// GPU ChannelShuffle step (named after the Transpose), on the CPU too.
    @Test func aChannelShuffleIsOneStep() throws {
        for units in [ComputeUnits.cpuOnly] + (TestGPU.isEnabled ? [.gpu] : []) {
            let backend = units == .gpu ? try Backend(computeUnits: .gpu, context: TestGPU.get())
                : try Backend(computeUnits: .cpuOnly)
            let (model, _, _) = try Self.load("channel_shuffle_g2_c6", backend: backend)
            #expect(model.nodes.map(\.opType) == ["Relu", "ChannelShuffle", "Neg"])
            #expect(model.nodes[1].name == "shuffle" && model.nodes[1].domain == "layerkit")
            let (block, inputs, expected) = try Self.load("shufflenet_block", backend: backend)
            // The convolutions take in their Relu and Add (fused epilogues).
            #expect(block.nodes.map(\.opType) == ["Conv+Relu", "ChannelShuffle", "Conv+Add"])
            if units == .gpu {
                #expect(model.nodes.allSatisfy { $0.placement == .gpu })
                #expect(block.nodes.allSatisfy { $0.placement == .gpu })
            }
            // The block against onnxruntime (the GPU's parity is checked with the other cases).
            let y = try #require(try block.predict(inputs: inputs)["y"])
            let worst = (0..<y.count).map { abs(Double(y[$0]) - Double(expected[0][$0])) / max(1, abs(Double(expected[0][$0]))) }
                .max() ?? 0
            #expect(worst <= (units == .gpu ? 2e-3 : 1e-5), "\(units): \(worst)")
        }
    }

    /// The rewrite leaves the three steps alone when a value in between is
    /// read elsewhere (here: a graph output).
    @Test func aShuffleWhoseMiddleIsAnOutputStaysThreeSteps() throws {
        func graph(middleIsOutput: Bool) throws -> ModelGraph {
            var graph = ModelGraph()
            let x = graph.addValue("x", shape: [1, 6, 2, 2])
            let grouped = graph.addValue("g", shape: [1, 2, 3, 2, 2])
            let swapped = graph.addValue("s", shape: [1, 3, 2, 2, 2])
            let y = graph.addValue("y", shape: [1, 6, 2, 2])
            graph.inputs = [x]
            graph.outputs = middleIsOutput ? [y, swapped] : [y]
            graph.steps = [
                .init(name: "a", opType: "Reshape", domain: "", layer: try ReshapeLayer(outputShape: [1, 2, 3, 2, 2]),
                      inputs: [x], outputs: [grouped]),
                .init(name: "b", opType: "Transpose", domain: "", layer: try TransposeLayer(perm: [0, 2, 1, 3, 4]),
                      inputs: [grouped], outputs: [swapped]),
                .init(name: "c", opType: "Reshape", domain: "", layer: try ReshapeLayer(outputShape: [1, 6, 2, 2]),
                      inputs: [swapped], outputs: [y]),
            ]
            graph.fuseChannelShuffles()
            return graph
        }
        #expect(try graph(middleIsOutput: true).steps.map(\.opType) == ["Reshape", "Transpose", "Reshape"])
        let fused = try graph(middleIsOutput: false)
        #expect(fused.steps.map(\.opType) == ["ChannelShuffle"])
        #expect(fused.steps.first?.inputs == [0] && fused.steps.first?.outputs == [3])
    }

    @Test func channelShuffleMovesChannelsAsTheFormulaSays() throws {
        let x = try Tensor(shape: [2, 6, 1, 2], values: (0..<24).map(Float.init))
        let y = try Backend(computeUnits: .cpuOnly).run(ChannelShuffle(groups: 3), inputs: [x]).outputs[0]
        for n in 0..<2 {
            for c in 0..<6 {
                let from = (c % 3) * 2 + c / 3
                for i in 0..<2 { #expect(y[(n * 6 + c) * 2 + i] == x[(n * 6 + from) * 2 + i]) }
            }
        }
    }

    /// Transpose's element movement runs on Int64 too (load-time folding).
    @Test func transposeMovesInt64() throws {
        let layer = try TransposeLayer(perm: [1, 0])
        let source: [Int64] = [1, 2, 3, 4, 5, 6]  // 2x3
        var result = [Int64](repeating: 0, count: 6)
        try source.withUnsafeBufferPointer { input in
            try result.withUnsafeMutableBufferPointer { output in
                try layer.moveElements(inputs: [input], inputShapes: [[2, 3]], outputs: [output])
            }
        }
        #expect(result == [1, 4, 2, 5, 3, 6])
    }

    /// Every permutation of a rank-4 tensor whose extents are no multiple
    /// of the 16 x 16 tiles (and two of rank 5, one with a unit axis), against
    /// the definition: output element at index i is the input's at the index
    /// whose axis perm[k] is i[k].
    @Test func transposeMatchesTheDefinition() throws {
        func permutations(_ items: [Int]) -> [[Int]] {
            items.count <= 1 ? [items]
                : items.flatMap { x in permutations(items.filter { $0 != x }).map { [x] + $0 } }
        }
        let cases = permutations([0, 1, 2, 3]).map { ([3, 17, 2, 35], $0) }
            + [([2, 3, 18, 1, 21], [0, 4, 2, 1, 3]), ([2, 3, 18, 5, 21], [4, 0, 3, 2, 1])]
        for (input, perm) in cases {
            let layer = try TransposeLayer(perm: perm)
            let x = try Tensor(shape: input, values: (0..<input.reduce(1, *)).map(Float.init))
            let shape = perm.map { input[$0] }
            let y = try Tensor(shape: shape)
            try layer.evaluate(inputs: [x], outputs: [y])
            var expected: [Float] = []
            for flat in 0..<y.count {
                var rest = flat, source = Array(repeating: 0, count: input.count)
                for k in stride(from: shape.count - 1, through: 0, by: -1) {
                    source[perm[k]] = rest % shape[k]
                    rest /= shape[k]
                }
                var offset = 0
                for axis in input.indices { offset = offset * input[axis] + source[axis] }
                expected.append(Float(offset))
            }
            #expect(y.values == expected, "\(input) perm \(perm)")
        }
    }

    // MARK: - Errors name the node

    static func attribute(_ name: String, ints: [Int64]) -> [UInt8] {
        PB.string(1, name) + ints.flatMap { PB.int(8, $0) } + PB.int(20, 7)
    }

    static func attribute(_ name: String, string: String) -> [UInt8] {
        PB.string(1, name) + PB.bytes(4, Array(string.utf8)) + PB.int(20, 3)
    }

    static func attribute(_ name: String, int: Int64) -> [UInt8] { PB.string(1, name) + PB.int(3, int) + PB.int(20, 2) }

    static func int64s(_ name: String, _ values: [Int64]) -> [UInt8] {
        ONNXBytes.tensor(name, dims: [Int64(values.count)], type: 7, PB.bytes(9, PB.littleEndian(values)))
    }

    static func floats(_ name: String, _ values: [Float]) -> [UInt8] {
        ONNXBytes.tensor(name, dims: [Int64(values.count)], type: 1, PB.bytes(9, PB.littleEndian(values.map(\.bitPattern))))
    }

    /// One node `op` named `bad` from x [1, 3, 4, 4] (and constants) to y.
    static func model(_ op: String, inputs: [String] = ["x"], attributes: [[UInt8]] = [],
                      initializers: [[UInt8]] = []) -> Data {
        ModelGraphTests.model(nodes: [ONNXBytes.node(op, inputs: inputs, outputs: ["y"], name: "bad", attributes: attributes)],
                              inputs: [ModelGraphTests.value("x", [1, 3, 4, 4])], outputs: [ModelGraphTests.value("y", nil)],
                              initializers: initializers)
    }

    static func loadError(_ data: Data) -> String {
        do {
            _ = try Model(data: data, name: "m.onnx", computeUnits: .cpuOnly)
            return "loaded"
        } catch {
            return "\(error)"
        }
    }

    @Test func badAttributesAreErrorsNamingTheNode() {
        let cases: [(Data, String)] = [
            (Self.model("Transpose", attributes: [Self.attribute("perm", ints: [0, 1, 1, 2])]), "is not a permutation"),
            (Self.model("Transpose", attributes: [Self.attribute("perm", ints: [0, 1])]), "is not a permutation"),
            (Self.model("Pad", inputs: ["x", "p"], initializers: [Self.int64s("p", [1, 1, 1, 1])]), "must hold 8 values"),
            (Self.model("Pad", inputs: ["x", "p"], attributes: [Self.attribute("mode", string: "mirror")],
                        initializers: [Self.int64s("p", [0, 0, 1, 1, 0, 0, 1, 1])]), "mode 'mirror'"),
            (Self.model("Pad", inputs: ["x", "p"], initializers: [Self.int64s("p", [0, 0, -3, 0, 0, 0, -2, 0])]),
             "below zero"),
            (Self.model("Resize", inputs: ["x", "", "s"], attributes: [Self.attribute("mode", string: "area")],
                        initializers: [Self.floats("s", [1, 1, 2, 2])]), "mode 'area'"),
            (Self.model("Resize", inputs: ["x", "", "s"], initializers: [Self.floats("s", [1, 1, 0.1, 0.1])]),
             "would be empty"),
            (Self.model("Resize", inputs: ["x", "", "s"], initializers: [Self.floats("s", [1, 1, 1e9, 1e9])]),
             "limit"),
            (Self.model("Resize", inputs: ["x", "", "s"], attributes: [Self.attribute("antialias", int: 1)],
                        initializers: [Self.floats("s", [1, 1, 2, 2])]), "antialias = 1 is not supported"),
            (Self.model("Resize", inputs: ["x", "", "s"],
                        attributes: [Self.attribute("coordinate_transformation_mode", string: "centered")],
                        initializers: [Self.floats("s", [1, 1, 2, 2])]), "coordinate_transformation_mode 'centered'"),
            (Self.model("Resize", inputs: ["x", "", "s"], initializers: [Self.floats("s", [2, 2])]), "must hold 4 values"),
            (Self.model("Resize", inputs: ["x"]), "neither scales"),
            (Self.model("Resize", inputs: ["x", "", "", "z"], initializers: [Self.int64s("z", [1, 3, 1 << 40, 1 << 40])]),
             "too many elements"),
            (Self.model("Resize", inputs: ["x", "", "", "z"], initializers: [Self.int64s("z", [1, 3, 1 << 15, 1 << 15])]),
             "1 GiB"),
            (Self.model("Resize", inputs: ["x", "", "", "z"], initializers: [Self.int64s("z", [1, 3, 0, 4])]),
             "would make an empty output"),
        ]
        for (data, words) in cases {
            let message = Self.loadError(data)
            #expect(message.hasPrefix("m.onnx: node 'bad' ("), "\(message)")
            #expect(message.contains(words), "expected '\(words)' in: \(message)")
        }
        // Control: a good Resize loads.
        #expect(Self.loadError(Self.model("Resize", inputs: ["x", "", "s"],
                                          initializers: [Self.floats("s", [1, 1, 2, 2])])) == "loaded")
    }
}
