import Foundation

/// What one ONNX node becomes: a layer (nil for nodes that do no work) and
/// which of the node's inputs the layer takes, in order. Inputs not listed
/// (weights, shapes, bounds) were folded into the layer at import.
struct ConvertedNode {
    let layer: Layer?
    let inputs: [Int]
    /// Constant inputs the layer takes in another form than the file's
    /// (by node input index), such as a broadcast operand padded to rank.
    var reshapedConstants: [Int: Tensor] = [:]
    /// Outputs known at load (by node output index), beside a layer-less
    /// node's pass-through output 0: Dropout's all-true mask at inference.
    var constantOutputs: [Int: Tensor] = [:]
}

/// One op's declaration, the one place to read what LayerKit does with it:
/// its name; the newest version of its definition LayerKit implements; how
/// many inputs and outputs (empty names for omitted optional ones
/// included) a node may list at an opset, from the ONNX operator spec
/// (onnxruntime refuses a node outside them, and so does the load-time
/// validation, `ONNXValidation`); the conversion of a node to a layer (the
/// layer holds the CPU and GPU kernels, and its backward pass when it is a
/// `DifferentiableLayer`); the typed kernel of load-time folding
/// (`TypedKernels`), when the op has one; and the element types it computes
/// and how (`types`; ONNX's own types per version are its schema,
/// `ONNXOpSchema`, checked at load by `ONNXValidation`). Each family of ops declares its
/// ops in its own file (`ONNXOperators+<Family>`); `ONNXOperators.table`,
/// the version check and folding all read these declarations.
struct ONNXOperator: Sendable {
    typealias Arity = (inputs: ClosedRange<Int>, outputs: ClosedRange<Int>)

    /// The op type.
    let name: String
    /// The newest version of the op's definition (an opset at which it
    /// changed, `ONNXOpVersions.changes`) that the conversion, or for an op
    /// only folding computes its kernel, implements, every older one
    /// included, reviewed against each change of onnx 1.23's schema history
    /// (each declaration's comment names what the versions after the first
    /// changed; "types" is a change of the element types alone, which
    /// LayerKit computes in Float32, or folds at load for integers and
    /// booleans). A model whose opset resolves the op past it, or to a
    /// version ONNX deprecated (`ONNXOpVersions.deprecated`), is refused at
    /// load naming both (`ONNXValidation`). After regenerating
    /// `ONNXOpVersions` from a newer onnx, OpTableTests names each op with a
    /// version past it: read what changed, implement it, and raise it. Nil
    /// for the ai.onnx.ml ops, whose schema history LayerKit does not track.
    let implemented: Int?
    /// The node's input and output counts at an opset; nil for an op only
    /// load-time folding computes (its node is not checked).
    let arity: (@Sendable (_ opset: Int) -> Arity)?
    /// The node as a layer; nil for an op only load-time folding computes
    /// (its inputs are asked for at prepare, `ValueRequests`).
    let convert: ONNXOperators.Converter?
    /// The typed kernel of load-time folding, on the node's known inputs in
    /// their own element types.
    let fold: TypedKernels.Kernel?
    /// The op a model of a newer opset uses in place of this one, which
    /// ONNX deprecated.
    let replacement: String?
    /// The element types LayerKit computes the op in, and how: float types
    /// by its layer when it converts, every type by its folding kernel when
    /// it folds, and what the declaration adds (`.moved` for an
    /// element-moving layer, `.shape` for an op of its input's shape alone).
    /// A node of a type ONNX allows but these do not is refused at load
    /// (`ONNXValidation.checkTypes`), distinctly from a type ONNX refuses.
    let types: OpTypes

    /// An op whose arity does not change across opsets; `types` adds to
    /// what its conversion and folding kernel compute.
    init(_ name: String, through implemented: Int?, inputs: ClosedRange<Int>, outputs: ClosedRange<Int> = 1...1,
         types: OpTypes = [], fold: TypedKernels.Kernel? = nil, replacedBy replacement: String? = nil,
         _ convert: @escaping ONNXOperators.Converter) {
        self.init(name, implemented, { _ in (inputs, outputs) }, convert, fold, replacement, types)
    }

