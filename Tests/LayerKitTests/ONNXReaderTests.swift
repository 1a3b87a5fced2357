import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// The message of an `invalidModel` error thrown by `body`, or nil (and a
/// recorded issue) when it throws something else or nothing.
private func invalidModelMessage(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
    do {
        try body()
        Issue.record("decoded without an error", sourceLocation: sourceLocation)
    } catch LayerKitError.invalidModel(let message) {
        return message
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// Decodes `data` and reads every initializer's values, as a model loader
/// would; only `invalidModel` errors may come out.
private func decodeFully(_ data: Data) throws {
    let model = try ONNXModel(data: data, source: "test.onnx")
    for tensor in model.graph.initializers.values {
        _ = try [.int64, .int32].contains(tensor.dataType) ? tensor.int64s().count : tensor.floats().count
    }
}

@Suite struct ONNXFixtureTests {
    @Test func everyFixtureHasFacts() {
        #expect(ModelFixtures.names.count >= 11, "\(ModelFixtures.names)")
    }

    @Test(arguments: ModelFixtures.names.filter { $0 != "opset_too_new" })
    func decodesLikeOnnx(name: String) throws {
        let model = try ONNXModel(contentsOf: ModelFixtures.url(name))
        let facts = try ModelFixtures.facts(name)
        #expect(model.irVersion == facts["ir_version"] as? Int)
        #expect(model.producerName == facts["producer_name"] as? String)
        #expect(model.producerVersion == facts["producer_version"] as? String)
        let opsets = try #require(facts["opset_imports"] as? [[String: Any]])
        #expect(model.opsetImports.map { "\($0.domain):\($0.version)" }
                == opsets.map { "\($0["domain"] ?? ""):\($0["version"] ?? "")" })
        #expect(model.defaultOpset == 17)
        #expect(model.graph.name == facts["graph_name"] as? String)
        try expectValues(model.graph.inputs, facts["inputs"])
        try expectValues(model.graph.outputs, facts["outputs"])
        #expect(model.graph.feedInputs.map(\.name) == model.graph.inputs.map(\.name))

        let nodes = try #require(facts["nodes"] as? [[String: Any]])
        try #require(model.graph.nodes.count == nodes.count)
        for (node, fact) in zip(model.graph.nodes, nodes) {
            #expect(node.name == fact["name"] as? String)
            #expect(node.opType == fact["op_type"] as? String)
            #expect(node.domain == fact["domain"] as? String)
            #expect(node.inputs == fact["inputs"] as? [String])
            #expect(node.outputs == fact["outputs"] as? [String])
            let attributes = try #require(fact["attributes"] as? [String: Any])
            #expect(Set(node.attributes.keys) == Set(attributes.keys), "\(node.label)")
            for (key, value) in node.attributes {
                #expect(matches(value, attributes[key]), "\(node.label) attribute \(key): \(value)")
            }
        }

        let initializers = try #require(facts["initializers"] as? [[String: Any]])
        #expect(model.graph.initializerNames == initializers.compactMap { $0["name"] as? String })
        #expect(model.graph.initializers.count == initializers.count)
        for fact in initializers {
            let tensor = try #require(model.graph.initializers[fact["name"] as? String ?? ""])
            #expect(tensor.dims == fact["dims"] as? [Int])
            #expect(tensor.dataType.rawValue == fact["data_type"] as? Int)
            #expect((tensor.rawData != nil) == fact["raw"] as? Bool)
            let values = try tensor.dataType == .int64 ? tensor.int64s().map(Double.init) : tensor.floats().map(Double.init)
            #expect(values.count == fact["count"] as? Int)
            let sum = try #require(fact["sum"] as? Double)
            #expect(abs(values.reduce(0, +) - sum) <= 1e-9 * max(1, abs(sum)) * Double(values.count), "\(tensor.name)")
            // Foundation's JSON parser may be an ulp off in Double; the values are Floats.
            #expect(values.prefix(4).map { Float($0) } == (fact["first"] as? [Double])?.map { Float($0) }, "\(tensor.name)")
        }
    }

    private func expectValues(_ values: [ONNXValueInfo], _ fact: Any?) throws {
        let facts = try #require(fact as? [[String: Any]])
        try #require(values.count == facts.count)
        for (value, fact) in zip(values, facts) {
            #expect(value.name == fact["name"] as? String)
            #expect(value.elementType?.rawValue == fact["elem_type"] as? Int)
            let dims = try #require(fact["dims"] as? [Any])
            #expect(value.dims?.map(\.description) == dims.map { "\($0)" }, "\(value.name)")
        }
    }

    private func matches(_ attribute: ONNXAttribute, _ fact: Any?) -> Bool {
        switch attribute {
        case .float(let v): return (fact as? Double).map { Float($0) == v } ?? false
        case .int(let v): return fact as? Int == v
        case .string(let v): return fact as? String == v
        case .floats(let v): return (fact as? [Double])?.map { Float($0) } == v
        case .ints(let v): return fact as? [Int] == v
        case .strings(let v): return fact as? [String] == v
        case .tensor(let t):
            let f = fact as? [String: Any]
            return f?["dims"] as? [Int] == t.dims && f?["data_type"] as? Int == t.dataType.rawValue
        case .graph, .graphs, .type: return false  // the reference models hold no graph or type attributes
        }
    }

    @Test func articleModelStructure() throws {
        let model = try ONNXModel(contentsOf: ModelFixtures.url("article_beta001"))
        #expect(model.graph.nodes.map(\.opType) == ["Conv", "Swish", "GlobalAveragePool", "Flatten", "Gemm", "Softmax"])
        let swish = model.graph.nodes[1]
        #expect(swish.domain == "layerkit" && !swish.isStandard && model.graph.nodes[0].isStandard)
        #expect(swish.attributes["beta"] == .float(0.01))
        #expect(model.graph.inputs.first?.dims == [.value(1), .value(3), .value(32), .value(32)])
        #expect(model.graph.outputs.map(\.name) == ["probabilities"])
        let twin = try ONNXModel(contentsOf: ModelFixtures.directory.appendingPathComponent("article_demo_standard.onnx"))
        #expect(twin.graph.nodes.map(\.opType).filter { $0 == "Mul" }.count == 2)
        #expect(twin.graph.inputs.first?.dims == [.value(1), .value(3), .value(64), .value(64)])
    }

    @Test func typedAndRawFieldsGiveEqualValues() throws {
        let model = try ONNXModel(contentsOf: ModelFixtures.url("typed_fields"))
        let weights = try #require(model.graph.initializers["w"])
        #expect(weights.rawData == nil && weights.floatData.count == 108)
        let shape = try #require(model.graph.initializers["shape"])
        #expect(try shape.int64s() == [1, -1])
        var raw = weights
        raw.rawData = PB.littleEndian(weights.floatData.map(\.bitPattern))
        raw.floatData = []
        #expect(try raw.floats() == weights.floats())
    }

    @Test func opsetTooNewFixtureIsRefused() throws {
        let message = invalidModelMessage { _ = try ONNXModel(contentsOf: ModelFixtures.url("opset_too_new")) }
        #expect(message?.hasPrefix("opset_too_new.onnx: opset 99 is not supported") == true, "\(message ?? "")")
    }

    @Test func missingFileIsAFileError() {
        #expect(throws: LayerKitError.self) {
            try ONNXModel(contentsOf: ModelFixtures.directory.appendingPathComponent("nope.onnx"))
        }
    }
}

