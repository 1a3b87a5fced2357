import Testing
@testable import LayerKit

/// The CPU copy of the element movement Slice, Split, Tile and Expand share,
/// after its axes are coalesced, against the window's definition computed
/// index by index here.
struct ElementWindowTests {
    /// Output index `o` along axis `a` reads input index
    /// `(starts[a] + o * steps[a]) mod inputShape[a]`, every axis at once.
    static func reference(_ w: ElementWindow, input: [Float]) -> [Float] {
        let rank = w.outputShape.count
        var inputStrides = Array(repeating: 1, count: rank)
        for axis in (0..<max(0, rank - 1)).reversed() { inputStrides[axis] = inputStrides[axis + 1] * w.inputShape[axis + 1] }
        return (0..<w.outputShape.reduce(1, *)).map { index in
            var rest = index, offset = 0
            for axis in (0..<rank).reversed() {
                let o = rest % w.outputShape[axis]
                rest /= w.outputShape[axis]
                let i = (w.starts[axis] + o * w.steps[axis]) % w.inputShape[axis]
                offset += i * inputStrides[axis]
            }
            return input[offset]
        }
    }

    static let windows: [ElementWindow] = [
        // Channel slice of NCHW (ShuffleNet's split): one run.
        ElementWindow(inputShape: [1, 8, 5, 6], outputShape: [1, 3, 5, 6], starts: [0, 2, 0, 0]),
        // Rows and columns cut: the last two axes stay apart.
        ElementWindow(inputShape: [2, 4, 5, 6], outputShape: [2, 4, 3, 4], starts: [0, 0, 1, 2]),
        // A step of 2 before a whole axis, a step of -1.
        ElementWindow(inputShape: [3, 6, 4], outputShape: [3, 3, 4], starts: [0, 1, 0], steps: [1, 2, 1]),
        ElementWindow(inputShape: [5, 4], outputShape: [3, 4], starts: [4, 0], steps: [-1, 1]),
        // Tiles (indices wrap) and a broadcast (extent 1 read again).
        ElementWindow(inputShape: [2, 3, 4], outputShape: [4, 3, 8]),
        ElementWindow(inputShape: [2, 1, 4], outputShape: [2, 5, 4]),
        ElementWindow(inputShape: [3, 1], outputShape: [3, 6]),
    ]

    @Test(arguments: windows.indices)
    func coalescedCopyMatchesTheDefinition(_ index: Int) throws {
        let w = Self.windows[index]
        let input = (0..<w.inputShape.reduce(1, *)).map(Float.init)
        var output = [Float](repeating: .nan, count: w.outputShape.reduce(1, *))
        input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { w.copy(from: source, to: $0) }
        }
        #expect(output == Self.reference(w, input: input), "\(w)")
        // The coalesced window is the same window: same elements, same order.
        #expect(Self.reference(w.coalesced, input: input) == Self.reference(w, input: input), "\(w.coalesced)")
    }

    @Test func aChannelSliceIsOneRun() {
        let w = Self.windows[0].coalesced
        #expect(w.outputShape == [1, 90] && w.inputShape == [1, 240] && w.starts == [0, 60], "\(w)")
        // A step of 2 keeps its axis; the whole last axis merges only into
        // an axis of step 1.
        #expect(Self.windows[2].coalesced.outputShape == [3, 3, 4])
        #expect(Self.windows[1].coalesced.outputShape == [8, 3, 4])
    }
}