    /// An op whose arity depends on the opset.
    init(_ name: String, through implemented: Int?, arity: @escaping @Sendable (_ opset: Int) -> Arity,
         types: OpTypes = [], fold: TypedKernels.Kernel? = nil, replacedBy replacement: String? = nil,
         _ convert: @escaping ONNXOperators.Converter) {
        self.init(name, implemented, arity, convert, fold, replacement, types)
    }

    /// An op only load-time folding computes: no layer, and its node's
    /// input and output counts are not checked.
    init(_ name: String, through implemented: Int, fold: @escaping TypedKernels.Kernel) {
        self.init(name, implemented, nil, nil, fold, nil, [])
    }

    private init(_ name: String, _ implemented: Int?, _ arity: (@Sendable (Int) -> Arity)?,
                 _ convert: ONNXOperators.Converter?, _ fold: TypedKernels.Kernel?, _ replacement: String?,
                 _ declared: OpTypes) {
        (self.name, self.implemented, self.arity) = (name, implemented, arity)
        (self.convert, self.fold, self.replacement) = (convert, fold, replacement)
        types = declared.union(convert == nil ? [] : .floatLayer).union(fold == nil ? [] : .typedKernel)
    }
}

/// The standard ONNX operators LayerKit runs or folds, each declared once
/// (`ONNXOperator`). Attribute names and defaults follow the ONNX operator
/// spec. Each family of ops lives in a file of its own
/// (`ONNXOperators+<Family>`) and is listed once in `families`.
enum ONNXOperators {
    typealias Converter = @Sendable (ONNXNodeContext) throws -> ConvertedNode

    /// Every family's ops; a name declared twice is a programming error,
    /// caught by `OpTableTests`.
    static let families: [[ONNXOperator]] = [elementwiseOps, normalization, layout, data, indexing, math, convolution, recurrent,
                                             attention, losses, linearAlgebra, sampling, regions, quantization, folding,
                                             strings, controlFlow, sequences, signal, detection]

    /// The ops, by op type.
    static let table: [String: ONNXOperator] = byName(families.joined())

    /// `ops` by name, the first of a name kept.
    static func byName<S: Sequence<ONNXOperator>>(_ ops: S) -> [String: ONNXOperator] {
        Dictionary(ops.map { ($0.name, $0) }) { first, _ in first }
    }

