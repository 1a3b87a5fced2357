import LayerKitCore
import Foundation

/// A TensorFlow Lite model file (a `.tflite` FlatBuffer, schema version 3),
/// decoded: operator codes, the main subgraph's tensors and operators, and
/// the buffers holding constant data.
///
/// Field ids follow TensorFlow's public `schema.fbs`. Decoding checks the
/// structure (every offset, vector length and index) but converts nothing;
/// `onnxModel()` translates the graph into ONNX ops.
public struct TFLiteModel: Sendable {
    /// Names the file in error messages.
    public let source: String
    /// The schema version (3).
    public let version: Int
    /// The model's description ("MLIR Converted.").
    public let description: String
    /// The operator codes operators refer to by index.
    let operatorCodes: [TFLiteOperatorCode]
    /// The main (first) subgraph.
    let subgraph: TFLiteSubgraph
    /// Each buffer's bytes' range in `bytes` (empty for buffer 0 and activations).
    let buffers: [Range<Int>]
    /// The whole file.
    let bytes: [UInt8]

    /// Decodes a TensorFlow Lite model from the bytes of a `.tflite` file;
    /// `source` names it in error messages.
    public init(data: Data, source: String = "TensorFlow Lite model") throws {
        let reader = FlatBufferReader(bytes: [UInt8](data), source: source)
        let model = try reader.root("Model")
        self.source = source
        bytes = reader.bytes
        version = try model.integer(0, "version", signed: false)
        guard version == 3 else {
            throw LayerKitError.invalidModel("\(source): schema version \(version); LayerKit reads TensorFlow Lite "
                                             + "schema version 3")
        }
        description = try model.string(3, "description") ?? ""
        operatorCodes = try model.tables(1, "operator_codes", "OperatorCode").map(TFLiteOperatorCode.init)
        buffers = try model.tables(4, "buffers", "Buffer").map { try Self.bufferRange($0, reader) }
        let subgraphs = try model.tables(2, "subgraphs", "SubGraph")
        guard let main = subgraphs.first else { throw LayerKitError.invalidModel("\(source): the model has no subgraph") }
        subgraph = try TFLiteSubgraph(main, operatorCodes: operatorCodes.count, buffers: buffers.count)
    }

    /// Where a `Buffer`'s data is: its `data` vector, or in a file over 2 GB
    /// the `offset` and `size` from the start of the file (valid when offset > 1).
    private static func bufferRange(_ buffer: FlatTable, _ reader: FlatBufferReader) throws -> Range<Int> {
        let offset = try buffer.integer(1, "offset", size: 8, signed: false)
        if offset > 1 {
            let size = try buffer.integer(2, "size", size: 8, signed: false)
            try reader.check(offset, size, "Buffer.offset")
            return offset..<offset + size
        }
        guard let vector = try buffer.vector(0, "data", elementSize: 1) else { return 0..<0 }
        return vector.start..<vector.start + vector.count
    }

    /// The bytes of tensor `index`'s buffer (empty for an activation, or in a file without buffers).
    func data(_ tensor: TFLiteTensor) -> ArraySlice<UInt8> {
        buffers.indices.contains(tensor.buffer) ? bytes[buffers[tensor.buffer]] : []
    }
}

/// An `OperatorCode`: a builtin operator's code or a custom operator's name.
struct TFLiteOperatorCode: Sendable {
    /// The builtin code (`BuiltinOperator`); 32 (CUSTOM) for a custom op.
    let builtin: Int
    /// A custom operator's name (`custom_code`).
    let custom: String?
    let version: Int

    /// The code's largest value `deprecated_builtin_code` holds; larger codes are only in `builtin_code`.
    private static let placeholderForGreaterCodes = 127

    init(_ table: FlatTable) throws {
        // Files written before schema 3a have only the byte; newer ones both,
        // and the larger of the two is the code.
        let deprecated = try table.integer(0, "deprecated_builtin_code", size: 1)
        let extended = try table.integer(3, "builtin_code")
        builtin = max(deprecated, extended)
        custom = try table.string(1, "custom_code")
        version = try table.integer(2, "version", default: 1)
    }
}

/// The subgraph the model computes: its tensors, inputs, outputs and operators in order.
struct TFLiteSubgraph: Sendable {
    let tensors: [TFLiteTensor]
    let inputs: [Int]
    let outputs: [Int]
    let operators: [TFLiteOperator]
    let name: String

    init(_ table: FlatTable, operatorCodes: Int, buffers: Int) throws {
        tensors = try table.tables(0, "tensors", "Tensor").map(TFLiteTensor.init)
        inputs = try table.integers(1, "inputs")
        outputs = try table.integers(2, "outputs")
        operators = try table.tables(3, "operators", "Operator").map(TFLiteOperator.init)
        name = try table.string(4, "name") ?? ""
        let source = table.buffer.source
        for index in inputs + outputs where !tensors.indices.contains(index) {
            throw LayerKitError.invalidModel("\(source): the subgraph's input or output \(index) is not a tensor "
                                             + "(it has \(tensors.count))")
        }
        for tensor in tensors where tensor.buffer >= max(buffers, 1) {
            throw LayerKitError.invalidModel("\(source): tensor '\(tensor.name)' names buffer \(tensor.buffer) of "
                                             + "\(buffers)")
        }
        for (number, op) in operators.enumerated() {
            guard op.opcodeIndex < operatorCodes else {
                throw LayerKitError.invalidModel("\(source): operator \(number) names operator code \(op.opcodeIndex) "
                                                 + "of \(operatorCodes)")
            }
            // -1 marks an optional input left out; an output must be a tensor.
            for index in op.inputs.filter({ $0 != -1 }) + op.outputs where !tensors.indices.contains(index) {
                throw LayerKitError.invalidModel("\(source): operator \(number) names tensor \(index) of "
                                                 + "\(tensors.count)")
            }
        }
    }
}

