import Foundation
import LayerKitONNX

/// Einsum: the contraction an Einstein-summation equation names, numpy's
/// rules: "ij,jk->ik" (explicit output), "ij,jk" (implicit: the letters
/// used once, in ASCII order), "...ij,...jk->...ik" (an ellipsis for the
/// broadcast leading axes), "ii->i" and "ii" (a letter repeated in one
/// term walks a diagonal). Every element of the output sums, over the
/// letters the output lacks, the product of one element of each operand.
/// Float types compute in Double, integers in Int64 (int64 checked, the
/// narrower types wrapping to their width) or UInt64.
extension TypedKernels {
    static func einsum(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        try node.requireAttributes(["equation"])
        guard let equation = try node.node.string("equation") else { throw node.error("attribute 'equation' is required") }
        let operands = try sameType(inputs.indices.map { try input($0, inputs, node) }, node)
        let contraction = try EinsumContraction(equation, shapes: operands.map(\.shape), node)
        let type = operands[0].elementType
        if type.isFloatingPoint {
            let values = contraction.run(operands.map { $0.doubles() }, zero: 0.0, add: { $0 + $1 }, multiply: { $0 * $1 })
            return [try TypedTensor(type, shape: contraction.shape, doubles: values)]
        }
        switch Lanes(operands[0]) {
        case .signed where isChecked(type):
            let values = try contraction.run(operands.map { $0.integers() }, zero: Int64(0), add: { a, b in
                let (sum, overflowed) = a.addingReportingOverflow(b)
                if overflowed { throw overflow("Einsum") }
                return sum
            }, multiply: { a, b in
                let (product, overflowed) = a.multipliedReportingOverflow(by: b)
                if overflowed { throw overflow("Einsum") }
                return product
            })
            return [try TypedTensor(type, shape: contraction.shape, integers: values)]
        case .signed:
            let values = contraction.run(operands.map { $0.integers() }, zero: Int64(0), add: { $0 &+ $1 }, multiply: { $0 &* $1 })
            return [try TypedTensor(type, shape: contraction.shape, integers: values)]
        case .unsigned:
            let values = contraction.run(operands.map { $0.integers().map { UInt64(bitPattern: $0) } }, zero: UInt64(0),
                                         add: { $0 &+ $1 }, multiply: { $0 &* $1 })
            return [try TypedTensor(type, shape: contraction.shape, unsignedIntegers: values)]
        default:
            throw node.error("Einsum of \(type) is not supported (ONNX's Einsum takes numbers)")
        }
    }
}

/// An Einsum equation resolved against its operands' shapes: every axis
/// (a letter, or one of the ellipsis's broadcast axes) is a label with an
/// extent; the output's labels come first in the walk, the summed ones after.
struct EinsumContraction {
    /// The output's shape.
    let shape: [Int]
    /// Every label's extent, the output's in order, then the summed ones.
    private let extents: [Int]
    /// Per operand, per label (as `extents`), the step in its elements;
    /// an axis of extent 1 broadcast and a label the operand lacks step 0.
    private let strides: [[Int]]

    /// The most multiply-adds one Einsum may take (the product of every
    /// label's extent): past it the equation is refused, not run for hours.
    static let maxSteps = 1 << 28

