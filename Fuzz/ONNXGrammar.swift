import Foundation
import LayerKit

/// The choices a grammar-built input makes, read from the fuzzer's bytes:
/// each byte picks one branch, so byte mutations become structural ones
/// (another op, another name, one more input). Past the end every choice
/// is 0, the plainest branch.
struct Choices {
    let bytes: [UInt8]
    var index = 0

    mutating func byte() -> Int {
        defer { index += 1 }
        return index < bytes.count ? Int(bytes[index]) : 0
    }

    /// A number in 0..<n.
    mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : byte() % n }

    /// True `n` times in 256.
    mutating func chance(_ n: Int) -> Bool { byte() < n }

    mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
}

/// Protobuf bytes as the wire format defines them, for the models the
/// grammar builds (field numbers from onnx.proto).
struct ProtoWriter {
    var bytes: [UInt8] = []

    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 { bytes.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
        bytes.append(UInt8(v))
    }

    mutating func int(_ field: Int, _ value: Int64) {
        varint(UInt64(field << 3))
        varint(UInt64(bitPattern: value))
    }

    mutating func float(_ field: Int, _ value: Float) {
        varint(UInt64(field << 3 | 5))
        for k in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: value.bitPattern >> (8 * k))) }
    }

    mutating func data(_ field: Int, _ value: [UInt8]) {
        varint(UInt64(field << 3 | 2))
        varint(UInt64(value.count))
        bytes += value
    }

    mutating func string(_ field: Int, _ value: String) { data(field, Array(value.utf8)) }

    mutating func message(_ field: Int, _ build: (inout ProtoWriter) -> Void) {
        var inner = ProtoWriter()
        build(&inner)
        data(field, inner.bytes)
    }
}

/// ONNX models built from a small grammar: graph inputs, initializers,
/// nodes and outputs, with the mistakes a hostile or broken exporter makes
/// drawn now and then: repeated names, a node output over a graph input,
/// cycles, uses of undefined names, one input more than the op takes, dims
/// far past the data or the limits, wild attribute values, and chains of
/// thousands of nodes. The model records why onnxruntime would refuse it,
/// when the grammar broke a rule on purpose.
struct GrammarModel {
    var bytes: [UInt8]
    /// The first rule broken on purpose (onnxruntime refuses such a model).
    var invalid: String?
    /// Fixed-shape inputs small enough to run, by name; nil when the model is not run.
    var runInputs: [String: [Int]]?

    /// Ops with the input counts the ONNX spec gives them at opset 17 (an
    /// upper bound of nil: any number) and the attributes drawn for them.
    static let ops: [(name: String, inputs: ClosedRange<Int>, unbounded: Bool, attributes: [String])] = [
        ("Relu", 1...1, false, []), ("Sigmoid", 1...1, false, []), ("Tanh", 1...1, false, []),
        ("Add", 2...2, false, []), ("Mul", 2...2, false, []), ("Div", 2...2, false, []),
        ("Conv", 2...3, false, ["pads", "strides", "dilations", "group", "kernel_shape"]),
        ("MaxPool", 1...1, false, ["kernel_shape", "pads", "strides", "ceil_mode"]),
        ("AveragePool", 1...1, false, ["kernel_shape", "pads", "strides", "count_include_pad"]),
        ("GlobalAveragePool", 1...1, false, []), ("Softmax", 1...1, false, ["axis"]),
        ("Flatten", 1...1, false, ["axis"]), ("Reshape", 2...2, false, ["allowzero"]),
        ("BatchNormalization", 5...5, false, ["epsilon"]), ("Identity", 1...1, false, []),
        ("Pow", 2...2, false, []), ("Clip", 1...3, false, []), ("PRelu", 2...2, false, []),
        ("Concat", 1...3, true, ["axis"]), ("Gemm", 2...3, false, ["transA", "transB", "alpha"]),
        ("LeakyRelu", 1...1, false, ["alpha"]),
        // The model-coverage ops (arity from onnx's schemas at opset 17).
        ("Transpose", 1...1, false, ["perm"]), ("Pad", 2...3, false, ["mode"]),
        ("Resize", 1...4, false, ["mode", "coordinate_transformation_mode", "nearest_mode"]),
        ("InstanceNormalization", 3...3, false, ["epsilon"]), ("LayerNormalization", 2...3, false, ["axis", "epsilon"]),
        ("LRN", 1...1, false, ["alpha", "beta", "bias", "size"]), ("ReduceMean", 1...1, false, ["axes", "keepdims"]),
        ("ReduceSum", 1...2, false, ["keepdims", "noop_with_empty_axes"]), ("LogSoftmax", 1...1, false, ["axis"]),
        ("Split", 1...2, false, ["axis"]), ("Slice", 3...5, false, []), ("Squeeze", 1...2, false, []),
        ("Unsqueeze", 2...2, false, []), ("Gather", 2...2, false, ["axis"]), ("Expand", 2...2, false, []),
        ("Tile", 2...2, false, []), ("Where", 3...3, false, []), ("Sum", 1...3, true, []), ("Max", 1...3, true, []),
        ("MatMul", 2...2, false, []),
        ("ConvTranspose", 2...3, false, ["pads", "strides", "dilations", "group", "output_padding", "output_shape"]),
        ("Sign", 1...1, false, []), ("Shrink", 1...1, false, ["lambd", "bias"]), ("Equal", 2...2, false, []),
        ("Cast", 1...1, false, ["to"]), ("DepthToSpace", 1...1, false, ["blocksize"]), ("Shape", 1...1, false, ["start"]),
        ("ConstantOfShape", 1...1, false, []), ("Range", 3...3, false, []),
    ]

