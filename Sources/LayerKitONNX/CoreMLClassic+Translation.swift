import LayerKitCore
import Foundation
// The classic Core ML model types as ai.onnx.ml nodes: each model becomes
// the node of the ONNX-ML op that computes the same thing, so the kernels
// that run scikit-learn's ONNX exports run Core ML's too; a pipeline is the
// chain of its models' nodes, wired by feature name.

extension CoreMLModel {
    /// The ONNX-ML domain the translated nodes are written in.
    static let mlDomain = "ai.onnx.ml"

    /// A classic model as an ONNX graph of ai.onnx.ml nodes (opset 3 of that
    /// domain) and the few standard ops that reshape between them.
    func classicONNXModel(_ model: CoreMLClassicModel) throws -> ONNXModel {
        var translator = CoreMLClassicTranslator(graph: CoreMLGraphBuilder(source: source))
        do {
            for input in inputs { try translator.addInput(input) }
            try translator.add(model)
            for output in outputs where !translator.graph.produced(output.name) {
                throw LayerKitError.invalidModel("output '\(output.name)' is not computed by the model")
            }
        } catch LayerKitError.invalidModel(let message) where !message.hasPrefix(source) {
            throw LayerKitError.invalidModel("\(source): \(message)")
        }
        translator.graph.graph.outputs = outputs.map { output in
            ONNXValueInfo(name: output.name, elementType: CoreMLClassicTranslator.elementType(output.kind), dims: nil)
        }
        return ONNXModel(irVersion: 8, opsetImports: [("", Self.opset), (Self.mlDomain, 3)],
                         producerName: "Core ML specification version \(specificationVersion) (\(model.typeName)), "
                             + "translated to ONNX-ML ops",
                         producerVersion: "", graph: translator.graph.graph,
                         classLabels: try CoreMLClassicTranslator.classLabels(of: model))
    }

    /// A classifier's class labels, in the order of its probability output;
    /// nil for a model that is not a classifier.
    public var classLabels: [String]? {
        guard let classic else { return networkClassLabels }
        return try? CoreMLClassicTranslator.classLabels(of: classic)
    }
}

/// The class labels of a Core ML classifier (`stringClassLabels` field 100 or
/// `int64ClassLabels` 101 of its type message).
enum CoreMLClassLabels {
    case strings([String])
    case ints([Int64])

    var count: Int {
        switch self {
        case .strings(let labels): return labels.count
        case .ints(let labels): return labels.count
        }
    }

    /// The labels as the ONNX node's attribute: `classlabels_strings`, or
    /// the integers under `integers` (`classlabels_ints`, or a tree
    /// ensemble's `classlabels_int64s`).
    func attribute(integers: String) -> [String: ONNXAttribute] {
        switch self {
        case .strings(let labels): return ["classlabels_strings": .strings(labels)]
        case .ints(let labels): return [integers: .ints(labels.map { Int($0) })]
        }
    }

    var descriptions: [String] {
        switch self {
        case .strings(let labels): return labels
        case .ints(let labels): return labels.map(String.init)
        }
    }
}

/// Writes classic models into a `CoreMLGraphBuilder`'s graph.
struct CoreMLClassicTranslator {
    var graph: CoreMLGraphBuilder
    /// The width (last dimension) of every feature made so far.
    var widths: [String: Int] = [:]
    /// How many earlier values have been renamed (`writing(_:)`), and the latest new name of each.
    private var renamed = 0
    private var earlierValues: [String: String] = [:]

    init(graph: CoreMLGraphBuilder) { self.graph = graph }

    /// The element type a feature is given in: a DOUBLE feature in float64,
    /// an int64 one (an int64 label) in int64, a string one (a string
    /// label) as a string, a probability dictionary as a float tensor.
    static func elementType(_ kind: CoreMLFeature.Kind) -> ONNXDataType {
        switch kind {
        case .multiArray(_, let dataType):
            return dataType == 65600 ? .double : dataType == 131104 ? ONNXDataType(rawValue: 6) : .float
        case .other("double"): return .double
        case .other("int64"): return .int64
        case .other("string"): return ONNXDataType(rawValue: 8) // STRING
        default: return .float
        }
    }

