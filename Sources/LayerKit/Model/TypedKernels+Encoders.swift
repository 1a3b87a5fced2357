import Foundation
import LayerKitONNX

/// The ai.onnx.ml encoders in their values' own types: `LabelEncoder`
/// (every key and value type, ai.onnx.ml 1 to 4), `CategoryMapper`
/// (strings to int64 and back), `OneHotEncoder` (string or integer
/// categories) and `ArrayFeatureExtractor` (columns of any type). They run
/// where their input is a string or integer value (a graph input, or another
/// encoder's output), and a LabelEncoder to strings or integers on a float
/// value too (a classifier's label, from the index of its largest
/// probability); other float values take the ops' float layers. Attribute names and defaults follow the
/// ai.onnx.ml spec; where it is silent (a key listed twice: its first
/// value) they follow onnxruntime.
extension TypedKernels {
    /// An element as a map key: integers (bool, signed, unsigned) by value,
    /// floats as Doubles (every NaN one key, -0 equal to 0; a whole one the
    /// integer, as LayerKit holds an integer a float layer computed, an
    /// ArgMax's index, in float32), strings as they are.
    private enum MapKey: Hashable {
        case integer(Int64)
        case number(Double)
        case notANumber
        case string(String)

        /// `tensor`'s elements as keys.
        static func keys(_ tensor: TypedTensor) -> [MapKey] {
            func number(_ value: Double) -> MapKey {
                if value.isNaN { return .notANumber }
                // 2^63 itself is past Int64: the bound is exclusive.
                if value.rounded() == value, abs(value) < 0x1p63 { return .integer(Int64(value)) }
                return .number(value)
            }
            switch Lanes(tensor) {
            case .signed(let v): return v.map { .integer($0) }
            case .unsigned(let v): return v.map { .integer(Int64(bitPattern: $0)) }
            case .bool(let v): return v.map { .integer($0 ? 1 : 0) }
            case .float(let v): return v.map { number(Double($0)) }
            case .double(let v): return v.map(number)
            case .string(let v): return v.map { .string($0) }
            }
        }
    }

    /// Whether an element of `a` can equal one of `b`: strings only strings,
    /// numbers of any type numbers.
    private static func comparable(_ a: ElementType, _ b: ElementType) -> Bool { (a == .string) == (b == .string) }

    /// `input`'s elements mapped through `keys` to the `values` at the same
    /// position, those of no key to `fallback` (one element of `values`'
    /// type); the output has `input`'s shape and `values`' type.
    private static func mapped(_ input: TypedTensor, keys: TypedTensor, values: TypedTensor, fallback: TypedTensor,
                               _ node: ONNXNodeContext) throws -> TypedTensor {
        guard keys.count == values.count else {
            throw node.error("has \(keys.count) keys but \(values.count) values; they pair up one to one")
        }
        guard comparable(input.elementType, keys.elementType) else {
            throw node.error("its input is \(input.elementType) but its keys are \(keys.elementType)")
        }
        guard fallback.count == 1, fallback.elementType == values.elementType else {
            throw node.error("its default must be one \(values.elementType) value, got \(fallback)")
        }
        var positions: [MapKey: Int] = [:]
        for (i, key) in MapKey.keys(keys).enumerated() where positions[key] == nil { positions[key] = i }
        let sources = MapKey.keys(input).map { positions[$0].map { (0, $0) } ?? (1, 0) }
        return try TypedTensor.gathering([values, fallback], sources, shape: input.shape)
    }

    /// The keys or values of a LabelEncoder (`prefix` "keys" or "values"):
    /// from whichever of its `_strings`, `_int64s`, `_floats` and (ai.onnx.ml
    /// 4) `_tensor` attributes it has; exactly one.
    private static func encoderList(_ prefix: String, _ node: ONNXNodeContext) throws -> TypedTensor {
        var lists: [(String, TypedTensor)] = []
        if let strings = try node.node.strings(prefix + "_strings") {
            lists.append((prefix + "_strings", try TypedTensor(shape: [strings.count], strings: strings)))
        }
        if let ints = try node.ints(prefix + "_int64s") {
            lists.append((prefix + "_int64s", try TypedTensor(.int64, shape: [ints.count], integers: ints.map { Int64($0) })))
        }
        if let floats = try node.node.floats(prefix + "_floats") {
            lists.append((prefix + "_floats", try TypedTensor(.float32, shape: [floats.count], doubles: floats.map(Double.init))))
        }
        if let tensor = try node.node.tensor(prefix + "_tensor") { lists.append((prefix + "_tensor", try tensor.typed())) }
        guard lists.count == 1, let list = lists.first?.1 else {
            throw node.error(lists.isEmpty ? "has no \(prefix) (\(prefix)_strings, \(prefix)_int64s, \(prefix)_floats or \(prefix)_tensor)"
                             : "gives its \(prefix) \(lists.count) times (\(lists.map(\.0).joined(separator: ", "))); give one")
        }
        return list
    }

    /// The default of a map to `type` without `default_tensor`: the
    /// `default_string` ("_Unused"), `default_int64` (-1) or `default_float`
    /// (-0.0) attribute, as the type is a string, an integer or a float.
    private static func mapDefault(_ type: ElementType, _ node: ONNXNodeContext) throws -> TypedTensor {
        if type == .string { return try TypedTensor(shape: [1], strings: [try node.string("default_string", default: "_Unused")]) }
        if type.isFloatingPoint { return try TypedTensor(type, shape: [1], doubles: [Double(try node.float("default_float", default: -0.0))]) }
        return try TypedTensor(type, shape: [1], integers: [Int64(try node.int("default_int64", default: -1))])
    }