    static let wildInts: [Int64] = [0, 1, 2, 3, -1, -2, 12000, 1 << 20, 1 << 31, 1 << 40, .max, .min]
    static let dims: [Int64] = [1, 1, 2, 3, 4, 5, 0, 1 << 32, 1 << 40, 1 << 62]

    init(_ choices: inout Choices) {
        var invalid: String?
        func breaks(_ rule: String) { if invalid == nil { invalid = rule } }
        var graph = ProtoWriter()
        var values: [String] = []
        var shapes: [String: [Int64]] = [:]
        var runnable = true

        // Graph inputs.
        var inputNames: [String] = []
        for i in 0..<(1 + choices.below(3)) {
            var name = "x\(i)"
            if i > 0, choices.chance(12) { name = inputNames[0]; breaks("graph input '\(name)' twice") }
            var dims: [Int64] = []
            for _ in 0..<(1 + choices.below(4)) {
                dims.append(choices.chance(230) ? Int64(1 + choices.below(5)) : choices.pick(Self.dims))
            }
            let symbolic = choices.chance(16)
            if dims.reduce(1.0, { $0 * Double($1) }) > 65536 || symbolic { runnable = false }
            inputNames.append(name)
            values.append(name)
            shapes[name] = dims
            graph.message(11) { value in
                value.string(1, name)
                value.message(2) { type in
                    type.message(1) { tensor in
                        tensor.int(1, 1)
                        tensor.message(2) { shape in
                            for (k, d) in dims.enumerated() {
                                shape.message(1) { dim in if symbolic && k == 0 { dim.string(2, "N") } else { dim.int(1, d) } }
                            }
                        }
                    }
                }
            }
        }
        // Initializers: small ones with their data, or huge dims with none.
        var initializers: [String] = []
        for i in 0..<choices.below(4) {
            let name = "w\(i)"
            var dims: [Int64] = []
            for _ in 0..<choices.below(5) { dims.append(Int64(1 + choices.below(4))) }
            let lying = choices.chance(16)
            if lying { dims = [choices.pick(Self.dims), choices.pick(Self.dims), 1] }
            let count = dims.reduce(1, { $0 &* $1 })
            graph.message(5) { tensor in
                for d in dims { tensor.int(1, d) }
                tensor.int(2, 1)
                tensor.string(8, name)
                if !lying || count <= 4096 {
                    tensor.data(9, Array(repeating: 0, count: Int(max(0, min(count, 4096))) * 4))
                }
            }
            initializers.append(name)
            values.append(name)
        }
        // Nodes: a few, or now and then a chain of thousands.
        let chain = choices.chance(6)
        let nodeCount = chain ? 1000 + choices.byte() * 8 : 1 + choices.below(8)
        var outputs: [String] = []
        // After a forward reference, the next node reads the referring node's output.
        var mustRead: String?
        for k in 0..<nodeCount {
            let op = chain && k > 0 ? (choices.chance(128) ? Self.ops[0] : Self.ops[14]) : choices.pick(Self.ops)
            var inputCount = op.inputs.lowerBound + choices.below(op.inputs.count)
            if !op.unbounded, choices.chance(10) { inputCount = op.inputs.upperBound + 1; breaks("\(op.name) with \(inputCount) inputs") }
            var inputs: [String] = []
            for j in 0..<inputCount {
                if j == 0, let name = mustRead { inputs.append(name); mustRead = nil; continue }
                if chain && j == 0 && k > 0 { inputs.append("v\(k - 1)"); continue }
                switch choices.byte() {
                case 0..<4: inputs.append("v\(k)"); breaks("a node reading its own output (a cycle)")
                case 4..<8: inputs.append("undefined\(j)"); breaks("a use of an undefined name")
                case 8..<10 where k + 1 < nodeCount:
                    // A forward reference: node k+1 reads v(k) (mustRead), which closes a cycle.
                    inputs.append("v\(k + 1)"); mustRead = "v\(k)"; breaks("two nodes reading each other (a cycle)")
                default: inputs.append(choices.pick(values))
                }
            }
            var output = "v\(k)"
            switch choices.byte() {
            case 0..<3: output = inputNames[0]; breaks("a node output named like a graph input")
            case 3..<6 where !outputs.isEmpty: output = outputs[0]; breaks("two nodes writing '\(outputs[0])'")
            default: break
            }
            graph.message(1) { node in
                for input in inputs { node.string(1, input) }
                node.string(2, output)
                node.string(3, "n\(k)")
                node.string(4, op.name)
                for attribute in op.attributes where choices.chance(100) {
                    node.message(5) { a in
                        a.string(1, attribute)
                        switch attribute {
                        case "mode", "coordinate_transformation_mode", "nearest_mode":
                            a.string(4, choices.pick(["constant", "reflect", "edge", "nearest", "linear", "cubic",
                                                      "half_pixel", "align_corners", "floor", "", "bogus"]))
                            a.int(20, 3)
                        case "alpha", "epsilon", "beta", "bias", "lambd":
                            a.float(2, choices.pick([0.5, 1e-5, .infinity, .nan, -1, 3.4e38])); a.int(20, 1)
                        case "pads", "strides", "dilations", "kernel_shape", "perm", "axes", "output_padding", "output_shape":
                            for _ in 0..<(1 + choices.below(4)) {
                                a.int(8, choices.chance(200) ? Int64(choices.below(4)) : choices.pick(Self.wildInts))
                            }
                            a.int(20, 7)
                        default:
                            a.int(3, choices.chance(200) ? Int64(choices.below(3)) - 1 : choices.pick(Self.wildInts)); a.int(20, 2)
                        }
                    }
                }
            }
            outputs.append(output)
            values.append(output)
        }
        // Graph outputs: the last node's, sometimes twice.
        let last = outputs.last ?? inputNames[0]
        for n in 0..<(choices.chance(12) ? 2 : 1) {
            if n == 1 { breaks("graph output '\(last)' twice") }
            graph.message(12) { value in value.string(1, last) }
        }
        graph.string(2, "grammar")
        var model = ProtoWriter()
        model.int(1, 8)
        model.string(2, "fuzz")
        model.data(7, graph.bytes)
        model.message(8) { opset in opset.string(1, ""); opset.int(2, 17) }
        bytes = model.bytes
        self.invalid = invalid
        runInputs = runnable ? Dictionary(inputNames.map { ($0, shapes[$0]!.map(Int.init)) }, uniquingKeysWith: { a, _ in a }) : nil
    }
}

