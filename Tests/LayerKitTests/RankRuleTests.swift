import Foundation
import Testing
@testable import LayerKit
import LayerKitONNX

/// The one tensor-to-image rule (ONNX's: axis 1 is the channel axis, missing
/// trailing dimensions are 1): every layer — each catalog op and each
/// structural layer — gives the same result through the single-layer API and
/// through a one-node model, on the CPU and the GPU, for inputs of rank 1 to
/// 4. Before the rule was one, Softmax over axis 1 of a 2x5 tensor gave all
/// 1.0 through `Backend.run` on the GPU, and PRelu with a [5] slope on a
/// [2, 5] input failed on the CPU only.
@Suite(.enabled(if: TestGPU.isEnabled))
struct RankRuleTests {
    /// One input shape per rank; 5 channels (not a multiple of 4) where there is a channel axis.
    static let shapes: [[Int]] = [[7], [3, 5], [2, 5, 3], [2, 5, 3, 2]]

    /// A one-node model: the node, its extra graph inputs (same shape as
    /// `x`), its initializers, and the ranks at which ONNX defines it (at the
    /// others the model must be refused by both backends alike).
    struct Case: Sendable {
        let name: String
        let ranks: Set<Int>
        var domain = ""
        /// Names of graph inputs after `x`, each of `x`'s shape.
        var extraInputs: [String] = []
        var attributes: [[UInt8]] = []
        /// Initializers for `x`'s shape.
        var initializers: @Sendable ([Int]) -> [(name: String, shape: [Int], values: [Float])] = { _ in [] }
        var opset: Int64 = 17
    }

    static func ints(_ name: String, _ values: [Int64]) -> [UInt8] {
        PB.string(1, name) + values.flatMap { PB.int(8, $0) } + PB.int(20, 7)
    }

    static func int(_ name: String, _ value: Int64) -> [UInt8] { PB.string(1, name) + PB.int(3, value) + PB.int(20, 2) }

    /// C of a shape by the rule (1 for rank 1), and the [C, 1, ...] shape that
    /// broadcasts over ONNX's channel axis.
    static func channels(_ shape: [Int]) -> (count: Int, broadcastShape: [Int]) {
        let c = shape.count > 1 ? shape[1] : 1
        return (c, shape.count > 1 ? [c] + Array(repeating: 1, count: shape.count - 2) : [1])
    }

