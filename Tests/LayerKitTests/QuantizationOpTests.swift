import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// QuantizeLinear, DequantizeLinear and the integer products beyond the
/// onnx node tests (which hold their values): hostile attributes and
/// shapes are errors naming the node, and the rounding and saturation
/// rules hold on values worked out from the spec's formula by hand.
struct QuantizationOpTests {
    /// An initializer of `type` (an ONNX code) holding `bytes` as raw data.
    static func raw(_ name: String, _ dims: [Int64], type: Int64, _ bytes: [UInt8]) -> [UInt8] {
        ONNXBytes.tensor(name, dims: dims, type: type, PB.bytes(9, bytes))
    }

    static func int8s(_ name: String, _ dims: [Int64], _ values: [Int8]) -> [UInt8] {
        raw(name, dims, type: 3, values.map { UInt8(bitPattern: $0) })
    }

    static func uint8s(_ name: String, _ dims: [Int64], _ values: [UInt8]) -> [UInt8] { raw(name, dims, type: 2, values) }

    static func scales(_ name: String, _ dims: [Int64], _ values: [Float]) -> [UInt8] {
        NormalizationOpsTests.floats(name, dims, values)
    }

    static func attribute(_ name: String, _ value: Int64) -> [UInt8] { RankRuleTests.int(name, value) }

    /// The load (or first run, on zeros) error of one `op` node on x
    /// `[2, 3, 4, 5]` of ONNX type `type`; "loaded" when both succeed.
    static func failure(_ op: String, type: Int64 = 1, inputs: [String], initializers: [[UInt8]], attributes: [[UInt8]] = [],
                        opset: Int64 = 21, shape: [Int] = [2, 3, 4, 5]) -> String {
        let node = NormalizationOpsTests.node(op, inputs: inputs, attributes: attributes)
        let graph = ONNXBytes.graph(nodes: [node], initializers: initializers,
                                    inputs: [ModelGraphTests.value("x", shape, type: type)],
                                    extra: PB.bytes(12, ModelGraphTests.value("y", nil)))
        do {
            let model = try Model(data: ONNXBytes.model(opsets: [("", opset)], graph: graph), computeUnits: .cpuOnly,
                                  notice: { _ in })
            let x = try TypedTensor(zerosOf: ElementType(rawValue: Int(type)) ?? .float32, shape: shape)
            _ = try model.predict(typed: ["x": x])
            return "loaded"
        } catch {
            return "\(error)"
        }
    }

