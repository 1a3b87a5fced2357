import Foundation
import Testing
import LayerKitONNX
@testable import LayerKit

/// Load-time folding in each value's own element type (`TypedKernels`),
/// against onnxruntime: every case under Fixtures/typed-folding (written by
/// Scripts/generate_typed_folding_references.py; the ONNX reference
/// evaluator where onnxruntime has no kernel, as its manifest.json says) is
/// a model whose inputs are all initializers, so the importer folds it
/// whole; its typed outputs (`ModelGraph.knownOutputs`) must equal the
/// stored ones exactly (integers, bool, strings) or within one step of the
/// type's encoding (floats).
@Suite struct TypedFoldingTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/typed-folding")

    /// The cases without graph inputs (mask_pattern has one: it runs).
    static let cases: [String] = ((try? ONNXTestCase.cases(in: root)) ?? []).map(\.name).filter { $0 != "mask_pattern" }

    static func tensor(_ url: URL) throws -> TypedTensor {
        try TypedTensor(tensorProto: [UInt8](Data(contentsOf: url)), source: url.lastPathComponent)
    }

    /// Whether `actual` is `expected`: same type and shape; equal elements,
    /// or for floats, both NaN or codes at most one apart on the same side
    /// of zero (one ulp of the type, at any width).
    static func matches(_ actual: TypedTensor, _ expected: TypedTensor) -> String? {
        guard actual.elementType == expected.elementType, actual.shape == expected.shape else {
            return "got \(actual), expected \(expected)"
        }
        if actual.elementType == .string {
            return actual.strings == expected.strings ? nil : "got \(actual.strings), expected \(expected.strings)"
        }
        guard actual.elementType.isFloatingPoint else {
            return actual.bytes == expected.bytes ? nil : "got \(actual.integers()), expected \(expected.integers())"
        }
        let width = actual.elementType.byteWidth!
        func code(_ t: TypedTensor, _ i: Int) -> UInt64 {
            (0..<width).reduce(0) { $0 | UInt64(t.bytes[i * width + $1]) << UInt64(8 * $1) }
        }
        // The sign bit of the type's code (E8M0 has none).
        let bits: [ElementType: Int] = [.float6e2m3: 6, .float6e3m2: 6, .float4e2m1: 4, .float8e8m0: 0]
        let signBit: UInt64 = (1 << UInt64(bits[actual.elementType] ?? 8 * width)) >> 1
        for i in 0..<actual.count {
            let (a, e) = (actual.double(at: i), expected.double(at: i))
            if a.isNaN && e.isNaN { continue }
            let (ca, ce) = (code(actual, i), code(expected, i))
            let close = ca & signBit == ce & signBit && (ca > ce ? ca - ce : ce - ca) <= 1
            if !(a == e && a.sign == e.sign) && !close {
                return "element \(i): got \(a) (code \(ca)), expected \(e) (code \(ce)); all: \(actual.doubles()) vs \(expected.doubles())"
            }
        }
        return nil
    }

    @Test func theCasesAreFound() {
        #expect(Self.cases.count > 100, "\(Self.cases.count) cases under \(Self.root.path)")
    }

    @Test(arguments: cases)
    func foldsAsOnnxRuntime(_ name: String) throws {
        let folder = Self.root.appendingPathComponent(name)
        let model = try ONNXModel(contentsOf: folder.appendingPathComponent("model.onnx"))
        let graph = try ONNXImporter(model: model, registry: .shared).graph(inputShapes: [:])
        #expect(graph.steps.allSatisfy { $0.layer == nil }, "\(name): \(graph.steps.map(\.label)) did not fold")
        for k in model.graph.outputs.indices {
            let expected = try Self.tensor(folder.appendingPathComponent("test_data_set_0/output_\(k).pb"))
            let actual = try #require(graph.knownOutputs[k], "\(name): output \(k) is not known at load")
            if let mismatch = Self.matches(actual, expected) { Issue.record("\(name) output \(k): \(mismatch)") }
            // The plan's float32 constant holds the same elements.
            if expected.elementType != .string, let constant = graph.values[graph.outputs[k]].constant {
                #expect(constant.values.map(Double.init) == actual.doubles().map { Double(Float($0)) }
                        || actual.doubles().contains(where: \.isNaN), "\(name): the float32 constant differs")
            }
        }
    }

    /// The attention-mask pattern PyTorch exporters emit: Where(bool, 0,
    /// -FLT_MAX) folds (it once failed as "mixes integer values with the
    /// non-integer -3.4028235e+38") and the Add after it runs.
    @Test func theMaskPatternLoadsAndRuns() throws {
        let folder = Self.root.appendingPathComponent("mask_pattern")
        let model = try Model(data: Data(contentsOf: folder.appendingPathComponent("model.onnx")), computeUnits: .cpuOnly)
        let x = try Self.tensor(folder.appendingPathComponent("test_data_set_0/input_0.pb")).float32Tensor()
        let expected = try Self.tensor(folder.appendingPathComponent("test_data_set_0/output_0.pb"))
        let y = try #require(try model.predict(inputs: ["x": x])["y"])
        #expect(Self.matches(TypedTensor(y), expected) == nil, "\(y.values) vs \(expected.doubles())")
    }

    // MARK: - Errors and types the file controls

    static func model(_ nodes: [[UInt8]], inputs: [[UInt8]] = [], initializers: [[UInt8]], opset: Int64 = 21) -> Data {
        ONNXBytes.model(ir: 10, opsets: [("", opset)], graph: ONNXBytes.graph(
            nodes: nodes, initializers: initializers, inputs: inputs,
            extra: PB.bytes(12, ModelGraphTests.value("y", nil))))
    }
    static func int32s(_ name: String, _ values: [Int32]) -> [UInt8] {
        ONNXBytes.tensor(name, dims: [Int64(values.count)], type: 6, PB.bytes(9, PB.littleEndian(values.map { UInt32(bitPattern: $0) })))
    }
    static func floats(_ name: String, _ values: [Float]) -> [UInt8] {
        ONNXBytes.tensor(name, dims: [Int64(values.count)], type: 1, PB.bytes(9, PB.littleEndian(values.map(\.bitPattern))))
    }

    /// A bool computed at load (Equal of float constants) is the condition
    /// of a Where that runs: the layer reads it as 0 and 1.
    @Test func aFoldedMaskConditionsARuntimeWhere() throws {
        let data = Self.model([ONNXBytes.node("Equal", inputs: ["a", "b"], outputs: ["c"], name: "eq"),
                               ONNXBytes.node("Where", inputs: ["c", "x", "z"], outputs: ["y"], name: "w")],
                              inputs: [ModelGraphTests.value("x", [3]), ModelGraphTests.value("z", [3])],
                              initializers: [Self.floats("a", [1, 2, 3]), Self.floats("b", [1, 0, 3])])
        let model = try Model(data: data, computeUnits: .cpuOnly)
        let y = try model.predict(inputs: ["x": Tensor(shape: [3], values: [10, 20, 30]),
                                           "z": Tensor(shape: [3], values: [-1, -2, -3])])["y"]
        #expect(y?.values == [10, -2, 30])
    }

    @Test func integerDivisionByZeroIsAnErrorNamingTheNode() {
        for op in ["Div", "Mod"] {
            let data = Self.model([ONNXBytes.node(op, inputs: ["a", "b"], outputs: ["y"], name: "d")],
                                  initializers: [Self.int32s("a", [1, 2]), Self.int32s("b", [1, 0])])
            #expect {
                _ = try Model(data: data, computeUnits: .cpuOnly)
            } throws: { error in
                "\(error)".contains("node 'd' (\(op))") && "\(error)".contains("by zero")
            }
        }
    }

    /// CastLike reads only its target's type: a graph input's declared type
    /// does (an int32 input), and so does the type the importer infers for a
    /// value computed at run time (a Relu of a float32 input is float32).
    @Test func castLikeTakesADeclaredTypeFromARuntimeTarget() throws {
        let castLike = ONNXBytes.node("CastLike", inputs: ["c", "t"], outputs: ["y"], name: "cl")
        let declared = Self.model([castLike], inputs: [ModelGraphTests.value("t", [1], type: 6)],
                                  initializers: [Self.floats("c", [2.7, -2.7])])
        let onnx = try ONNXModel(data: declared)
        let graph = try ONNXImporter(model: onnx, registry: .shared).graph(inputShapes: ["t": [1]],
                                                                           inputValues: ["t": ONNXTensor(name: "t", dims: [1], int64s: [0])])
        let y = try #require(graph.knownOutputs[0])
        #expect(y.elementType == .int32 && y.integers() == [2, -2])
        let computed = Self.model([ONNXBytes.node("Relu", inputs: ["x"], outputs: ["t"], name: "relu"), castLike],
                                  inputs: [ModelGraphTests.value("x", [1])], initializers: [Self.floats("c", [2.7, -2.7])])
        let model = try Model(data: computed, computeUnits: .cpuOnly)
        let z = try #require(try model.predict(typed: ["x": TypedTensor(.float32, shape: [1], doubles: [1])])["y"])
        #expect(z.elementType == .float32 && z.doubles() == [Double(Float(2.7)), Double(Float(-2.7))])
    }

    /// Floats reaching integer-looking arithmetic stay floats: Mul of an
    /// int64 shape by a float scale is refused as ONNX refuses mixed types,
    /// never truncated; Where over float32 constants keeps -inf.
    @Test func floatsAreNeverReadAsIntegers() throws {
        let whereNode = ONNXBytes.node("Where", inputs: ["c", "a", "b"], outputs: ["y"], name: "w")
        let condition = ONNXBytes.tensor("c", dims: [2], type: 9, PB.bytes(9, [1, 0]))
        let data = Self.model([whereNode], initializers: [condition, Self.floats("a", [0.5]), Self.floats("b", [-.infinity])])
        let graph = try ONNXImporter(model: ONNXModel(data: data), registry: .shared).graph(inputShapes: [:])
        let y = try #require(graph.knownOutputs[0])
        #expect(y.elementType == .float32 && y.doubles() == [0.5, -.infinity])
        let mixed = Self.model([ONNXBytes.node("Mul", inputs: ["a", "b"], outputs: ["y"], name: "m")],
                               initializers: [ONNXBytes.tensor("a", dims: [1], type: 7, PB.bytes(9, PB.littleEndian([Int64(3)]))),
                                              Self.floats("b", [0.5])])
        #expect {
            _ = try Model(data: mixed, computeUnits: .cpuOnly)
        } throws: { error in
            "\(error)".contains("node 'm' (Mul)") && "\(error)".contains("is int64 and input 1 ('b') is float32")
        }
    }
}