@Suite struct ONNXMalformedInputTests {
    /// Every prefix of a model is refused, except those ending at a
    /// top-level field boundary, which are shorter but well-formed messages.
    @Test(arguments: ModelFixtures.names)
    func truncatedFixturesAreRefused(name: String) throws {
        let bytes = try ModelFixtures.bytes(name)
        let boundaries = Set(PB.fieldBoundaries(bytes))
        let step = bytes.count <= 4096 ? 1 : bytes.count / 200  // every cut of small models, ~200 of larger ones
        for cut in stride(from: 0, to: bytes.count, by: step) {
            do {
                try decodeFully(Data(bytes[..<cut]))
                #expect(boundaries.contains(cut), "\(name) cut at \(cut) decoded")
            } catch LayerKitError.invalidModel(let message) {
                #expect(message.hasPrefix("test.onnx: "), "\(message)")
            }
        }
    }

    /// Seeded random byte changes: the result decodes or is refused with
    /// `invalidModel`, never another error (and never a crash or hang).
    @Test(arguments: ModelFixtures.names)
    func corruptedFixturesDecodeOrAreRefused(name: String) throws {
        let original = try ModelFixtures.bytes(name)
        var random = SeededGenerator(seed: UInt64(original.count))
        for _ in 0..<300 {
            var bytes = original
            for _ in 0...Int.random(in: 0..<4, using: &random) {
                let index = Int.random(in: 0..<bytes.count, using: &random)
                bytes[index] = Bool.random(using: &random) ? bytes[index] ^ (1 << UInt8.random(in: 0..<8, using: &random))
                    : UInt8.random(in: 0...255, using: &random)
            }
            do { try decodeFully(Data(bytes)) } catch LayerKitError.invalidModel {}
        }
    }

