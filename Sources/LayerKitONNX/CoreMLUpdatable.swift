import LayerKitCore
import Foundation
// Updatable Core ML models (Core ML 3, specification version 4 on): which
// weights an update trains (`isUpdatable` layers and `WeightParams`), how
// (`NetworkUpdateParameters`: the loss layer, the optimizer, epochs,
// shuffling), and the updated model written back as a copy of the file in
// which only the trained weights' values differ.

/// A network's `NetworkUpdateParameters`: what an update of the model
/// (`MLUpdateTask`, `layerkit train`) does unless told otherwise. A value
/// the file leaves out is nil.
public struct CoreMLUpdateParameters: Sendable, Equatable {
    /// A loss layer: what it compares (`input`, a blob of the network) with
    /// which training input (`target`).
    public struct LossLayer: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            /// `categoricalCrossEntropyLossLayer`: -log(input[target]), the
            /// input a softmax's output, the target a class index.
            case categoricalCrossEntropy
            /// `meanSquaredErrorLossLayer`: the mean of (input - target)^2.
            case meanSquaredError
        }

        public var name: String
        public var kind: Kind
        public var input: String
        public var target: String
    }

    /// The optimizer and its `defaultValue`s (nil where the file has none).
    public enum Optimizer: Sendable, Equatable {
        case sgd(learningRate: Double?, miniBatchSize: Int?, momentum: Double?)
        case adam(learningRate: Double?, miniBatchSize: Int?, beta1: Double?, beta2: Double?, epsilon: Double?)
    }

    public var lossLayers: [LossLayer] = []
    public var optimizer: Optimizer?
    public var epochs: Int?
    /// Whether each epoch visits the examples in a shuffled order.
    public var shuffle: Bool?
    public var seed: Int?
}

/// Where a weight's values lie in a `.mlmodel` file: byte ranges holding
/// them in order, as little-endian float32 (`floatValue`) or float16
/// (`float16Value`).
struct CoreMLWeightLocation: Sendable, Equatable {
    var runs: [Range<Int>] = []
    var half = false
    /// The `WeightParams`' own `isUpdatable`.
    var isUpdatable = false
}

/// What training an updatable Core ML model needs: the network as an ONNX
/// model whose one output is the loss layer's input, the loss, the
/// initializers the update trains, and the file's update parameters.
public struct CoreMLTrainingSetup: Sendable {
    /// How the loss reads the model's output.
    public enum Loss: Sendable, Equatable {
        /// Categorical cross-entropy of a softmax over [N, K]: the output is
        /// the softmax's, and the loss may read the logits before it (exact).
        case softmaxCrossEntropy
        /// Categorical cross-entropy of probabilities [N, K] (a softmax of
        /// a rank-4 blob, flattened).
        case crossEntropy
        /// Mean squared error against a target of the output's shape.
        case meanSquaredError
    }

    /// The network, its output the loss layer's input.
    public var model: ONNXModel
    public var loss: Loss
    /// The loss layer, as the file gives it.
    public var lossLayer: CoreMLUpdateParameters.LossLayer
    /// The training input the loss reads as its target, if the description lists it.
    public var target: CoreMLFeature?
    /// The initializers of the updatable layers' updatable weights, in file order.
    public var updatable: [String]
    public var parameters: CoreMLUpdateParameters
}

extension CoreMLUpdateParameters {
    /// Decodes a `NetworkUpdateParameters`.
    init(decoding reader: inout ProtobufReader) throws {
        while let field = try reader.nextField() {
            switch field.number {
            case 1:
                var sub = try reader.message(field, "lossLayers", type: "LossLayer")
                lossLayers.append(try Self.lossLayer(&sub))
            case 2:
                var sub = try reader.message(field, "optimizer", type: "Optimizer")
                optimizer = try Self.optimizer(&sub)
            case 3: epochs = try Self.int(&reader, field, "epochs")
            case 10: shuffle = try Self.parameter(&reader, field, "shuffle", zero: false) { try $0.uint64($1, "defaultValue") != 0 }
            case 20: seed = try Self.int(&reader, field, "seed")
            default: try reader.skip(field)
            }
        }
    }

