import LayerKitCore
/// A reader of FlatBuffers binary data: tables found through their vtables,
/// scalars, strings, vectors and union members, by the field ids of a schema.
///
/// Nothing is trusted: every offset read from the bytes is checked to land
/// inside them before it is followed, and a vector's length against the bytes
/// left after it, so a hostile file gets a `LayerKitError.invalidModel`
/// naming the source, the byte and the field ("Tensor.shape"), never a crash
/// or an allocation larger than the file. Offsets to tables, strings and
/// vectors are unsigned and lead forward, so no chain of them can loop.
struct FlatBufferReader: Sendable {
    /// The whole buffer.
    let bytes: [UInt8]
    /// Names the input in error messages ("model.tflite").
    let source: String

    /// An `invalidModel` error: "source: text at byte N while reading Type.field".
    func error(_ text: String, at offset: Int, reading name: String) -> LayerKitError {
        .invalidModel("\(source): \(text) at byte \(offset) while reading \(name)")
    }

    /// `count` bytes at `offset`, checked to be inside the buffer.
    func check(_ offset: Int, _ count: Int, _ name: String) throws {
        guard offset >= 0, count >= 0, offset <= bytes.count, count <= bytes.count - offset else {
            throw error("\(count) bytes run past the end of the \(bytes.count)-byte file", at: offset, reading: name)
        }
    }

    /// The little-endian unsigned integer of `size` bytes at `offset`.
    func unsigned(_ offset: Int, size: Int, _ name: String) throws -> UInt64 {
        try check(offset, size, name)
        var value: UInt64 = 0
        for index in (0..<size).reversed() { value = value << 8 | UInt64(bytes[offset + index]) }
        return value
    }

    /// The 32-bit unsigned offset at `offset` followed to the position it leads to.
    func follow(_ offset: Int, _ name: String) throws -> Int {
        let target = offset + Int(try unsigned(offset, size: 4, name))
        guard target < bytes.count else {
            throw error("an offset leads to byte \(target), past the end of the \(bytes.count)-byte file",
                        at: offset, reading: name)
        }
        return target
    }

    /// The root table, of schema type `type`, which the buffer's first four bytes lead to.
    func root(_ type: String) throws -> FlatTable {
        try table(at: try follow(0, "\(type) (the root offset)"), type)
    }

    /// The table of type `type` starting at `position`, with its vtable checked.
    func table(at position: Int, _ type: String) throws -> FlatTable {
        let relative = Int(Int32(truncatingIfNeeded: try unsigned(position, size: 4, "\(type) (its vtable offset)")))
        let vtable = position - relative
        let vtableSize = Int(try unsigned(vtable, size: 2, "\(type) (its vtable)"))
        let tableSize = Int(try unsigned(vtable + 2, size: 2, "\(type) (its vtable)"))
        guard vtableSize >= 4, vtableSize % 2 == 0 else {
            throw error("a vtable of \(vtableSize) bytes", at: vtable, reading: type)
        }
        try check(vtable, vtableSize, "\(type) (its vtable)")
        try check(position, max(4, tableSize), type)
        return FlatTable(buffer: self, position: position, vtable: vtable, fieldCount: (vtableSize - 4) / 2,
                         size: tableSize, type: type)
    }
}

/// One table of a FlatBuffer: its fields by id, each absent (the schema's
/// default) or inside the table's own bytes.
struct FlatTable: Sendable {
    let buffer: FlatBufferReader
    /// Where the table starts (its vtable offset).
    let position: Int
    let vtable: Int
    let fieldCount: Int
    /// The table's size in bytes, as its vtable gives it.
    let size: Int
    /// The schema type, for error messages ("Tensor").
    let type: String

    /// A vector's first element's position and its element count.
    struct Vector {
        let start: Int
        let count: Int
    }

    /// The position of field `id`'s value of `width` bytes, or nil when the field is absent.
    func field(_ id: Int, width: Int, _ name: String) throws -> Int? {
        guard id < fieldCount else { return nil }
        let relative = Int(try buffer.unsigned(vtable + 4 + 2 * id, size: 2, "\(type).\(name)"))
        guard relative != 0 else { return nil }
        guard relative + width <= size else {
            throw buffer.error("field \(id) lies outside its \(size)-byte table", at: position + relative,
                               reading: "\(type).\(name)")
        }
        return position + relative
    }

