import Foundation
import LayerKit
import Testing

/// `--layer OPTYPE=FORMULA`: a model whose node is a custom op (here
/// `ArticleSwish` in domain `com.example`) runs from the command line, its
/// attribute or its constant input bound to the formula's value by name.
struct ModelLayerOptionTests {
    static let formula = "ArticleSwish=x * sigmoid(beta * x)"
    static let input: [Float] = (0..<12).map { Float($0) * 0.75 - 4 }

    /// x * sigmoid(beta[c] * x) in float64, channel c of [1, 3, 2, 2].
    static func expected(_ beta: [Double]) -> [Double] {
        input.enumerated().map { i, x in
            let (x, b) = (Double(x), beta[i / 4])
            return x / (1 + exp(-b * x))
        }
    }

    /// Writes the model and its input; `beta` as an attribute, or per channel as a constant input.
    static func files(attribute: Float?, weights: [Float]?, attributeName: String = "beta") throws
        -> (model: String, input: String, directory: String) {
        let directory = try CommandRunner.scratchDirectory()
        let model = "\(directory)/article_swish.onnx"
        try TinyONNX.model(opType: "ArticleSwish", domain: "com.example", shape: [1, 3, 2, 2],
                           attributes: attribute.map { [attributeName: $0] } ?? [:],
                           constants: weights.map { ["swish.beta": $0] } ?? [:]).write(to: URL(fileURLWithPath: model))
        try writeNPY(input, shape: [1, 3, 2, 2], to: "\(directory)/x.npy")
        return (model, "\(directory)/x.npy", directory)
    }

    static func check(_ path: String, against expected: [Double]) throws {
        let output = try Tensor(npyFile: path)
        #expect(output.shape == [1, 3, 2, 2])
        for (a, e) in zip(output.values, expected) { #expect(abs(Double(a) - e) <= 1e-5 * max(1, abs(e)), "\(a) vs \(e)") }
    }

    @Test func runBindsTheNodesAttributeAsTheFormulasParameter() throws {
        let (model, input, directory) = try Self.files(attribute: 1.5, weights: nil)
        let runner = CommandRunner()
        #expect(runner.run(["run", model, "--input", input, "--output", "\(directory)/y.npy", "--backend", "cpu",
                            "--layer", Self.formula]) == 0, "\(runner.error)")
        try Self.check("\(directory)/y.npy", against: Self.expected([1.5, 1.5, 1.5]))
    }

    @Test func runBindsAConstantInputAsPerChannelWeightsByName() throws {
        let (model, input, directory) = try Self.files(attribute: nil, weights: [0.5, 1, 2])
        let runner = CommandRunner()
        #expect(runner.run(["run", model, "--input", input, "--output", "\(directory)/y.npy", "--backend", "cpu",
                            "--layer", Self.formula]) == 0, "\(runner.error)")
        try Self.check("\(directory)/y.npy", against: Self.expected([0.5, 1, 2]))
    }

    @Test func inspectAndProfileTakeTheLayerToo() throws {
        let (model, _, _) = try Self.files(attribute: 1.5, weights: nil)
        let inspect = CommandRunner()
        #expect(inspect.run(["inspect", model, "--backend", "cpu", "--layer", Self.formula]) == 0, "\(inspect.error)")
        #expect(inspect.out.contains("com.example.ArticleSwish"))
        let profile = CommandRunner()
        #expect(profile.run(["profile", model, "--backend", "cpu", "--repeat", "1", "--warmup", "0",
                             "--layer", Self.formula]) == 0, "\(profile.error)")
        #expect(profile.out.contains("ArticleSwish"))
    }

    @Test func withoutTheLayerOrWithAMismatchedNameTheErrorSaysWhy() throws {
        let (model, input, _) = try Self.files(attribute: 1.5, weights: nil)
        let missing = CommandRunner()
        #expect(missing.run(["run", model, "--input", input, "--backend", "cpu"]) == 1)
        #expect(missing.error.contains("ArticleSwish"))
        // The advice is the command line's, not a Swift API's.
        #expect(missing.error.contains("register a layer named 'ArticleSwish' (on the command line: "
                                       + "--layer ArticleSwish='FORMULA'"), "\(missing.error)")
        #expect(!missing.error.contains("LayerRegistry"), "\(missing.error)")
        // inspect lists the refusal, and says how the command line runs the op.
        let inspect = CommandRunner()
        #expect(inspect.run(["inspect", model, "--backend", "cpu"]) == 1)
        #expect(inspect.out.contains("ArticleSwish: on the command line: --layer ArticleSwish='FORMULA'"), "\(inspect.out)")
        // The node gives `beta`; a formula of `gamma` is refused, naming both.
        let mismatch = CommandRunner()
        #expect(mismatch.run(["run", model, "--input", input, "--backend", "cpu",
                              "--layer", "ArticleSwish=x * sigmoid(gamma * x)"]) == 1)
        #expect(mismatch.error.contains("'gamma' is used but not given"), "\(mismatch.error)")
        // A formula that does not parse is a command-line mistake.
        let syntax = CommandRunner()
        #expect(syntax.run(["run", model, "--input", input, "--layer", "ArticleSwish=x * (beta"]) == 2)
        #expect(syntax.run(["run", model, "--input", input, "--layer", "ArticleSwish"]) == 2)
    }
}

