import LayerKitCore

extension ONNXTensor {
    /// The tensor's values as a `TypedTensor` of its own type, from
    /// `raw_data` (sub-byte types unpacked, first element in the low bits)
    /// or from the typed field ONNX keeps that type in.
    public func typed() throws -> TypedTensor {
        if let containerValue { return containerValue }
        guard let type = ElementType(rawValue: dataType.rawValue), !type.isComplex else {
            throw failure("has type \(dataType), which LayerKit does not read")
        }
        let count = try elementCount()
        if type == .string {
            guard stringData.count == count else { throw failure("holds \(stringData.count) strings where dims \(dims) need \(count)") }
            return try TypedTensor(shape: dims, strings: stringData.map { String(decoding: $0, as: UTF8.self) })
        }
        guard let width = type.byteWidth else { throw failure("has type \(dataType), which LayerKit does not read") }
        let perByte = ONNXTensor.elementsPerByte(type)
        if let raw = rawData {
            guard perByte > 1 else {
                guard raw.count == count * width else {
                    throw failure("raw_data holds \(raw.count) bytes where dims \(dims) of \(dataType) need \(count) x \(width)")
                }
                return try TypedTensor(elementType: type, shape: dims, bytes: raw)
            }
            return try unpacked(raw, type, count: count, perByte: perByte)
        }
        switch type {
        case .float32: return try TypedTensor(.float32, shape: dims, doubles: checked(floatData, count).map(Double.init))
        case .float64: return try TypedTensor(.float64, shape: dims, doubles: checked(doubleData, count))
        case .int64: return try TypedTensor(.int64, shape: dims, integers: checked(int64Data, count))
        case .uint32, .uint64: return try TypedTensor(type, shape: dims, unsignedIntegers: checked(uint64Data, count))
        default:
            // Everything else lives in int32_data: one element each (its bits,
            // for the float16/bfloat16/float8 types), or packed bytes for sub-byte types.
            if perByte > 1 { return try unpacked(int32Data.map { UInt8(truncatingIfNeeded: $0) }, type, count: count, perByte: perByte) }
            let words = try checked(int32Data, count)
            var bytes = [UInt8](repeating: 0, count: count * width)
            for (i, word) in words.enumerated() {
                for b in 0..<width { bytes[i * width + b] = UInt8(truncatingIfNeeded: UInt32(bitPattern: word) >> UInt32(8 * b)) }
            }
            return try TypedTensor(elementType: type, shape: dims, bytes: bytes)
        }
    }

    /// A tensor named `name` holding `tensor`'s values, in `raw_data`
    /// (packed for the sub-byte types) or `string_data`.
    public init(name: String, typed tensor: TypedTensor) {
        self.init(name: name, dims: tensor.shape, dataType: ONNXDataType(rawValue: tensor.elementType.rawValue))
        if tensor.container != nil {
            containerValue = tensor
            return
        }
        if tensor.elementType == .string {
            stringData = tensor.strings.map { Array($0.utf8) }
            return
        }
        let perByte = ONNXTensor.elementsPerByte(tensor.elementType)
        guard perByte > 1 else { rawData = tensor.bytes; return }
        let bits = 8 / perByte
        var packed = [UInt8](repeating: 0, count: (tensor.count + perByte - 1) / perByte)
        for (i, byte) in tensor.bytes.enumerated() {
            packed[i / perByte] |= (byte & UInt8((1 << bits) - 1)) << UInt8(bits * (i % perByte))
        }
        rawData = packed
    }

    /// How many elements ONNX packs into a byte: 2 for the 4-bit types, 4 for the 2-bit ones, else 1.
    static func elementsPerByte(_ type: ElementType) -> Int {
        switch type {
        case .int4, .uint4, .float4e2m1: 2
        case .int2, .uint2: 4
        default: 1
        }
    }

    private func unpacked(_ packed: [UInt8], _ type: ElementType, count: Int, perByte: Int) throws -> TypedTensor {
        guard packed.count == (count + perByte - 1) / perByte else {
            throw failure("holds \(packed.count) packed bytes where dims \(dims) of \(dataType) need \((count + perByte - 1) / perByte)")
        }
        let bits = 8 / perByte
        let bytes = (0..<count).map { i in packed[i / perByte] >> UInt8(bits * (i % perByte)) & UInt8((1 << bits) - 1) }
        return try TypedTensor(elementType: type, shape: dims, bytes: bytes)
    }

    private func checked<T>(_ values: [T], _ count: Int) throws -> [T] {
        guard values.count == count else { throw failure("holds \(values.count) values where dims \(dims) need \(count)") }
        return values
    }
}

extension TypedTensor {
    /// Decodes a serialized `TensorProto` (an `input_0.pb` of the onnx
    /// package's tests); `source` names it in errors.
    public init(tensorProto data: [UInt8], source: String) throws {
        let tensor = try ONNXTensor(protobuf: data, source: source)
        guard !tensor.hasExternalData else {
            throw LayerKitError.unsupported("\(source): the tensor keeps its data in an external file")
        }
        self = try tensor.typed()
    }

    /// The tensor as a serialized `TensorProto` named `name`: dims,
    /// data_type, name, then raw_data (string_data for strings), in
    /// field-number order as protobuf serializers write them.
    public func tensorProto(name: String) -> [UInt8] {
        let tensor = ONNXTensor(name: name, typed: self)
        var writer = ProtobufWriter()
        for dim in shape { writer.int64(1, Int64(dim)) }
        writer.int64(2, Int64(elementType.rawValue))
        for string in tensor.stringData { writer.bytes(6, string) }
        writer.string(8, name)
        if let raw = tensor.rawData { writer.bytes(9, raw) }
        return writer.bytes
    }
}
