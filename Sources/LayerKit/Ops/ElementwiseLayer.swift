import Foundation

/// An element-wise op of the catalog (or any `OpDefinition`) as a layer:
/// its GPU kernel and its CPU program both come from the op's formula.
///
/// Core ML style: `ElementwiseLayer(parameters: ["op": "Elu", "alpha": 0.5])`;
/// per-channel values arrive through `setWeightData`, one Float32
/// little-endian blob per name in `definition.weightNames` (an empty blob
/// leaves that name's scalar in place).
open class ElementwiseLayer: PerElementLayer, @unchecked Sendable {
    open class var name: String { "Elementwise" }

    /// The op's declaration.
    public let definition: OpDefinition
    /// The formula in use (the chosen one when the op has a choice).
    public let formula: Expr
    /// The scalar values: parameters given, else the defaults.
    public private(set) var scalars: [String: Float]
    /// Per-channel values set through `setWeightData`, by name.
    public private(set) var channelValues: [String: [Float]] = [:] { didSet { chain = makeChain() } }
    /// This op as a chain of one stage, values bound (remade when weights are set).
    private(set) var chain = FormulaChain(stages: [])

    public var layerName: String { definition.name }

    /// Reads the op's name from `parameters["op"]` and the rest as its parameters.
    public required convenience init(parameters: [String: Any]) throws {
        guard let name = parameters["op"] as? String else {
            throw LayerKitError.invalidParameter("\(Self.name): parameter 'op' must name a catalog op")
        }
        guard let definition = OpDefinition.catalog.first(where: { $0.name.lowercased() == name.lowercased() }) else {
            throw LayerKitError.unknownOp("unknown op '\(name)'")
        }
        try self.init(definition: definition, parameters: parameters.filter { $0.key != "op" })
    }

    /// The op `definition` with `parameters` (numbers, or words for a choice).
    public init(definition: OpDefinition, parameters: [String: Any]) throws {
        self.definition = definition
        let scalarNames = definition.values.filter { $0.defaultValue != nil }.map(\.name)
        let reader = LayerParameters(parameters, layer: definition.name)
        try reader.requireOnly(scalarNames + [definition.choice?.name].compactMap { $0 })
        var scalars: [String: Float] = [:]
        for value in definition.values {
            guard let defaultValue = value.defaultValue else { continue }
            scalars[value.name] = try reader.float(value.name, default: defaultValue)
        }
        self.scalars = scalars
        if let choice = definition.choice, let raw = parameters[choice.name] {
            let word = "\(raw)".lowercased()
            guard let option = choice.options.first(where: { $0.word == word }) else {
                let words = choice.options.map(\.word).joined(separator: ", ")
                throw LayerKitError.invalidParameter(
                    "\(definition.name): parameter '\(choice.name)' must be one of \(words), got '\(raw)'")
            }
            formula = option.formula
        } else {
            formula = definition.formula
        }
        chain = makeChain()
    }

    /// One blob per name of `definition.weightNames`, in that order; an empty
    /// blob (or a missing trailing one) leaves that value scalar.
    open func setWeightData(_ weights: [Data]) throws {
        let names = definition.weightNames
        guard weights.count <= names.count else {
            throw LayerKitError.invalidWeights(
                "\(definition.name) takes \(names.count) weight blob(s) (\(names.joined(separator: ", "))), got \(weights.count)")
        }
        var values: [String: [Float]] = [:]
        for (name, blob) in zip(names, weights) where !blob.isEmpty {
            let floats = try WeightBlob.float32Values(blob, what: "\(definition.name) weights '\(name)'")
            if let bad = floats.firstIndex(where: { !$0.isFinite }) {
                throw LayerKitError.invalidWeights("\(definition.name) weights '\(name)': value \(bad) is \(floats[bad])")
            }
            values[name] = floats
        }
        channelValues = values
    }

    /// The inputs' shapes; throws when per-channel values do not have one
    /// value per channel (axis 1) of an input, so a model names the node at load.
    open func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try chain.checkShapes(inputShapes)
        return inputShapes
    }

    open func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        try evaluate(inputs: inputs, outputs: outputs, threadCount: nil)
    }

    /// `evaluate(inputs:outputs:)` on `threadCount` threads (nil: one per
    /// active processor, as `CPUEvaluator()`); for benchmarks and callers
    /// that share the machine.
    public func evaluate(inputs: [Tensor], outputs: [Tensor], threadCount: Int?) throws {
        try chain.evaluate(inputs: inputs, outputs: outputs, threadCount: threadCount)
    }

    open var hasGPUImplementation: Bool { true }

    /// Creates the op's pipeline on `context`, once per context.
    open func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { try chain.prepare(on: context) }

    open func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        try chain.encode(commandBuffer: commandBuffer, inputs: inputs, outputs: outputs)
    }

    /// Encodes channels `channels` of `featureChannels` (a piece of a tensor
    /// too large for one image), with those channels' per-channel values.
    open func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage],
                     channels: Range<Int>, of featureChannels: Int) throws {
        try chain.channels(channels, of: featureChannels)
            .encode(commandBuffer: commandBuffer, inputs: inputs, outputs: outputs)
    }

    private func makeChain() -> FormulaChain {
        FormulaChain(stages: [.init(name: definition.name, formula: formula, scalars: scalars,
                                    channelValues: channelValues)])
    }
}