    static let cases: [Case] = {
        let all: Set<Int> = [1, 2, 3, 4]
        var cases = OpDefinition.catalog.map { op -> Case in
            switch op.name {
            case "Swish", "Linear", "Not":
                // Not as an ONNX node takes bool (the type check refuses a float); as a layerkit op, any float.
                return Case(name: op.name, ranks: all, domain: "layerkit")
            case "PRelu":
                return Case(name: op.name, ranks: all, initializers: { shape in
                    let c = channels(shape)
                    return [("slope", c.broadcastShape, (0..<c.count).map { 0.1 + 0.2 * Float($0) })]
                })
            case "Pow":
                return Case(name: op.name, ranks: all, initializers: { _ in [("Y", [], [2])] })
            default:
                return Case(name: op.name, ranks: all)
            }
        }
        let channelRanks: Set<Int> = [2, 3, 4]
        cases += ["Add", "Sub", "Mul", "Div"].map { Case(name: $0, ranks: all, extraInputs: ["x2"]) }
        cases += [
            Case(name: "Softmax", ranks: channelRanks, attributes: [int("axis", 1)], opset: 13),
            Case(name: "LogSoftmax", ranks: channelRanks, attributes: [int("axis", 1)], opset: 13),
            Case(name: "Hardmax", ranks: channelRanks, attributes: [int("axis", 1)], opset: 13),
            Case(name: "LRN", ranks: channelRanks, attributes: [int("size", 3)]),
            Case(name: "InstanceNormalization", ranks: [3, 4], initializers: { shape in
                let c = channels(shape).count
                return [("scale", [c], (0..<c).map { 1 + 0.1 * Float($0) }), ("bias", [c], (0..<c).map { Float($0) - 2 })]
            }),
            Case(name: "ReduceSumSquare", ranks: channelRanks, attributes: [ints("axes", [1])], opset: 13),
            Case(name: "ReduceMean", ranks: all, attributes: [int("keepdims", 1)], opset: 18),
            Case(name: "LayerNormalization", ranks: all, initializers: { shape in
                let d = shape.last ?? 1
                return [("scale", [d], (0..<d).map { 1 - 0.1 * Float($0) })]
            }),
            Case(name: "Concat", ranks: channelRanks, extraInputs: ["x2"], attributes: [int("axis", 1)]),
            // axis may be r: a rank-1 [7] flattens to [7, 1].
            Case(name: "Flatten", ranks: all, attributes: [int("axis", 1)]),
            Case(name: "Reshape", ranks: all, initializers: { _ in [("shape", [1], [-1])] }),
            Case(name: "Transpose", ranks: all),
            // One before and two after the last axis (on the GPU: W or H; rank 1 and 2 fall back).
            Case(name: "Pad", ranks: all, attributes: [PB.string(1, "mode") + PB.bytes(4, Array("reflect".utf8))
                                                       + PB.int(20, 3)], initializers: { shape in
                let r = shape.count
                return [("pads", [2 * r], (0..<(2 * r)).map { $0 == r - 1 ? 1 : $0 == 2 * r - 1 ? 2 : 0 })]
            }),
            Case(name: "BatchNormalization", ranks: channelRanks, initializers: { shape in
                let c = channels(shape).count
                return [("scale", [c], (0..<c).map { 1 + 0.1 * Float($0) }), ("bias", [c], (0..<c).map { Float($0) - 2 }),
                        ("mean", [c], (0..<c).map { 0.3 * Float($0) }), ("var", [c], (0..<c).map { 0.5 + Float($0) })]
            }),
            // ONNX defines global pools for [N, C, spatial...], rank 3 or more.
            Case(name: "GlobalAveragePool", ranks: [3, 4]),
            Case(name: "GlobalMaxPool", ranks: [3, 4]),
            Case(name: "AveragePool", ranks: [4], attributes: [ints("kernel_shape", [2, 2])]),
            Case(name: "MaxPool", ranks: [4], attributes: [ints("kernel_shape", [2, 2])]),
            Case(name: "Conv", ranks: [4], attributes: [ints("pads", [1, 1, 1, 1])], initializers: { shape in
                let c = channels(shape).count
                return [("w", [3, c, 3, 3], (0..<(27 * c)).map { Float($0 % 11) / 10 - 0.5 })]
            }),
            Case(name: "Gemm", ranks: [2], initializers: { shape in
                let k = shape.last ?? 1
                return [("b", [k, 4], (0..<(4 * k)).map { Float($0 % 7) / 5 - 0.6 }), ("c", [4], [0.5, -1, 2, 0])]
            }),
            // numpy matmul: a rank-1 x is one row, higher ranks are batches of rows.
            Case(name: "MatMul", ranks: all, initializers: { shape in
                let k = shape.last ?? 1
                return [("b", [k, 3], (0..<(3 * k)).map { Float($0 % 5) / 4 - 0.5 })]
            }),
        ]
        return cases
    }()