    /// LabelEncoder: ai.onnx.ml 1 maps strings to their index in
    /// `classes_strings` and indices back to strings; 2 to 4 map `keys_*` to
    /// `values_*` of any type, the default `default_tensor` (4) or the
    /// `default_*` attribute of the values' type.
    static func labelEncoder(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["keys_floats", "keys_int64s", "keys_strings", "values_floats", "values_int64s",
                                    "values_strings", "default_float", "default_int64", "default_string", "classes_strings",
                                    "keys_tensor", "values_tensor", "default_tensor"])
        let x = try input(0, inputs, node)
        if let classes = try node.node.strings("classes_strings") {
            let names = try TypedTensor(shape: [classes.count], strings: classes)
            let indices = try TypedTensor(.int64, shape: [classes.count], integers: classes.indices.map { Int64($0) })
            return x.elementType == .string
                ? [try mapped(x, keys: names, values: indices, fallback: mapDefault(.int64, node), node)]
                : [try mapped(x, keys: indices, values: names, fallback: mapDefault(.string, node), node)]
        }
        let keys = try encoderList("keys", node), values = try encoderList("values", node)
        // Floats to floats on a float value: the op's float layer maps them (to
        // integers or strings, the values stay exact here: int64 past 2^24).
        if x.elementType.isFloatingPoint, values.elementType.isFloatingPoint { return nil }
        let fallback = try node.node.tensor("default_tensor")?.typed() ?? mapDefault(values.elementType, node)
        return [try mapped(x, keys: keys, values: values, fallback: fallback, node)]
    }

    /// CategoryMapper: strings to the int64 at the same position of
    /// `cats_int64s` (else `default_int64`), or int64s back to strings (else
    /// `default_string`).
    static func categoryMapper(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["cats_int64s", "cats_strings", "default_int64", "default_string"])
        let x = try input(0, inputs, node)
        guard let strings = try node.node.strings("cats_strings"), let ints = try node.ints("cats_int64s") else {
            throw node.error("needs both cats_strings and cats_int64s")
        }
        let names = try TypedTensor(shape: [strings.count], strings: strings)
        let numbers = try TypedTensor(.int64, shape: [ints.count], integers: ints.map { Int64($0) })
        switch x.elementType {
        case .string: return [try mapped(x, keys: names, values: numbers, fallback: mapDefault(.int64, node), node)]
        case .int64: return [try mapped(x, keys: numbers, values: names, fallback: mapDefault(.string, node), node)]
        // Its conversion refuses a float value by name.
        case let type where type.isFloatingPoint: return nil
        default: throw node.error("maps string or int64 values, got \(x.elementType)")
        }
    }

    /// OneHotEncoder on string (`cats_strings`) or integer (`cats_int64s`)
    /// elements: each becomes a float row of the categories' count, 1 at its
    /// category; one of no category a row of zeros, or an error when `zeros`
    /// is 0. Nil for float elements, which the op's float layer encodes.
    static func oneHotEncoder(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["cats_int64s", "cats_strings", "zeros"])
        let x = try input(0, inputs, node)
        guard !x.elementType.isFloatingPoint else { return nil }
        let categories: TypedTensor
        if let strings = try node.node.strings("cats_strings") {
            categories = try TypedTensor(shape: [strings.count], strings: strings)
        } else {
            let ints = try node.ints("cats_int64s") ?? []
            categories = try TypedTensor(.int64, shape: [ints.count], integers: ints.map { Int64($0) })
        }
        guard categories.count > 0 else { throw node.error("has no categories (cats_strings or cats_int64s)") }
        guard comparable(x.elementType, categories.elementType) else {
            throw node.error("its input is \(x.elementType) but its categories are \(categories.elementType)")
        }
        let width = categories.count
        let count = try ONNXFolding.checkedCount(x.shape + [width], node)
        let allowsUnknown = try node.int("zeros", default: 1) != 0
        var positions: [MapKey: Int] = [:]
        for (i, key) in MapKey.keys(categories).enumerated() where positions[key] == nil { positions[key] = i }
        var rows = [Double](repeating: 0, count: count)
        for (i, key) in MapKey.keys(x).enumerated() {
            if let j = positions[key] {
                rows[i * width + j] = 1
            } else if !allowsUnknown, !node.probing {
                throw node.error("element \(i) is none of its categories, and zeros is 0")
            }
        }
        return [try TypedTensor(.float32, shape: x.shape + [width], doubles: rows)]
    }

    /// ArrayFeatureExtractor on any element type: the elements of the last
    /// axis at the indices Y, `[..., C]` to `[..., K]` (a `[C]` input gives
    /// `[1, K]`, as onnxruntime shapes it). Nil for float data, which the
    /// op's float layer takes.
    static func arrayFeatureExtractor(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes([])
        let x = try input(0, inputs, node), y = try input(1, inputs, node)
        guard !x.elementType.isFloatingPoint else { return nil }
        guard y.elementType.isInteger, y.count > 0 else { throw node.error("its indices Y must be integers, and at least one") }
        guard let columns = x.shape.last else { throw node.error("takes an input of rank 1 or more") }
        let indices = try y.integers().map { index in
            guard index >= 0, index < Int64(columns) else {
                throw node.error("index \(index) is out of range for \(columns) feature(s)")
            }
            return Int(index)
        }
        let shape = x.shape.count == 1 ? [1, indices.count] : x.shape.dropLast() + [indices.count]
        let rows = try ONNXFolding.checkedCount(shape, node) / indices.count
        let sources = (0..<rows).flatMap { row in indices.map { (0, row * columns + $0) } }
        return [try TypedTensor.gathering([x], sources, shape: shape)]
    }
}
