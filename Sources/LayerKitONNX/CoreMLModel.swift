import LayerKitCore
import Foundation

/// A Core ML model file (`.mlmodel`, the `Model` message of coremltools'
/// `Model.proto`), decoded as far as LayerKit runs it: the specification
/// version, the inputs and outputs, and a NeuralNetwork's layers or a
/// classic model (a pipeline, GLM, SVM, tree ensemble or preprocessor).
///
/// Decoding checks the structure (protobuf framing and field types) and
/// that the model is a neural network; `onnxModel()` translates its layers
/// into standard ONNX ops and custom-layer nodes, which the ONNX importer
/// runs. Every error is a `LayerKitError.invalidModel` naming the source.
public struct CoreMLModel: Sendable {
    /// The specification version the file declares (1 for iOS 11's format).
    public var specificationVersion: Int
    /// The inputs of the model's description.
    public var inputs: [CoreMLFeature]
    /// The outputs of the model's description.
    public var outputs: [CoreMLFeature]
    /// The network's layers, in the file's order (Core ML's is topological).
    var layers: [CoreMLLayer]
    /// Whether multi-array inputs are taken as they are
    /// (`EXACT_ARRAY_MAPPING`) rather than as [C] or [C, H, W] items of a
    /// batch (`RANK5_ARRAY_MAPPING`, the default).
    var exactArrayMapping: Bool
    /// The per-channel scale and biases of image inputs (`NeuralNetworkImageScaler`), by input name.
    var imageScalers: [String: CoreMLImageScaler]
    /// A classifier's probability blob (`labelProbabilityLayerName`, or the last layer's output); nil for a plain network.
    var classifierProbabilities: String?
    /// A classic model (a pipeline, a GLM, an SVM, a tree ensemble, a preprocessor); nil for a neural network.
    var classic: CoreMLClassicModel?
    /// A neural network classifier's class labels (`stringClassLabels`, `int64ClassLabels` as text).
    var networkClassLabels: [String]?
    /// Names the file in error messages.
    let source: String
    /// Whether the file marks the model updatable (`Model.isUpdatable`, Core ML 3).
    public var isUpdatable = false
    /// The inputs an update reads (`ModelDescription.trainingInput`): the model's inputs and the loss targets.
    public var trainingInputs: [CoreMLFeature] = []
    /// How the network is updated (`NetworkUpdateParameters`), when the file says.
    public var updateParameters: CoreMLUpdateParameters?
}

/// An input or output of a Core ML model's description.
public struct CoreMLFeature: Sendable, Equatable {
    /// What a feature holds (`FeatureType`), as far as LayerKit reads it.
    public enum Kind: Sendable, Equatable {
        /// A multi-array of `shape` whose elements are `dataType`
        /// (`ArrayFeatureType.ArrayDataType`: FLOAT32 65568, DOUBLE 65600,
        /// FLOAT16 65552, INT32 131104, INT8 131080).
        case multiArray(shape: [Int], dataType: Int)
        /// A picture `width` by `height` in `colorSpace` (GRAYSCALE 10, RGB
        /// 20, BGR 30, GRAYSCALE_FLOAT16 40).
        case image(width: Int, height: Int, colorSpace: Int)
        /// Another feature type (int64, double, string, dictionary,
        /// sequence, state), by its field name.
        case other(String)
    }

    public var name: String
    public var kind: Kind
}

/// `NeuralNetworkImageScaler`: an image input's channels are multiplied by
/// `channelScale`, then each channel's bias is added, before the first layer.
struct CoreMLImageScaler: Sendable {
    var channelScale: Float = 1
    var blueBias: Float = 0, greenBias: Float = 0, redBias: Float = 0, grayBias: Float = 0
}

/// One `NeuralNetworkLayer`: its blobs and its parameters, read when it is translated.
struct CoreMLLayer: Sendable {
    var name = ""
    var inputs: [String] = []
    var outputs: [String] = []
    /// The field number of the layer's type in the `layer` oneof (100 for convolution).
    var typeNumber = 0
    /// A reader over the type's parameters message.
    var parameters: ProtobufReader?
    /// Whether an update trains the layer's updatable weights (`isUpdatable`).
    var isUpdatable = false

    /// The type's field name ("convolution"), or "layer type N" for a number the table lacks.
    var typeName: String { CoreMLLayer.typeNames[typeNumber] ?? "layer type \(typeNumber)" }

    /// How errors name it: "layer 'conv1' (convolution)".
    var label: String { "layer '\(name)' (\(typeName))" }
}
