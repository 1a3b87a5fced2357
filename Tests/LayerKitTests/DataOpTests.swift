import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// The element-moving ops (Split, Slice, Squeeze, Unsqueeze, Gather,
/// Expand, Tile, DepthToSpace, SpaceToDepth, Reshape, Concat): where the
/// `data` family's onnxruntime cases run (ONNXCaseTests checks their values
/// on both backends), their generic movement on Int64 values (load-time
/// folding), and their errors.
struct DataOpTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/onnx-cases/data")

    static let caseNames: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()

    static let gpuBackend = Result { try Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in }) }

    @Test func theCasesAreThere() {
        #expect(Self.caseNames.count >= 50, "\(Self.caseNames.count) cases under \(Self.folder.path)")
    }

    /// The cases whose every node must run on the GPU: Split along channels
    /// (ShuffleNetV2's chunk, GLU) and space, Slice, Squeeze/Unsqueeze,
    /// Expand and Tile of rank <= 4; rank-5, empty and CPU-only ops not.
    @Test(.enabled(if: TestGPU.isEnabled))
    func theWindowOpsRunOnTheGPU() throws {
        let onGPU = ["split_chunk2_channels", "split_attr_channels_opset11", "split_input_channels_opset13",
                     "split_width_negative_axis", "split_height_opset2", "split_num_outputs_uneven_opset18",
                     "glu_dim", "glu", "operator_chunk", "slice_negative_steps", "slice_channels_batch_odd",
                     "slice_attrs_opset9", "operator_index", "squeeze_input_opset13", "unsqueeze_attr_opset11",
                     "expand_channels", "expand_bidirectional", "tile_batch_channels", "operator_repeat", "tile_rank1"]
        for name in onGPU {
            let model = try Model(contentsOf: Self.folder.appendingPathComponent("\(name)/model.onnx"),
                                  backend: try Self.gpuBackend.get())
            for node in model.nodes where node.placement != nil {
                #expect(node.placement == .gpu, "\(name): \(node.opType) runs on the CPU: \(node.cpuReason ?? "")")
            }
        }
        let onCPU = ["split_rank5": "a rank-5 tensor cannot be a slice image", "slice_empty": "is empty", "gather_channels_nchw": "no GPU implementation",
                     "depth_to_space_dcr": "no GPU implementation", "squeeze_to_scalar": "a rank-0 tensor cannot be a slice image"]
        for (name, reason) in onCPU {
            let model = try Model(contentsOf: Self.folder.appendingPathComponent("\(name)/model.onnx"),
                                  backend: try Self.gpuBackend.get())
            let node = try #require(model.nodes.first)
            #expect(node.placement != .gpu && (node.cpuReason ?? "").contains(reason), "\(name): \(node.cpuReason ?? "")")
        }
    }

    // MARK: - The same code on Int64 values (load-time folding)

    /// `layer.moveElements` on Int64 values.
    static func move(_ layer: some ElementMovingLayer, _ inputs: [[Int64]], _ shapes: [[Int]]) throws -> [[Int64]] {
        let outputShapes = try layer.outputShapes(forInputShapes: shapes)
        let sources = inputs.map { values in
            let buffer = UnsafeMutableBufferPointer<Int64>.allocate(capacity: max(1, values.count))
            _ = buffer.initialize(from: values)
            return buffer
        }
        let outputs = outputShapes.map { shape in
            let buffer = UnsafeMutableBufferPointer<Int64>.allocate(capacity: max(1, shape.reduce(1, *)))
            buffer.initialize(repeating: -99)
            return UnsafeMutableBufferPointer(rebasing: buffer[0..<shape.reduce(1, *)])
        }
        defer { (sources + outputs).forEach { $0.baseAddress?.deallocate() } }
        try layer.moveElements(inputs: zip(sources, inputs).map { UnsafeBufferPointer(rebasing: $0[0..<$1.count]) },
                               inputShapes: shapes, outputs: outputs)
        return outputs.map(Array.init)
    }

    @Test func shapeArithmeticMovesInt64Values() throws {
        // Shape -> Gather(1) -> Unsqueeze -> Concat -> Reshape, as TorchScript exports flattening.
        let shape: [Int64] = [2, 7, 3, 3]
        let picked = try Self.move(GatherLayer(axis: 0, indices: [0], indicesShape: []), [shape], [[4]])
        #expect(picked == [[2]])
        let unsqueezed = try Self.move(ReshapeLayer(outputShape: [1], name: "Unsqueeze"), picked, [[]])
        let joined = try Self.move(ConcatLayer(axis: 0), [unsqueezed[0], [-1]], [[1], [1]])
        #expect(joined == [[2, -1]])
        #expect(try Self.move(SliceLayer(starts: [-1], ends: [Int.min], axes: [0], steps: [-2]), [shape], [[4]]) == [[3, 7]])
        #expect(try Self.move(SplitLayer(axis: 0, sizes: [1, 3]), [shape], [[4]]) == [[2], [7, 3, 3]])
        #expect(try Self.move(TileLayer(repeats: [2]), [[5, 6]], [[2]]) == [[5, 6, 5, 6]])
        #expect(try Self.move(ExpandLayer(shape: [2, 1], inputRank: 1), [[8]], [[1]]) == [[8, 8]])
        #expect(try Self.move(GatherLayer(axis: 0, indices: [-1, 1], indicesShape: [2]), [shape], [[4]]) == [[3, 7]])
    }

    /// Tile, Expand and Slice against an index-by-index reference, with more
    /// rows than one chunk so the threaded copy is exercised.
    @Test func windowsMatchAnIndexByIndexReference() throws {
        let x = try OpLayerTest.tensor([3, 5, 70, 11], seed: 3)
        let tile = try OpLayerTest.cpu(TileLayer(repeats: [2, 1, 3, 2]), [x])[0]
        #expect(tile.shape == [6, 5, 210, 22])
        let expectedTile = (0..<tile.count).map { i -> Double in
            let p = OpLayerTest.position(i, in: tile.shape)
            let q = zip(p, x.shape).map { $0 % $1 }
            return Double(x[zip(q, OpLayerTest.strides(x.shape)).map(*).reduce(0, +)])
        }
        OpLayerTest.expectClose(tile, expectedTile, tolerance: 0, "tile")
        let slice = try OpLayerTest.cpu(SliceLayer(starts: [4, 60, -2], ends: [0, 3, Int.min], axes: [1, 2, 3],
                                                   steps: [-1, -7, -3]), [x])[0]
        #expect(slice.shape == [3, 4, 9, 4])
        let expectedSlice = (0..<slice.count).map { i -> Double in
            let p = OpLayerTest.position(i, in: slice.shape)
            let q = [p[0], 4 - p[1], 60 - 7 * p[2], 9 - 3 * p[3]]
            return Double(x[zip(q, OpLayerTest.strides(x.shape)).map(*).reduce(0, +)])
        }
        OpLayerTest.expectClose(slice, expectedSlice, tolerance: 0, "slice")
    }

    /// Gather and DepthToSpace on more work than one chunk (threaded), against the index formulas.
    @Test func threadedGathersMatchTheIndexFormulas() throws {
        let x = try OpLayerTest.tensor([3, 1000, 70], seed: 8)
        let picks = (0..<500).map { ($0 * 7919) % 2000 - 1000 }
        let gathered = try CPUThreads.with(2) {
            try OpLayerTest.cpu(GatherLayer(axis: 1, indices: picks, indicesShape: [500]), [x])[0]
        }
        let expectedGather = (0..<gathered.count).map { i -> Double in
            let p = OpLayerTest.position(i, in: gathered.shape)
            let index = picks[p[1]] < 0 ? picks[p[1]] + 1000 : picks[p[1]]
            return Double(x[(p[0] * 1000 + index) * 70 + p[2]])
        }
        OpLayerTest.expectClose(gathered, expectedGather, tolerance: 0, "gather")
        let deep = try OpLayerTest.tensor([2, 16, 64, 64], seed: 9)
        for mode in [DepthToSpaceLayer.Mode.dcr, .crd] {
            let wide = try CPUThreads.with(2) { try OpLayerTest.cpu(DepthToSpaceLayer(blockSize: 2, mode: mode), [deep])[0] }
            let expected = (0..<wide.count).map { i -> Double in
                let p = OpLayerTest.position(i, in: wide.shape)
                let (i2, j2) = (p[2] % 2, p[3] % 2)
                let c = mode == .dcr ? (i2 * 2 + j2) * 4 + p[1] : p[1] * 4 + i2 * 2 + j2
                return Double(deep[((p[0] * 16 + c) * 64 + p[2] / 2) * 64 + p[3] / 2])
            }
            OpLayerTest.expectClose(wide, expected, tolerance: 0, "depth to space \(mode)")
            let back = try CPUThreads.with(2) { try OpLayerTest.cpu(SpaceToDepthLayer(blockSize: 2, mode: mode), [wide])[0] }
            #expect(back.values == deep.values, "space to depth \(mode)")
        }
    }

    /// SpaceToDepth then DepthToSpace in the same mode is the identity
    /// (opset 28's CRD SpaceToDepth has no onnxruntime reference here).
    @Test func spaceToDepthInvertsDepthToSpaceInBothModes() throws {
        let x = try OpLayerTest.tensor([2, 3, 6, 4], seed: 5)
        for mode in [DepthToSpaceLayer.Mode.dcr, .crd] {
            let deep = try OpLayerTest.cpu(SpaceToDepthLayer(blockSize: 2, mode: mode), [x])[0]
            #expect(deep.shape == [2, 12, 3, 2])
            let back = try OpLayerTest.cpu(DepthToSpaceLayer(blockSize: 2, mode: mode), [deep])[0]
            #expect(back.values == x.values, "\(mode)")
        }
        // CRD keeps a channel's block together: channel 0's block is output channels 0-3.
        let crd = try OpLayerTest.cpu(SpaceToDepthLayer(blockSize: 2, mode: .crd), [x])[0]
        #expect([crd[0], crd[6], crd[12], crd[18]] == [x[0], x[1], x[4], x[5]])
    }

    @Test func sliceClampsAsTheSpecSays() {
        // (start, end, step, extent) -> (first index, count)
        #expect(SliceLayer.resolve(start: 0, end: Int.max, step: 1, extent: 5) == (0, 5))
        #expect(SliceLayer.resolve(start: -1, end: Int.min, step: -1, extent: 5) == (4, 5))
        #expect(SliceLayer.resolve(start: 10, end: -10, step: -2, extent: 5) == (4, 3))
        #expect(SliceLayer.resolve(start: 3, end: 1, step: 1, extent: 5) == (0, 0))
        #expect(SliceLayer.resolve(start: 1, end: 5, step: Int.max, extent: 5) == (1, 1))
        #expect(SliceLayer.resolve(start: -1, end: -6, step: Int.min, extent: 5) == (4, 1))
        #expect(SliceLayer.resolve(start: 0, end: 0, step: -1, extent: 0) == (0, 0))
    }

    // MARK: - Errors name the node

    /// A one-node model from x of `shape` with int64 initializers.
    static func model(_ op: String, shape: [Int], constants: [(String, [Int64])] = [],
                      attributes: [[UInt8]] = [], outputs: Int = 1) -> Data {
        let initializers = constants.map { name, values in
            ONNXBytes.tensor(name, dims: [Int64(values.count)], type: 7, PB.bytes(9, PB.littleEndian(values)))
        }
        let names = outputs == 1 ? ["y"] : (0..<outputs).map { "y\($0)" }
        return ModelGraphTests.model(
            nodes: [ONNXBytes.node(op, inputs: ["x"] + constants.map(\.0), outputs: names, name: "bad", attributes: attributes)],
            inputs: [ModelGraphTests.value("x", shape)], outputs: names.map { ModelGraphTests.value($0, nil) },
            initializers: initializers)
    }

    static func ints(_ name: String, _ values: [Int64]) -> [UInt8] {
        PB.string(1, name) + values.flatMap { PB.int(8, $0) } + PB.int(20, 7)
    }

    static func int(_ name: String, _ value: Int64) -> [UInt8] { PB.string(1, name) + PB.int(3, value) + PB.int(20, 2) }

    static func loadError(_ data: Data) -> String {
        do {
            _ = try Model(data: data, name: "m.onnx", computeUnits: .cpuOnly, notice: { _ in })
            return "loaded"
        } catch {
            return "\(error)"
        }
    }

    @Test func badParametersAreErrorsNamingTheNode() {
        let cases: [(Data, String)] = [
            (Self.model("Gather", shape: [2, 5], constants: [("i", [1, 5])], attributes: [Self.int("axis", 1)]),
             "index 5 (entry 1 of the indices) is out of range for axis 1 of input 2x5 (valid: -5 to 4)"),
            (Self.model("Gather", shape: [2, 5], constants: [("i", [-3])]), "index -3 (entry 0 of the indices) is out of range"),
            (Self.model("Slice", shape: [2, 5], constants: [("s", [0]), ("e", [1]), ("a", [1]), ("p", [0])]),
             "steps [0] must not be 0"),
            (Self.model("Slice", shape: [2, 5], constants: [("s", [0, 0]), ("e", [1, 1]), ("a", [1, -1])]),
             "axes [1, -1] list an axis twice"),
            (Self.model("Split", shape: [2, 5], constants: [("s", [2, 2])], attributes: [Self.int("axis", 1)], outputs: 2),
             "sizes [2, 2] add up to 4, not the extent 5 of axis 1"),
            (Self.model("Split", shape: [2, 5], attributes: [Self.int("axis", 1)], outputs: 2),
             "axis 1 of extent 5 does not split into 2 equal parts"),
            (Self.model("Squeeze", shape: [2, 5], constants: [("a", [1])]), "axis 1 of input 2x5 has extent 5, not 1"),
            (Self.model("Unsqueeze", shape: [2, 5], constants: [("a", [3])]), "axis 3 is out of range for rank 3"),
            (Self.model("Expand", shape: [2, 5], constants: [("s", [3, 1])]), "input 2x5 does not broadcast to shape [3, 1]"),
            (Self.model("Expand", shape: [2, 5], constants: [("s", [-1, 5])]), "shape [-1, 5] has a negative extent"),
            (Self.model("Tile", shape: [2, 5], constants: [("p", [2])]), "repeats [2] must give 2 counts >= 0"),
            (Self.model("GatherElements", shape: [2, 3], constants: [("i", [0, 3])], attributes: [Self.int("axis", 1)]),
             "indices 2 and data 2x3 must have one rank"),
            (Self.model("GatherElements", shape: [4], constants: [("i", [1, 4])]),
             "GatherElements: index 4 is out of range for axis 0 of extent 4"),
            (Self.model("ScatterElements", shape: [3], constants: [("i", [0]), ("u", [])],
                        attributes: [PB.string(1, "reduction") + PB.bytes(4, Array("add".utf8)) + PB.int(20, 3)]),
             "input 0 ('x') is float32 and input 2 ('u') is int64, but ScatterElements"),
            (Self.model("DepthToSpace", shape: [1, 6, 2, 2], attributes: [Self.int("blocksize", 2)]),
             "6 channels are not a multiple of blocksize² = 4"),
            (Self.model("SpaceToDepth", shape: [1, 2, 3, 4], attributes: [Self.int("blocksize", 2)]),
             "height 3 and width 4 must be multiples of blocksize 2"),
        ]
        for (data, message) in cases {
            let error = Self.loadError(data)
            #expect(error.hasPrefix("m.onnx: node 'bad' (") && error.contains(message), "\(error)")
        }
    }

    /// Shapes from constants a hostile file controls: a huge Expand or Tile
    /// is refused by the importer's caps, an overflowing one by the shape
    /// arithmetic; both name the node, neither allocates.
    @Test func hugeOutputsAreRefusedNamingTheNode() {
        let huge: [(Data, String)] = [
            (Self.model("Expand", shape: [2, 5], constants: [("s", [1 << 20, 1 << 20, 1, 1])]), "LayerKit's limit for one tensor"),
            (Self.model("Tile", shape: [2, 5], constants: [("p", [1 << 20, 1 << 20])]), "LayerKit's limit for one tensor"),
            (Self.model("Tile", shape: [2, 5], constants: [("p", [Int64.max, 1])]), "overflows"),
            (Self.model("Expand", shape: [2, 5], constants: [("s", [Int64.max, Int64.max, 1, 1])]), "too many elements"),
        ]
        for (data, message) in huge {
            let error = Self.loadError(data)
            #expect(error.hasPrefix("m.onnx: node 'bad' (") && error.contains(message), "\(error)")
        }
    }
}
