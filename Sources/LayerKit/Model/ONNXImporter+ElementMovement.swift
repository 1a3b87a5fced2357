import Foundation

/// Element movement on values of any type: the generic `moveElements` of an
/// `ElementMovingLayer` run on the elements' bits, so load-time folding and
/// the `TypedStep`s of a run move int64 indices, float16 weights and strings
/// exactly, with the same code the CPU evaluator runs on float32.
extension ONNXImporter {
    /// `mover`'s element movement on `inputs` (all of one element type),
    /// into outputs of `outputShapes` of that type: on the elements' bits
    /// (strings as they are), so any type moves exactly.
    static func move(_ mover: ElementMovingLayer, _ inputs: [TypedTensor],
                             outputShapes: [[Int]]) throws -> [TypedTensor] {
        let type = inputs[0].elementType
        if type == .string {
            return try zip(moveElements(mover, inputs.map(\.strings), shapes: inputs.map(\.shape), outputShapes: outputShapes, zero: ""),
                           outputShapes).map { try TypedTensor(shape: $1, strings: $0) }
        }
        // Every element's bits as a word of the type's width, stored back as they were.
        switch type.byteWidth {
        case 2: return try moveWords(mover, inputs, UInt16.self, outputShapes: outputShapes)
        case 4: return try moveWords(mover, inputs, UInt32.self, outputShapes: outputShapes)
        case 8: return try moveWords(mover, inputs, UInt64.self, outputShapes: outputShapes)
        default: return try moveWords(mover, inputs, UInt8.self, outputShapes: outputShapes)
        }
    }

    /// `move` on the elements' little-endian words of type `Word` (the
    /// element type's width), the inputs read in place in the tensors'
    /// bytes (hosts are little-endian): a run's `Gather` of ids from an
    /// embedding table copies the rows it picks, never the table.
    private static func moveWords<Word: FixedWidthInteger>(_ mover: ElementMovingLayer, _ inputs: [TypedTensor], _: Word.Type,
                                                           outputShapes: [[Int]]) throws -> [TypedTensor] {
        let targets = try outputShapes.map { shape in
            let buffer = UnsafeMutableBufferPointer<Word>.allocate(capacity: try Tensor.elementCount(of: shape))
            buffer.initialize(repeating: 0)
            return buffer
        }
        defer { for buffer in targets { buffer.deallocate() } }
        try words(of: inputs.map(\.bytes)[...], Word.self, bound: []) { sources in
            try mover.moveElements(inputs: sources, inputShapes: inputs.map(\.shape), outputs: targets)
        }
        return try zip(targets, outputShapes).map { words, shape in
            try TypedTensor(elementType: inputs[0].elementType, shape: shape, bytes: Array(UnsafeRawBufferPointer(words)))
        }
    }

    /// `body` on each of `arrays`' bytes as words of `Word`, in place (an
    /// array's storage is aligned for any word; one that is not is copied).
    private static func words<Word: FixedWidthInteger, R>(of arrays: ArraySlice<[UInt8]>, _: Word.Type,
                                                          bound: [UnsafeBufferPointer<Word>],
                                                          _ body: ([UnsafeBufferPointer<Word>]) throws -> R) throws -> R {
        guard let first = arrays.first else { return try body(bound) }
        return try first.withUnsafeBytes { raw in
            let size = MemoryLayout<Word>.size
            guard Int(bitPattern: raw.baseAddress) % MemoryLayout<Word>.alignment == 0 else {
                let copied = (0..<raw.count / size).map { raw.loadUnaligned(fromByteOffset: $0 * size, as: Word.self) }
                return try copied.withUnsafeBufferPointer { try words(of: arrays.dropFirst(), Word.self, bound: bound + [$0], body) }
            }
            return try raw.withMemoryRebound(to: Word.self) { try words(of: arrays.dropFirst(), Word.self, bound: bound + [$0], body) }
        }
    }

    /// `mover`'s element movement on arrays of `Element`, into outputs of `outputShapes`.
    private static func moveElements<Element>(_ mover: ElementMovingLayer, _ inputs: [[Element]], shapes: [[Int]],
                                              outputShapes: [[Int]], zero: Element) throws -> [[Element]] {
        let sources = inputs.map { values in
            let buffer = UnsafeMutableBufferPointer<Element>.allocate(capacity: max(values.count, 1))
            _ = buffer.initialize(from: values)
            return (buffer, values.count)
        }
        let targets = try outputShapes.map { shape in
            let count = try Tensor.elementCount(of: shape)
            let buffer = UnsafeMutableBufferPointer<Element>.allocate(capacity: max(count, 1))
            buffer.initialize(repeating: zero)
            return (buffer, count)
        }
        defer {
            for (buffer, _) in sources + targets {
                buffer.deinitialize()
                buffer.deallocate()
            }
        }
        try mover.moveElements(inputs: sources.map { UnsafeBufferPointer(rebasing: $0.0[..<$0.1]) },
                               inputShapes: shapes, outputs: targets.map { UnsafeMutableBufferPointer(rebasing: $0.0[..<$0.1]) })
        return targets.map { Array($0.0[..<$0.1]) }
    }
}
