import LayerKitCore
import Foundation

extension CoreMLModel {
    /// The domain of the nodes a `custom` layer becomes: op type its
    /// `className`, found in the layer registry as any custom op is.
    public static let customDomain = "com.apple.coreml"
    /// The ONNX opset the translated graph's standard ops are written in.
    static let opset = 13

    /// The network as an ONNX model of standard ops and custom-layer nodes,
    /// which LayerKit's importer runs as it runs any ONNX file.
    ///
    /// Blobs keep Core ML's names. A [C] or [C, H, W] multi-array input
    /// becomes [N, C] or [N, C, H, W] (an exact-mapping input keeps its
    /// shape), an image [N, 3, H, W] or [N, 1, H, W]; every input is
    /// float32, as the network computes. Outputs take the shape the graph
    /// computes. A layer LayerKit does not translate is refused, named with its type.
    public func onnxModel() throws -> ONNXModel {
        if let classic { return try classicONNXModel(classic) }
        return try translated().onnx
    }

    /// The network as `onnxModel()` gives it, with the builder that made it
    /// (where each weight initializer's values lie in the file, which are updatable).
    func translated() throws -> (onnx: ONNXModel, graph: CoreMLGraphBuilder) {
        var graph = CoreMLGraphBuilder(source: source)
        graph.exactMapping = exactArrayMapping
        for input in inputs {
            try graph.addInput(input, exactMapping: exactArrayMapping, scaler: imageScalers[input.name])
        }
        for layer in layers {
            do {
                try graph.add(layer)
            } catch LayerKitError.invalidModel(let message) where !message.hasPrefix(source) {
                throw LayerKitError.invalidModel("\(source): \(layer.label): \(message)")
            }
        }
        let outputNames = classifierProbabilities.map { [$0] } ?? outputs.map(\.name)
        for name in outputNames where !graph.produced(name) {
            throw LayerKitError.invalidModel("\(source): output '\(name)' is not computed by any layer")
        }
        graph.graph.outputs = outputNames.map { ONNXValueInfo(name: $0, elementType: .float, dims: nil) }
        if let probabilities = classifierProbabilities, let labels = networkClassLabels,
           let predicted = outputs.first(where: { $0.kind == .other("string") || $0.kind == .other("int64") }) {
            try graph.addPredictedLabel(predicted, of: probabilities, labels: labels)
        }
        return (onnxModel(graph.graph), graph)
    }

    /// An ONNX model of the translated `graph`, with the classifier's labels.
    func onnxModel(_ graph: ONNXGraph) -> ONNXModel {
        // A classifier's predicted label is an ai.onnx.ml LabelEncoder.
        let ml = graph.nodes.contains { $0.domain == Self.mlDomain } ? [(Self.mlDomain, 2)] : []
        return ONNXModel(irVersion: 8, opsetImports: [("", Self.opset), (Self.customDomain, 1)] + ml,
                         producerName: "Core ML specification version \(specificationVersion), translated to ONNX ops",
                         producerVersion: "", graph: graph, classLabels: networkClassLabels)
    }
}

extension CoreMLGraphBuilder {
    /// A NeuralNetworkClassifier's predicted feature (`predicted`, Core ML's
    /// `classLabel`): the label of the largest of the `probabilities` blob's
    /// values per item (the first of equal ones), a string or int64 as the
    /// feature is, [N]. A TopK of one (a float layer on the CPU; ArgMax
    /// would only fold, planning per input value) and a LabelEncoder from
    /// its index to the label.
    mutating func addPredictedLabel(_ predicted: CoreMLFeature, of probabilities: String, labels: [String]) throws {
        let isString = predicted.kind == .other("string")
        var values: [String: ONNXAttribute] = ["keys_int64s": .ints(Array(labels.indices))]
        if isString {
            values["values_strings"] = .strings(labels)
        } else {
            values["values_int64s"] = .ints(try labels.map { label in
                guard let value = Int(label) else {
                    throw LayerKitError.invalidModel("\(source): class label '\(label)' of int64 output '\(predicted.name)' is no integer")
                }
                return value
            })
        }
        let name = predicted.name
        addNode("Flatten", [try blob(probabilities)], name + ".scores", rank: 2, ["axis": .int(1)])
        addNode("TopK", [name + ".scores", constant(name + ".k", [1], int64s: [1])],
                outputs: [name + ".largest", name + ".top"], rank: 2, ["axis": .int(1)])
        addNode("Reshape", [name + ".top", constant(name + ".flat", [1], int64s: [-1])], name + ".index", rank: 1)
        addNode("LabelEncoder", [name + ".index"], name, rank: 1, domain: CoreMLModel.mlDomain, values)
        // ONNX's STRING is 8.
        graph.outputs.append(ONNXValueInfo(name: predicted.name, elementType: isString ? ONNXDataType(rawValue: 8) : .int64,
                                           dims: nil))
    }
}

