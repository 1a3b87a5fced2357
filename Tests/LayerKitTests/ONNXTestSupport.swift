import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// Protobuf bytes built by hand, independent of LayerKit's reader: each
/// function returns one field (tag and value).
enum PB {
    static func varint(_ value: UInt64) -> [UInt8] {
        var v = value, out: [UInt8] = []
        while v >= 0x80 { out.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
        return out + [UInt8(v)]
    }

    static func tag(_ field: Int, _ wireType: Int) -> [UInt8] { varint(UInt64(field << 3 | wireType)) }

    /// A varint field (int32, int64, enum); negatives take 10 bytes, as protobuf writes them.
    static func int(_ field: Int, _ value: Int64) -> [UInt8] { tag(field, 0) + varint(UInt64(bitPattern: value)) }

    /// A length-delimited field: bytes, a string, an embedded message or a packed run.
    static func bytes(_ field: Int, _ value: [UInt8]) -> [UInt8] {
        tag(field, 2) + varint(UInt64(value.count)) + value
    }

    static func string(_ field: Int, _ value: String) -> [UInt8] { bytes(field, Array(value.utf8)) }

    static func float(_ field: Int, _ value: Float) -> [UInt8] { tag(field, 5) + littleEndian([value.bitPattern]) }

    static func double(_ field: Int, _ value: Double) -> [UInt8] { tag(field, 1) + littleEndian([value.bitPattern]) }

    /// The little-endian bytes of `values`.
    static func littleEndian<T: FixedWidthInteger>(_ values: [T]) -> [UInt8] {
        values.flatMap { value in (0..<T.bitWidth / 8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
    }

    /// The end offsets of the top-level fields of a well-formed message.
    static func fieldBoundaries(_ bytes: [UInt8]) -> [Int] {
        var offset = 0, ends: [Int] = []
        func readVarint() -> UInt64 {
            var value: UInt64 = 0, shift: UInt64 = 0
            while true {
                let byte = bytes[offset]; offset += 1
                value |= UInt64(byte & 0x7F) << shift; shift += 7
                if byte < 0x80 { return value }
            }
        }
        while offset < bytes.count {
            switch readVarint() & 7 {
            case 0: _ = readVarint()
            case 1: offset += 8
            case 5: offset += 4
            default: offset += Int(readVarint())
            }
            ends.append(offset)
        }
        return ends
    }
}

/// ONNX messages by hand (field numbers from onnx.proto).
enum ONNXBytes {
    /// A ModelProto.
    static func model(ir: Int64 = 8, opsets: [(String, Int64)] = [("", 17)], graph: [UInt8]? = graph()) -> Data {
        var bytes = PB.int(1, ir) + PB.string(2, "hand")
        if let graph { bytes += PB.bytes(7, graph) }
        for (domain, version) in opsets { bytes += PB.bytes(8, PB.string(1, domain) + PB.int(2, version)) }
        return Data(bytes)
    }

    /// A GraphProto with one Relu node from "x" to "y" unless told otherwise.
    static func graph(nodes: [[UInt8]] = [node()], initializers: [[UInt8]] = [], inputs: [[UInt8]] = [],
                      extra: [UInt8] = []) -> [UInt8] {
        nodes.flatMap { PB.bytes(1, $0) } + PB.string(2, "g") + initializers.flatMap { PB.bytes(5, $0) }
            + inputs.flatMap { PB.bytes(11, $0) } + extra
    }

    /// A NodeProto.
    static func node(_ op: String = "Relu", inputs: [String] = ["x"], outputs: [String] = ["y"], name: String = "n",
                     attributes: [[UInt8]] = []) -> [UInt8] {
        inputs.flatMap { PB.string(1, $0) } + outputs.flatMap { PB.string(2, $0) } + PB.string(3, name)
            + PB.string(4, op) + attributes.flatMap { PB.bytes(5, $0) }
    }

    /// A TensorProto named `name` with `fields` (data, location) appended.
    static func tensor(_ name: String = "w", dims: [Int64], type: Int64, _ fields: [UInt8]) -> [UInt8] {
        dims.flatMap { PB.int(1, $0) } + PB.int(2, type) + PB.string(8, name) + fields
    }

    /// A model whose only initializer is `tensor`, decoded.
    static func decodeInitializer(_ tensor: [UInt8]) throws -> ONNXTensor {
        let model = try ONNXModel(data: model(graph: graph(initializers: [tensor])))
        return try #require(model.graph.initializers.values.first)
    }
}

/// The fixture models of `Scripts/generate_model_fixtures.py`, with the
/// facts the onnx package read from each.
enum ModelFixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/models")

    /// Every `<name>.onnx` with a facts file, by name.
    static let names: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
        .filter { $0.hasSuffix(".facts.json") }.map { String($0.dropLast(".facts.json".count)) }.sorted()

    static func url(_ name: String) -> URL { directory.appendingPathComponent(name + ".onnx") }

    static func bytes(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: url(name))) }

    static func facts(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: directory.appendingPathComponent(name + ".facts.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }
}