    @Test func errorsNameSourceOffsetAndField() {
        // A NodeProto whose input string claims 9 bytes where 1 is left.
        let node = PB.tag(1, 2) + [9, 0x78]
        let message = invalidModelMessage { try decodeFully(ONNXBytes.model(graph: ONNXBytes.graph(nodes: [node]))) }
        let nodeStart = 2 + 6 + 2 + 2  // ir_version, producer_name, graph tag + length, node tag + length
        #expect(message == "test.onnx: length 9 runs past the end (1 bytes left) at byte \(nodeStart + 1) "
                + "while reading NodeProto.input")
    }

    @Test func badVarints() {
        let tooLong = Data(PB.tag(1, 0) + [UInt8](repeating: 0xFF, count: 10) + [0x01])
        #expect(invalidModelMessage { try decodeFully(tooLong) }?.contains("varint longer than 10 bytes") == true)
        let overflow = Data(PB.tag(1, 0) + [UInt8](repeating: 0xFF, count: 9) + [0x02])
        #expect(invalidModelMessage { try decodeFully(overflow) }?.contains("overflows 64 bits") == true)
        let truncated = Data(PB.tag(1, 0) + [0x80, 0x80])
        #expect(invalidModelMessage { try decodeFully(truncated) }
                == "test.onnx: truncated at byte 3 while reading ModelProto.ir_version")
        // The largest 10-byte varint is fine: ir_version -1 is then refused as a version.
        let negative = ONNXBytes.model(ir: -1)
        #expect(invalidModelMessage { try decodeFully(negative) }?.contains("IR version -1 is not supported") == true)
    }

    @Test func wireTypesAreChecked() {
        let wrong = Data(PB.bytes(1, [8]) + ONNXBytes.model())  // ir_version as a length-delimited field
        #expect(invalidModelMessage { try decodeFully(wrong) }
                == "test.onnx: wire type 2 where 0 was expected at byte 0 while reading ModelProto.ir_version")
        for wireType in [3, 4, 6, 7] {
            let bad = Data(ONNXBytes.model() + PB.tag(30, wireType))
            #expect(invalidModelMessage { try decodeFully(bad) }?.contains("wire type \(wireType) for field 30") == true)
        }
        #expect(invalidModelMessage { try decodeFully(Data(PB.tag(0, 0) + [0])) }?.contains("field number 0") == true)
    }

    @Test func unknownFieldsOfEveryWireTypeAreSkipped() throws {
        let unknown = PB.int(99, 5) + PB.double(98, 1) + PB.float(97, 1) + PB.string(96, "x")
        let node = ONNXBytes.node() + unknown
        let model = try ONNXModel(data: ONNXBytes.model(graph: ONNXBytes.graph(nodes: [node], extra: unknown)) + unknown)
        #expect(model.graph.nodes.map(\.opType) == ["Relu"])
    }

    @Test func lengthPastTheEnd() {
        let data = Data(PB.int(1, 8) + PB.tag(7, 2) + PB.varint(1 << 40) + [1, 2, 3])
        #expect(invalidModelMessage { try decodeFully(data) }?.contains("runs past the end (3 bytes left)") == true)
    }

    @Test func deepNestingIsRefusedWithoutRecursingFurther() {
        // A graph input of type sequence of sequence of ... 1,000 deep.
        var type: [UInt8] = PB.bytes(1, PB.int(1, 1))  // tensor_type { elem_type: FLOAT }
        for _ in 0..<1_000 { type = PB.bytes(4, PB.bytes(1, type)) }
        let input = PB.string(1, "x") + PB.bytes(2, type)
        let message = invalidModelMessage { try decodeFully(ONNXBytes.model(graph: ONNXBytes.graph(inputs: [input]))) }
        #expect(message?.contains("nested more than 64 deep") == true, "\(message ?? "")")
        // Shallow nesting decodes to the value's form; an opaque type is refused by name.
        let sequence = PB.string(1, "x") + PB.bytes(2, PB.bytes(4, PB.bytes(1, PB.bytes(1, PB.int(1, 1)))))
        let model = try? ONNXModel(data: ONNXBytes.model(graph: ONNXBytes.graph(inputs: [sequence])), source: "test.onnx")
        #expect(model?.graph.inputs.first?.form == .sequence(.tensor(.float32)))
        let opaque = PB.string(1, "x") + PB.bytes(2, PB.bytes(7, []))
        let refusal = invalidModelMessage { try decodeFully(ONNXBytes.model(graph: ONNXBytes.graph(inputs: [opaque]))) }
        #expect(refusal?.contains("value 'x' is an opaque value; LayerKit reads tensors, sequences, optionals and maps") == true,
                "\(refusal ?? "")")
    }

    @Test func modelLevelChecks() {
        #expect(invalidModelMessage { try decodeFully(ONNXBytes.model(ir: 15)) }
                == "test.onnx: IR version 15 is not supported (LayerKit reads 3 to 14); "
                + "re-export the model with an older ONNX exporter")
        #expect(invalidModelMessage { try decodeFully(ONNXBytes.model(ir: 2)) }?.contains("IR version 2") == true)
        #expect(invalidModelMessage { try decodeFully(ONNXBytes.model(opsets: [("", 99)])) }?
            .contains("opset 99 is not supported") == true)
        #expect(invalidModelMessage { try decodeFully(ONNXBytes.model(opsets: [("layerkit", 1)])) }?
            .contains("node 'n' (Relu) is a default-domain op, but the model imports no default-domain") == true)
        // Nodes of other domains alone need no default-domain opset (a lone ai.onnx.ml tree).
        let scaler = ONNXBytes.node("Scaler", name: "s") + PB.string(7, "ai.onnx.ml")
        #expect(throws: Never.self) {
            try decodeFully(ONNXBytes.model(opsets: [("ai.onnx.ml", 3)], graph: ONNXBytes.graph(nodes: [scaler])))
        }
        #expect(invalidModelMessage { try decodeFully(ONNXBytes.model(graph: nil)) } == "test.onnx: the model has no graph")
    }

    @Test func acceptedVersionsAndDomains() throws {
        for ir in [3, 10] as [Int64] {
            #expect(try ONNXModel(data: ONNXBytes.model(ir: ir)).irVersion == Int(ir))
        }
        let model = try ONNXModel(data: ONNXBytes.model(opsets: [("layerkit", 1), ("ai.onnx", 24)]))
        #expect(model.defaultOpset == 24)
        #expect(model.opsetImports.map(\.domain) == ["layerkit", "ai.onnx"])
    }

    /// External data is recorded at decoding (read later, from the model's
    /// folder: ExternalDataTests); a tensor marked external without a
    /// location, or with a location but not marked, is refused.
    @Test func externalDataIsRecordedOnlyWhenComplete() throws {
        let entry = PB.bytes(13, PB.string(1, "location") + PB.string(2, "w.bin"))
        let unnamed = ONNXBytes.tensor(dims: [2], type: 1, PB.int(14, 1))
        #expect(invalidModelMessage { _ = try ONNXBytes.decodeInitializer(unnamed) }?
            .contains("tensor 'w' keeps its data outside the file but names no location") == true)
        let unmarked = ONNXBytes.tensor(dims: [2], type: 1, entry)
        #expect(invalidModelMessage { _ = try ONNXBytes.decodeInitializer(unmarked) }?
            .contains("has dims [2] but holds data for 0 elements") == true)
        let external = try ONNXBytes.decodeInitializer(ONNXBytes.tensor(dims: [2], type: 1, entry + PB.int(14, 1)))
        #expect(external.hasExternalData)
        #expect(invalidModelMessage { _ = try ONNXBytes.decodeInitializer(
            ONNXBytes.tensor(dims: [2], type: 1, entry + PB.bytes(13, PB.string(1, "offset") + PB.string(2, "-4")) + PB.int(14, 1)))
        }?.contains("external data offset '-4' is not a byte count") == true)
    }

    /// Graph attributes (If's branches, a Loop's body) decode into graphs,
    /// nested ones too; attributes LayerKit still refuses (a sparse tensor)
    /// name the node and the attribute.
    @Test func graphAttributesDecodeAndRefusedOnesNameTheNodeAndAttribute() throws {
        let inner = ONNXBytes.node("Identity", inputs: ["x"], outputs: ["y"], name: "inner")
        let branch = PB.string(1, "then_branch") + PB.bytes(6, ONNXBytes.graph(nodes: [inner])) + PB.int(20, 5)
        let list = PB.string(1, "bodies") + PB.bytes(11, ONNXBytes.graph()) + PB.bytes(11, ONNXBytes.graph()) + PB.int(20, 10)
        let node = ONNXBytes.node("If", inputs: ["c"], outputs: ["y"], name: "branch", attributes: [branch, list])
        let decoded = try #require(try ONNXModel(data: ONNXBytes.model(graph: ONNXBytes.graph(nodes: [node]))).graph.nodes.first)
        #expect(try decoded.graph("then_branch")?.nodes.map(\.name) == ["inner"])
        guard case .graphs(let graphs) = decoded.attributes["bodies"] else { Issue.record("no graphs attribute"); return }
        #expect(graphs.count == 2)
        #expect(decoded.implicitInputs == ["x"], "the branch reads 'x' from the graph around it")
        let sparse = PB.string(1, "values") + PB.bytes(22, []) + PB.int(20, 11)
        let refused = ONNXBytes.node("Constant", outputs: ["y"], name: "k", attributes: [sparse])
        let message = invalidModelMessage { try decodeFully(ONNXBytes.model(graph: ONNXBytes.graph(nodes: [refused]))) }
        #expect(message == "test.onnx: node 'k' (Constant): attribute 'values' is a sparse tensor, which LayerKit does not support")
    }

    @Test func attributesOfEveryKind() throws {
        let tensor = ONNXBytes.tensor("t", dims: [1], type: 7, PB.int(7, 42))
        let attributes: [[UInt8]] = [
            PB.string(1, "f") + PB.float(2, 0.5) + PB.int(20, 1),
            PB.string(1, "i") + PB.int(3, -3) + PB.int(20, 2),
            PB.string(1, "s") + PB.string(4, "SAME_UPPER") + PB.int(20, 3),
            PB.string(1, "t") + PB.bytes(5, tensor) + PB.int(20, 4),
            PB.string(1, "fs") + PB.bytes(7, PB.littleEndian([Float(1).bitPattern, Float(-2).bitPattern])) + PB.int(20, 6),
            PB.string(1, "is") + PB.int(8, 1) + PB.int(8, -1) + PB.int(20, 7),  // unpacked
            PB.string(1, "ss") + PB.string(9, "a") + PB.string(9, "b") + PB.int(20, 8),
            PB.string(1, "untyped") + PB.int(3, 7),  // no type field: IR version 2 style
            PB.string(1, "empty_ints") + PB.int(20, 7),
        ]
        let node = ONNXBytes.node("Op", attributes: attributes)
        let decoded = try #require(try ONNXModel(data: ONNXBytes.model(graph: ONNXBytes.graph(nodes: [node]))).graph.nodes.first)
        let a = decoded.attributes
        #expect(a["f"] == .float(0.5) && a["i"] == .int(-3) && a["s"] == .string("SAME_UPPER"))
        #expect(a["fs"] == .floats([1, -2]) && a["is"] == .ints([1, -1]) && a["ss"] == .strings(["a", "b"]))
        #expect(a["untyped"] == .int(7) && a["empty_ints"] == .ints([]))
        guard case .tensor(let t) = a["t"] else { Issue.record("no tensor attribute"); return }
        #expect(try t.int64s() == [42])
        let twice = ONNXBytes.node("Op", attributes: [attributes[0], attributes[0]])
        #expect(invalidModelMessage { try decodeFully(ONNXBytes.model(graph: ONNXBytes.graph(nodes: [twice]))) }?
            .contains("attribute 'f' given twice") == true)
    }
}

