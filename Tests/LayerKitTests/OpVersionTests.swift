import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// Ops at the versions of their definitions LayerKit accepts since they were
/// reviewed against onnx 1.23's schema history (`ONNXOperator.implemented`):
/// Mod-28's floor remainder of floats, the spellings of opsets 1 to 5, and
/// the refusal of versions ONNX deprecated. Expected values are float64
/// math written here, from the ONNX operator spec.
@Suite struct OpVersionTests {
    /// A one-node model at `opset` (node 'the_node'): graph inputs `inputs`
    /// (name, shape, ONNX type), constant `initializers`, outputs `outputs`.
    static func model(_ op: String, opset: Int64, inputs: [(String, [Int], Int64)], outputs: [String] = ["y"],
                      attributes: [[UInt8]] = [], initializers: [(String, [Int64], [Float])] = []) -> Data {
        let names = inputs.map(\.0) + initializers.map(\.0)
        let node = ONNXBytes.node(op, inputs: names, outputs: outputs, name: "the_node", attributes: attributes)
        let tensors = initializers.map { name, dims, values in
            ONNXBytes.tensor(name, dims: dims, type: 1, PB.bytes(9, PB.littleEndian(values.map(\.bitPattern))))
        }
        return ONNXBytes.model(ir: 3, opsets: [("", opset)], graph: ONNXBytes.graph(
            nodes: [node], initializers: tensors, inputs: inputs.map { ModelGraphTests.value($0.0, $0.1, type: $0.2) },
            extra: outputs.flatMap { PB.bytes(12, ModelGraphTests.value($0, nil)) }))
    }

    // AttributeProto: name 1, f 2, i 3, s 4, floats 7, ints 8, type 20.
    static func int(_ name: String, _ value: Int64) -> [UInt8] { PB.string(1, name) + PB.int(3, value) + PB.int(20, 2) }
    static func float(_ name: String, _ value: Float) -> [UInt8] { PB.string(1, name) + PB.float(2, value) + PB.int(20, 1) }
    static func string(_ name: String, _ value: String) -> [UInt8] { PB.string(1, name) + PB.string(4, value) + PB.int(20, 3) }
    static func ints(_ name: String, _ values: [Int64]) -> [UInt8] {
        PB.string(1, name) + values.flatMap { PB.int(8, $0) } + PB.int(20, 7)
    }