    /// The model of `c` on an input of `shape`, and the inputs it reads.
    static func model(_ c: Case, shape: [Int]) throws -> (data: Data, inputs: [String: Tensor]) {
        let initializers = c.initializers(shape)
        let node = ONNXBytes.node(c.name, inputs: ["x"] + c.extraInputs + initializers.map(\.name), name: "n",
                                  attributes: c.attributes)
        var nodeBytes = node
        if !c.domain.isEmpty { nodeBytes += PB.string(7, c.domain) }
        let tensors = initializers.map { i in
            ["shape", "pads"].contains(i.name)
                ? ONNXBytes.tensor(i.name, dims: i.shape.map(Int64.init), type: 7,
                                   PB.bytes(9, PB.littleEndian(i.values.map { Int64($0) })))
                : ONNXBytes.tensor(i.name, dims: i.shape.map(Int64.init), type: 1,
                                   PB.bytes(9, PB.littleEndian(i.values.map(\.bitPattern))))
        }
        let names = ["x"] + c.extraInputs
        let graph = ONNXBytes.graph(nodes: [nodeBytes], initializers: tensors,
                                    inputs: names.map { ModelGraphTests.value($0, shape) },
                                    extra: PB.bytes(12, ModelGraphTests.value("y", nil)))
        var inputs: [String: Tensor] = [:]
        for (k, name) in names.enumerated() {
            // fp16-exact values in [-3, 3], so that both backends read the same numbers.
            inputs[name] = try Tensor.uniform(shape: shape, in: -3...3, seed: UInt64(7 + k)).roundedToHalf()
        }
        let opsets: [(String, Int64)] = c.domain.isEmpty ? [("", c.opset)] : [("", c.opset), (c.domain, Int64(1))]
        return (ONNXBytes.model(opsets: opsets, graph: graph), inputs)
    }

    /// The layer the importer makes of the model's one node, with its inputs
    /// in the layer's order (graph inputs by name, constants as folded).
    static func layer(of data: Data, inputs: [String: Tensor]) throws -> (Layer, [Tensor]) {
        let onnx = try ONNXModel(data: data, source: "m")
        let graph = try ONNXImporter(model: onnx, registry: .shared).graph(inputShapes: inputs.mapValues(\.shape))
        let step = try #require(graph.steps.first)
        let layer = try #require(step.layer)
        let tensors = try step.inputs.map { v in
            try #require(graph.values[v].constant ?? inputs[graph.values[v].name])
        }
        return (layer, tensors)
    }

    static func equal(_ a: Tensor, _ b: Tensor) -> Bool {
        a.shape == b.shape && zip(a.values, b.values).allSatisfy { $0 == $1 || ($0.isNaN && $1.isNaN) }
    }

    @Test(arguments: cases.indices)
    func singleLayerAndModelAgreeOnEveryRank(index: Int) throws {
        let c = Self.cases[index]
        let name = c.name
        let cpu = try Backend(computeUnits: .cpuOnly)
        let gpu = try Backend(computeUnits: .gpu, context: TestGPU.get())
        for shape in Self.shapes {
            let (data, inputs) = try Self.model(c, shape: shape)
            let what = "\(name) on \(Tensor.describe(shape))"
            guard c.ranks.contains(shape.count) else {
                #expect(throws: LayerKitError.self, "\(what) is not defined by ONNX") {
                    _ = try Model(data: data, backend: cpu).predict(inputs: inputs)
                }
                continue
            }
            let modelCPU = try #require(try Model(data: data, backend: cpu).predict(inputs: inputs)["y"], "\(what)")
            let modelGPU = try #require(try Model(data: data, backend: gpu).predict(inputs: inputs)["y"], "\(what)")
            let (layer, layerInputs) = try Self.layer(of: data, inputs: inputs)
            let singleCPU = try cpu.run(layer, inputs: layerInputs).outputs[0]
            let singleGPU = try gpu.run(layer, inputs: layerInputs).outputs[0]
            #expect(Self.equal(singleCPU, modelCPU), "\(what): CPU single layer vs one-node model")
            #expect(Self.equal(singleGPU, modelGPU), "\(what): GPU single layer vs one-node model")
            #expect(singleGPU.shape == singleCPU.shape, "\(what)")
            // The parity rule, on the same fp16-exact inputs.
            let worst = zip(singleGPU.values, singleCPU.values).map { g, c in
                g.isNaN && c.isNaN || g == c ? 0 : abs(g - c) / max(1, abs(c))
            }.max() ?? 0
            #expect(worst <= 1e-3, "\(what): GPU vs CPU relative error \(worst)")
        }
    }
}
