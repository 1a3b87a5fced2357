import LayerKitCore
import Foundation
// Decoding of an ML Program's protobuf messages, field numbers from
// coremltools' MIL.proto (Program, Function, Block, Operation, Value...).
// Only the `main` function's block for its opset is decoded; list, tuple,
// dictionary and state types are refused by name.

extension MILFunction {
    /// The `main` function of a `Program` message, with the block of the opset it names.
    init(program reader: inout ProtobufReader) throws {
        var functions: [(name: String, reader: ProtobufReader)] = []
        while let field = try reader.nextField() {
            switch field.number {
            case 2:
                var entry = try reader.message(field, "functions", type: "Program.FunctionsEntry")
                let (name, value) = try Self.mapEntry(&entry, value: "Function")
                if let value { functions.append((name, value)) }
            default: try reader.skip(field)
            }
        }
        guard var main = functions.first(where: { $0.name == "main" })?.reader else {
            throw LayerKitError.invalidModel("\(reader.source): the ML Program has no function 'main' (it has: "
                                             + (functions.isEmpty ? "none" : functions.map(\.name).joined(separator: ", "))
                                             + ")")
        }
        try self.init(function: &main)
    }

    /// A map entry's key (field 1, a string) and value (field 2, a message of type `value`).
    static func mapEntry(_ entry: inout ProtobufReader, value type: String) throws -> (String, ProtobufReader?) {
        var key = "", value: ProtobufReader?
        while let field = try entry.nextField() {
            switch field.number {
            case 1: key = try entry.string(field, "key")
            case 2: value = try entry.message(field, "value", type: type)
            default: try entry.skip(field)
            }
        }
        return (key, value)
    }

    private init(function reader: inout ProtobufReader) throws {
        var inputs: [MILNamedType] = [], opset = "", blocks: [(String, ProtobufReader)] = []
        while let field = try reader.nextField() {
            switch field.number {
            case 1:
                var sub = try reader.message(field, "inputs", type: "NamedValueType")
                inputs.append(try MILNamedType(decoding: &sub))
            case 2: opset = try reader.string(field, "opset")
            case 3:
                var entry = try reader.message(field, "block_specializations", type: "Function.BlockSpecializationsEntry")
                let (name, value) = try Self.mapEntry(&entry, value: "Block")
                if let value { blocks.append((name, value)) }
            default: try reader.skip(field)
            }
        }
        guard var block = blocks.first(where: { $0.0 == opset })?.1 else {
            throw LayerKitError.invalidModel("\(reader.source): function 'main' names opset '\(opset)', which has no "
                                             + "block (blocks: \(blocks.map(\.0).joined(separator: ", ")))")
        }
        var outputs: [String] = [], operations: [MILOperation] = []
        while let field = try block.nextField() {
            switch field.number {
            case 2: outputs.append(try block.string(field, "outputs"))
            case 3:
                var sub = try block.message(field, "operations", type: "Operation")
                operations.append(try MILOperation(decoding: &sub))
            default: try block.skip(field)
            }
        }
        self.init(inputs: inputs, opset: opset, outputs: outputs, operations: operations)
    }
}

extension MILOperation {
    init(decoding reader: inout ProtobufReader) throws {
        self.init()
        while let field = try reader.nextField() {
            switch field.number {
            case 1: type = try reader.string(field, "type")
            case 2:
                var entry = try reader.message(field, "inputs", type: "Operation.InputsEntry")
                let (name, value) = try MILFunction.mapEntry(&entry, value: "Argument")
                guard var argument = value else { continue }
                var arguments: [MILArgument] = []
                while let f = try argument.nextField() {
                    guard f.number == 1 else { try argument.skip(f); continue }
                    var binding = try argument.message(f, "arguments", type: "Argument.Binding")
                    while let b = try binding.nextField() {
                        switch b.number {
                        case 1: arguments.append(.name(try binding.string(b, "name")))
                        case 2:
                            var sub = try binding.message(b, "value", type: "Value")
                            arguments.append(.value(try MILValue(decoding: &sub)))
                        default: try binding.skip(b)
                        }
                    }
                }
                inputs[name] = arguments
            case 3:
                var sub = try reader.message(field, "outputs", type: "NamedValueType")
                outputs.append(try MILNamedType(decoding: &sub))
            case 4:
                try reader.skip(field)
                blockCount += 1
            case 5:
                var entry = try reader.message(field, "attributes", type: "Operation.AttributesEntry")
                let (name, value) = try MILFunction.mapEntry(&entry, value: "Value")
                if var value { attributes[name] = try MILValue(decoding: &value) }
            default: try reader.skip(field)
            }
        }
    }
}

extension MILNamedType {
    init(decoding reader: inout ProtobufReader) throws {
        var name = "", type: MILTensorType?
        while let field = try reader.nextField() {
            switch field.number {
            case 1: name = try reader.string(field, "name")
            case 2:
                var sub = try reader.message(field, "type", type: "ValueType")
                type = try MILTensorType(valueType: &sub)
            default: try reader.skip(field)
            }
        }
        guard let type else { throw LayerKitError.invalidModel("\(reader.source): value '\(name)' has no type") }
        self.init(name: name, type: type)
    }
}

