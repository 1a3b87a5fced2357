import LayerKitCore
import Foundation
// Decoding of Core ML's classic model types, the ones coremltools'
// scikit-learn converter writes (field numbers from coremltools'
// mlmodel/format: Model.proto's pipelines, GLMRegressor.proto,
// GLMClassifier.proto, SVM.proto, TreeEnsemble.proto, Scaler.proto,
// OneHotEncoder.proto, Normalizer.proto, Imputer.proto,
// ArrayFeatureExtractor.proto, FeatureVectorizer.proto). A model's type
// message is kept as a reader and read when it is translated
// (`CoreMLClassic+Translation.swift`), as a network's layers are.

/// One Core ML model of a classic type: a pipeline of models, or a single
/// regressor, classifier or preprocessor, with its own description.
struct CoreMLClassicModel: Sendable {
    /// The field number of the model's type in `Model`'s `Type` oneof (300 for glmRegressor).
    var typeNumber: Int
    /// The model's inputs and outputs (a pipeline's stages name what they read and write).
    var inputs: [CoreMLFeature]
    var outputs: [CoreMLFeature]
    /// A reader over the type's message; a pipeline's is read into `stages`.
    var parameters: ProtobufReader
    /// A pipeline's models, in order; empty for the other types.
    var stages: [CoreMLClassicModel] = []

    /// The classic model types LayerKit translates, by field number: coremltools' field names.
    static let typeNames = [
        200: "pipelineClassifier", 201: "pipelineRegressor", 202: "pipeline", 300: "glmRegressor",
        301: "supportVectorRegressor", 302: "treeEnsembleRegressor", 400: "glmClassifier",
        401: "supportVectorClassifier", 402: "treeEnsembleClassifier", 600: "oneHotEncoder", 601: "imputer",
        602: "featureVectorizer", 604: "scaler", 607: "normalizer", 609: "arrayFeatureExtractor",
    ]

    /// The type's field name ("glmRegressor").
    var typeName: String { Self.typeNames[typeNumber] ?? "model type \(typeNumber)" }

    /// Whether the type is a pipeline (of any kind).
    var isPipeline: Bool { (200...202).contains(typeNumber) }

    /// A model of type `typeNumber` whose type message `parameters` reads;
    /// a pipeline's nested `Model` messages are decoded here.
    init(typeNumber: Int, parameters: ProtobufReader, inputs: [CoreMLFeature], outputs: [CoreMLFeature]) throws {
        (self.typeNumber, self.parameters, self.inputs, self.outputs) = (typeNumber, parameters, inputs, outputs)
        guard isPipeline else { return }
        var reader = parameters
        if typeNumber != 202 {
            // PipelineClassifier and PipelineRegressor hold a Pipeline (field 1).
            var inner: ProtobufReader?
            while let field = try reader.nextField() {
                if field.number == 1 { inner = try reader.message(field, "pipeline", type: "Pipeline") } else { try reader.skip(field) }
            }
            guard let inner else { throw reader.error("a \(typeName) without its pipeline", at: 0) }
            reader = inner
        }
        while let field = try reader.nextField() {
            guard field.number == 1 else { try reader.skip(field); continue }
            var model = try reader.message(field, "models", type: "Model")
            stages.append(try Self.nested(decoding: &model))
        }
        guard !stages.isEmpty else { throw reader.error("a pipeline without models", at: 0) }
    }

    /// One model of a pipeline: a whole `Model` message, which must be of a classic type.
    private static func nested(decoding reader: inout ProtobufReader) throws -> CoreMLClassicModel {
        var description: (inputs: [CoreMLFeature], outputs: [CoreMLFeature], trainingInputs: [CoreMLFeature])?
        var type: (number: Int, reader: ProtobufReader)?
        while let field = try reader.nextField() {
            switch field.number {
            case 2:
                var sub = try reader.message(field, "description", type: "ModelDescription")
                description = try CoreMLModel.description(decoding: &sub)
            case let number where typeNames[number] != nil:
                type = (number, try reader.message(field, typeNames[number] ?? "", type: typeNames[number] ?? ""))
            case 200...:
                throw reader.error("a pipeline model of type \(CoreMLModel.otherTypes[field.number] ?? "field \(field.number)"), "
                                   + "which LayerKit does not translate "
                                   + "(it translates \(supportedTypes))", at: field.offset)
            default: try reader.skip(field)
            }
        }
        guard let type, let description else {
            throw reader.error("a pipeline model without \(type == nil ? "a model type" : "a description")", at: 0)
        }
        return try CoreMLClassicModel(typeNumber: type.number, parameters: type.reader, inputs: description.inputs,
                                      outputs: description.outputs)
    }

    /// The translated types, for error messages.
    static var supportedTypes: String { typeNames.values.sorted().joined(separator: ", ") }
}

/// Readers of the small messages the classic types share (DataStructures.proto).
extension ProtobufReader {
    /// A `StringVector` (field 1, repeated string).
    mutating func stringVector(_ field: Field, _ name: String) throws -> [String] {
        var sub = try message(field, name, type: "StringVector")
        var values: [String] = []
        while let f = try sub.nextField() {
            if f.number == 1 { values.append(try sub.string(f, "vector")) } else { try sub.skip(f) }
        }
        return values
    }

    /// An `Int64Vector` (field 1, repeated int64).
    mutating func int64Vector(_ field: Field, _ name: String) throws -> [Int64] {
        var sub = try message(field, name, type: "Int64Vector")
        var values: [Int64] = []
        while let f = try sub.nextField() {
            if f.number == 1 { try sub.appendInt64s(f, "vector", to: &values) } else { try sub.skip(f) }
        }
        return values
    }

    /// A message whose field `number` is a repeated double (`DoubleVector`, `DoubleArray`, `DenseVector`, `Coefficients`).
    mutating func doubles(_ field: Field, _ name: String, type: String, number: Int = 1) throws -> [Double] {
        var sub = try message(field, name, type: type)
        var values: [Double] = []
        while let f = try sub.nextField() {
            if f.number == number { try sub.appendDoubles(f, name, to: &values) } else { try sub.skip(f) }
        }
        return values
    }
}
