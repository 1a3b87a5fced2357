import LayerKitONNX
import Foundation

/// A node computed at run time on the CPU in its values' own element types:
/// one that reads an integer, bool, string or float64 value the graph
/// computes at run time (token ids, an attention mask, a float64 input).
/// Its kernel is the one load-time folding uses on the same node
/// (`TypedKernels`, or the element movement of its layer on the elements'
/// bits), given this run's values in place of constants, so a value never
/// makes a plan of its own and int64 stays exact: ids into a `Gather` of an
/// embedding table cost one gather per run, not a plan per set of ids.
///
/// The output shapes are found at prepare by computing the node once on
/// zeros of its inputs' types and shapes; they hold for every run when the
/// op's output shape follows from its input shapes. When a run's values
/// give another shape (a `NonZero`, a `Range` to a computed limit), the run
/// throws `TypedStep.ShapeChanged` and `Model` plans that input per value.
final class TypedStep: Layer, @unchecked Sendable {
    /// The node, its constant inputs known (`initializers`), the others nil.
    let node: ONNXNodeContext
    /// The node inputs the step reads at run time, in the step's input order.
    let runtimeInputs: [Int]
    /// Per step input: the element type the node reads it as (a float value
    /// held as float32 is converted to its declared float type first).
    let inputTypes: [ElementType]
    /// The node outputs the step makes (the named ones), in the step's output order.
    let outputPositions: [Int]
    /// Per step output: its shape and element type, found at prepare.
    let plannedShapes: [[Int]]
    let outputTypes: [ElementType]
    /// The node's exact computation on known inputs (`ONNXImporter.exactOutputs`).
    private let compute: (ONNXNodeContext, [ONNXTensor?]) throws -> [ONNXTensor]

    /// A run gave a typed step values whose outputs have other shapes than
    /// the plan's: the op's output shape depends on those values.
    struct ShapeChanged: Error {
        /// The graph values the step read, whose values decide its shapes.
        let inputs: [String]
        let message: String
    }

    init(node: ONNXNodeContext, runtimeInputs: [Int], inputTypes: [ElementType], outputPositions: [Int],
         plannedShapes: [[Int]], outputTypes: [ElementType],
         compute: @escaping (ONNXNodeContext, [ONNXTensor?]) throws -> [ONNXTensor]) {
        var node = node
        node.layerMemo = LayerMemo()
        (self.node, self.runtimeInputs, self.inputTypes, self.outputPositions) = (node, runtimeInputs, inputTypes, outputPositions)
        (self.plannedShapes, self.outputTypes, self.compute) = (plannedShapes, outputTypes, compute)
    }

    var layerName: String { node.node.opType }

    func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] { plannedShapes }

    /// Typed steps take typed values: the executor calls `run(_:)`.
    func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        throw LayerKitError.unsupported("\(node.label) computes on typed values; it runs through TypedStep.run")
    }

    /// Why it runs on the CPU: integer and bool values are exact there and
    /// never leave the host (slice images hold fp16).
    var whyOnCPU: String {
        let types = Set(inputTypes + outputTypes).filter(ModelGraph.holdsTyped).map(\.description).sorted()
        return "it computes on \(types.joined(separator: " and ")) values, which run on the CPU in their own type"
    }

    /// The node's outputs for this run's `inputs` (one per step input, each
    /// of its plan's shape); throws `ShapeChanged` when they are not the
    /// shapes the plan was made for.
    func run(_ inputs: [TypedTensor]) throws -> [TypedTensor] {
        var known = node.initializers
        for (k, i) in runtimeInputs.enumerated() {
            known[i] = ONNXTensor(name: node.node.inputs[i], typed: try inputs[k].converted(to: inputTypes[k]))
        }
        let computed = try compute(node.knowing(known), known)
        let outputs = try outputPositions.map { k in
            guard k < computed.count else { throw node.error("its kernel made \(computed.count) outputs") }
            return try computed[k].typed()
        }
        guard outputs.map(\.shape) == plannedShapes else {
            throw ShapeChanged(inputs: runtimeInputs.map { node.node.inputs[$0] },
                               message: "\(node.label): these values give outputs "
                                   + outputs.map { Tensor.describe($0.shape) }.joined(separator: ", ")
                                   + "; the plan has " + plannedShapes.map { Tensor.describe($0) }.joined(separator: ", "))
        }
        return outputs
    }
}