extension Target {
    /// Models from the grammar (`GrammarModel`), loaded and, when their
    /// inputs are small, run once on zeros on the CPU. `LayerKitError` is a
    /// refusal; a finding is another error, a crash, a hang, memory over the
    /// limit, or a model accepted that onnxruntime refuses.
    static let onnxGrammar = Target(
        name: "onnx-grammar",
        // Choice bytes at the branch edges: 0 the plainest, small ones the rule-breaking branches.
        dictionary: ["\u{0}", "\u{1}", "\u{2}", "\u{3}", "\u{5}", "\u{8}", "\u{9}", "\u{10}", "\u{7F}"],
        hotOffsets: []
    ) { bytes in
        var choices = Choices(bytes: bytes)
        let built = GrammarModel(&choices)
        do {
            let model = try Model(data: Data(built.bytes), computeUnits: .cpuOnly)
            if let invalid = built.invalid { return .unexpected("accepted a model onnxruntime refuses: \(invalid)") }
            guard let shapes = built.runInputs else { return .accepted }
            let inputs = try shapes.mapValues { try Tensor(shape: $0) }
            let outputs = try model.predict(inputs: inputs)
            return outputs.count == Set(model.outputs.map(\.name)).count ? .accepted
                : .unexpected("\(outputs.count) outputs for \(model.outputs.map(\.name))")
        } catch is LayerKitError {
            return .rejected
        } catch {
            return .unexpected("error other than LayerKitError: \(error)")
        }
    }
}