    /// Output `name` of `data` run with `inputs` on the CPU, or on the GPU.
    static func run(_ data: Data, _ inputs: [String: Tensor], _ name: String = "y", onGPU: Bool = false) throws -> Tensor {
        let model = onGPU ? try Model(data: data, backend: Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in }))
            : try Model(data: data, computeUnits: .cpuOnly)
        return try #require(try model.predict(inputs: inputs)[name])
    }

    /// Equal values, NaN to NaN and each zero with its sign.
    static func expectIdentical(_ actual: Tensor, _ expected: [Double], _ what: String,
                                sourceLocation: SourceLocation = #_sourceLocation) {
        let got = actual.values.map(Double.init)
        let same = got.count == expected.count && zip(got, expected).allSatisfy { a, e in
            (a.isNaN && e.isNaN) || (a == e && a.sign == e.sign)
        }
        #expect(same, "\(what): \(got), expected \(expected)", sourceLocation: sourceLocation)
    }

    /// Python's float `%` in float64: the floor remainder, with the divisor's
    /// sign (a zero too); NaN for a zero divisor, an infinite dividend or a
    /// NaN; the dividend, or the divisor when the signs differ, for an
    /// infinite divisor (ONNX Mod-28's special cases).
    static func floorRemainder(_ a: Double, _ b: Double) -> Double {
        if a.isNaN || b.isNaN || b == 0 || a.isInfinite { return .nan }
        var r = fmod(a, b)
        if r == 0 { return b.sign == .minus ? -0.0 : 0.0 }
        if (r < 0) != (b < 0) { r += b }
        return r
    }

    static let dividends: [Float] = [0, -0.0, 0, -0.0, -3, 3, -1, 1, .infinity, -.infinity, 1, 1, .nan, 1,
                                     5, -5, 5, -5, 4.5, 6, -4.25, 7.5]
    static let divisors: [Float] = [-2, 2, 2, -2, .infinity, .infinity, -.infinity, -.infinity, 2, 2, 0, -0.0, 2, .nan,
                                    3, 3, -3, -3, 1.5, -3, 0.5, -2]

    /// Mod-28 with fmod 0 on floats (which Mod-13 left to integers): the
    /// floor remainder with the spec's special cases, zeros signed as the
    /// divisor, on the CPU and the GPU.
    @Test func modAtOpset28TakesTheFloorRemainderOfFloats() throws {
        let n = Self.dividends.count
        let data = Self.model("Mod", opset: 28, inputs: [("a", [n], 1), ("b", [n], 1)], attributes: [Self.int("fmod", 0)])
        let inputs = ["a": try Tensor(shape: [n], values: Self.dividends), "b": try Tensor(shape: [n], values: Self.divisors)]
        let expected = zip(Self.dividends, Self.divisors).map { Self.floorRemainder(Double($0), Double($1)) }
        #expect(expected[0].sign == .minus && expected[1].sign == .plus && expected[4] == .infinity && expected[6] == -1)
        Self.expectIdentical(try Self.run(data, inputs), expected, "Mod-28 fmod 0, CPU")
        if TestGPU.isEnabled {
            Self.expectIdentical(try Self.run(data, inputs, onGPU: true), expected, "Mod-28 fmod 0, GPU")
        }
        // Constant operands: folded at load, by the folding kernels.
        let folded = Self.model("Mod", opset: 28, inputs: [], attributes: [Self.int("fmod", 0)],
                                initializers: [("a", [Int64(n)], Self.dividends), ("b", [Int64(n)], Self.divisors)])
        Self.expectIdentical(try Self.run(folded, [:]), expected, "Mod-28 fmod 0, folded")
    }

    /// Mod-28 with fmod 1 is C's fmod, as Mod-13's: the dividend's sign,
    /// NaN for a zero divisor or an infinite dividend, the dividend itself
    /// for an infinite divisor.
    @Test func modAtOpset28WithFmodIsCsFmod() throws {
        let n = Self.dividends.count
        let data = Self.model("Mod", opset: 28, inputs: [("a", [n], 1), ("b", [n], 1)], attributes: [Self.int("fmod", 1)])
        let inputs = ["a": try Tensor(shape: [n], values: Self.dividends), "b": try Tensor(shape: [n], values: Self.divisors)]
        let expected = zip(Self.dividends, Self.divisors).map { fmod(Double($0), Double($1)) }
        let cpu = try Self.run(data, inputs)
        // C's fmod keeps -0 for -0 % 2; the spec lets either zero be returned there.
        Self.expectIdentical(cpu, expected, "Mod-28 fmod 1, CPU")
        if TestGPU.isEnabled {
            let gpu = try Self.run(data, inputs, onGPU: true)
            let close = zip(gpu.values.map(Double.init), expected).allSatisfy { ($0.isNaN && $1.isNaN) || $0 == $1 }
            #expect(close, "Mod-28 fmod 1, GPU: \(gpu.values), expected \(expected)")
        }
    }

    /// Integer Mod-28 (folded at load): Python's `%`, the divisor's sign.
    @Test func modAtOpset28OnIntegersKeepsTheDivisorsSign() throws {
        let data = Self.model("Mod", opset: 28, inputs: [("a", [6], 6), ("b", [6], 6)])
        let (a, b): ([Float], [Float]) = ([-4, 7, 5, 4, -7, 8], [2, -3, 8, -2, 3, 5])
        let y = try Self.run(data, ["a": try Tensor(shape: [6], values: a), "b": try Tensor(shape: [6], values: b)])
        #expect(y.values == [0, -2, 5, 0, 2, 3])
    }

    static let x: [Float] = [-2.5, -1, -0.25, 0, 0.5, 1.5, 3, -4]

    /// Opsets 1 to 5: `consumed_inputs` (an in-place hint) on the unary ops,
    /// Selu-1's defaults to four decimals, Clip-1's bounds as attributes.
    @Test func opset1UnaryOpsIgnoreConsumedInputs() throws {
        let xs = Self.x.map(Double.init)
        let cases: [(String, [[UInt8]], [Double])] = [
            ("Relu", [], xs.map { max($0, 0) }),
            ("Abs", [], xs.map { abs($0) }),
            ("Neg", [], xs.map { -$0 }),
            ("Floor", [], xs.map { $0.rounded(.down) }),
            ("Sigmoid", [], xs.map { 1 / (1 + exp(-$0)) }),
            ("Tanh", [], xs.map { tanh($0) }),
            ("Exp", [], xs.map { exp($0) }),
            ("LeakyRelu", [Self.float("alpha", 0.5)], xs.map { $0 >= 0 ? $0 : 0.5 * $0 }),
            ("Elu", [], xs.map { $0 > 0 ? $0 : expm1($0) }),
            ("HardSigmoid", [], xs.map { min(1, max(0, 0.2 * $0 + 0.5)) }),
            ("Selu", [], xs.map { 1.0507 * ($0 > 0 ? $0 : 1.6732 * expm1($0)) }),
            ("Clip", [Self.float("min", -1), Self.float("max", 1)], xs.map { min(max($0, -1), 1) }),
        ]
        for (op, attributes, expected) in cases {
            let data = Self.model(op, opset: 1, inputs: [("x", [Self.x.count], 1)],
                                  attributes: attributes + [Self.ints("consumed_inputs", [0])])
            let y = try Self.run(data, ["x": try Tensor(shape: [Self.x.count], values: Self.x)])
            OpLayerTest.expectClose(y, expected, tolerance: OpLayerTest.cpuTolerance, "\(op)-1")
        }
        // Selu-1's defaults are 1.6732 and 1.0507, not Selu-6's 1.67326319... and 1.05070102...
        let selu = try Self.run(Self.model("Selu", opset: 5, inputs: [("x", [1], 1)]), ["x": try Tensor(shape: [1], values: [-1])])
        #expect(abs(Double(selu[0]) - 1.0507 * 1.6732 * expm1(-1.0)) < 1e-6)
    }

    /// Concat before opset 4 defaults its axis to 1.
    @Test func concatBeforeOpset4JoinsAxis1() throws {
        let data = Self.model("Concat", opset: 3, inputs: [("a", [2, 1], 1), ("b", [2, 2], 1)])
        let y = try Self.run(data, ["a": try Tensor(shape: [2, 1], values: [1, 2]), "b": try Tensor(shape: [2, 2], values: [3, 4, 5, 6])])
        #expect(y.shape == [2, 3] && y.values == [1, 3, 4, 2, 5, 6])
        #expect {
            _ = try Self.run(Self.model("Concat", opset: 4, inputs: [("a", [2, 1], 1)]), ["a": try Tensor(shape: [2, 1], values: [1, 2])])
        } throws: { "\($0)".contains("node 'the_node' (Concat): axis is required") }
    }

    /// Cast before opset 6 names its target type: `to: "INT32"` truncates
    /// toward zero, as Cast-6's `to: 6` does; an unknown name is refused.
    @Test func castBeforeOpset6NamesItsType() throws {
        let input = try Tensor(shape: [4], values: [2.7, -2.7, 0.5, -0.5])
        let y = try Self.run(Self.model("Cast", opset: 1, inputs: [("x", [4], 1)], attributes: [Self.string("to", "INT32")]),
                             ["x": input])
        #expect(y.values == [2, -2, 0, 0])
        let double = try Self.run(Self.model("Cast", opset: 5, inputs: [("x", [4], 1)], attributes: [Self.string("to", "DOUBLE")]),
                                  ["x": input])
        #expect(double.values == input.values)
        #expect {
            _ = try Model(data: Self.model("Cast", opset: 5, inputs: [("x", [4], 1)], attributes: [Self.string("to", "REAL")]),
                          computeUnits: .cpuOnly)
        } throws: { "\($0)".contains("node 'the_node' (Cast): attribute 'to' is 'REAL', which names no ONNX data type") }
    }

    /// Pad-1 calls its pads `paddings` (begins, then ends).
    @Test func padAtOpset1ReadsPaddings() throws {
        let data = Self.model("Pad", opset: 1, inputs: [("x", [1, 2], 1)],
                              attributes: [Self.ints("paddings", [0, 1, 0, 2]), Self.float("value", 9)])
        let y = try Self.run(data, ["x": try Tensor(shape: [1, 2], values: [1, 2])])
        #expect(y.shape == [1, 5] && y.values == [9, 1, 2, 9, 9])
    }

    /// Upsample-1 scales a 4-D input by `height_scale` and `width_scale`
    /// (nearest by default).
    @Test func upsampleAtOpset1ScalesHeightAndWidth() throws {
        let data = Self.model("Upsample", opset: 1, inputs: [("x", [1, 1, 2, 2], 1)],
                              attributes: [Self.float("height_scale", 2), Self.float("width_scale", 3)])
        let y = try Self.run(data, ["x": try Tensor(shape: [1, 1, 2, 2], values: [1, 2, 3, 4])])
        #expect(y.shape == [1, 1, 4, 6])
        #expect(y.values == [1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4])
    }

    /// InstanceNormalization-1 takes (and ignores) `consumed_inputs`.
    @Test func instanceNormalizationAtOpset1IgnoresConsumedInputs() throws {
        let data = Self.model("InstanceNormalization", opset: 1, inputs: [("x", [1, 1, 4], 1)],
                              attributes: [Self.ints("consumed_inputs", [0, 0, 0])],
                              initializers: [("s", [1], [2]), ("b", [1], [1])])
        let y = try Self.run(data, ["x": try Tensor(shape: [1, 1, 4], values: [1, 2, 3, 4])])
        let values: [Double] = [1, 2, 3, 4], mean = 2.5, variance = 1.25
        OpLayerTest.expectClose(y, values.map { 2 * ($0 - mean) / (variance + 1e-5).squareRoot() + 1 }, tolerance: 1e-5,
                                "InstanceNormalization-1")
    }

    /// Cast-24's round_mode for FLOAT8E8M0 (powers of two; default "up": any
    /// fraction takes the next power), saturating at 2^127 unless told not to.
    @Test func castAtOpset24RoundsToFloat8E8M0AsTold() throws {
        let x: [Float] = [0.124, 0.25, 1.1, 1.5, 3, 0x1.8p127, 0]
        func expected(_ mode: String, saturate: Bool = true) -> [Double] {
            x.map { value in
                guard value > 0 else { return 0x1p-127 }
                let v = Double(value), e = v.exponent
                let up = switch mode { case "up": v != pow(2, Double(e)); case "nearest": v / pow(2, Double(e)) >= 1.5; default: false }
                let exponent = Int(e) + (up ? 1 : 0)
                return exponent > 127 ? (saturate ? 0x1p127 : .nan) : pow(2, Double(exponent))
            }
        }
        #expect(expected("up") == [0.125, 0.25, 2, 2, 4, 0x1p127, 0x1p-127])
        for (mode, saturate) in [(nil, true), ("up", true), ("down", true), ("nearest", true), ("up", false)] as [(String?, Bool)] {
            let attributes = [Self.int("to", 24), Self.int("saturate", saturate ? 1 : 0)] + (mode.map { [Self.string("round_mode", $0)] } ?? [])
            let node = ONNXBytes.node("Cast", inputs: ["x"], outputs: ["y"], name: "the_node", attributes: attributes)
            let data = ONNXBytes.model(opsets: [("", 24)], graph: ONNXBytes.graph(
                nodes: [node], inputs: [ModelGraphTests.value("x", [x.count])],
                extra: PB.bytes(12, ModelGraphTests.value("y", [x.count], type: 24))))
            let model = try Model(data: data, computeUnits: .cpuOnly, notice: { _ in })
            let y = try #require(try model.predict(typed: ["x": TypedTensor(.float32, shape: [x.count], doubles: x.map(Double.init))])["y"])
            #expect(y.elementType == .float8e8m0)
            let want = expected(mode ?? "up", saturate: saturate)
            #expect(zip(y.doubles(), want).allSatisfy { $0 == $1 || ($0.isNaN && $1.isNaN) },
                    "round_mode \(mode ?? "(default)"), saturate \(saturate): \(y.doubles()), expected \(want)")
        }
    }

    /// Versions ONNX deprecated are refused, naming the op that replaces
    /// them; the version before runs.
    @Test func deprecatedVersionsAreRefused() throws {
        let scales: [(String, [Int64], [Float])] = [("scales", [4], [1, 1, 2, 2])]
        let upsample9 = Self.model("Upsample", opset: 9, inputs: [("x", [1, 1, 1, 2], 1)], initializers: scales)
        #expect(try Self.run(upsample9, ["x": try Tensor(shape: [1, 1, 1, 2], values: [1, 2])]).values == [1, 1, 2, 2, 1, 1, 2, 2])
        #expect {
            _ = try Model(data: Self.model("Upsample", opset: 10, inputs: [("x", [1, 1, 1, 2], 1)], initializers: scales),
                          computeUnits: .cpuOnly)
        } throws: {
            "\($0)".contains("node 'the_node' (Upsample): Upsample at opset 10 is its version 10, which ONNX deprecated")
                && "\($0)".contains("use Resize at this opset, or export the model at an opset below 10")
        }
        #expect {
            _ = try Model(data: Self.model("Scatter", opset: 12, inputs: [("x", [2, 2], 1), ("i", [1, 1], 7), ("u", [1, 1], 1)]),
                          computeUnits: .cpuOnly)
        } throws: { "\($0)".contains("Scatter at opset 12 is its version 11, which ONNX deprecated") }
    }
}