    init(_ equation: String, shapes: [[Int]], _ node: ONNXNodeContext) throws {
        let text = equation.filter { !$0.isWhitespace }
        let sides = text.components(separatedBy: "->")
        guard sides.count <= 2 else { throw node.error("equation '\(equation)' has more than one '->'") }
        let terms = try sides[0].split(separator: ",", omittingEmptySubsequences: false).map { try Self.term(String($0), equation, node) }
        guard terms.count == shapes.count else {
            throw node.error("equation '\(equation)' names \(terms.count) operands; the node has \(shapes.count) inputs")
        }
        // Letters are labels by their ASCII code; the ellipsis's axes are 128 on, right-aligned.
        var extent: [Int: Int] = [:]
        let ellipsisRank = zip(terms, shapes).map { $0.hasEllipsis ? $1.count - $0.letters.count : 0 }.max() ?? 0
        var operandLabels: [[Int]] = []
        for (k, (term, shape)) in zip(terms, shapes).enumerated() {
            let broadcast = shape.count - term.letters.count
            guard term.hasEllipsis ? broadcast >= 0 : broadcast == 0 else {
                throw node.error("equation term '\(term.text)' names \(term.letters.count) axes; input \(k) has shape "
                                 + "\(Tensor.describe(shape))")
            }
            let prefix = term.letters.prefix(term.ellipsisAt), suffix = term.letters.dropFirst(term.ellipsisAt)
            let labels = Array(prefix) + (0..<broadcast).map { 128 + ellipsisRank - broadcast + $0 } + suffix
            for (label, size) in zip(labels, shape) {
                guard let known = extent[label], known != size else {
                    extent[label] = size
                    continue
                }
                if label >= 128, known == 1 || size == 1 {
                    extent[label] = max(known, size)
                    continue
                }
                let name = label < 128 ? "letter '\(Self.letter(label))'" : "the ellipsis's axes"
                throw node.error("in equation '\(equation)', \(name) has extent \(known) in one input and \(size) in input \(k)")
            }
            operandLabels.append(labels)
        }
        let ellipsisLabels = Array(128..<(128 + ellipsisRank))
        let output: [Int]
        if sides.count == 2 {
            let term = try Self.term(sides[1], equation, node)
            output = Array(term.letters.prefix(term.ellipsisAt)) + (term.hasEllipsis ? ellipsisLabels : [])
                + term.letters.dropFirst(term.ellipsisAt)
            guard Set(output).count == output.count else {
                throw node.error("equation '\(equation)' names an output letter twice")
            }
            if let missing = term.letters.first(where: { extent[$0] == nil }) {
                throw node.error("equation '\(equation)' outputs letter '\(Self.letter(missing))', which no input has")
            }
            guard term.hasEllipsis || ellipsisRank == 0 || ellipsisLabels.allSatisfy({ extent[$0] == 1 }) else {
                throw node.error("equation '\(equation)' has an ellipsis in its inputs but not in its output")
            }
        } else {
            let counts = terms.flatMap(\.letters).reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
            output = ellipsisLabels + counts.filter { $0.value == 1 }.keys.sorted()
        }
        let summed = extent.keys.filter { !output.contains($0) }.sorted()
        let labels = output + summed
        extents = labels.map { extent[$0] ?? 1 }
        shape = output.map { extent[$0] ?? 1 }
        _ = try ONNXFolding.checkedCount(shape, node)
        var steps = 1
        for size in extents {
            guard size == 0 || steps <= Self.maxSteps / size else {
                throw node.error("equation '\(equation)' on inputs \(shapes.map { Tensor.describe($0) }.joined(separator: ", ")) "
                                 + "takes more than \(Self.maxSteps) multiply-adds, LayerKit's limit for one Einsum")
            }
            steps *= size
        }
        strides = zip(operandLabels, shapes).map { own, shape in
            var strides = [Int](repeating: 0, count: labels.count), step = 1
            for axis in own.indices.reversed() {
                if shape[axis] != 1, let at = labels.firstIndex(of: own[axis]) { strides[at] += step }
                step *= shape[axis]
            }
            return strides
        }
    }

    /// The output's elements from the operands', in `T`'s arithmetic.
    func run<T>(_ operands: [[T]], zero: T, add: (T, T) throws -> T, multiply: (T, T) throws -> T) rethrows -> [T] {
        let outputRank = shape.count
        let count = shape.reduce(1, *), inner = extents[outputRank...].reduce(1, *)
        var out = [T](repeating: zero, count: count)
        var index = [Int](repeating: 0, count: extents.count), offsets = [Int](repeating: 0, count: operands.count)
        for o in 0..<count {
            var sum = zero
            for _ in 0..<inner {
                var product = operands[0][offsets[0]]
                for k in 1..<operands.count { product = try multiply(product, operands[k][offsets[k]]) }
                sum = try add(sum, product)
                // Step the multi-index, the last label fastest, keeping the offsets in step.
                var axis = extents.count - 1
                while axis >= 0 {
                    index[axis] += 1
                    for k in offsets.indices { offsets[k] += strides[k][axis] }
                    if index[axis] < extents[axis] { break }
                    for k in offsets.indices { offsets[k] -= strides[k][axis] * index[axis] }
                    index[axis] = 0
                    axis -= 1
                }
            }
            out[o] = sum
        }
        return out
    }

    /// One term of an equation: its letters (as labels), and where
    /// its ellipsis stands among them (`letters.count` when it has none).
    private struct Term {
        let text: String
        let letters: [Int]
        let hasEllipsis: Bool
        let ellipsisAt: Int
    }

    private static func term(_ text: String, _ equation: String, _ node: ONNXNodeContext) throws -> Term {
        let parts = text.components(separatedBy: "...")
        guard parts.count <= 2 else { throw node.error("equation '\(equation)' has more than one ellipsis in term '\(text)'") }
        let letters = try parts.map { part in
            try part.map { character -> Int in
                guard let label = label(character) else {
                    throw node.error("equation '\(equation)' holds '\(character)': terms are letters a-z and A-Z, and one '...'")
                }
                return label
            }
        }
        return Term(text: text, letters: letters.flatMap { $0 }, hasEllipsis: parts.count == 2, ellipsisAt: letters[0].count)
    }

    /// A letter's label, its ASCII code (so labels sort as numpy orders an
    /// implicit output, A-Z before a-z); nil for anything but a-z and A-Z.
    private static func label(_ character: Character) -> Int? {
        guard let ascii = character.asciiValue, character.isLetter else { return nil }
        return Int(ascii)
    }

    private static func letter(_ label: Int) -> Character { Character(UnicodeScalar(UInt8(label))) }
}