    @Test func hostileAttributesAndShapesAreErrorsNamingTheNode() {
        let scale3 = Self.scales("s", [3], [0.5, 1, 2])
        let cases: [(String, String)] = [
            (Self.failure("QuantizeLinear", inputs: ["x", "s", "z"], initializers: [scale3, Self.uint8s("z", [2], [0, 0])]),
             "node 'n1' (QuantizeLinear): y_zero_point 2 must have the shape of y_scale 3"),
            (Self.failure("QuantizeLinear", inputs: ["x", "s"], initializers: [scale3], attributes: [Self.attribute("axis", 4)]),
             "node 'n1' (QuantizeLinear): axis 4 is out of range for rank 4"),
            (Self.failure("DequantizeLinear", type: 3, inputs: ["x", "s"], initializers: [scale3], attributes: [Self.attribute("axis", -5)]),
             "node 'n1' (DequantizeLinear): axis -5 is out of range for rank 4"),
            (Self.failure("QuantizeLinear", inputs: ["x", "s"], initializers: [scale3], attributes: [Self.attribute("axis", 2)]),
             "node 'n1' (QuantizeLinear): y_scale 3 is neither one value nor one per element of axis 2 of x 2x3x4x5"),
            (Self.failure("QuantizeLinear", inputs: ["x", "s"],
                          initializers: [Self.scales("s", [2, 2, 4, 5], Array(repeating: 1, count: 80))],
                          attributes: [Self.attribute("block_size", 3)]),
             "node 'n1' (QuantizeLinear): block_size 3 along axis 1 of x 2x3x4x5 needs y_scale 2x1x4x5, got 2x2x4x5"),
            (Self.failure("QuantizeLinear", inputs: ["x", "s"], initializers: [scale3], attributes: [Self.attribute("block_size", -2)]),
             "node 'n1' (QuantizeLinear): block_size -2 must be >= 0"),
            (Self.failure("QuantizeLinear", inputs: ["x", "s"], initializers: [Self.int8s("s", [], [1])]),
             "node 'n1' (QuantizeLinear): input 1 ('s') is int8, which QuantizeLinear at opset 21 (its version 21) does not allow for y_scale"),
            (Self.failure("QuantizeLinear", inputs: ["x", "s", "z"], initializers: [Self.scales("s", [], [1]), Self.uint8s("z", [], [0])],
                          attributes: [Self.attribute("output_dtype", 3)]),
             "node 'n1' (QuantizeLinear): output_dtype int8 is not y_zero_point's type uint8"),
            (Self.failure("QuantizeLinear", inputs: ["x", "s"], initializers: [Self.scales("s", [], [1])],
                          attributes: [Self.attribute("output_dtype", 7)]),
             "node 'n1' (QuantizeLinear): quantizes to int64; ONNX quantizes to"),
            (Self.failure("QuantizeLinear", inputs: ["x", "s"], initializers: [Self.scales("s", [], [1])],
                          attributes: [Self.attribute("precision", 3)], opset: 23),
             "node 'n1' (QuantizeLinear): precision 3 is not float32, float16 or bfloat16"),
            (Self.failure("QuantizeLinear", inputs: ["x", "s"], initializers: [scale3], opset: 10),
             "node 'n1' (QuantizeLinear): y_scale 3 must be a scalar at opset 10"),
            (Self.failure("QuantizeLinear", inputs: ["x", "s"], initializers: [Self.scales("s", [], [1])],
                          attributes: [Self.attribute("block_size", 2)], opset: 19),
             "node 'n1' (QuantizeLinear): attribute 'block_size' is not supported"),
            (Self.failure("DequantizeLinear", type: 3, inputs: ["x", "s"], initializers: [Self.scales("s", [], [1])],
                          attributes: [Self.attribute("output_dtype", 6)], opset: 23),
             "node 'n1' (DequantizeLinear): output_dtype 6 is not float32, float16 or bfloat16"),
        ]
        for (error, expected) in cases {
            #expect(error.contains(expected), "\(error)")
        }
    }

