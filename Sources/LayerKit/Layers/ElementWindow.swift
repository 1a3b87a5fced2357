import Foundation

/// The element movement Slice, Split, Tile and Expand share: output index
/// `o` along axis `a` reads input index `(starts[a] + o * steps[a])`
/// wrapped into `inputShape[a]`. A slice is a strided window whose indices
/// stay in range; a tile or a broadcast starts at 0 with step 1 and wraps
/// (an extent of 1 always reads index 0). One description, run by the
/// generic CPU copy and by `Shaders/window.comp`.
struct ElementWindow: Sendable, Equatable {
    /// The input's extents, aligned to the output's rank (Expand prepends
    /// 1s to a lower-rank input: the row-major order is the input's).
    let inputShape: [Int]
    let outputShape: [Int]
    /// Per axis: the input index of output index 0, non-negative.
    let starts: [Int]
    /// Per axis: the input index step per output index (negative runs backwards).
    let steps: [Int]

    /// A window; every index it reads must lie in the input (`starts` in
    /// range, `start + (extent - 1) * step` too unless it wraps).
    init(inputShape: [Int], outputShape: [Int], starts: [Int]? = nil, steps: [Int]? = nil) {
        self.inputShape = inputShape
        self.outputShape = outputShape
        self.starts = starts ?? Array(repeating: 0, count: outputShape.count)
        self.steps = steps ?? Array(repeating: 1, count: outputShape.count)
    }

    /// The same window over fewer axes: an axis of step 1 followed by an
    /// axis taken whole (start 0, step 1, the input's extent) reads one
    /// contiguous run of the input for both, so the two become one axis.
    /// A channel slice of an NCHW image is then one run, not one per row
    /// (ShuffleNetV2's 26 channel splits took 7 µs each, row by row). Runs
    /// grow to `defaultChunkSize` elements at most, so that a large copy
    /// still splits over threads.
    var coalesced: ElementWindow {
        var (input, output, starts, steps) = (inputShape, outputShape, starts, steps)
        var axis = output.count - 2
        while axis >= 0 {
            let next = axis + 1
            if steps[axis] == 1, starts[next] == 0, steps[next] == 1, input[next] == output[next],
               output[axis] * output[next] <= defaultChunkSize {
                // Index o * extent + p of the merged axis reads
                // (start + o) * extent + p: start * extent, step 1.
                starts[axis] *= input[next]
                input[axis] *= input[next]
                output[axis] *= output[next]
                input.remove(at: next)
                output.remove(at: next)
                starts.remove(at: next)
                steps.remove(at: next)
            }
            axis -= 1
        }
        return ElementWindow(inputShape: input, outputShape: output, starts: starts, steps: steps)
    }

    /// Copies the window of `input` into `output` (row by row along the
    /// last axis of its coalesced form, rows spread over the current run's
    /// threads).
    func copy<Element>(from input: UnsafeBufferPointer<Element>, to output: UnsafeMutableBufferPointer<Element>) {
        coalesced.copyCoalesced(from: input, to: output)
    }

    /// `copy` on a window already coalesced.
    private func copyCoalesced<Element>(from input: UnsafeBufferPointer<Element>,
                                        to output: UnsafeMutableBufferPointer<Element>) {
        let rank = outputShape.count
        guard rank > 0 else {
            if !output.isEmpty, !input.isEmpty { output[0] = input[0] }
            return
        }
        let count = outputShape.reduce(1, *)
        // An empty input makes an empty output (a 0 extent is never widened).
        guard count > 0, output.count >= count, input.baseAddress != nil, output.baseAddress != nil else { return }
        let inner = outputShape[rank - 1]
        let rows = count / inner
        var inputStrides = Array(repeating: 1, count: rank)
        for axis in (0..<rank - 1).reversed() { inputStrides[axis] = inputStrides[axis + 1] * inputShape[axis + 1] }
        let strides = inputStrides
        let pointers = SendableBuffers(input: input, output: output)
        let window = self
        forEachChunk(count: rows, chunkSize: max(1, defaultChunkSize / inner), threadCount: CPUThreads.current) { range in
            window.copyRows(range, strides: strides, pointers)
        }
    }