/// A `Tensor`: shape, element type, buffer and quantization.
struct TFLiteTensor: Sendable {
    let name: String
    let shape: [Int]
    /// `shape` with -1 for dimensions unknown until run time (a batch), when the file gives it.
    let shapeSignature: [Int]
    /// The `TensorType` code (0 FLOAT32, 1 FLOAT16, 2 INT32, 3 UINT8, 4 INT64, 9 INT8, ...).
    let type: Int
    let buffer: Int
    let quantization: TFLiteQuantization?
    let sparsity: TFLiteSparsity?

    /// The `TensorType` names, by code.
    static let typeNames = ["FLOAT32", "FLOAT16", "INT32", "UINT8", "INT64", "STRING", "BOOL", "INT16", "COMPLEX64",
                            "INT8", "FLOAT64", "COMPLEX128", "UINT64", "RESOURCE", "VARIANT", "UINT32", "UINT16",
                            "INT4", "BFLOAT16"]

    var typeName: String { Self.typeNames.indices.contains(type) ? Self.typeNames[type] : "type \(type)" }

    init(_ table: FlatTable) throws {
        shape = try table.integers(0, "shape")
        type = try table.integer(1, "type", size: 1)
        buffer = try table.integer(2, "buffer", signed: false)
        name = try table.string(3, "name") ?? ""
        quantization = try table.table(4, "quantization", "QuantizationParameters").map(TFLiteQuantization.init)
        sparsity = try table.table(6, "sparsity", "SparsityParameters").map(TFLiteSparsity.init)
        shapeSignature = try table.integers(7, "shape_signature")
        guard shape.allSatisfy({ $0 >= 0 }) else {
            throw LayerKitError.invalidModel("\(table.buffer.source): tensor '\(name)' has shape \(shape)")
        }
    }
}

/// `QuantizationParameters`: real = scale * (q - zero_point), per tensor or along one dimension.
struct TFLiteQuantization: Sendable {
    let scale: [Float]
    let zeroPoint: [Int]
    let dimension: Int

    /// Whether the parameters quantize anything (a float tensor may carry an empty table).
    var isQuantized: Bool { !scale.isEmpty }

    init(_ table: FlatTable) throws {
        scale = try table.floats(2, "scale")
        zeroPoint = try table.integers(3, "zero_point", size: 8)
        dimension = try table.integer(6, "quantized_dimension")
    }
}

/// `SparsityParameters`: how a sparse constant's values fill its dense shape (TACO format).
struct TFLiteSparsity: Sendable {
    /// One `DimensionMetadata`: a dense size, or a sparse (CSR) dimension's segments and indices.
    struct Dimension: Sendable {
        let sparse: Bool
        let denseSize: Int
        let segments: [Int]
        let indices: [Int]
    }

    let traversalOrder: [Int]
    let blockMap: [Int]
    let dimensions: [Dimension]

    init(_ table: FlatTable) throws {
        traversalOrder = try table.integers(0, "traversal_order")
        blockMap = try table.integers(1, "block_map")
        dimensions = try table.tables(2, "dim_metadata", "DimensionMetadata").map { metadata in
            Dimension(sparse: try metadata.integer(0, "format", size: 1) == 1,
                      denseSize: try metadata.integer(1, "dense_size"),
                      segments: try Self.indexVector(metadata, typeField: 2, "array_segments"),
                      indices: try Self.indexVector(metadata, typeField: 4, "array_indices"))
        }
    }

    /// A `SparseIndexVector` union member: Int32Vector (1), Uint16Vector (2) or Uint8Vector (3).
    private static func indexVector(_ metadata: FlatTable, typeField: Int, _ name: String) throws -> [Int] {
        let kind = try metadata.integer(typeField, name + "_type", size: 1, signed: false)
        guard kind != 0, let vector = try metadata.table(typeField + 1, name, "SparseIndexVector") else { return [] }
        switch kind {
        case 1: return try vector.integers(0, "values")
        case 2: return try vector.integers(0, "values", size: 2, signed: false)
        case 3: return try vector.integers(0, "values", size: 1, signed: false)
        default:
            throw LayerKitError.invalidModel("\(metadata.buffer.source): DimensionMetadata.\(name) is of union type "
                                             + "\(kind), not 1 to 3")
        }
    }
}

/// An `Operator`: its code, input and output tensors (-1: an optional input
/// left out) and options, a builtin options table or a custom op's bytes.
struct TFLiteOperator: Sendable {
    let opcodeIndex: Int
    let inputs: [Int]
    let outputs: [Int]
    /// The `builtin_options` union's member, read by the op's own field ids.
    let options: FlatTable?
    let customOptions: ArraySlice<UInt8>

    init(_ table: FlatTable) throws {
        opcodeIndex = try table.integer(0, "opcode_index", signed: false)
        inputs = try table.integers(1, "inputs")
        outputs = try table.integers(2, "outputs")
        let optionsType = try table.integer(3, "builtin_options_type", size: 1, signed: false)
        options = optionsType == 0 ? nil : try table.table(4, "builtin_options", "BuiltinOptions")
        customOptions = try table.bytes(5, "custom_options")
    }
}
