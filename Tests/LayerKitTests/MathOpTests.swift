import Foundation
import LayerKitONNX
import Testing
@testable import LayerKit

/// The `math` family's onnxruntime cases (Scripts/onnx_cases/math.py; the
/// CPU and GPU-against-CPU runs are ONNXCaseTests') on the GPU straight
/// against onnxruntime, the placement the brief asks of them (squeeze-excitation
/// products and DenseNet's Sum on the GPU), and what fixtures cannot show:
/// errors naming the node, the legacy broadcast attributes, Mod with
/// fmod = 0.
struct MathOpTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/onnx-cases/math")

    static let cases: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()

    /// A case's model bytes, named inputs and expected outputs.
    static func load(_ name: String) throws -> (model: Data, inputs: [String: Tensor], outputs: [Tensor]) {
        let folder = directory.appendingPathComponent(name)
        let data = try Data(contentsOf: folder.appendingPathComponent("model.onnx"))
        func tensors(_ prefix: String) throws -> [(String, Tensor)] {
            var result: [(String, Tensor)] = []
            for i in 0... {
                let url = folder.appendingPathComponent("test_data_set_0/\(prefix)_\(i).pb")
                guard FileManager.default.fileExists(atPath: url.path) else { break }
                let proto = try ONNXTensor(protobuf: [UInt8](try Data(contentsOf: url)), source: url.lastPathComponent)
                result.append((proto.name, try Tensor(shape: proto.dims, values: proto.floats())))
            }
            return result
        }
        return (data, Dictionary(uniqueKeysWithValues: try tensors("input")), try tensors("output").map(\.1))
    }

    static func mismatches(_ actual: Tensor, _ expected: Tensor, absolute: Double, relative: Double) -> String? {
        guard actual.shape == expected.shape else {
            return "shape \(Tensor.describe(actual.shape)), expected \(Tensor.describe(expected.shape))"
        }
        for i in 0..<expected.count {
            let (y, ref) = (Double(actual[i]), Double(expected[i]))
            if ref.isNaN { if y.isNaN { continue } else { return "element \(i): \(y), expected NaN" } }
            if ref.isInfinite { if y == ref { continue } else { return "element \(i): \(y), expected \(ref)" } }
            if !(abs(y - ref) <= absolute + relative * abs(ref)) { return "element \(i): \(y), expected \(ref)" }
        }
        return nil
    }

    /// With LAYERKIT_PRINT_ERRORS set, prints a case's largest absolute and
    /// relative (to max(1, |ref|)) errors over its finite reference elements.
    static func report(_ name: String, _ backend: String, _ actual: Tensor, _ expected: Tensor) {
        guard ProcessInfo.processInfo.environment["LAYERKIT_PRINT_ERRORS"] != nil, actual.shape == expected.shape else { return }
        var (absolute, relative) = (0.0, 0.0)
        for i in 0..<expected.count where expected[i].isFinite {
            let error = abs(Double(actual[i]) - Double(expected[i]))
            absolute = max(absolute, error)
            relative = max(relative, error / max(1, abs(Double(expected[i]))))
        }
        print("math-error \(backend) \(name) abs \(absolute) rel \(relative)")
    }

    @Test func everyCaseIsThere() { #expect(Self.cases.count >= 80) }

    @Test(.enabled(if: TestGPU.isEnabled), arguments: cases)
    func gpuMatchesOnnxRuntime(_ name: String) throws {
        let (data, inputs, expected) = try Self.load(name)
        let backend = try Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in })
        let model = try Model(data: data, name: name, backend: backend)
        let outputs = try model.predict(inputs: inputs)
        for (value, reference) in zip(model.outputs, expected) {
            let output = try #require(outputs[value.name])
            // The parity rule: |gpu - ref| <= 1e-3 max(1, |ref|) (inputs are fp16 values already).
            Self.report(name, "gpu", output, reference)
            let failure = Self.mismatches(output, reference, absolute: 1e-3, relative: 1e-3)
            #expect(failure == nil, "\(name): \(failure ?? "")")
        }
    }

    /// Where each case's work runs with the GPU allowed.
    static func placements(_ name: String) throws -> [String: String] {
        let (data, _, _) = try load(name)
        let backend = try Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in })
        let model = try Model(data: data, name: name, backend: backend)
        var result: [String: String] = [:]
        for node in model.nodes where node.placement != nil {
            if case .gpu = node.placement { result[node.opType] = "gpu" } else { result[node.opType] = node.cpuReason ?? "cpu" }
        }
        return result
    }

    /// MobileNetV3/EfficientNet's squeeze-excitation product, a per-channel
    /// constant, a scalar, DenseNet's Sum and 4-D Min/Mean/comparisons run on
    /// the GPU; a computed operand of lower rank or rank 5 on the CPU.
    @Test(.enabled(if: TestGPU.isEnabled))
    func broadcastsOfImagesRunOnTheGPU() throws {
        let onGPU: [(String, String)] = [
            ("mul_squeeze_excitation", "Mul"), ("add_channel_image", "Add"), ("mul_const_c11", "Mul"),
            ("add_const_scalar", "Add"), ("sum_densenet", "Sum"), ("min_three_images", "Min"),
            ("mean_three", "Mean"), ("max_binary", "Max"), ("equal_broadcast", "Equal"), ("mod_fmod", "Mod"),
            ("pow_tensor_exponent", "Pow"), ("prelu_full_computed", "PRelu"), ("prelu_4d_c11", "PRelu"),
            ("sum_one", "Sum"), ("and_broadcast", "And"), ("matmul_const_2d", "MatMul"), ("where_images", "Where"),
            ("matmul_attention_qk", "MatMul"), ("matmul_attention_sv", "MatMul"), ("matmul_attention_sv", "Softmax"),
            ("matmul_linear_rank3_bias", "MatMul+Add"), ("matmul_linear_bias_first", "MatMul+Add"),
            ("matmul_linear_rank4", "MatMul"), ("matmul_linear_two_readers", "MatMul"),
        ]
        for (name, op) in onGPU {
            let placed = try Self.placements(name)
            #expect(placed[op] == "gpu", "\(name): \(op) should run on the GPU: \(placed)")
        }
        let onCPU: [(String, String)] = [("add_left_lower_rank", "Add"), ("div_rank5", "Div"), ("matmul_3d_2d", "MatMul"),
                                         ("where_broadcast", "Where"), ("gemm_computed_c_mn", "Gemm"),
                                         ("matmul_batch_broadcast", "MatMul")]
        for (name, op) in onCPU {
            #expect(try Self.placements(name)[op] != "gpu", "\(name): \(op) should run on the CPU")
        }
    }

    // MARK: - What fixtures cannot show

    /// A one-node model of `op` (node 'the_node') over float inputs of
    /// `shapes` and constant `initializers`.
    static func model(_ op: String, inputs shapes: [[Int]], attributes: [[UInt8]] = [], initializers: [[UInt8]] = [],
                      initializerNames: [String] = [], opset: Int64 = 17) -> Data {
        let names = shapes.indices.map { "i\($0)" }
        let node = ONNXBytes.node(op, inputs: names + initializerNames, outputs: ["y"], name: "the_node",
                                  attributes: attributes)
        return ONNXBytes.model(opsets: [("", opset)], graph: ONNXBytes.graph(
            nodes: [node], initializers: initializers,
            inputs: zip(names, shapes).map { ModelGraphTests.value($0, $1) },
            extra: PB.bytes(12, ModelGraphTests.value("y", nil))))
    }

    /// An INT attribute.
    static func int(_ name: String, _ value: Int64) -> [UInt8] { PB.string(1, name) + PB.int(3, value) + PB.int(20, 2) }

    @Test func errorsNameTheNode() throws {
        let cases: [(Data, String)] = [
            (Self.model("Add", inputs: [[2, 3], [2, 4]]), "do not broadcast"),
            (Self.model("MatMul", inputs: [[2, 3], [4, 5]]), "do not chain"),
            (Self.model("Gemm", inputs: [[2, 3], [3, 4], [3, 4]]), "does not broadcast to [M, N]"),
            (Self.model("Mod", inputs: [[2, 3], [2, 3]], attributes: [Self.int("fmod", 2)]), "fmod must be 0 or 1"),
            (Self.model("PRelu", inputs: [[3], [2, 3]]), "does not broadcast to X"),
            // (Cast to every type runs, to STRING included, the folding kernels computing what the layers
            // do not; CastLike of a graph input's declared type runs: TypedFoldingTests.)
            // A float condition is refused by ONNX's type check, before its shapes are looked at.
            (Self.model("Where", inputs: [[2], [3], [4]]), "does not allow for condition (type B): it takes bool"),
            (Self.model("Gemm", inputs: [[2, 3], [3, 4], [4]], attributes: [Self.int("broadcast", 0)], opset: 6),
             "must be [M, N] = 2x4 with broadcast 0"),
            (Self.model("Add", inputs: [[2, 3], [3]], opset: 6), "differ and broadcast is 0"),
        ]
        for (data, text) in cases {
            do {
                _ = try Model(data: data, computeUnits: .cpuOnly)
                Issue.record("expected an error containing '\(text)'")
            } catch {
                #expect("\(error)".contains("node 'the_node'") && "\(error)".contains(text), "\(error)")
            }
        }
    }

    /// fmod = 0 is Python's % (sign of the divisor, a zero's too), which
    /// onnxruntime runs only on integers (Mod-28 defines it on floats); 1 is
    /// C's fmod. Both backends.
    @Test func modFollowsTheSignOfItsRule() throws {
        let a = try Tensor(shape: [1, 6], values: [5, -5, 5, -5, 4.5, -0.0])
        let b = try Tensor(shape: [1, 6], values: [3, 3, -3, -3, 1.5, 2])
        let python: [Double] = [2, 1, -1, -2, 0, 0], c: [Double] = [2, -2, 2, -2, 0, -0.0]
        for (operation, expected) in [(BinaryLayer.Operation.mod, python), (.fmod, c)] {
            let layer = BinaryLayer(operation)
            OpLayerTest.expectClose(try OpLayerTest.cpu(layer, [a, b])[0], expected, tolerance: 0, "CPU \(operation)")
            if TestGPU.isEnabled {
                OpLayerTest.expectClose(try OpLayerTest.gpu(layer, [a, b])[0], expected, tolerance: 0, "GPU \(operation)")
            }
        }
    }

    /// Opset < 7's broadcast attribute: B lines up with A at `axis`.
    @Test func legacyBroadcastLinesUpAtAxis() throws {
        let b = ONNXBytes.tensor("c", dims: [3], type: 1, PB.bytes(9, PB.littleEndian([Float(1), 2, 3].map(\.bitPattern))))
        let data = Self.model("Add", inputs: [[2, 3, 2]],
                              attributes: [Self.int("broadcast", 1), Self.int("axis", 1)],
                              initializers: [b], initializerNames: ["c"], opset: 6)
        let model = try Model(data: data, computeUnits: .cpuOnly)
        let x = try Tensor(shape: [2, 3, 2], values: Array(repeating: 0, count: 12))
        let y = try #require(try model.predict(inputs: ["i0": x])["y"])
        #expect(y.values == [1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3])
        // PRelu before opset 7: a [C] slope is per channel (axis 1), as PyTorch exported it.
        let slope = ONNXBytes.tensor("c", dims: [3], type: 1, PB.bytes(9, PB.littleEndian([Float(0.5), 1, 2].map(\.bitPattern))))
        let prelu = try Model(data: Self.model("PRelu", inputs: [[2, 3, 2]], initializers: [slope], initializerNames: ["c"], opset: 6),
                              computeUnits: .cpuOnly)
        let z = try #require(try prelu.predict(inputs: ["i0": try Tensor(shape: [2, 3, 2], values: Array(repeating: -2, count: 12))])["y"])
        #expect(z.values == [-1, -1, -2, -2, -4, -4, -1, -1, -2, -2, -4, -4])
    }

    /// Variadic layers fold any number of inputs; Mean divides once.
    @Test func variadicLayersFoldEveryInput() throws {
        let inputs = try (0..<5).map { k in try Tensor(shape: [2, 1], values: [Float(k), Float(-k)]) }
        let mean = try BinaryLayer(.add, inputCount: 5, average: true, name: "Mean")
        OpLayerTest.expectClose(try OpLayerTest.cpu(mean, inputs)[0], [2, -2], tolerance: 0, "Mean CPU")
        let max = try BinaryLayer(.max, inputCount: 5, name: "Max")
        OpLayerTest.expectClose(try OpLayerTest.cpu(max, inputs)[0], [4, 0], tolerance: 0, "Max CPU")
        if TestGPU.isEnabled {
            OpLayerTest.expectClose(try OpLayerTest.gpu(mean, inputs)[0], [2, -2], tolerance: 0, "Mean GPU")
            OpLayerTest.expectClose(try OpLayerTest.gpu(max, inputs)[0], [4, 0], tolerance: 0, "Max GPU")
        }
        #expect(throws: LayerKitError.self) { try BinaryLayer(.add, inputCount: 0, name: "Sum") }
    }
}