    /// An integer field of `size` bytes (1, 2, 4 or 8), sign-extended when `signed`.
    func integer(_ id: Int, _ name: String, size: Int = 4, signed: Bool = true, default value: Int = 0) throws -> Int {
        guard let at = try field(id, width: size, name) else { return value }
        let raw = try buffer.unsigned(at, size: size, "\(type).\(name)")
        guard signed else {
            guard raw <= UInt64(Int.max) else {
                throw buffer.error("the value \(raw) is too large", at: at, reading: "\(type).\(name)")
            }
            return Int(raw)
        }
        let shift = UInt64(64 - 8 * size)
        return Int(Int64(bitPattern: raw << shift) >> Int64(shift))
    }

    /// A boolean field.
    func bool(_ id: Int, _ name: String, default value: Bool = false) throws -> Bool {
        try integer(id, name, size: 1, signed: false, default: value ? 1 : 0) != 0
    }

    /// A 32-bit float field.
    func float(_ id: Int, _ name: String, default value: Float = 0) throws -> Float {
        guard let at = try field(id, width: 4, name) else { return value }
        return Float(bitPattern: UInt32(try buffer.unsigned(at, size: 4, "\(type).\(name)")))
    }

    /// The table field `id` leads to, of schema type `fieldType`, or nil when absent.
    func table(_ id: Int, _ name: String, _ fieldType: String) throws -> FlatTable? {
        guard let at = try field(id, width: 4, name) else { return nil }
        return try buffer.table(at: try buffer.follow(at, "\(type).\(name)"), fieldType)
    }

    /// The vector field `id` leads to, its elements `elementSize` bytes each, checked to fit the file.
    func vector(_ id: Int, _ name: String, elementSize: Int) throws -> Vector? {
        guard let at = try field(id, width: 4, name) else { return nil }
        let start = try buffer.follow(at, "\(type).\(name)")
        let count = Int(try buffer.unsigned(start, size: 4, "\(type).\(name) (its length)"))
        guard count <= (buffer.bytes.count - start - 4) / elementSize else {
            throw buffer.error("a vector of \(count) elements of \(elementSize) bytes runs past the end of the "
                               + "\(buffer.bytes.count)-byte file", at: start, reading: "\(type).\(name)")
        }
        return Vector(start: start + 4, count: count)
    }

    /// A vector of integers of `size` bytes each, as Ints; empty when absent.
    func integers(_ id: Int, _ name: String, size: Int = 4, signed: Bool = true) throws -> [Int] {
        guard let vector = try vector(id, name, elementSize: size) else { return [] }
        let shift = UInt64(64 - 8 * size)
        return try (0..<vector.count).map { index in
            let raw = try buffer.unsigned(vector.start + index * size, size: size, "\(type).\(name)")
            return signed ? Int(Int64(bitPattern: raw << shift) >> Int64(shift)) : Int(truncatingIfNeeded: raw)
        }
    }

    /// A vector of 32-bit floats; empty when absent.
    func floats(_ id: Int, _ name: String) throws -> [Float] {
        try integers(id, name, size: 4, signed: false).map { Float(bitPattern: UInt32(truncatingIfNeeded: $0)) }
    }

    /// A vector of bytes (`[ubyte]`), or a string's bytes; empty when absent.
    func bytes(_ id: Int, _ name: String) throws -> ArraySlice<UInt8> {
        guard let vector = try vector(id, name, elementSize: 1) else { return [] }
        return buffer.bytes[vector.start..<vector.start + vector.count]
    }

    /// A string field, decoded as UTF-8 (invalid sequences replaced); nil when absent.
    func string(_ id: Int, _ name: String) throws -> String? {
        guard try field(id, width: 4, name) != nil else { return nil }
        return String(decoding: try bytes(id, name), as: UTF8.self)
    }

    /// A vector of tables of schema type `elementType`; empty when absent.
    func tables(_ id: Int, _ name: String, _ elementType: String) throws -> [FlatTable] {
        guard let vector = try vector(id, name, elementSize: 4) else { return [] }
        return try (0..<vector.count).map { index in
            let at = vector.start + 4 * index
            return try buffer.table(at: try buffer.follow(at, "\(type).\(name)[\(index)]"), elementType)
        }
    }
}