    private static func lossLayer(_ reader: inout ProtobufReader) throws -> LossLayer {
        var layer = LossLayer(name: "", kind: .meanSquaredError, input: "", target: "")
        var kind: LossLayer.Kind?
        while let field = try reader.nextField() {
            switch field.number {
            case 1: layer.name = try reader.string(field, "name")
            case 10, 11:
                kind = field.number == 10 ? .categoricalCrossEntropy : .meanSquaredError
                var sub = try reader.message(field, field.number == 10 ? "categoricalCrossEntropyLossLayer"
                                                 : "meanSquaredErrorLossLayer", type: "LossLayer")
                while let f = try sub.nextField() {
                    switch f.number {
                    case 1: layer.input = try sub.string(f, "input")
                    case 2: layer.target = try sub.string(f, "target")
                    default: try sub.skip(f)
                    }
                }
            default: try reader.skip(field)
            }
        }
        guard let kind else {
            throw LayerKitError.invalidModel("loss layer '\(layer.name)' is of a type LayerKit does not know "
                                             + "(categorical cross-entropy, mean squared error)")
        }
        layer.kind = kind
        return layer
    }

    private static func optimizer(_ reader: inout ProtobufReader) throws -> Optimizer? {
        var optimizer: Optimizer?
        while let field = try reader.nextField() {
            guard field.number == 10 || field.number == 11 else { try reader.skip(field); continue }
            let adam = field.number == 11
            var sub = try reader.message(field, adam ? "adamOptimizer" : "sgdOptimizer",
                                         type: adam ? "AdamOptimizer" : "SGDOptimizer")
            var doubles: [Int: Double] = [:], batch: Int?
            while let f = try sub.nextField() {
                switch f.number {
                case 2: batch = try Self.int(&sub, f, "miniBatchSize")
                case 1, 3, 4, 5:
                    let names = [1: "learningRate", 3: adam ? "beta1" : "momentum", 4: "beta2", 5: "eps"]
                    doubles[f.number] = try Self.double(&sub, f, names[f.number] ?? "")
                default: try sub.skip(f)
                }
            }
            optimizer = adam
                ? .adam(learningRate: doubles[1], miniBatchSize: batch, beta1: doubles[3], beta2: doubles[4],
                        epsilon: doubles[5])
                : .sgd(learningRate: doubles[1], miniBatchSize: batch, momentum: doubles[3])
        }
        return optimizer
    }

    /// An `Int64Parameter`'s, `DoubleParameter`'s or `BoolParameter`'s
    /// `defaultValue` (field 1), read by `read`; `zero` when the message is
    /// present without one, as protobuf has it.
    private static func parameter<Value>(_ reader: inout ProtobufReader, _ field: ProtobufReader.Field, _ name: String,
                                         zero: Value,
                                         read: (inout ProtobufReader, ProtobufReader.Field) throws -> Value) throws -> Value {
        var sub = try reader.message(field, name, type: "Parameter")
        var value = zero
        while let f = try sub.nextField() {
            if f.number == 1 { value = try read(&sub, f) } else { try sub.skip(f) }
        }
        return value
    }

    private static func int(_ reader: inout ProtobufReader, _ field: ProtobufReader.Field, _ name: String) throws -> Int {
        Int(clamping: try parameter(&reader, field, name, zero: Int64(0)) { try $0.int64($1, "defaultValue") })
    }

    private static func double(_ reader: inout ProtobufReader, _ field: ProtobufReader.Field, _ name: String) throws -> Double {
        try parameter(&reader, field, name, zero: 0.0) { try $0.double($1, "defaultValue") }
    }
}