extension MILTensorType {
    private static let otherTypes = [2: "a list", 3: "a tuple", 4: "a dictionary", 5: "a state"]

    /// A `ValueType` that is a `TensorType`; the other kinds are refused.
    init(valueType reader: inout ProtobufReader) throws {
        var type: MILTensorType?
        while let field = try reader.nextField() {
            switch field.number {
            case 1:
                var sub = try reader.message(field, "tensorType", type: "TensorType")
                type = try MILTensorType(tensorType: &sub)
            case let number where Self.otherTypes[number] != nil:
                throw reader.error("\(Self.otherTypes[number] ?? "") type, which LayerKit does not read",
                                   at: field.offset, reading: "type")
            default: try reader.skip(field)
            }
        }
        guard let type else { throw reader.error("a value type that is not a tensor", at: reader.offset) }
        self = type
    }

    private init(tensorType reader: inout ProtobufReader) throws {
        var dataType = 0, rank: Int64 = 0, dims: [Int?] = []
        while let field = try reader.nextField() {
            switch field.number {
            case 1: dataType = Int(try reader.int32(field, "dataType"))
            case 2: rank = try reader.int64(field, "rank")
            case 3:
                var dimension = try reader.message(field, "dimensions", type: "Dimension")
                var size: Int?
                while let f = try dimension.nextField() {
                    guard f.number == 1 else { try dimension.skip(f); continue }
                    var constant = try dimension.message(f, "constant", type: "Dimension.ConstantDimension")
                    while let c = try constant.nextField() {
                        guard c.number == 1 else { try constant.skip(c); continue }
                        let value = try constant.uint64(c, "size")
                        guard value <= UInt64(Int32.max) else {
                            throw constant.error("dimension \(value) is too large", at: c.offset, reading: "size")
                        }
                        size = Int(value)
                    }
                }
                dims.append(size)
            default: try reader.skip(field)
            }
        }
        guard rank == Int64(dims.count) else {
            throw reader.error("rank \(rank) with \(dims.count) dimensions", at: reader.offset)
        }
        self.init(dataType: MILDataType(rawValue: dataType), dims: dims)
    }
}

extension MILValue {
    init(decoding reader: inout ProtobufReader) throws {
        var type: MILTensorType?, contents: Contents?
        while let field = try reader.nextField() {
            switch field.number {
            case 2:
                var sub = try reader.message(field, "type", type: "ValueType")
                type = try MILTensorType(valueType: &sub)
            case 3:
                var immediate = try reader.message(field, "immediateValue", type: "Value.ImmediateValue")
                while let f = try immediate.nextField() {
                    guard f.number == 1 else {
                        throw immediate.error("a tuple, list or dictionary value, which LayerKit does not read",
                                              at: f.offset, reading: "value")
                    }
                    var tensor = try immediate.message(f, "tensor", type: "TensorValue")
                    contents = .immediate(try MILTensorData(decoding: &tensor))
                }
            case 5:
                var blob = try reader.message(field, "blobFileValue", type: "Value.BlobFileValue")
                var file = "", offset: UInt64 = 0
                while let f = try blob.nextField() {
                    switch f.number {
                    case 1: file = try blob.string(f, "fileName")
                    case 2: offset = try blob.uint64(f, "offset")
                    default: try blob.skip(f)
                    }
                }
                contents = .blob(file: file, offset: offset)
            default: try reader.skip(field)
            }
        }
        guard let type, let contents else { throw reader.error("a value without a type or contents", at: reader.offset) }
        self.init(type: type, contents: contents)
    }
}

extension MILTensorData {
    /// A `TensorValue`: one of its repeated fields.
    init(decoding reader: inout ProtobufReader) throws {
        var data = MILTensorData.floats([])
        while let field = try reader.nextField() {
            var values = try reader.message(field, "value", type: "TensorValue.Repeated")
            var floats: [Float] = [], doubles: [Double] = [], ints: [Int64] = [], strings: [String] = []
            var bytes: [UInt8] = []
            while let f = try values.nextField() {
                guard f.number == 1 else { try values.skip(f); continue }
                switch field.number {
                case 1: try values.appendFloats(f, "values", to: &floats)
                case 2, 3, 5: try values.appendInt64s(f, "values", to: &ints)
                case 4: strings.append(try values.string(f, "values"))
                case 6: try values.appendDoubles(f, "values", to: &doubles)
                case 7: bytes += try values.bytes(f, "values")
                default: try values.skip(f)
                }
            }
            switch field.number {
            case 1: data = .floats(floats)
            case 2, 5: data = .ints(ints)
            case 3: data = .bools(ints.map { $0 != 0 })
            case 4: data = .strings(strings)
            case 6: data = .doubles(doubles)
            case 7: data = .bytes(bytes)
            default: break
            }
        }
        self = data
    }
}