    /// A model input: a scalar double or int64 as [N, 1], a [C] multi-array as [N, C].
    mutating func addInput(_ feature: CoreMLFeature) throws {
        let width: Int
        switch feature.kind {
        case .multiArray(let shape, _) where shape.count == 1 && shape[0] > 0: width = shape[0]
        case .multiArray(let shape, _):
            throw LayerKitError.invalidModel("input '\(feature.name)' has shape \(shape); a classic model reads [C] multi-arrays")
        case .other("double"), .other("int64"): width = 1
        case .other(let type):
            throw LayerKitError.invalidModel("input '\(feature.name)' is of type \(type); LayerKit reads multi-array, "
                                             + "double and int64 inputs of a classic model (its values are numbers)")
        case .image:
            throw LayerKitError.invalidModel("input '\(feature.name)' is an image; a classic model reads numbers")
        }
        graph.graph.inputs.append(ONNXValueInfo(name: feature.name, elementType: Self.elementType(feature.kind),
                                                dims: [.symbol("N"), .value(width)]))
        graph.ranks[feature.name] = 2
        widths[feature.name] = width
    }

    /// Adds `model`: a pipeline's stages in order, or the one model's node.
    mutating func add(_ model: CoreMLClassicModel) throws {
        if model.isPipeline {
            for (k, stage) in model.stages.enumerated() {
                do {
                    try add(stage)
                } catch LayerKitError.invalidModel(let message) {
                    throw LayerKitError.invalidModel("pipeline model \(k) (\(stage.typeName)): \(message)")
                }
            }
            return
        }
        var parameters = model.parameters
        switch model.typeNumber {
        case 300: try glmRegressor(model, &parameters)
        case 400: try glmClassifier(model, &parameters)
        case 301: try supportVectorRegressor(model, &parameters)
        case 401: try supportVectorClassifier(model, &parameters)
        case 302, 402: try treeEnsemble(model, &parameters)
        case 604: try scaler(model, &parameters)
        case 607: try normalizer(model, &parameters)
        case 601: try imputer(model, &parameters)
        case 609: try arrayFeatureExtractor(model, &parameters)
        case 602: try featureVectorizer(model, &parameters)
        case 600: try oneHotEncoder(model, &parameters)
        default: throw LayerKitError.invalidModel("a \(model.typeName) model is not translated")
        }
    }

    // MARK: Wiring

    /// The one input a model reads, with its width.
    func input(of model: CoreMLClassicModel) throws -> (name: String, width: Int) {
        guard model.inputs.count == 1, let name = model.inputs.first?.name else {
            throw LayerKitError.invalidModel("a \(model.typeName) reads one input, this one \(model.inputs.count) "
                                             + "(a featureVectorizer joins several)")
        }
        return (name, try width(name))
    }

    func width(_ name: String) throws -> Int {
        guard let width = widths[name] else {
            throw LayerKitError.invalidModel("input '\(name)' is not a model input or an earlier model's output")
        }
        return width
    }

    /// The model's one output (its first), free to be written.
    mutating func output(of model: CoreMLClassicModel) throws -> String {
        guard let name = model.outputs.first?.name else { throw LayerKitError.invalidModel("a \(model.typeName) without outputs") }
        writing(name)
        return name
    }

    /// Makes `name` free for a model to write: coremltools' pipelines give
    /// every stage's output one name (`__feature_vector__`), so an earlier
    /// value of that name is renamed where it is written and read, and the
    /// last writer keeps the name the model's outputs are known by.
    private mutating func writing(_ name: String) {
        guard graph.produced(name) else { return }
        renamed += 1
        let earlier = "\(name).\(renamed)"
        for k in graph.graph.nodes.indices {
            if graph.graph.nodes[k].name == name { graph.graph.nodes[k].name = earlier }
            graph.graph.nodes[k].inputs = graph.graph.nodes[k].inputs.map { $0 == name ? earlier : $0 }
            graph.graph.nodes[k].outputs = graph.graph.nodes[k].outputs.map { $0 == name ? earlier : $0 }
        }
        (graph.ranks[earlier], widths[earlier]) = (graph.ranks[name], widths[name])
        (graph.ranks[name], widths[name]) = (nil, nil)
        earlierValues[name] = earlier
    }