extension CoreMLModel {
    /// The network set up for an update as the file describes it
    /// (`isUpdatable` layers, `updateParams`): the ONNX model whose output
    /// is the loss layer's input, the loss, and the initializers trained.
    /// Throws naming what is missing: no update parameters, no loss layer
    /// or more than one, a loss input no layer computes, no updatable
    /// weight, a categorical cross-entropy not read from a softmax.
    public func trainingSetup() throws -> CoreMLTrainingSetup {
        guard let parameters = updateParameters else {
            throw LayerKitError.invalidParameter("\(source): the Core ML model has no update parameters (updateParams): "
                                                 + "it is not an updatable model; say how to train it (a loss, what trains)")
        }
        guard parameters.lossLayers.count == 1, let lossLayer = parameters.lossLayers.first else {
            throw LayerKitError.invalidParameter("\(source): the Core ML model's update parameters have "
                                                 + "\(parameters.lossLayers.count) loss layers; LayerKit trains with one")
        }
        var (onnx, graph) = try translated()
        guard graph.produced(lossLayer.input) else {
            throw LayerKitError.invalidModel("\(source): loss layer '\(lossLayer.name)' reads '\(lossLayer.input)', "
                                             + "which no layer computes")
        }
        guard !graph.updatable.isEmpty else {
            throw LayerKitError.invalidParameter("\(source): no layer of the Core ML model is updatable (isUpdatable "
                                                 + "on the layer and its weights)")
        }
        var output = try graph.blob(lossLayer.input), loss = CoreMLTrainingSetup.Loss.meanSquaredError
        if lossLayer.kind == .categoricalCrossEntropy {
            guard graph.producers[lossLayer.input] == 175 || graph.producers[lossLayer.input] == 950 else {
                throw LayerKitError.invalidModel("\(source): loss layer '\(lossLayer.name)' is a categorical "
                                                 + "cross-entropy of '\(lossLayer.input)', which is not a softmax's output")
            }
            if graph.rank(of: output) == 2 {
                loss = .softmaxCrossEntropy
            } else {
                // Probabilities [N, K] out of a softmax of [N, K, 1, 1].
                graph.addNode("Flatten", [output], output + ".flat", rank: 2, ["axis": .int(1)])
                output += ".flat"
                loss = .crossEntropy
            }
        }
        graph.graph.outputs = [ONNXValueInfo(name: output, elementType: .float, dims: nil)]
        onnx = onnxModel(graph.graph)
        return CoreMLTrainingSetup(model: onnx, loss: loss, lossLayer: lossLayer,
                                   target: trainingInputs.first { $0.name == lossLayer.target },
                                   updatable: graph.updatable, parameters: parameters)
    }

    /// The bytes of the `.mlmodel` file `data` with the weights named in
    /// `updates` (initializers of `onnxModel()`, such as "dense.weights")
    /// holding new values, and every other byte as it was.
    ///
    /// The file is patched, not re-encoded: each weight keeps its count
    /// and its encoding (float32, or float16 rounded to nearest), so every
    /// length in the file is unchanged and only the values' bytes differ;
    /// coremltools reads the result as it read the input. Throws
    /// `LayerKitError.invalidParameter` for a name that is no weight read
    /// from the file (with a suggestion when one is close) and for values
    /// of another shape than the weight's.
    public static func replacingWeights(_ updates: [String: Tensor], in data: Data,
                                        source: String = "Core ML model") throws -> Data {
        let model = try CoreMLModel(data: data, source: source)
        let (onnx, graph) = try model.translated()
        var bytes = [UInt8](data)
        for (name, tensor) in updates.sorted(by: { $0.key < $1.key }) {
            guard let location = graph.weightLocations[name], let original = onnx.graph.initializers[name] else {
                let names = graph.weightLocations.keys.sorted()
                throw LayerKitError.invalidParameter("\(source): no weight of the Core ML model is named '\(name)'"
                    + NameSuggestion.hint(for: name, among: names) + "; the updated model cannot be written")
            }
            guard original.dims == tensor.shape else {
                throw LayerKitError.invalidParameter("\(source): weight '\(name)' has shape \(original.dims) but its "
                                                     + "update has shape \(tensor.shape)")
            }
            var index = 0
            for run in location.runs {
                var offset = run.lowerBound
                while offset < run.upperBound {
                    let value = tensor[index]
                    if location.half {
                        let bits = Float16(value).bitPattern
                        bytes[offset] = UInt8(truncatingIfNeeded: bits)
                        bytes[offset + 1] = UInt8(truncatingIfNeeded: bits >> 8)
                        offset += 2
                    } else {
                        let bits = value.bitPattern
                        for k in 0..<4 { bytes[offset + k] = UInt8(truncatingIfNeeded: bits >> (8 * UInt32(k))) }
                        offset += 4
                    }
                    index += 1
                }
            }
        }
        return Data(bytes)
    }

    /// The weights read from the file (initializer names of `onnxModel()`),
    /// each with whether its layer and its `WeightParams` are updatable.
    public func weightNames() throws -> (all: [String], updatable: [String]) {
        let graph = try translated().graph
        return (graph.graph.initializerNames.filter { graph.weightLocations[$0] != nil }, graph.updatable)
    }
}
