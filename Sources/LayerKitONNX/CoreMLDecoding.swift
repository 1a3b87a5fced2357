import LayerKitCore
import Foundation
// Decoding of Core ML's protobuf messages (field numbers from coremltools'
// Model.proto, FeatureTypes.proto and NeuralNetwork.proto). Fields LayerKit
// does not use are skipped; model types other than a neural network are
// refused by name.

extension CoreMLModel {
    /// The model types of `Model`'s `Type` oneof LayerKit runs: neuralNetworkRegressor (a
    /// neuralNetwork's message by another name), neuralNetworkClassifier and neuralNetwork.
    private static let regressor = 303, classifier = 403, network = 500
    /// The neural network types' names, as coremltools spells them.
    private static let networkNames = [regressor: "neuralNetworkRegressor", classifier: "neuralNetworkClassifier",
                                       network: "neuralNetwork"]
    /// The other model types, named in the refusal: coremltools' field names.
    static let otherTypes = [
        200: "pipelineClassifier", 201: "pipelineRegressor", 202: "pipeline", 300: "glmRegressor",
        301: "supportVectorRegressor", 302: "treeEnsembleRegressor",
        304: "bayesianProbitRegressor", 400: "glmClassifier", 401: "supportVectorClassifier",
        402: "treeEnsembleClassifier", 404: "kNearestNeighborsClassifier", 501: "itemSimilarityRecommender",
        502: "mlProgram", 555: "customModel", 556: "linkedModel", 560: "classConfidenceThresholding",
        600: "oneHotEncoder", 601: "imputer", 602: "featureVectorizer", 603: "dictVectorizer", 604: "scaler",
        606: "categoricalMapping", 607: "normalizer", 609: "arrayFeatureExtractor", 610: "nonMaximumSuppression",
        900: "identity",
    ]

    /// Decodes the bytes of a `.mlmodel` file; `source` names it in errors.
    public init(data: Data, source: String = "Core ML model") throws {
        var reader = ProtobufReader(bytes: [UInt8](data), message: "Model", source: source)
        var version = 0
        var description: (inputs: [CoreMLFeature], outputs: [CoreMLFeature], trainingInputs: [CoreMLFeature])?
        var network: (reader: ProtobufReader, isClassifier: Bool)?
        var updatable = false
        var classic: (number: Int, reader: ProtobufReader)?
        while let field = try reader.nextField() {
            switch field.number {
            case 1: version = Int(try reader.int32(field, "specificationVersion"))
            case 2:
                var sub = try reader.message(field, "description", type: "ModelDescription")
                description = try Self.description(decoding: &sub)
            case 10: updatable = try reader.uint64(field, "isUpdatable") != 0
            case let number where Self.networkNames[number] != nil:
                let name = Self.networkNames[number] ?? ""
                network = (try reader.message(field, name, type: name.prefix(1).uppercased() + name.dropFirst()),
                           number == Self.classifier)
            case let number where CoreMLClassicModel.typeNames[number] != nil:
                let name = CoreMLClassicModel.typeNames[number] ?? ""
                classic = (number, try reader.message(field, name, type: name))
            case let number where Self.otherTypes[number] != nil:
                let type = Self.otherTypes[number] ?? ""
                let why = type == "mlProgram" ? "an ML Program, which MLProgramModel reads, not CoreMLModel"
                    : "a \(type) model; LayerKit reads Core ML neural networks (neuralNetwork, "
                    + "neuralNetworkClassifier, neuralNetworkRegressor) and the classic models of scikit-learn's converter"
                throw LayerKitError.invalidModel("\(source): the Core ML model is \(why)")
            default: try reader.skip(field)
            }
        }
        if let classic, let description {
            self.init(specificationVersion: version, inputs: description.inputs, outputs: description.outputs, layers: [],
                      exactArrayMapping: false, imageScalers: [:], classifierProbabilities: nil, source: source)
            self.classic = try CoreMLClassicModel(typeNumber: classic.number, parameters: classic.reader,
                                                  inputs: description.inputs, outputs: description.outputs)
            return
        }
        guard var network else {
            throw LayerKitError.invalidModel("\(source): the Core ML model holds no neural network or classic model "
                                             + "(specification version \(version))")
        }
        guard let description else { throw LayerKitError.invalidModel("\(source): the Core ML model has no description") }
        self.init(specificationVersion: version, inputs: description.inputs, outputs: description.outputs, layers: [],
                  exactArrayMapping: false, imageScalers: [:], classifierProbabilities: nil, source: source)
        isUpdatable = updatable
        trainingInputs = description.trainingInputs
        try decodeNetwork(&network.reader, isClassifier: network.isClassifier)
    }

    /// `NeuralNetwork` or `NeuralNetworkClassifier` (the same fields, with labels from 100 on).
    private mutating func decodeNetwork(_ reader: inout ProtobufReader, isClassifier: Bool) throws {
        var probabilities = ""
        while let field = try reader.nextField() {
            switch field.number {
            case 1:
                var sub = try reader.message(field, "layers", type: "NeuralNetworkLayer")
                layers.append(try CoreMLLayer(decoding: &sub))
            case 2:
                var sub = try reader.message(field, "preprocessing", type: "NeuralNetworkPreprocessing")
                let (input, scaler) = try Self.preprocessing(decoding: &sub)
                imageScalers[input] = scaler
            case 5: exactArrayMapping = try reader.int32(field, "arrayInputShapeMapping") == 1
            case 10:
                var sub = try reader.message(field, "updateParams", type: "NetworkUpdateParameters")
                updateParameters = try CoreMLUpdateParameters(decoding: &sub)
            case 100 where isClassifier: networkClassLabels = try reader.stringVector(field, "stringClassLabels")
            case 101 where isClassifier:
                networkClassLabels = try reader.int64Vector(field, "int64ClassLabels").map { String($0) }
            case 200 where isClassifier: probabilities = try reader.string(field, "labelProbabilityLayerName")
            default: try reader.skip(field)
            }
        }
        if isClassifier { classifierProbabilities = probabilities.isEmpty ? layers.last?.outputs.first : probabilities }
    }