    /// The integer products refuse operands that do not fit, and outputs
    /// past LayerKit's limit before allocating them.
    @Test func hostileIntegerProductsAreErrorsNamingTheNode() {
        let w = Self.int8s("w", [2, 3, 3, 3], Array(repeating: 1, count: 54))
        let huge = Self.int8s("w", [1, 3, 1, 1], [1, 1, 1])
        let cases: [(String, String)] = [
            (Self.failure("MatMulInteger", type: 3, inputs: ["x", "w"], initializers: [Self.int8s("w", [4, 2], Array(repeating: 1, count: 8))]),
             "node 'n1' (MatMulInteger): MatMul: 2x3x4x5 and 4x2 do not chain (inner extents 5 and 4)"),
            (Self.failure("MatMulInteger", type: 3, inputs: ["x", "w", "za"],
                          initializers: [Self.int8s("w", [5, 2], Array(repeating: 1, count: 10)), Self.int8s("za", [3], [0, 0, 0])]),
             "node 'n1' (MatMulInteger): a_zero_point 3 does not fit its operand 2x3x4x5"),
            (Self.failure("ConvInteger", type: 3, inputs: ["x", "w"], initializers: [w], attributes: [Self.attribute("group", 2)]),
             "node 'n1' (ConvInteger): group 2 does not fit x's 3 channels and w 2x3x3x3"),
            (Self.failure("ConvInteger", type: 3, inputs: ["x", "w", "", "zw"], initializers: [w, Self.int8s("zw", [3], [0, 0, 0])]),
             "node 'n1' (ConvInteger): w_zero_point 3 must be one value or one per output channel (2)"),
            (Self.failure("ConvInteger", type: 3, inputs: ["x", "w"], initializers: [Self.int8s("w", [2, 3, 3], Array(repeating: 1, count: 18))]),
             "node 'n1' (ConvInteger): w 2x3x3 must be of x's rank 4"),
            (Self.failure("ConvInteger", type: 3, inputs: ["x", "w"], initializers: [w], attributes: [RankRuleTests.ints("pads", [1 << 30, 0, 0, 0])]),
             "node 'n1' (ConvInteger): attribute 'pads' [1073741824, 0, 0, 0] must hold values from 0 to 1048576"),
            (Self.failure("ConvInteger", type: 3, inputs: ["x", "w"], initializers: [huge],
                          attributes: [RankRuleTests.ints("pads", [1 << 20, 1 << 20, 1 << 20, 1 << 20])]),
             "node 'n1' (ConvInteger): shape [2, 1, 2097156, 2097157] would hold more than 256M elements"),
            (Self.failure("QLinearConv", type: 2, inputs: ["x", "s", "zx", "w", "sw", "zw", "s", "zx"],
                          initializers: [Self.scales("s", [], [1]), Self.uint8s("zx", [], [0]), w, Self.scales("sw", [3], [1, 1, 1]),
                                         Self.int8s("zw", [], [0])]),
             "node 'n1' (QLinearConv): w_scale 3 must hold one value or 2"),
        ]
        for (error, expected) in cases {
            #expect(error.contains(expected), "\(error)")
        }
    }

    /// x / scale rounds half to even, then saturates; NaN goes to the
    /// type's minimum (the reference casts NaN to int32's minimum, then clips).
    @Test func quantizeRoundsHalvesToEvenAndSaturates() throws {
        let x: [Float] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 300, -300, .nan, 7.49]
        let expected: [Int64] = [0, 2, 2, 0, -2, -2, 127, -128, -128, 7]
        let y = try Self.quantize(x, scale: 1, zeroPoint: Self.int8s("z", [], [0]), type: 3)
        #expect(y.elementType == .int8 && y.integers() == expected)
        // uint8 with zero point 128 and scale 2: round(x / 2) + 128, clamped to 0...255.
        let u = try Self.quantize([1, 3, -1, -3, 1000, -1000], scale: 2, zeroPoint: Self.uint8s("z", [], [128]), type: 2)
        #expect(u.elementType == .uint8 && u.integers() == [128, 130, 128, 126, 255, 0])
    }

    /// QuantizeLinear (opset 21) of a 1-D graph input by a scalar scale and
    /// the zero point initializer `zeroPoint` (named "z", of the output's type `type`).
    static func quantize(_ x: [Float], scale: Float, zeroPoint: [UInt8], type: Int64) throws -> TypedTensor {
        let node = ONNXBytes.node("QuantizeLinear", inputs: ["x", "s", "z"], outputs: ["y"], name: "q")
        let graph = ONNXBytes.graph(nodes: [node], initializers: [Self.scales("s", [], [scale]), zeroPoint],
                                    inputs: [ModelGraphTests.value("x", [x.count])],
                                    extra: PB.bytes(12, ModelGraphTests.value("y", [x.count], type: type)))
        let model = try Model(data: ONNXBytes.model(opsets: [("", 21)], graph: graph), computeUnits: .cpuOnly, notice: { _ in })
        let outputs = try model.predict(typed: ["x": TypedTensor(Tensor(shape: [x.count], values: x))])
        return try #require(outputs["y"])
    }
}