    /// The rows (output positions along every axis but the last) in `range`.
    private func copyRows<Element>(_ range: Range<Int>, strides: [Int], _ pointers: SendableBuffers<Element>) {
        let rank = outputShape.count
        let inner = outputShape[rank - 1]
        let (input, output) = (pointers.input, pointers.output)
        guard let source = input.baseAddress, let destination = output.baseAddress else { return }
        let (lastStart, lastStep, lastExtent) = (starts[rank - 1], steps[rank - 1], inputShape[rank - 1])
        for row in range {
            // The input offset of the row's first element, axis by axis.
            var rest = row, base = 0
            for axis in (0..<rank - 1).reversed() {
                let o = rest % outputShape[axis]
                rest /= outputShape[axis]
                base += Self.wrap(starts[axis] + o * steps[axis], inputShape[axis]) * strides[axis]
            }
            var target = row * inner
            if lastStep == 1 {
                // Contiguous runs: one for a slice, one per repetition for a tile.
                if lastExtent == 1 {
                    (destination + target).update(repeating: source[base], count: inner)
                    continue
                }
                var position = Self.wrap(lastStart, lastExtent), remaining = inner
                while remaining > 0 {
                    let run = min(remaining, lastExtent - position)
                    (destination + target).update(from: source + base + position, count: run)
                    target += run
                    remaining -= run
                    position = 0
                }
            } else {
                for o in 0..<inner {
                    destination[target + o] = source[base + Self.wrap(lastStart + o * lastStep, lastExtent)]
                }
            }
        }
    }

    /// An index >= 0 wrapped into `0..<extent`.
    @inline(__always)
    private static func wrap(_ index: Int, _ extent: Int) -> Int { index >= extent ? index % extent : index }

    // MARK: - GPU

    /// Whether `Shaders/window.comp` can run this window: rank 1 to 4 and
    /// every extent, index and product within its 32-bit arithmetic.
    var fitsShader: Bool {
        guard (1...4).contains(outputShape.count), inputShape.count == outputShape.count else { return false }
        let limit = Int(Int32.max)
        return inputShape.reduce(1, { $0 * $1 }) <= limit && outputShape.reduce(1, { $0 * $1 }) <= limit
            && starts.allSatisfy { $0 <= limit } && steps.allSatisfy { $0.magnitude <= limit }
    }

    /// The push constants of `Shaders/window.comp` that write `output` from `input`.
    func constants(input: SliceImage, output: SliceImage, layer: String) throws -> WindowConstants {
        guard fitsShader else {
            throw LayerKitError.unsupported(
                "\(layer): the window \(Tensor.describe(inputShape)) -> \(Tensor.describe(outputShape)) does not fit "
                + "the GPU shader's 32-bit indices")
        }
        let pad = 4 - outputShape.count
        let four = { (values: [Int], fill: Int) in
            SIMD4<Int32>((values + Array(repeating: fill, count: pad)).map { Int32($0) })
        }
        return WindowConstants(shape: output.shapeConstants, inputWidth: UInt32(input.width),
                               inputHeight: UInt32(input.height), inputChannels: UInt32(input.featureChannels),
                               start: four(starts, 0), step: four(steps, 1), extent: four(inputShape, 1))
    }

    /// Encodes the window from `input` into `output` with `kernel`.
    func encode(_ kernel: GPUKernel<WindowConstants>, commandBuffer: GPUCommandBuffer, input: SliceImage,
                output: SliceImage, layer: String) throws {
        guard try Tensor.nchwShape(outputShape) == output.shape else {
            throw LayerKitError.shapeMismatch(
                "\(layer): output image \(Tensor.describe(output.shape)) is not the window's \(Tensor.describe(outputShape))")
        }
        guard input.count == inputShape.reduce(1, *) else {
            throw LayerKitError.shapeMismatch(
                "\(layer): input image \(Tensor.describe(input.shape)) does not hold \(Tensor.describe(inputShape))")
        }
        try commandBuffer.dispatch(kernel, images: [input, output],
                                   constants: constants(input: input, output: output, layer: layer),
                                   threads: output.threads)
    }

    /// The window kernel on `context`, compiled once per context.
    static func kernel(on context: GPUContext) throws -> GPUKernel<WindowConstants> {
        try BuiltInShaders.window.kernel(on: context)
    }
}

/// An input and an output buffer handed to the worker threads of one copy,
/// which write disjoint rows; the caller keeps the memory alive.
struct SendableBuffers<Element>: @unchecked Sendable {
    let input: UnsafeBufferPointer<Element>
    let output: UnsafeMutableBufferPointer<Element>
}

/// A layer of one input whose whole movement is one `ElementWindow` of it
/// (Slice, Tile, Expand): the output shape, the CPU copy and the GPU
/// pipeline all follow from `window(for:)`; the layer itself only encodes
/// (where its image's padding to rank 4 needs its own handling).
protocol WindowLayer: ElementMovingLayer {
    /// The window the layer takes of an input of `shape`; throws, naming the
    /// layer, for a shape it cannot take.
    func window(for shape: [Int]) throws -> ElementWindow
}

extension WindowLayer {
    /// The window's output shape.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        return [try window(for: inputShapes[0]).outputShape]
    }

    /// The window's CPU copy.
    func moveElements<Element>(inputs: [UnsafeBufferPointer<Element>], inputShapes: [[Int]],
                               outputs: [UnsafeMutableBufferPointer<Element>]) throws {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        try window(for: inputShapes[0]).copy(from: inputs[0], to: outputs[0])
    }

    /// Creates `Shaders/window.comp`'s pipeline on `context`, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try ElementWindow.kernel(on: context) }
}
