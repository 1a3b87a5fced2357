import Foundation
import Testing
@testable import LayerKitONNX
@testable import LayerKit

/// CenterCropPad, MaxUnpool, Col2Im and Det beyond the onnx node tests:
/// values worked out by hand, and hostile attributes, indices and shapes as
/// errors naming the node.
@Suite struct RegionOpTests {
    static func run(_ op: String, _ inputs: [TypedTensor?], opset: Int = 22, _ attributes: [String: ONNXAttribute] = [:])
        throws -> TypedTensor {
        try TypedIndexingKernelTests.run(op, inputs, opset: opset, attributes)[0]
    }

    static func failure(_ op: String, _ inputs: [TypedTensor?], opset: Int = 22, _ attributes: [String: ONNXAttribute] = [:])
        -> String {
        TypedIndexingKernelTests.failure(op, inputs, opset: opset, attributes) ?? "no error"
    }

    static func int64(_ shape: [Int], _ values: [Int64]) throws -> TypedTensor { try TypedIndexingKernelTests.int64(shape, values) }
    static func float(_ shape: [Int], _ values: [Double]) throws -> TypedTensor { try TypedIndexingKernelTests.float(shape, values) }

    @Test func centerCropPadCropsAndPadsAroundTheCenter() throws {
        // [1, 2, 3, 4, 5] cropped to 2: an odd difference of 3 starts the crop at 1; padded to 8: one zero before, two after.
        let x = try Self.int64([5], [1, 2, 3, 4, 5])
        #expect(try Self.run("CenterCropPad", [x, Self.int64([1], [2])], opset: 18).integers() == [2, 3])
        #expect(try Self.run("CenterCropPad", [x, Self.int64([1], [8])], opset: 18).integers() == [0, 1, 2, 3, 4, 5, 0, 0])
    }

    @Test func maxUnpoolPlacesEachElementAtItsIndex() throws {
        // A 2x2 pool of stride 2 over 4x4 gave [5, 8] at flat indices 5 and 15 (of the 4x2 output's 2 columns).
        let y = try Self.run("MaxUnpool", [Self.float([1, 1, 1, 2], [5, 8]), Self.int64([1, 1, 1, 2], [5, 7])],
                             ["kernel_shape": .ints([2, 2]), "strides": .ints([2, 2])])
        #expect(y.shape == [1, 1, 2, 4] && y.doubles() == [0, 0, 0, 0, 0, 5, 0, 8])
    }

    @Test func col2ImSumsOverlappingBlocks() throws {
        // Blocks of 2 at stride 1 over an image of 3: [a, b] and [c, d] make [a, b + c, d].
        let y = try Self.run("Col2Im", [Self.float([1, 2, 2], [1, 3, 2, 4]), Self.int64([1], [3]), Self.int64([1], [2])], opset: 18)
        #expect(y.shape == [1, 1, 3] && y.doubles() == [1, 2 + 3, 4])
    }

    @Test func determinantsOfABatch() throws {
        // det [[1, 2], [3, 4]] = -2; det [[0, 1], [1, 0]] = -1 (a pivot swap); a singular matrix gives 0.
        let x = try Self.float([3, 2, 2], [1, 2, 3, 4, 0, 1, 1, 0, 1, 2, 2, 4])
        #expect(try Self.run("Det", [x]).doubles() == [-2, -1, 0])
    }

    @Test func hostileInputsAreErrorsNamingTheNode() throws {
        let x = try Self.float([1, 1, 2, 2], [1, 2, 3, 4])
        let cases: [(String, String)] = [
            (Self.failure("CenterCropPad", [x, try Self.int64([2], [1, 1])], opset: 18),
             "node 'n' (CenterCropPad): shape [1, 1] must give one extent >= 0 for each of axes [0, 1, 2, 3], each axis once"),
            (Self.failure("CenterCropPad", [x, try Self.int64([1], [-1])], opset: 18, ["axes": .ints([2])]),
             "shape [-1] must give one extent >= 0"),
            (Self.failure("CenterCropPad", [x, try Self.int64([2], [1 << 40, 1 << 40])], opset: 18, ["axes": .ints([2, 3])]),
             "LayerKit's limit for one tensor"),
            (Self.failure("MaxUnpool", [x, try Self.int64([1, 1, 2, 2], [0, 1, 2, 99])], ["kernel_shape": .ints([1, 1])]),
             "node 'n' (MaxUnpool): index 99 of I (element 3) is outside the unpooled 1x1x2x2"),
            (Self.failure("MaxUnpool", [x, try Self.int64([1, 1, 2, 2], [0, 1, 2, 3])]), "attribute 'kernel_shape' is required"),
            (Self.failure("MaxUnpool", [x, try Self.int64([1, 1, 2, 2], [0, 1, 2, 3])], ["kernel_shape": .ints([0, 1])]),
             "kernel_shape [0, 1] must give 2 values of 1 or more"),
            (Self.failure("MaxUnpool", [x, try Self.int64([1, 1, 2, 2], [0, 1, 2, 3])], ["kernel_shape": .ints([1, 1]),
                                                                                           "strides": .ints([1 << 40, 1])]),
             "attribute 'strides' [1099511627776, 1] must hold values from 0 to 1048576"),
            (Self.failure("MaxUnpool", [x, try Self.int64([1, 1, 2, 2], [0, 1, 2, 3]), try Self.int64([4], [1, 1, 1, 1])],
                          ["kernel_shape": .ints([1, 1])]),
             "output_shape [1, 1, 1, 1] must give 4 extents, each at least the unpooled 1x1x2x2"),
            (Self.failure("Col2Im", try [Self.float([1, 2, 3], Array(repeating: 1, count: 6)), Self.int64([1], [3]),
                                         Self.int64([1], [2])], opset: 18),
             "node 'n' (Col2Im): input 1x2x3 must be [N, C * 2, 2] for block_shape [2] sliding over image_shape [3]"),
            (Self.failure("Col2Im", [x, try Self.int64([1], [3]), try Self.int64([1], [5])], opset: 18),
             "block [5] does not fit image [3] with pads [0, 0]"),
            (Self.failure("Col2Im", [x, try Self.int64([1], [0]), try Self.int64([1], [1])], opset: 18),
             "image_shape [0] and block_shape [1] must give one extent > 0 per spatial axis each"),
            (Self.failure("Det", [try Self.float([2, 3], Array(repeating: 1, count: 6))]),
             "node 'n' (Det): X must be [*, M, M] square matrices, got 2x3"),
        ]
        for (error, expected) in cases {
            #expect(error.contains(expected), "\(error)")
        }
    }
}