/// The ONNX graph made from a Core ML network, layer by layer, with the
/// rank of each blob: Core ML's layers see a rank-2 [N, C] blob (an
/// innerProduct's or flatten's output) as [N, C, 1, 1], so one is reshaped
/// where an ONNX op needs rank 4 or the ranks of its inputs to agree.
struct CoreMLGraphBuilder {
    var graph = ONNXGraph(name: "", nodes: [], initializers: [:], initializerNames: [], inputs: [], outputs: [],
                          valueInfo: [])
    let source: String
    /// The rank of every blob made so far.
    var ranks: [String: Int] = [:]
    /// Blobs that layers read under another name: an input's preprocessed value.
    private var aliases: [String: String] = [:]
    /// Whether the network takes its inputs as declared (`EXACT_ARRAY_MAPPING`):
    /// then a rank-2 blob is a matrix, not a batch of [C, 1, 1] items.
    var exactMapping = false
    /// Where each initializer read from a `WeightParams` has its values in the file.
    var weightLocations: [String: CoreMLWeightLocation] = [:]
    /// The initializers of updatable layers whose `WeightParams` are updatable, in file order.
    var updatable: [String] = []
    /// The layer being translated, and whether it is updatable (`isUpdatable`).
    var currentLayerIsUpdatable = false
    /// The layer producing each blob: its type's field number.
    var producers: [String: Int] = [:]

    init(source: String) { self.source = source }

    /// Whether `name` is an input or some layer's output.
    func produced(_ name: String) -> Bool { ranks[name] != nil }

    /// A graph input for `feature`, scaled and biased when its preprocessing says so.
    mutating func addInput(_ feature: CoreMLFeature, exactMapping: Bool, scaler: CoreMLImageScaler?) throws {
        let dims: [ONNXDimension]
        var biases: [Float] = []
        switch feature.kind {
        case .multiArray(let shape, _):
            if exactMapping {
                dims = shape.map(ONNXDimension.value)
            } else {
                guard shape.count == 1 || shape.count == 3 else {
                    throw LayerKitError.invalidModel("\(source): input '\(feature.name)' has shape \(shape); "
                                                     + "LayerKit reads [C] or [C, H, W] multi-arrays")
                }
                dims = [.symbol("N")] + shape.map(ONNXDimension.value)
            }
        case .image(let width, let height, let colorSpace):
            let gray = colorSpace == 10 || colorSpace == 40
            dims = [.symbol("N"), .value(gray ? 1 : 3), .value(height), .value(width)]
            if let scaler {
                biases = gray ? [scaler.grayBias] : colorSpace == 30 ? [scaler.blueBias, scaler.greenBias, scaler.redBias]
                    : [scaler.redBias, scaler.greenBias, scaler.blueBias]
            }
        case .other(let type):
            throw LayerKitError.invalidModel("\(source): input '\(feature.name)' is of type \(type); LayerKit reads "
                                             + "multi-array and image inputs of a neural network")
        }
        guard dims.allSatisfy({ if case .value(let v) = $0 { v > 0 } else { true } }) else {
            throw LayerKitError.invalidModel("\(source): input '\(feature.name)' has a dimension below 1")
        }
        graph.inputs.append(ONNXValueInfo(name: feature.name, elementType: .float, dims: dims))
        ranks[feature.name] = dims.count
        guard let scaler else { return }
        // x * channelScale + bias per channel, as Core ML prepares an image
        // before the first layer; the layers reading the input read the result.
        let scaled = feature.name + ".scaled", prepared = feature.name + ".prepared"
        addNode("Mul", [feature.name, constant(feature.name + ".channelScale", [], [scaler.channelScale])], scaled)
        addNode("Add", [scaled, constant(feature.name + ".bias", [biases.count, 1, 1], biases)], prepared)
        aliases[feature.name] = prepared
    }