    /// The values a node writing `outputs` reads for `inputs`: a model
    /// reading the name it writes reads the earlier value, renamed.
    func reading(_ inputs: [String], writing outputs: [String]) -> [String] {
        inputs.map { outputs.contains($0) ? earlierValues[$0] ?? $0 : $0 }
    }

    /// Adds an ai.onnx.ml node writing `outputs` (an empty name: an output not kept), each [N, width].
    mutating func addMLNode(_ opType: String, _ inputs: [String], _ outputs: [(name: String, width: Int)],
                                    _ attributes: [String: ONNXAttribute]) {
        let names = outputs.map(\.name)
        graph.graph.nodes.append(ONNXNode(name: names.first(where: { !$0.isEmpty }) ?? opType, opType: opType,
                                          domain: CoreMLModel.mlDomain, inputs: reading(inputs, writing: names),
                                          outputs: names,
                                          attributes: attributes))
        for (name, width) in outputs where !name.isEmpty {
            graph.ranks[name] = 2
            widths[name] = width
        }
    }

    /// A classifier's outputs: the label (int64 or string)
    /// and the probabilities (the dictionary output); one the model does
    /// not declare is an internal value all the same, as the nodes write both.
    mutating func classifierOutputs(_ model: CoreMLClassicModel) throws -> (label: String, probabilities: String) {
        let probabilities = model.outputs.first(where: { $0.kind == .other("dictionary") })?.name
        let label = model.outputs.first(where: { $0.kind != .other("dictionary") })?.name
        guard let name = label ?? probabilities else { throw LayerKitError.invalidModel("a \(model.typeName) without outputs") }
        let names = (label: label ?? name + ".label", probabilities: probabilities ?? name + ".probabilities")
        writing(names.label)
        writing(names.probabilities)
        return names
    }

    /// The labels of `model`'s classifier type message.
    static func classLabels(of model: CoreMLClassicModel) throws -> [String]? {
        if model.isPipeline { return try model.stages.last.flatMap(classLabels) }
        guard [400, 401, 402].contains(model.typeNumber) else { return nil }
        var reader = model.parameters
        return try labels(&reader)?.descriptions
    }

    /// Reads the class labels (fields 100 and 101) of a classifier's message, the rest skipped.
    private static func labels(_ reader: inout ProtobufReader) throws -> CoreMLClassLabels? {
        var labels: CoreMLClassLabels?
        while let field = try reader.nextField() {
            switch field.number {
            case 100: labels = .strings(try reader.stringVector(field, "stringClassLabels"))
            case 101: labels = .ints(try reader.int64Vector(field, "int64ClassLabels"))
            default: try reader.skip(field)
            }
        }
        return labels
    }

    /// The labels of a classifier, which must be there (at least two).
    func requiredLabels(_ model: CoreMLClassicModel) throws -> CoreMLClassLabels {
        var reader = model.parameters
        guard let labels = try Self.labels(&reader), labels.count >= 2 else {
            throw LayerKitError.invalidModel("a \(model.typeName) without two or more class labels")
        }
        return labels
    }

    /// Doubles as the float attribute values the ONNX-ML ops take, each checked finite (NaN allowed where `allowsNaN`).
    func floats(_ values: [Double], _ name: String, allowsNaN: Bool = false) throws -> [Float] {
        try checked(values, name, allowsNaN: allowsNaN).map { Float($0) }
    }

    /// Doubles as a float64 tensor attribute, each checked as `floats`
    /// checks them: the value of a `<list>_as_tensor` attribute, which
    /// LayerKit's ai.onnx.ml regressors read in place of the float list,
    /// so Core ML's double parameters stay double (a DOUBLE input computes
    /// as scikit-learn does).
    func doubleTensor(_ values: [Double], _ name: String, allowsNaN: Bool = false) throws -> ONNXAttribute {
        let checked = try checked(values, name, allowsNaN: allowsNaN)
        return .tensor(ONNXTensor(name: name, typed: try TypedTensor(.float64, shape: [checked.count], doubles: checked)))
    }