    /// The catalog's one-input element-wise ops (their formulas in
    /// `OpDefinition.catalog`, Ops/OpCatalog.swift) and Identity; dense
    /// layers and broadcasting ops are in `math`, reshapes in `data`;
    /// convolution, pooling, BatchNormalization and Dropout in
    /// `convolution`.
    static let elementwiseOps: [ONNXOperator] = [
        ONNXOperator("Identity", through: 25, inputs: 1...1, types: .moved) { _ in ConvertedNode(layer: nil, inputs: [0]) },  // 14, 16: sequences and optionals (passed through whole); others: types
        ONNXOperator("Abs", through: 13, inputs: 1...1, fold: { try TypedKernels.unary($0, $1, .abs) }, elementwise),  // 6: consumed_inputs dropped; 13: types
        ONNXOperator("Ceil", through: 13, inputs: 1...1, fold: { try TypedKernels.unary($0, $1, .float({ $0.rounded(.up) }, { $0.rounded(.up) })) }, elementwise),  // 6: consumed_inputs dropped; 13: types
        ONNXOperator("Celu", through: 28, inputs: 1...1, elementwise),  // 28: types
        ONNXOperator("Clip", through: 13, arity: { ($0 >= 11 ? 1...3 : 1...1, 1...1) }, fold: TypedKernels.clip, elementwise),  // 6: consumed_inputs dropped; 11: min and max as inputs; 12, 13: types (13: min > max gives max, as min(max(x, min), max))
        ONNXOperator("Acos", through: 22, inputs: 1...1, elementwise),  // 22: types
        ONNXOperator("Acosh", through: 22, inputs: 1...1, elementwise),  // 22: types
        ONNXOperator("Asin", through: 22, inputs: 1...1, elementwise),  // 22: types
        ONNXOperator("Asinh", through: 22, inputs: 1...1, elementwise),  // 22: types
        ONNXOperator("Atan", through: 22, inputs: 1...1, elementwise),  // 22: types
        ONNXOperator("Atanh", through: 22, inputs: 1...1, elementwise),  // 22: types
        ONNXOperator("Cos", through: 22, inputs: 1...1, elementwise),  // 22: types
        ONNXOperator("Cosh", through: 22, inputs: 1...1, elementwise),  // 22: types
        ONNXOperator("Elu", through: 22, inputs: 1...1, elementwise),  // 6: consumed_inputs dropped; 22: types
        ONNXOperator("Erf", through: 13, inputs: 1...1, elementwise),  // 13: types
        ONNXOperator("Exp", through: 13, inputs: 1...1, fold: { try TypedKernels.unary($0, $1, .float({ Foundation.exp($0) }, { Foundation.exp($0) })) }, elementwise),  // 6: consumed_inputs dropped; 13: types
        ONNXOperator("Floor", through: 13, inputs: 1...1, fold: { try TypedKernels.unary($0, $1, .float({ $0.rounded(.down) }, { $0.rounded(.down) })) }, elementwise),  // 6: consumed_inputs dropped; 13: types
        ONNXOperator("Gelu", through: 20, inputs: 1...1, elementwise),
        ONNXOperator("HardSigmoid", through: 22, inputs: 1...1, elementwise),  // 6: consumed_inputs dropped; 22: types
        ONNXOperator("HardSwish", through: 22, inputs: 1...1, elementwise),  // 22: types
        ONNXOperator("IsInf", through: 20, inputs: 1...1, fold: TypedKernels.isInf, elementwise),  // 20: types
        ONNXOperator("IsNaN", through: 20, inputs: 1...1, fold: TypedKernels.isNaN, elementwise),  // 13, 20: types
        ONNXOperator("LeakyRelu", through: 16, inputs: 1...1, elementwise),  // 6: consumed_inputs dropped; 16: types
        ONNXOperator("Log", through: 13, inputs: 1...1, fold: { try TypedKernels.unary($0, $1, .float({ Foundation.log($0) }, { Foundation.log($0) })) }, elementwise),  // 6: consumed_inputs dropped; 13: types
        ONNXOperator("Mish", through: 22, inputs: 1...1, elementwise),  // 22: types
        ONNXOperator("Neg", through: 13, inputs: 1...1, fold: { try TypedKernels.unary($0, $1, .neg) }, elementwise),  // 6: consumed_inputs dropped; 13: types
        ONNXOperator("Not", through: 1, inputs: 1...1, fold: TypedKernels.not, elementwise),
        ONNXOperator("Reciprocal", through: 13, inputs: 1...1, fold: { try TypedKernels.unary($0, $1, .float({ 1 / $0 }, { 1 / $0 })) }, elementwise),  // 6: consumed_inputs dropped; 13: types
        ONNXOperator("Relu", through: 14, inputs: 1...1, elementwise),  // 6: consumed_inputs dropped; 13, 14: types
        // ONNX Round: halves to even.
        ONNXOperator("Round", through: 22, inputs: 1...1, fold: { try TypedKernels.unary($0, $1, .float({ $0.rounded(.toNearestOrEven) }, { $0.rounded(.toNearestOrEven) })) }, elementwise),  // 22: types
        ONNXOperator("Selu", through: 22, inputs: 1...1, elementwise),  // 6: consumed_inputs dropped, alpha and gamma defaults to float precision; 22: types
        ONNXOperator("Shrink", through: 9, inputs: 1...1, elementwise),
        ONNXOperator("Sigmoid", through: 13, inputs: 1...1, elementwise),  // 6: consumed_inputs dropped; 13: types
        ONNXOperator("Sign", through: 13, inputs: 1...1, fold: { try TypedKernels.unary($0, $1, .sign) }, elementwise),  // 13: types
        ONNXOperator("Sin", through: 22, inputs: 1...1, elementwise),  // 22: types
        ONNXOperator("Sinh", through: 22, inputs: 1...1, elementwise),  // 22: types
        ONNXOperator("Softplus", through: 22, inputs: 1...1, elementwise),  // 22: types
        ONNXOperator("Softsign", through: 22, inputs: 1...1, elementwise),  // 22: types
        ONNXOperator("Swish", through: 24, inputs: 1...1, swish),
        ONNXOperator("Sqrt", through: 13, inputs: 1...1, fold: { try TypedKernels.unary($0, $1, .float({ $0.squareRoot() }, { $0.squareRoot() })) }, elementwise),  // 6: consumed_inputs dropped; 13: types
        ONNXOperator("Tan", through: 22, inputs: 1...1, elementwise),  // 22: types
        ONNXOperator("Tanh", through: 13, inputs: 1...1, elementwise),  // 6: consumed_inputs dropped; 13: types
        ONNXOperator("ThresholdedRelu", through: 22, inputs: 1...1, elementwise),  // 22: types
    ]