    // MARK: Graph pieces the layer translations share

    /// Adds a node of the default domain writing `output`, with the rank of its first input unless given.
    mutating func addNode(_ opType: String, _ inputs: [String], _ output: String, rank: Int? = nil,
                          domain: String = "", _ attributes: [String: ONNXAttribute] = [:]) {
        graph.nodes.append(ONNXNode(name: output, opType: opType, domain: domain, inputs: inputs, outputs: [output],
                                    attributes: attributes))
        ranks[output] = rank ?? inputs.first.flatMap { ranks[$0] } ?? 4
    }

    /// Adds a node writing several outputs, each of rank `rank`.
    mutating func addNode(_ opType: String, _ inputs: [String], outputs: [String], rank: Int,
                          _ attributes: [String: ONNXAttribute] = [:]) {
        graph.nodes.append(ONNXNode(name: outputs.first ?? "", opType: opType, domain: "", inputs: inputs,
                                    outputs: outputs, attributes: attributes))
        for output in outputs { ranks[output] = rank }
    }

    /// Adds a float initializer and returns its name.
    mutating func constant(_ name: String, _ dims: [Int], _ values: [Float]) -> String {
        graph.initializers[name] = ONNXTensor(name: name, dims: dims, floats: values)
        graph.initializerNames.append(name)
        return name
    }

    /// Adds an int64 initializer and returns its name.
    mutating func constant(_ name: String, _ dims: [Int], int64s values: [Int]) -> String {
        graph.initializers[name] = ONNXTensor(name: name, dims: dims, int64s: values.map(Int64.init))
        graph.initializerNames.append(name)
        return name
    }

    /// The value a layer reading blob `name` reads, checked to exist.
    func blob(_ name: String) throws -> String {
        let value = aliases[name] ?? name
        guard ranks[value] != nil else {
            throw LayerKitError.invalidModel("input '\(name)' is not a model input or an earlier layer's output")
        }
        return value
    }

    /// `name` as a rank-4 blob: a rank-2 [N, C] blob reshaped to [N, C, 1, 1], as Core ML sees it.
    mutating func rank4(_ name: String) throws -> String {
        let name = try blob(name)
        let rank = ranks[name] ?? 4
        guard rank != 4 else { return name }
        guard rank == 2 else {
            throw LayerKitError.invalidModel("blob '\(name)' has rank \(rank), where rank 4 (or 2) was expected")
        }
        let reshaped = name + ".rank4"
        if ranks[reshaped] == nil {
            addNode("Reshape", [name, constant(reshaped + ".shape", [4], int64s: [0, -1, 1, 1])], reshaped, rank: 4)
        }
        return reshaped
    }

    /// The blob a layer of the rank-5 era reads (its axes C, H and W are
    /// -3, -2 and -1): rank 4 in a batch of items, a rank-2 [N, C] blob
    /// reshaped to [N, C, 1, 1]; in an exact-mapping network the blob as it is.
    mutating func legacy(_ name: String) throws -> String {
        let value = try blob(name)
        return exactMapping ? value : try rank4(value)
    }

    /// The rank of a blob read by a layer (`blob` checks it exists).
    func rank(of name: String) -> Int { ranks[name] ?? 4 }

    /// The blobs `names`, all of one rank: rank-2 ones reshaped to rank 4 when ranks differ.
    mutating func sameRank(_ names: [String]) throws -> [String] {
        let names = try names.map(blob)
        let ranks = Set(names.map { self.ranks[$0] ?? 4 })
        return ranks.count == 1 ? names : try names.map { try rank4($0) }
    }
}