    private func checked(_ values: [Double], _ name: String, allowsNaN: Bool) throws -> [Double] {
        for value in values where !(value.isFinite || (allowsNaN && value.isNaN)) {
            throw LayerKitError.invalidModel("\(name) holds \(value)")
        }
        return values
    }

    // MARK: Linear models

    /// `GLMRegressor`: one weight row and offset per target → `LinearRegressor`.
    private mutating func glmRegressor(_ model: CoreMLClassicModel, _ reader: inout ProtobufReader) throws {
        let (x, width) = try input(of: model)
        var rows: [[Double]] = [], offsets: [Double] = []
        while let field = try reader.nextField() {
            switch field.number {
            case 1: rows.append(try reader.doubles(field, "weights", type: "DoubleArray"))
            case 2: try reader.appendDoubles(field, "offset", to: &offsets)
            case 3:
                let transform = try reader.int32(field, "postEvaluationTransform")
                guard transform == 0 else {
                    throw LayerKitError.invalidModel("glmRegressor postEvaluationTransform \(transform == 1 ? "Logit" : "Probit") "
                                                     + "is not supported (only NoTransform)")
                }
            default: try reader.skip(field)
            }
        }
        guard !rows.isEmpty, rows.allSatisfy({ $0.count == width }), offsets.isEmpty || offsets.count == rows.count else {
            throw LayerKitError.invalidModel("glmRegressor has \(rows.count) weight rows of \(rows.map(\.count)) values and "
                                             + "\(offsets.count) offsets for an input of \(width) values")
        }
        addMLNode("LinearRegressor", [x], [(try output(of: model), rows.count)], [
            "coefficients_as_tensor": try doubleTensor(rows.flatMap { $0 }, "weights"),
            "intercepts_as_tensor": try doubleTensor(offsets.isEmpty ? Array(repeating: 0, count: rows.count) : offsets,
                                                     "offset"),
            "targets": .int(rows.count),
        ])
    }

    /// `GLMClassifier` with the logit transform: one weight row for two
    /// classes (the second class's margin), or one row per class one
    /// versus the rest, whose logistic scores are normalized to sum 1 →
    /// `LinearClassifier` (and `Normalizer` L1).
    private mutating func glmClassifier(_ model: CoreMLClassicModel, _ reader: inout ProtobufReader) throws {
        let (x, width) = try input(of: model)
        let labels = try requiredLabels(model)
        var rows: [[Double]] = [], offsets: [Double] = [], oneVersusRest = false
        while let field = try reader.nextField() {
            switch field.number {
            case 1: rows.append(try reader.doubles(field, "weights", type: "DoubleArray"))
            case 2: try reader.appendDoubles(field, "offset", to: &offsets)
            case 3:
                guard try reader.int32(field, "postEvaluationTransform") == 0 else {
                    throw LayerKitError.invalidModel("glmClassifier postEvaluationTransform Probit is not supported (only Logit)")
                }
            case 4: oneVersusRest = try reader.int32(field, "classEncoding") == 1
            default: try reader.skip(field)
            }
        }
        guard !rows.isEmpty, rows.allSatisfy({ $0.count == width }), offsets.count == rows.count else {
            throw LayerKitError.invalidModel("glmClassifier has \(rows.count) weight rows of \(rows.map(\.count)) values and "
                                             + "\(offsets.count) offsets for an input of \(width) values")
        }
        if rows.count == 1 && labels.count == 2 {
            // σ(-z) = 1 - σ(z): the first class's row is the negated second's.
            (rows, offsets) = ([rows[0].map { -$0 }, rows[0]], [-offsets[0], offsets[0]])
        } else if rows.count != labels.count || !oneVersusRest {
            throw LayerKitError.invalidModel("glmClassifier has \(rows.count) weight rows for \(labels.count) classes"
                                             + (oneVersusRest ? "" : " with a reference class") + "; LayerKit translates "
                                             + "one row for two classes, or one row per class one versus the rest")
        }
        let (label, probabilities) = try classifierOutputs(model)
        let normalizes = labels.count > 2
        let scores = normalizes ? probabilities + ".scores" : probabilities
        addMLNode("LinearClassifier", [x], [(label, 1), (scores, labels.count)], [
            "coefficients": .floats(try floats(rows.flatMap { $0 }, "weights")),
            "intercepts": .floats(try floats(offsets, "offset")),
            "post_transform": .string("LOGISTIC"),
        ].merging(labels.attribute(integers: "classlabels_ints")) { $1 })
        if normalizes { addMLNode("Normalizer", [scores], [(probabilities, labels.count)], ["norm": .string("L1")]) }
    }
}

