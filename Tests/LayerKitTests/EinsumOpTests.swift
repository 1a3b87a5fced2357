import Foundation
import Testing
@testable import LayerKitONNX
@testable import LayerKit

/// Einsum beyond the onnx node tests and the onnxruntime cases
/// (Fixtures/onnx-cases/einsum): contractions worked out by hand, int64
/// kept exact and checked, and hostile equations as errors naming the node.
@Suite struct EinsumOpTests {
    static func einsum(_ equation: String, _ operands: [TypedTensor]) throws -> TypedTensor {
        try TypedIndexingKernelTests.run("Einsum", operands, opset: 12, ["equation": .string(equation)])[0]
    }

    static func failure(_ equation: String, _ operands: [TypedTensor]) -> String {
        TypedIndexingKernelTests.failure("Einsum", operands, opset: 12, ["equation": .string(equation)]) ?? "no error"
    }

    /// [[1, 2], [3, 4]].
    static let square = try! TypedIndexingKernelTests.float([2, 2], [1, 2, 3, 4])

    @Test func diagonalsTracesTransposesAndProducts() throws {
        #expect(try Self.einsum("ii->i", [Self.square]).doubles() == [1, 4])
        #expect(try Self.einsum("ii", [Self.square]).doubles() == [5])
        #expect(try Self.einsum("ij->ji", [Self.square]).doubles() == [1, 3, 2, 4])
        // Implicit output: the letters used once, in order: "ji" transposes nothing, "ba" does.
        #expect(try Self.einsum("ba", [Self.square]).doubles() == [1, 3, 2, 4])
        // [[1, 2], [3, 4]] @ [[1, 2], [3, 4]] = [[7, 10], [15, 22]], with spaces in the equation.
        #expect(try Self.einsum("ij, jk -> ik", [Self.square, Self.square]).doubles() == [7, 10, 15, 22])
        // Ellipsis: a batch of one matrix times a broadcast one.
        let product = try Self.einsum("...ij,jk->...ik", [TypedIndexingKernelTests.float([1, 2, 2], [1, 2, 3, 4]), Self.square])
        #expect(product.shape == [1, 2, 2] && product.doubles() == [7, 10, 15, 22])
        // Three operands, to a scalar: sum_i a_i * b_i * c_i.
        let v = try TypedIndexingKernelTests.float([2], [2, 3])
        #expect(try Self.einsum("i,i,i->", [v, v, v]).doubles() == [8 + 27])
    }

    @Test func int64IsExactAndChecked() throws {
        let big = TypedIndexingKernelTests.big
        let y = try Self.einsum("i,i->", [TypedIndexingKernelTests.int64([2], [big, 1]), TypedIndexingKernelTests.int64([2], [1, 1])])
        #expect(y.elementType == .int64 && y.integers() == [big + 1])
        let overflow = Self.failure("i,i->", try [TypedIndexingKernelTests.int64([1], [Int64.max]), TypedIndexingKernelTests.int64([1], [2])])
        #expect(overflow.contains("integer Einsum overflows Int64"), "\(overflow)")
    }

    @Test func hostileEquationsAreErrorsNamingTheNode() throws {
        let m = Self.square, wide = try TypedIndexingKernelTests.float([2, 3], [1, 2, 3, 4, 5, 6])
        let cases: [(String, String)] = [
            (Self.failure("ij,jk->ik", [m]), "node 'n' (Einsum): equation 'ij,jk->ik' names 2 operands; the node has 1 inputs"),
            (Self.failure("ij->ij", [m, m]), "names 1 operands; the node has 2 inputs"),
            (Self.failure("ij,kl->ik", [m, wide, m]), "names 2 operands; the node has 3 inputs"),
            (Self.failure("ij,jk->ik", [wide, wide]), "letter 'j' has extent 3 in one input and 2 in input 1"),
            (Self.failure("ii->i", [wide]), "letter 'i' has extent 2 in one input and 3 in input 0"),
            (Self.failure("ijk->i", [m]), "equation term 'ijk' names 3 axes; input 0 has shape 2x2"),
            (Self.failure("i$->i", [m]), "holds '$': terms are letters a-z and A-Z, and one '...'"),
            (Self.failure("ij->i->j", [m]), "has more than one '->'"),
            (Self.failure("ij->ii", [m]), "names an output letter twice"),
            (Self.failure("ij->k", [m]), "outputs letter 'k', which no input has"),
            (Self.failure("......->", [m]), "has more than one ellipsis in term '......'"),
            (Self.failure("...ij->ij", try [TypedIndexingKernelTests.float([3, 2, 2], Array(repeating: 1, count: 12))]),
             "has an ellipsis in its inputs but not in its output"),
            (Self.failure("ij", try [TypedIndexingKernelTests.bools([true, false])]), "equation term 'ij' names 2 axes"),
            (TypedIndexingKernelTests.failure("Einsum", [m], opset: 12) ?? "", "attribute 'equation' is required"),
        ]
        for (error, expected) in cases {
            #expect(error.contains(expected), "\(error)")
        }
    }

    /// An output of 2^40 elements, or a sum of 2^40 multiply-adds, is
    /// refused before it runs, from shapes alone: the load of a model whose
    /// operands are a graph input.
    @Test(arguments: [("ab,cd->abcd", "shape [1024, 1024, 1024, 1024] would hold more than"),
                      ("ab,cd->", "takes more than 268435456 multiply-adds, LayerKit's limit for one Einsum")])
    func hugeContractionsAreRefusedAtLoad(_ equation: String, _ expected: String) {
        let node = NormalizationOpsTests.node("Einsum", inputs: ["x", "x"], attributes: [PB.string(1, "equation")
                                                  + PB.bytes(4, Array(equation.utf8)) + PB.int(20, 3)])
        let error = NormalizationOpsTests.loadError(node, opset: 12, shape: [1024, 1024])
        #expect(error.contains("node 'n1' (Einsum): ") && error.contains(expected), "\(error)")
    }
}