@Suite struct ONNXTensorTests {
    /// Half bit patterns and their exact values: one, smallest subnormal,
    /// largest subnormal, smallest normal, largest finite, -0, -2, infinities.
    static let halves: [(UInt16, Float)] = [
        (0x3C00, 1), (0x0001, 0x1p-24), (0x03FF, 1023 * 0x1p-24), (0x0400, 0x1p-14), (0x7BFF, 65504),
        (0x8000, -0.0), (0xC000, -2), (0x7C00, .infinity), (0xFC00, -.infinity), (0x3555, 0.333251953125),
    ]

    @Test func float16FromRawDataAndInt32Data() throws {
        let bits = Self.halves.map(\.0) + [0x7E00]
        let raw = try ONNXBytes.decodeInitializer(ONNXBytes.tensor(dims: [11], type: 10, PB.bytes(9, PB.littleEndian(bits))))
        let typed = try ONNXBytes.decodeInitializer(
            ONNXBytes.tensor(dims: [11], type: 10, PB.bytes(5, bits.flatMap { PB.varint(UInt64($0)) })))
        for tensor in [raw, typed] {
            #expect(tensor.dataType == .float16 && tensor.dataType.description == "FLOAT16")
            let values = try tensor.floats()
            #expect(values.prefix(10).map(\.bitPattern) == Self.halves.map(\.1.bitPattern))
            #expect(values[10].isNaN)
        }
    }