extension CoreMLClassicTranslator {
    // MARK: Preprocessors

    /// `Scaler`: (x + shiftValue) · scaleValue → `Scaler` (x - offset) · scale.
    mutating func scaler(_ model: CoreMLClassicModel, _ reader: inout ProtobufReader) throws {
        let (x, width) = try input(of: model)
        var shifts: [Double] = [], scales: [Double] = []
        while let field = try reader.nextField() {
            switch field.number {
            case 1: try reader.appendDoubles(field, "shiftValue", to: &shifts)
            case 2: try reader.appendDoubles(field, "scaleValue", to: &scales)
            default: try reader.skip(field)
            }
        }
        for (values, name) in [(shifts, "shiftValue"), (scales, "scaleValue")] where ![0, 1, width].contains(values.count) {
            throw LayerKitError.invalidModel("scaler has \(values.count) \(name)s for an input of \(width) values")
        }
        addMLNode("Scaler", [x], [(try output(of: model), width)], [
            "offset": .floats(try floats(shifts.isEmpty ? [0] : shifts.map { -$0 }, "shiftValue")),
            "scale": .floats(try floats(scales.isEmpty ? [1] : scales, "scaleValue")),
        ])
    }

    /// `Normalizer`: LMax, L1 or L2 per row → `Normalizer`.
    mutating func normalizer(_ model: CoreMLClassicModel, _ reader: inout ProtobufReader) throws {
        let (x, width) = try input(of: model)
        var norm: Int32 = 0
        while let field = try reader.nextField() {
            if field.number == 1 { norm = try reader.int32(field, "normType") } else { try reader.skip(field) }
        }
        guard (0...2).contains(norm) else { throw LayerKitError.invalidModel("normalizer normType \(norm) is not LMax, L1 or L2") }
        addMLNode("Normalizer", [x], [(try output(of: model), width)], ["norm": .string(["MAX", "L1", "L2"][Int(norm)])])
    }

    /// `Imputer` of doubles: the replaced value (NaN by default in
    /// coremltools' converter) becomes the imputed one (per feature, or one
    /// for all) → `Imputer`.
    mutating func imputer(_ model: CoreMLClassicModel, _ reader: inout ProtobufReader) throws {
        let (x, width) = try input(of: model)
        var imputed: [Double] = [], replaced = Double.nan
        while let field = try reader.nextField() {
            switch field.number {
            case 1: imputed = [try reader.double(field, "imputedDoubleValue")]
            case 4: imputed = try reader.doubles(field, "imputedDoubleArray", type: "DoubleVector")
            case 11: replaced = try reader.double(field, "replaceDoubleValue")
            case 2, 3, 5, 6, 7, 12, 13:
                throw reader.error("an imputer of int64 or string values; LayerKit translates imputers of doubles",
                                   at: field.offset)
            default: try reader.skip(field)
            }
        }
        guard imputed.count == 1 || imputed.count == width else {
            throw LayerKitError.invalidModel("imputer has \(imputed.count) imputed values for an input of \(width) values")
        }
        addMLNode("Imputer", [x], [(try output(of: model), width)], [
            "imputed_value_floats": .floats(try floats(imputed, "imputed values")),
            "replaced_value_float": .float(Float(replaced)),
        ])
    }