    static func description(decoding reader: inout ProtobufReader) throws
        -> (inputs: [CoreMLFeature], outputs: [CoreMLFeature], trainingInputs: [CoreMLFeature]) {
        var inputs: [CoreMLFeature] = [], outputs: [CoreMLFeature] = [], trainingInputs: [CoreMLFeature] = []
        while let field = try reader.nextField() {
            switch field.number {
            case 1, 10, 50:
                let name = [1: "input", 10: "output", 50: "trainingInput"][field.number] ?? ""
                var sub = try reader.message(field, name, type: "FeatureDescription")
                let feature = try CoreMLFeature(decoding: &sub)
                switch field.number {
                case 1: inputs.append(feature)
                case 10: outputs.append(feature)
                default: trainingInputs.append(feature)
                }
            default: try reader.skip(field)
            }
        }
        return (inputs, outputs, trainingInputs)
    }

    /// One `NeuralNetworkPreprocessing`: its input and its scaler. A mean image is refused.
    private static func preprocessing(decoding reader: inout ProtobufReader) throws -> (String, CoreMLImageScaler) {
        var input = "", scaler = CoreMLImageScaler()
        while let field = try reader.nextField() {
            switch field.number {
            case 1: input = try reader.string(field, "featureName")
            case 10:
                var sub = try reader.message(field, "scaler", type: "NeuralNetworkImageScaler")
                while let f = try sub.nextField() {
                    switch f.number {
                    case 10: scaler.channelScale = try sub.float(f, "channelScale")
                    case 20: scaler.blueBias = try sub.float(f, "blueBias")
                    case 21: scaler.greenBias = try sub.float(f, "greenBias")
                    case 22: scaler.redBias = try sub.float(f, "redBias")
                    case 30: scaler.grayBias = try sub.float(f, "grayBias")
                    default: try sub.skip(f)
                    }
                }
            case 11:
                throw reader.error("a mean-image preprocessing, which LayerKit does not read", at: field.offset,
                                   reading: "meanImage")
            default: try reader.skip(field)
            }
        }
        return (input, scaler)
    }
}

extension CoreMLFeature {
    /// Decodes a `FeatureDescription` (name and `FeatureType`).
    init(decoding reader: inout ProtobufReader) throws {
        var name = "", kind = Kind.other("no type")
        while let field = try reader.nextField() {
            switch field.number {
            case 1: name = try reader.string(field, "name")
            case 3:
                var sub = try reader.message(field, "type", type: "FeatureType")
                kind = try Self.kind(decoding: &sub)
            default: try reader.skip(field)
            }
        }
        self.init(name: name, kind: kind)
    }

    private static let otherKinds = [1: "int64", 2: "double", 3: "string", 6: "dictionary", 7: "sequence", 8: "state"]

    private static func kind(decoding reader: inout ProtobufReader) throws -> Kind {
        var kind = Kind.other("no type")
        while let field = try reader.nextField() {
            switch field.number {
            case 4:
                var sub = try reader.message(field, "imageType", type: "ImageFeatureType")
                var (width, height, colorSpace): (Int64, Int64, Int32) = (0, 0, 0)
                while let f = try sub.nextField() {
                    switch f.number {
                    case 1: width = try sub.int64(f, "width")
                    case 2: height = try sub.int64(f, "height")
                    case 3: colorSpace = try sub.int32(f, "colorSpace")
                    default: try sub.skip(f)
                    }
                }
                kind = .image(width: Int(width), height: Int(height), colorSpace: Int(colorSpace))
            case 5:
                var sub = try reader.message(field, "multiArrayType", type: "ArrayFeatureType")
                var shape: [Int64] = [], dataType: Int32 = 0
                while let f = try sub.nextField() {
                    switch f.number {
                    case 1: try sub.appendInt64s(f, "shape", to: &shape)
                    case 2: dataType = try sub.int32(f, "dataType")
                    default: try sub.skip(f)
                    }
                }
                kind = .multiArray(shape: shape.map { Int($0) }, dataType: Int(dataType))
            case let number where otherKinds[number] != nil:
                try reader.skip(field)
                kind = .other(otherKinds[number] ?? "")
            default: try reader.skip(field)
            }
        }
        return kind
    }
}

extension CoreMLLayer {
    /// Decodes a `NeuralNetworkLayer`: name, blobs, and which layer type it is.
    init(decoding reader: inout ProtobufReader) throws {
        self.init()
        while let field = try reader.nextField() {
            switch field.number {
            case 1: name = try reader.string(field, "name")
            case 2: inputs.append(try reader.string(field, "input"))
            case 3: outputs.append(try reader.string(field, "output"))
            case 10: isUpdatable = try reader.uint64(field, "isUpdatable") != 0
            case 100...:
                guard parameters == nil else { throw reader.error("a second layer type", at: field.offset) }
                typeNumber = field.number
                let type = CoreMLLayer.typeNames[field.number] ?? "layer type \(field.number)"
                parameters = try reader.message(field, type, type: type)
            default: try reader.skip(field)
            }
        }
    }
}