    @Test func typedAndRawFieldsAgree() throws {
        let floats: [Float] = [1.5, -0.0, .leastNonzeroMagnitude, -3e38]
        let float = [
            PB.bytes(9, PB.littleEndian(floats.map(\.bitPattern))),
            PB.bytes(4, PB.littleEndian(floats.map(\.bitPattern))),  // packed float_data
            floats.flatMap { PB.float(4, $0) },  // unpacked float_data
        ]
        for fields in float {
            let values = try ONNXBytes.decodeInitializer(ONNXBytes.tensor(dims: [2, 2], type: 1, fields)).floats()
            #expect(values.map(\.bitPattern) == floats.map(\.bitPattern))
        }
        let doubles: [Double] = [0.1, -1e300, 2]
        for fields in [PB.bytes(9, PB.littleEndian(doubles.map(\.bitPattern))), doubles.flatMap { PB.double(10, $0) },
                       PB.bytes(10, PB.littleEndian(doubles.map(\.bitPattern)))] {
            let values = try ONNXBytes.decodeInitializer(ONNXBytes.tensor(dims: [3], type: 11, fields)).floats()
            #expect(values == [Float(0.1), -.infinity, 2])
        }
        let ints: [Int64] = [0, -1, .max, .min, 7]
        for fields in [PB.bytes(9, PB.littleEndian(ints)), PB.bytes(7, ints.flatMap { PB.varint(UInt64(bitPattern: $0)) }),
                       ints.flatMap { PB.int(7, $0) }] {
            #expect(try ONNXBytes.decodeInitializer(ONNXBytes.tensor(dims: [5], type: 7, fields)).int64s() == ints.map(Int.init))
        }
        let int32s: [Int32] = [-5, 1 << 30, .min]
        for fields in [PB.bytes(9, PB.littleEndian(int32s)), int32s.flatMap { PB.int(5, Int64($0)) }] {
            #expect(try ONNXBytes.decodeInitializer(ONNXBytes.tensor(dims: [3], type: 6, fields)).int64s()
                    == int32s.map(Int.init))
        }
    }

    @Test func scalarsAndEmptyTensors() throws {
        let scalar = try ONNXBytes.decodeInitializer(ONNXBytes.tensor(dims: [], type: 1, PB.float(4, 2.5)))
        #expect(scalar.dims == [])
        #expect(try scalar.floats() == [2.5])
        let empty = try ONNXBytes.decodeInitializer(ONNXBytes.tensor(dims: [0, 3], type: 1, PB.bytes(9, [])))
        #expect(try empty.floats() == [])
    }

    @Test func countsMustMatchDims() throws {
        // Dims announcing more elements than the data holds are refused at
        // decoding, before anything trusts them (issue 14, class 3).
        #expect(invalidModelMessage {
            _ = try ONNXBytes.decodeInitializer(ONNXBytes.tensor(dims: [2, 3], type: 1, PB.bytes(9, [0, 0, 0, 0])))
        }?.contains("tensor 'w' has dims [2, 3] but holds data for 1 elements") == true)
        #expect(invalidModelMessage {
            _ = try ONNXBytes.decodeInitializer(ONNXBytes.tensor(dims: [3], type: 7, PB.int(7, 1)))
        }?.contains("tensor 'w' has dims [3] but holds data for 1 elements") == true)
        #expect(invalidModelMessage {
            _ = try ONNXBytes.decodeInitializer(ONNXBytes.tensor(dims: [1 << 62, 8], type: 1, []))
        }?.contains("has dims [\(1 << 62), 8] but holds data for 0 elements") == true)
        // More data than the dims describe is found when the values are read.
        let long = try ONNXBytes.decodeInitializer(ONNXBytes.tensor(dims: [2], type: 1, PB.bytes(9, Array(repeating: 0, count: 12))))
        #expect(invalidModelMessage { _ = try long.floats() }
                == "tensor 'w' raw_data holds 12 bytes where dims [2] of FLOAT need 2 x 4")
        let typed = try ONNXBytes.decodeInitializer(ONNXBytes.tensor(dims: [1], type: 7, PB.int(7, 1) + PB.int(7, 2) + PB.int(7, 3)))
        #expect(invalidModelMessage { _ = try typed.int64s() } == "tensor 'w' holds 3 values where dims [1] need 1")
        var huge = try ONNXBytes.decodeInitializer(ONNXBytes.tensor(dims: [0], type: 1, []))
        huge.dims = [1 << 62, 8]
        #expect(invalidModelMessage { _ = try huge.floats() } == "tensor 'w' dims [\(1 << 62), 8] do not give an element count")
        var negative = huge
        negative.dims = [-1]
        #expect(invalidModelMessage { _ = try negative.floats() } == "tensor 'w' dims [-1] do not give an element count")
        #expect(invalidModelMessage { _ = try ONNXBytes.decodeInitializer(ONNXBytes.tensor(dims: [-1], type: 1, [])) }?
            .contains("negative dims") == true)
    }

    @Test func unsupportedTypesAreNamed() throws {
        let int8 = try ONNXBytes.decodeInitializer(ONNXBytes.tensor("q", dims: [1], type: 3, PB.bytes(9, [1])))
        #expect(invalidModelMessage { _ = try int8.floats() }
                == "tensor 'q' has type INT8; a FLOAT, FLOAT16 or DOUBLE tensor was expected")
        #expect(try int8.int64s() == [1])
        let float = try ONNXBytes.decodeInitializer(ONNXBytes.tensor("f", dims: [1], type: 1, PB.bytes(9, [0, 0, 0, 0])))
        #expect(invalidModelMessage { _ = try float.int64s() }?.contains("has type FLOAT; an integer or BOOL tensor") == true)
        let unknown = try ONNXBytes.decodeInitializer(ONNXBytes.tensor("u", dims: [1], type: 99, PB.bytes(9, [1])))
        #expect(invalidModelMessage { _ = try unknown.floats() }?.contains("has type data type 99") == true)
    }
}

@Suite struct ONNXNodeAttributeTests {
    @Test func typedReads() throws {
        let node = ONNXNode(name: "", opType: "Conv", domain: "", inputs: ["x", "w", ""], outputs: ["y"],
                            attributes: ["pads": .ints([1, 1, 1, 1]), "alpha": .float(0.5), "auto_pad": .string("VALID")])
        #expect(try node.ints("pads") == [1, 1, 1, 1])
        #expect(try node.float("alpha") == 0.5)
        #expect(try node.string("auto_pad") == "VALID")
        #expect(try node.int("group") == nil)
        #expect(invalidModelMessage { _ = try node.int("pads") }
                == "node producing 'y' (Conv): attribute 'pads' is ints, not int")
        let custom = ONNXNode(name: "s", opType: "Swish", domain: "layerkit", inputs: ["x"], outputs: ["y"],
                              attributes: ["beta": .int(1)])
        #expect(invalidModelMessage { _ = try custom.float("beta") }
                == "node 's' (layerkit.Swish): attribute 'beta' is int, not float")
    }
}
