import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// The convolution family (ONNXOperators+Convolution): every case of
/// `Fixtures/onnx-cases/conv` (onnxruntime's outputs, Scripts/onnx_cases/conv.py)
/// on the CPU and on the GPU, where each op runs, and the errors that name
/// the node.
struct ConvolutionFamilyTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/onnx-cases/conv")

    static let cases: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()

    /// A case's model bytes, inputs and reference outputs (int64 and bool outputs as Float32 values).
    struct Case {
        let model: Data
        let inputs: [Tensor]
        let outputs: [Tensor]
    }

    static func tensor(_ url: URL) throws -> Tensor {
        let proto = try ONNXTensor(protobuf: [UInt8](try Data(contentsOf: url)), source: url.lastPathComponent)
        let values: [Float] = switch proto.dataType {
        case .int64, .int32, .bool: try proto.int64s().map(Float.init)
        default: try proto.floats()
        }
        return try Tensor(shape: proto.dims, values: values)
    }

    static func load(_ name: String, in directory: URL = directory) throws -> Case {
        let folder = directory.appendingPathComponent(name)
        let data = folder.appendingPathComponent("test_data_set_0")
        let files = try FileManager.default.contentsOfDirectory(atPath: data.path).sorted()
        func read(_ prefix: String) throws -> [Tensor] {
            try files.filter { $0.hasPrefix(prefix) }
                .sorted { Int($0.dropFirst(prefix.count).dropLast(3)) ?? 0 < Int($1.dropFirst(prefix.count).dropLast(3)) ?? 0 }
                .map { try tensor(data.appendingPathComponent($0)) }
        }
        return Case(model: try Data(contentsOf: folder.appendingPathComponent("model.onnx")),
                    inputs: try read("input_"), outputs: try read("output_"))
    }

    /// The model's outputs, in the file's order, for `inputs` in the file's order.
    static func run(_ model: Model, _ inputs: [Tensor]) throws -> [Tensor] {
        let named = Dictionary(uniqueKeysWithValues: zip(model.inputs.map(\.name), inputs))
        let results = try model.predict(inputs: named)
        return try model.outputs.map { try #require(results[$0.name]) }
    }

    @Test func everyCaseIsFound() {
        #expect(Self.cases.count >= 70)
    }

    /// Each op of the family has one converter: none is left in `core`.
    @Test func theFamilyOwnsItsOps() {
        // (No op is declared twice, in one family or two: OpTableTests.)
        let family = Set(ONNXOperators.convolution.map(\.name))
        for op in ["Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
                   "BatchNormalization", "Dropout", "LpPool", "GlobalLpPool"] {
            #expect(family.contains(op) && ONNXOperators.table[op] != nil, "\(op)")
        }
    }

    /// CPU: |y - ref| <= 1e-7 + 1e-3 |ref| (the onnx backend tests' tolerance).
    @Test(arguments: cases)
    func matchesOnnxruntimeOnTheCPU(_ name: String) throws {
        let fixture = try Self.load(name)
        let model = try Model(data: fixture.model, name: name, computeUnits: .cpuOnly)
        let got = try Self.run(model, fixture.inputs)
        #expect(got.count == fixture.outputs.count)
        for (y, ref) in zip(got, fixture.outputs) {
            #expect(y.shape == ref.shape, "\(name): shape \(y.shape) vs \(ref.shape)")
            guard y.shape == ref.shape else { continue }
            let worst = zip(y.values, ref.values).map { abs($0 - $1) - (1e-7 + 1e-3 * abs($1)) }.max() ?? 0
            #expect(worst <= 0, "\(name): exceeds the tolerance by \(worst)")
        }
    }

    /// GPU (what runs there; the rest falls back): against the CPU run on
    /// the same fp16-rounded inputs, |gpu - cpu| <= 1e-3 max(1, |cpu|).
    @Test(arguments: cases)
    func theGPUAgreesWithTheCPU(_ name: String) throws {
        let fixture = try Self.load(name)
        let rounded = try fixture.inputs.map { try Tensor(shape: $0.shape, values: $0.values.map { Float(Float16($0)) }) }
        let cpu = try Self.run(Model(data: fixture.model, name: name, computeUnits: .cpuOnly), rounded)
        let backend = try Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in })
        let gpu = try Self.run(Model(data: fixture.model, name: name, backend: backend), rounded)
        for (g, c) in zip(gpu, cpu) {
            #expect(g.shape == c.shape)
            let worst = zip(g.values, c.values).map { abs($0 - $1) - 1e-3 * max(1, abs($1)) }.max() ?? 0
            #expect(worst <= 0, "\(name): GPU exceeds the parity bound by \(worst)")
        }
    }

    /// The 1-D convolutions and pools and the 2-D and 1-D ConvTransposes
    /// run on the GPU; 3-D ones (rank-5 tensors) and MaxPool's Indices on
    /// the CPU, with the reason.
    @Test(arguments: [
        ("conv1d_pads_strides_bias", true), ("conv1d_depthwise", true), ("conv1d_groups", true), ("conv1d_same_upper", true),
        ("maxpool1d_dilation_ceil", true), ("avgpool1d_include_pad", true), ("globalavgpool1d", true),
        ("convtranspose2d_output_shape", true), ("convtranspose2d_groups", true), ("convtranspose1d_groups_same_lower", true),
        ("batchnorm1d_rank3", true), ("avgpool2d_dilations_include_pad", true),
        ("conv3d_groups", false), ("maxpool3d_pads", false), ("convtranspose3d_strides_pads", false),
        ("batchnorm3d_rank5", false), ("globalmaxpool3d", false), ("maxpool2d_indices", false),
    ])
    func placement(_ name: String, _ onGPU: Bool) throws {
        let fixture = try Self.load(name)
        let backend = try Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in })
        let model = try Model(data: fixture.model, name: name, backend: backend)
        let node = try #require(model.nodes.first)
        let gpu = node.placement == .gpu
        #expect(gpu == onGPU, "\(name): \(node.cpuReason ?? "on the GPU")")
        if !onGPU { #expect(node.cpuReason != nil) }
    }

    @Test func aRank5TensorFallsBackToTheCPUSayingWhy() throws {
        let fixture = try Self.load("batchnorm3d_rank5")
        let backend = try Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in })
        let model = try Model(data: fixture.model, name: "bn", backend: backend)
        #expect(model.nodes[0].cpuReason?.contains("rank-5 tensor cannot be a slice image") == true)
    }

    // MARK: - Layers directly

    /// ConvTranspose's output extents by the ONNX spec's formula, by hand:
    /// stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pads.
    @Test func convTransposeOutputShapes() throws {
        let w = try Tensor(shape: [2, 3, 3, 2], values: [Float](repeating: 1, count: 36))
        let explicit = try ConvTranspose(weights: w, strides: [3, 2], padding: .explicit([1, 0, 2, 1]), outputPadding: [2, 1])
        // rows: 3 * 4 + 2 + 3 - 3 = 14; columns: 2 * 4 + 1 + 2 - 1 = 10.
        #expect(try explicit.outputShapes(forInputShapes: [[1, 2, 5, 5]]) == [[1, 3, 14, 10]])
        let same = try ConvTranspose(weights: w, strides: [3, 2], padding: .sameUpper)
        #expect(try same.outputShapes(forInputShapes: [[2, 2, 5, 4]]) == [[2, 3, 15, 8]])
        let shaped = try ConvTranspose(weights: w, strides: [3, 2], outputShape: [16, 7])
        #expect(try shaped.outputShapes(forInputShapes: [[1, 2, 5, 4]]) == [[1, 3, 16, 7]])
        // natural rows 15: 17 passes it by more than a stride less one.
        let tooLarge = try ConvTranspose(weights: w, strides: [3, 2], outputShape: [18, 7])
        #expect(throws: LayerKitError.self) { try tooLarge.outputShapes(forInputShapes: [[1, 2, 5, 4]]) }
        #expect(throws: LayerKitError.self) { try ConvTranspose(weights: w, strides: [2, 2], outputPadding: [2, 0]) }
        let empty = try ConvTranspose(weights: w, padding: .explicit([4, 0, 3, 0]))
        #expect(throws: LayerKitError.self) { try empty.outputShapes(forInputShapes: [[1, 2, 2, 2]]) }
    }

    /// MaxPool's Indices by hand on a 1x1x2x3 input, row- and column-major.
    @Test func maxPoolIndicesByHand() throws {
        let x = try Tensor(shape: [1, 1, 2, 3], values: [1, 5, 2, 4, 3, 6])
        for (columnMajor, want) in [(false, [Float(1), 5]), (true, [Float(2), 5])] {
            let pool = try GeneralPooling(kind: .max, kernel: [2, 2], outputsIndices: true, columnMajorIndices: columnMajor)
            let shapes = try pool.outputShapes(forInputShapes: [x.shape])
            let outputs = try shapes.map { try Tensor(shape: $0) }
            try pool.evaluate(inputs: [x], outputs: outputs)
            #expect(outputs[0].values == [5, 6])
            #expect(outputs[1].values == want)
        }
        let average = try GeneralPooling(kind: .average(countIncludePad: false), kernel: [2])
        #expect(try average.outputShapes(forInputShapes: [[1, 1, 4]]) == [[1, 1, 3]])
        #expect(throws: LayerKitError.self) {
            try GeneralPooling(kind: .average(countIncludePad: false), kernel: [2], outputsIndices: true)
        }
        let big = try GeneralPooling(kind: .max, kernel: [2], outputsIndices: true)
        #expect(throws: LayerKitError.self) { try big.outputShapes(forInputShapes: [[1, 1, 1 << 25]]) }
    }

    @Test func aOneDimensionalConvolutionIsTwoDimensionalWithAUnitWidth() throws {
        let w = try Tensor(shape: [2, 1, 3], values: [1, 2, 3, -1, 0, 1])
        let conv = try Convolution(weights: w, strides: [2], padding: .explicit([1, 1]))
        #expect(conv.spatialRank == 1 && conv.weights.shape == [2, 1, 3, 1] && conv.strides == [2, 1])
        #expect(try conv.outputShapes(forInputShapes: [[1, 1, 5]]) == [[1, 2, 3]])
        #expect(throws: LayerKitError.self) { try conv.outputShapes(forInputShapes: [[1, 1, 5, 1]]) }
        let x = try Tensor(shape: [1, 1, 5], values: [1, 2, 3, 4, 5])
        let y = try Tensor(shape: [1, 2, 3])
        try conv.evaluate(inputs: [x], outputs: [y])
        // Padded [0 1 2 3 4 5 0], windows at 0, 2, 4.
        #expect(y.values == [8, 20, 14, 2, 2, -4])
        #expect(throws: LayerKitError.self) { try Convolution(weights: w, padding: .explicit([1, 1, 1, 1])) }
    }

    // MARK: - Errors name the node

    static func attribute(_ name: String, int value: Int64) -> [UInt8] {
        PB.string(1, name) + PB.int(3, value) + PB.int(20, 2)
    }

    static func attribute(_ name: String, ints values: [Int64]) -> [UInt8] {
        PB.string(1, name) + values.flatMap { PB.int(8, $0) } + PB.int(20, 7)
    }

    static func floats(_ name: String, _ dims: [Int64], _ value: Float = 0.5) -> [UInt8] {
        let count = Int(dims.reduce(1, *))
        return ONNXBytes.tensor(name, dims: dims, type: 1,
                                PB.bytes(9, PB.littleEndian([Float](repeating: value, count: count).map(\.bitPattern))))
    }

    /// One node `op` named "n7" on x of `shape` with constant inputs, at `opset`.
    static func model(_ op: String, _ shape: [Int], constants: [[UInt8]] = [], constantNames: [String] = [],
                      outputs: [String] = ["y"], attributes: [[UInt8]] = [], opset: Int64 = 17) -> Data {
        ONNXBytes.model(opsets: [("", opset)], graph: ONNXBytes.graph(
            nodes: [ONNXBytes.node(op, inputs: ["x"] + constantNames, outputs: outputs, name: "n7", attributes: attributes)],
            initializers: constants, inputs: [ModelGraphTests.value("x", shape)],
            extra: outputs.flatMap { PB.bytes(12, ModelGraphTests.value($0, nil)) }))
    }

    static func expectError(_ data: Data, _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(sourceLocation: sourceLocation) {
            _ = try Model(data: data, name: "m.onnx", computeUnits: .cpuOnly)
        } throws: { error in
            let text = "\(error)"
            return text.hasPrefix("m.onnx: node 'n7' (") && text.contains(fragment)
        }
    }

    @Test func errorsNameTheNode() throws {
        let w1 = [Self.floats("w", [2, 3, 3])]
        // A 4-D convolution (rank-6 input).
        Self.expectError(Self.model("Conv", [1, 3, 4, 4, 4, 4], constants: [Self.floats("w", [2, 3, 1, 1, 1, 1])], constantNames: ["w"]),
                         "only 1-D to 3-D")
        // 1-D strides of two values.
        Self.expectError(Self.model("Conv", [1, 3, 8], constants: w1, constantNames: ["w"],
                                    attributes: [Self.attribute("strides", ints: [1, 1])]), "'strides' [1, 1] must have 1 values")
        // ConvTranspose output_padding not below the stride.
        Self.expectError(Self.model("ConvTranspose", [1, 2, 5], constants: [Self.floats("w", [2, 3, 3])], constantNames: ["w"],
                                    attributes: [Self.attribute("strides", ints: [2]), Self.attribute("output_padding", ints: [2])]),
                         "output_padding 2 of spatial axis 0 must be less than")
        // ConvTranspose output_shape past natural + stride - 1 (natural 7).
        Self.expectError(Self.model("ConvTranspose", [1, 2, 5], constants: [Self.floats("w", [2, 3, 3])], constantNames: ["w"],
                                    attributes: [Self.attribute("output_shape", ints: [9])]), "output_shape [9] does not fit")
        // AveragePool dilations before opset 19.
        Self.expectError(Self.model("AveragePool", [1, 2, 6], attributes: [Self.attribute("kernel_shape", ints: [2]),
                                                                          Self.attribute("dilations", ints: [2])], opset: 18),
                         "'dilations' is not part of AveragePool before opset 19")
        // LpPool dilations before opset 18, and p 0.
        Self.expectError(Self.model("LpPool", [1, 2, 6], attributes: [Self.attribute("kernel_shape", ints: [2]),
                                                                     Self.attribute("dilations", ints: [2])], opset: 11),
                         "'dilations' is not part of LpPool before opset 18")
        Self.expectError(Self.model("GlobalLpPool", [1, 2, 6], attributes: [Self.attribute("p", int: 0)]), "p 0 must be >= 1")
        // MaxPool storage_order 2.
        Self.expectError(Self.model("MaxPool", [1, 2, 6], outputs: ["y", "i"],
                                    attributes: [Self.attribute("kernel_shape", ints: [2]), Self.attribute("storage_order", int: 2)]),
                         "storage_order 2")
        // BatchNormalization in training mode, and opset 6 without is_test.
        let bn = ["s", "b", "m", "v"].map { Self.floats($0, [3]) }
        Self.expectError(Self.model("BatchNormalization", [1, 3, 2], constants: bn, constantNames: ["s", "b", "m", "v"],
                                    attributes: [Self.attribute("training_mode", int: 1)]), "training_mode 1")
        Self.expectError(Self.model("BatchNormalization", [1, 3, 2], constants: bn, constantNames: ["s", "b", "m", "v"], opset: 6),
                         "is_test 0")
        // spatial 0 with per-activation parameters.
        let perActivation = ["s", "b", "m", "v"].map { Self.floats($0, [3, 2]) }
        Self.expectError(Self.model("BatchNormalization", [1, 3, 2], constants: perActivation, constantNames: ["s", "b", "m", "v"],
                                    attributes: [Self.attribute("spatial", int: 0)], opset: 7), "spatial 0")
        // Dropout with training_mode true.
        let ratio = Self.floats("r", [], 0.5)
        let training = ONNXBytes.tensor("t", dims: [], type: 9, PB.bytes(9, [1]))
        Self.expectError(Self.model("Dropout", [1, 3], constants: [ratio, training], constantNames: ["r", "t"], opset: 13),
                         "training_mode true")
    }

    /// Control for the error models: the same builders make models that load.
    @Test func theErrorModelBuildersMakeLoadableModels() throws {
        let ok = Self.model("ConvTranspose", [1, 2, 5], constants: [Self.floats("w", [2, 3, 3])], constantNames: ["w"],
                            attributes: [Self.attribute("output_shape", ints: [6])])
        let model = try Model(data: ok, name: "m.onnx", computeUnits: .cpuOnly)
        #expect(model.nodes[0].outputShapes == [[1, 3, 6]])
        let ratio = Self.floats("r", [], 0.5)
        let off = ONNXBytes.tensor("t", dims: [], type: 9, PB.bytes(9, [0]))
        let dropout = try Model(data: Self.model("Dropout", [1, 3], constants: [ratio, off], constantNames: ["r", "t"],
                                                 outputs: ["y", "mask"], opset: 13), name: "m.onnx", computeUnits: .cpuOnly)
        let x = try Tensor(shape: [1, 3], values: [-1, 2, 3])
        let out = try dropout.predict(inputs: ["x": x])
        #expect(out["y"]?.values == [-1, 2, 3] && out["mask"]?.values == [1, 1, 1])
        // No work at run time: the output is the input's value, the mask a constant of the plan.
        #expect(dropout.nodes.allSatisfy { $0.placement == nil })
    }
}