    /// `ArrayFeatureExtractor`: the values at `extractIndex` → `ArrayFeatureExtractor` with those indices.
    mutating func arrayFeatureExtractor(_ model: CoreMLClassicModel, _ reader: inout ProtobufReader) throws {
        let (x, width) = try input(of: model)
        var indices: [Int64] = []
        while let field = try reader.nextField() {
            if field.number == 1 { try reader.appendInt64s(field, "extractIndex", to: &indices) } else { try reader.skip(field) }
        }
        guard !indices.isEmpty, indices.allSatisfy({ (0..<Int64(width)).contains($0) }) else {
            throw LayerKitError.invalidModel("arrayFeatureExtractor indices \(indices) are not within the input's \(width) values")
        }
        let output = try output(of: model)
        let constant = graph.constant("\(output).indices\(graph.graph.nodes.count)", [indices.count],
                                      int64s: indices.map { Int($0) })
        addMLNode("ArrayFeatureExtractor", [x, constant], [(output, indices.count)], [:])
    }

    /// `FeatureVectorizer`: the named inputs' leading values side by side → `FeatureVectorizer`.
    mutating func featureVectorizer(_ model: CoreMLClassicModel, _ reader: inout ProtobufReader) throws {
        var columns: [(name: String, width: Int)] = []
        while let field = try reader.nextField() {
            guard field.number == 1 else { try reader.skip(field); continue }
            var sub = try reader.message(field, "inputList", type: "InputColumn")
            var column = (name: "", width: 0)
            while let f = try sub.nextField() {
                switch f.number {
                case 1: column.name = try sub.string(f, "inputColumn")
                case 2: column.width = Int(clamping: try sub.int64(f, "inputDimensions"))
                default: try sub.skip(f)
                }
            }
            columns.append(column)
        }
        for column in columns where !(1...(try width(column.name))).contains(column.width) {
            throw LayerKitError.invalidModel("featureVectorizer takes \(column.width) values of '\(column.name)', which "
                                             + "has \(try width(column.name))")
        }
        guard !columns.isEmpty else { throw LayerKitError.invalidModel("featureVectorizer has no input columns") }
        addMLNode("FeatureVectorizer", columns.map(\.name), [(try output(of: model), columns.reduce(0) { $0 + $1.width })],
                  ["inputdimensions": .ints(columns.map(\.width))])
    }

    /// `OneHotEncoder` of int64 categories, dense: one column per
    /// category → `OneHotEncoder`, whose [N, 1, K] result is reshaped to [N, K].
    mutating func oneHotEncoder(_ model: CoreMLClassicModel, _ reader: inout ProtobufReader) throws {
        let (x, width) = try input(of: model)
        var categories: [Int64] = [], ignoresUnknown = false
        while let field = try reader.nextField() {
            switch field.number {
            case 1: throw reader.error("a one-hot encoder of string categories; LayerKit's values are numbers", at: field.offset)
            case 2: categories = try reader.int64Vector(field, "int64Categories")
            case 10:
                if try reader.int64(field, "outputSparse") != 0 {
                    throw reader.error("a sparse one-hot output (a dictionary); LayerKit translates dense ones", at: field.offset)
                }
            case 11: ignoresUnknown = try reader.int32(field, "handleUnknown") == 1
            default: try reader.skip(field)
            }
        }
        guard width == 1, !categories.isEmpty else {
            throw LayerKitError.invalidModel("oneHotEncoder encodes one value into \(categories.count) categories; its input has \(width)")
        }
        let output = try output(of: model), encoded = "\(output).encoded\(graph.graph.nodes.count)"
        graph.graph.nodes.append(ONNXNode(name: encoded, opType: "OneHotEncoder", domain: CoreMLModel.mlDomain,
                                          inputs: reading([x], writing: [output]),
                                          outputs: [encoded], attributes: [
                                              "cats_int64s": .ints(categories.map { Int($0) }),
                                              "zeros": .int(ignoresUnknown ? 1 : 0),
                                          ]))
        graph.ranks[encoded] = 3
        graph.addNode("Reshape", [encoded, graph.constant(encoded + ".shape", [2], int64s: [0, -1])], output, rank: 2)
        widths[output] = categories.count
    }
}