/// A small ONNX model written field by field (onnx.proto's numbers), for
/// tests that need a custom op or a chain of standard ops no committed
/// fixture has.
enum TinyONNX {
    /// One node of a chain: it reads the previous value (`x` first), then
    /// its constants (1-D, in name order; broadcast by the op).
    struct Node {
        let opType: String
        var domain = ""
        var attributes: [String: Float] = [:]
        /// Integer attributes (Cast's `to`, ...).
        var intAttributes: [String: Int] = [:]
        var constants: [String: [Float]] = [:]
        /// The ONNX element type the constants are written in: 1 (float), or 7 (int64, each value truncated).
        var constantType: UInt64 = 1
    }

    /// One node `x → y`.
    static func model(opType: String, domain: String, shape: [Int], attributes: [String: Float],
                      constants: [String: [Float]]) -> Data {
        chain([Node(opType: opType, domain: domain, attributes: attributes, constants: constants)], shape: shape)
    }

    /// `nodes` in a chain from input `x` to output `y` (values between are
    /// `v1`, `v2`, ...), every value of `shape`, its first dimension the
    /// symbol `batch` when given; opset 17, and version 1 of any other domain.
    static func chain(_ nodes: [Node], shape: [Int], batch: String? = nil) -> Data {
        let valueType = { (dims: [Int]) -> [UInt8] in
            let shapeBytes = dims.enumerated().flatMap { i, size in
                message(1, i == 0 && batch != nil ? text(2, batch ?? "") : varintField(1, UInt64(size)))
            }
            return message(1, varintField(1, 1) + message(2, shapeBytes))
        }
        let info = { (name: String) -> [UInt8] in text(1, name) + message(2, valueType(shape)) }
        var graph: [UInt8] = []
        var initializers: [UInt8] = []
        for (i, spec) in nodes.enumerated() {
            var node = text(1, i == 0 ? "x" : "v\(i)")
            for name in spec.constants.keys.sorted() { node += text(1, name) }
            node += text(2, i == nodes.count - 1 ? "y" : "v\(i + 1)") + text(3, "node\(i)") + text(4, spec.opType)
                + text(7, spec.domain)
            for (name, value) in spec.attributes.sorted(by: { $0.key < $1.key }) {
                node += message(5, text(1, name) + [0x15] + bytes(of: value.bitPattern) + varintField(20, 1))
            }
            for (name, value) in spec.intAttributes.sorted(by: { $0.key < $1.key }) {
                node += message(5, text(1, name) + varintField(3, UInt64(bitPattern: Int64(value))) + varintField(20, 2))
            }
            graph += message(1, node)
            for (name, values) in spec.constants.sorted(by: { $0.key < $1.key }) {
                let raw = spec.constantType == 7 ? values.flatMap { value in
                    (0..<8).map { UInt8(truncatingIfNeeded: Int64(value) >> (8 * $0)) }
                } : values.flatMap { bytes(of: $0.bitPattern) }
                initializers += message(5, varintField(1, UInt64(values.count)) + varintField(2, spec.constantType) + text(8, name)
                                        + message(9, raw))
            }
        }
        graph += text(2, "g") + initializers + message(11, info("x")) + message(12, info("y"))
        let domains = Set(nodes.map(\.domain)).subtracting([""]).sorted()
        let opsets = message(8, text(1, "") + varintField(2, 17))
            + domains.flatMap { message(8, text(1, $0) + varintField(2, 1)) }
        return Data(varintField(1, 8) + message(7, graph) + opsets)
    }

    private static func varint(_ value: UInt64) -> [UInt8] {
        var (value, out) = (value, [UInt8]())
        repeat {
            out.append(UInt8(value & 0x7f) | (value >= 0x80 ? 0x80 : 0))
            value >>= 7
        } while value > 0
        return out
    }

    private static func varintField(_ field: UInt64, _ value: UInt64) -> [UInt8] { varint(field << 3) + varint(value) }
    private static func message(_ field: UInt64, _ body: [UInt8]) -> [UInt8] {
        varint(field << 3 | 2) + varint(UInt64(body.count)) + body
    }
    private static func text(_ field: UInt64, _ value: String) -> [UInt8] { message(field, Array(value.utf8)) }
    private static func bytes(of bits: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: bits >> (8 * $0)) } }
}
