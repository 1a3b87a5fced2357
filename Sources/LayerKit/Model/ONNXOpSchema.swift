import Foundation

/// A set of element types, one bit per ONNX type code: the types one type
/// variable of an op's schema allows (`ONNXOpSchema.typeSets`).
struct ElementTypeSet: OptionSet, Sendable, Hashable {
    let rawValue: UInt64

    init(rawValue: UInt64) { self.rawValue = rawValue }

    /// The set holding `type` alone.
    init(_ type: ElementType) { rawValue = 1 << UInt64(type.rawValue) }

    /// The types in the set, in ONNX code order.
    var types: [ElementType] { ElementType.allCases.filter(contains) }

    func contains(_ type: ElementType) -> Bool { contains(ElementTypeSet(type)) }
}

extension ElementTypeSet: ExpressibleByArrayLiteral {
    init(arrayLiteral types: ElementType...) { rawValue = types.reduce(0) { $0 | 1 << UInt64($1.rawValue) } }
}

/// One version of an ONNX op's schema, as far as element types go: each
/// formal input and output, the type it takes (a type variable such as T,
/// or one fixed type), and the element types each type variable allows.
/// ONNX's facts, generated into `history` (ONNXOpSchemas.swift) by
/// `Scripts/update-onnx-op-versions` from the onnx package; the load-time
/// validation checks a node's known input types against them
/// (`ONNXValidation.checkTypes`), as onnxruntime does.
struct ONNXOpSchema: Sendable {
    /// One formal input or output of the schema.
    struct Parameter: Sendable, Equatable {
        /// How many of a node's values the parameter stands for.
        enum Option: Sendable, Equatable {
            case single, optional
            /// One or more values, all of one type (Concat's inputs).
            case variadic
            /// One or more values, each of its own type (Loop's carried values).
            case heterogeneous
        }

        /// Its name in the spec ("X", "shape").
        let name: String
        /// Its type variable ("T"), or its one fixed type ("tensor(int64)"):
        /// a key of `constraints` either way.
        let type: String
        let option: Option

        /// A parameter as the generated file writes it: "name: T", with `?`
        /// when optional, `...` when variadic of one type and `*` when
        /// variadic of mixed types.
        init(_ written: String) {
            let parts = written.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            name = parts[0]
            var type = parts.count > 1 ? parts[1] : ""
            option = type.hasSuffix("...") ? .variadic : type.hasSuffix("*") ? .heterogeneous
                : type.hasSuffix("?") ? .optional : .single
            type.removeLast(option == .variadic ? 3 : option == .single ? 0 : 1)
            self.type = type
        }
    }

    /// The opset at which this version of the schema begins.
    let version: Int
    let inputs: [Parameter]
    let outputs: [Parameter]
    /// Each parameter's type (`Parameter.type`) -> the tensor element types
    /// it allows (empty when it takes only sequences or optionals).
    let constraints: [String: ElementTypeSet]

    /// A schema as the generated file writes it, its constraints as indices
    /// into `typeSets`.
    init(_ version: Int, _ inputs: [String], _ outputs: [String], _ constraints: [String: Int]) {
        self.version = version
        self.inputs = inputs.map(Parameter.init)
        self.outputs = outputs.map(Parameter.init)
        self.constraints = constraints.mapValues { ONNXOpSchema.typeSets[$0] }
    }

    /// The schema of `opType` that `opset` resolves to (its newest version
    /// at or below it); nil for an op ONNX does not define at that opset.
    static func resolved(_ opType: String, opset: Int) -> ONNXOpSchema? {
        history[opType]?.last { $0.version <= opset }
    }

    /// The formal input that a node's input `index` fills: the variadic last
    /// one takes every input from its position on.
    func input(at index: Int) -> Parameter? { Self.parameter(at: index, of: inputs) }

    /// The formal output that a node's output `index` fills.
    func output(at index: Int) -> Parameter? { Self.parameter(at: index, of: outputs) }

    private static func parameter(at index: Int, of parameters: [Parameter]) -> Parameter? {
        if index < parameters.count { return parameters[index] }
        guard let last = parameters.last, last.option == .variadic || last.option == .heterogeneous else { return nil }
        return last
    }
}