    /// Every op type `converter(for:)` knows, for error messages and `inspect`.
    static var supportedOps: [String] { table.values.filter { $0.convert != nil }.map(\.name).sorted() }

    /// The conversion of `opType` to a layer; nil for ops LayerKit does not
    /// convert (an op only folding computes included).
    static func converter(for opType: String) -> Converter? { table[opType]?.convert }

    // MARK: - Element-wise

    /// A catalog op: its attributes are its parameters; extra inputs that
    /// ONNX gives as tensors (Clip's bounds, Pow's scalar exponent) become
    /// parameters.
    static func elementwise(_ node: ONNXNodeContext) throws -> ConvertedNode {
        guard let definition = OpDefinition.catalog.first(where: { $0.name == node.node.opType }) else {
            throw node.error("not in the catalog")
        }
        var parameters = try node.parameters()
        if node.opset < 6 {
            // An in-place hint of opsets 1 to 5, with no bearing on the values.
            parameters["consumed_inputs"] = nil
            // Selu-1's defaults, the constants to four decimals (Selu-6 gives them to float precision).
            if definition.name == "Selu" {
                parameters["alpha"] = parameters["alpha"] ?? 1.6732
                parameters["gamma"] = parameters["gamma"] ?? 1.0507
            }
        }
        switch definition.name {
        case "Clip" where node.opset >= 11:
            for (i, name) in [(1, "min"), (2, "max")] {
                if let bound = try node.optionalConstant(i, name) { parameters[name] = Double(try scalar(bound, name, node)) }
            }
        case "Pow":
            parameters["exponent"] = Double(try scalar(node.constant(1, "Y"), "Y", node))
        default:
            guard node.node.inputs.count == 1 else { throw node.error("takes one input") }
        }
        return ConvertedNode(layer: try ElementwiseLayer(definition: definition, parameters: parameters), inputs: [0])
    }

    /// ONNX Swish (opset 24), x * sigmoid(alpha * x): the catalog's Swish,
    /// whose slope LayerKit has always called beta (as the Core ML example does).
    static func swish(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["alpha"])
        guard let definition = Swish.definition else { throw node.error("not in the catalog") }
        let alpha = Double(try node.float("alpha", default: 1))
        return ConvertedNode(layer: try ElementwiseLayer(definition: definition, parameters: ["beta": alpha]), inputs: [0])
    }

    /// A constant broadcast over the channel axis as one value per channel:
    /// a scalar, [C], [C,1,1] or [1,C,1,1].
    static func perChannel(_ tensor: Tensor, of shape: [Int], node: ONNXNodeContext) throws -> Tensor {
        let channels = shape.count > 1 ? shape[1] : 1
        // A scalar is spread over the channels: memory sized from a declared
        // shape, not from the file's bytes, so it is capped.
        guard channels <= ONNXImporter.maxChannels else {
            throw node.error("input \(Tensor.describe(shape)) has \(channels) channels, more than LayerKit's limit "
                             + "of \(ONNXImporter.maxChannels) for per-channel weights")
        }
        if tensor.count == 1 { return try Tensor(shape: [channels], values: Array(repeating: tensor[0], count: channels)) }
        let nonUnit = tensor.shape.enumerated().filter { $0.element != 1 }
        guard nonUnit.count == 1, nonUnit[0].element == channels,
              tensor.shape.count - nonUnit[0].offset == shape.count - 1 else {
            throw node.error("a constant of shape \(Tensor.describe(tensor.shape)) is not per-channel for input "
                             + "\(Tensor.describe(shape))")
        }
        return try tensor.reshaped(to: [channels])
    }

    static func scalar(_ tensor: Tensor, _ what: String, _ node: ONNXNodeContext) throws -> Float {
        guard tensor.count == 1 else { throw node.error("\(what) must be a scalar, got \(Tensor.describe(tensor.shape))") }
        return tensor[0]
    }
}
