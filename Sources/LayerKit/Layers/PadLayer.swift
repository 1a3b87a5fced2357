import Foundation

/// ONNX Pad: each axis grows by `begins[axis]` before and `ends[axis]`
/// after its elements, filled by `mode`; a negative pad crops, and the
/// mode then pads from what is kept (as onnxruntime does: crop first).
/// Any rank on the CPU; on the GPU up to rank 4, every axis (the channel
/// axis too: TensorFlow's exporters widen residual branches by padding it).
public final class PadLayer: Layer, ShapeLimitedGPULayer, Sendable {
    /// What fills the new elements.
    public enum Mode: String, Sendable, CaseIterable {
        /// `value`.
        case constant
        /// The elements mirrored about the edge, the edge itself not repeated.
        case reflect
        /// The edge element repeated.
        case edge
        /// The elements from the other end, as if the axis were a ring.
        case wrap
    }

    public let begins: [Int]
    public let ends: [Int]
    public let mode: Mode
    /// The constant of `.constant` mode.
    public let value: Float
    /// The pipeline `prepare` made on each context.
    private let gpuKernel = PerContext<GPUKernel<PadConstants>>()

    /// A pad of `begins` and `ends` (one per axis, negative crops) by `mode`.
    public init(begins: [Int], ends: [Int], mode: Mode = .constant, value: Float = 0) throws {
        guard begins.count == ends.count else {
            throw LayerKitError.invalidParameter("Pad: \(begins.count) begin pads but \(ends.count) end pads")
        }
        self.begins = begins
        self.ends = ends
        self.mode = mode
        self.value = value
    }

    public var layerName: String { "Pad" }

    /// Each extent plus its pads; throws for a rank other than the pads', an
    /// extent cropped below zero, or a non-constant pad of an axis left empty.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        guard shape.count == begins.count else {
            throw LayerKitError.shapeMismatch("\(layerName): pads for \(begins.count) axes, input \(Tensor.describe(shape)) "
                                              + "has \(shape.count)")
        }
        var output: [Int] = []
        for axis in shape.indices {
            let (kept, extent) = (kept(axis, of: shape), shape[axis].addingReportingOverflow(begins[axis]))
            let total = extent.partialValue.addingReportingOverflow(ends[axis])
            guard kept.count >= 0, !extent.overflow, !total.overflow, total.partialValue >= 0 else {
                throw LayerKitError.shapeMismatch("\(layerName): pads \(begins[axis]), \(ends[axis]) crop axis \(axis) of "
                                                  + "\(Tensor.describe(shape)) below zero")
            }
            if mode != .constant, kept.count == 0, total.partialValue > 0 {
                throw LayerKitError.shapeMismatch("\(layerName): \(mode.rawValue) mode cannot pad axis \(axis), which "
                                                  + "holds no element")
            }
            output.append(total.partialValue)
        }
        _ = try Tensor.elementCount(of: output)
        return [output]
    }

    /// The part of axis `axis` the negative pads keep: its first index and length.
    private func kept(_ axis: Int, of shape: [Int]) -> (first: Int, count: Int) {
        let first = max(0, -begins[axis])
        return (first, shape[axis] - first - max(0, -ends[axis]))
    }

    /// The input index output index `o` of `axis` reads; nil for the constant.
    static func source(_ o: Int, begin: Int, kept: (first: Int, count: Int), mode: Mode) -> Int? {
        var p = o - max(begin, 0)
        if p >= 0, p < kept.count { return kept.first + p }
        guard kept.count > 0 else { return nil }
        switch mode {
        case .constant: return nil
        case .edge: p = min(max(p, 0), kept.count - 1)
        case .reflect:
            if kept.count == 1 {
                p = 0
            } else {
                let period = 2 * (kept.count - 1)
                p = (p % period + period) % period
                if p >= kept.count { p = period - p }
            }
        case .wrap: p = (p % kept.count + kept.count) % kept.count
        }
        return kept.first + p
    }

    /// Per axis, per output index, the input index read (nil: the constant).
    private func tables(input: [Int], output: [Int]) -> [[Int?]] {
        input.indices.map { axis in
            let kept = kept(axis, of: input)
            return (0..<output[axis]).map { Self.source($0, begin: begins[axis], kept: kept, mode: mode) }
        }
    }

    /// Row by row of the last axis, rows spread over threads: a row whose
    /// outer index reads the constant is filled, any other gathers through
    /// the last axis's table.
    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        try LayerChecks.requireInputCount(inputs.map(\.shape), 1, layer: layerName)
        let (input, shape) = (inputs[0], try outputShapes(forInputShapes: inputs.map(\.shape))[0])
        try LayerChecks.requireOutput(outputs, shape, layer: layerName)
        let output = outputs[0]
        guard output.count > 0 else { return }
        guard !shape.isEmpty else { output[0] = input[0]; return }
        let tables = tables(input: input.shape, output: shape)
        let rank = shape.count
        let row = shape[rank - 1], rows = output.count / row
        var inputStrides = Array(repeating: 1, count: rank)
        for axis in stride(from: rank - 2, through: 0, by: -1) { inputStrides[axis] = inputStrides[axis + 1] * input.shape[axis + 1] }
        let (last, fill, strides) = (tables[rank - 1], value, inputStrides)
        // The last axis's kept run, one block copy; the table for the pads
        // only. Gathering every element through the optional table took
        // 8.2 ms of the style net at 1 thread (16 reflect pads), this and
        // the flat outer table below 4.0 ms (medians of 3 profiles, A/B
        // alternated, load 4.0; onnxruntime 15.4 ms).
        let keptLast = kept(rank - 1, of: input.shape)
        let runStart = min(max(begins[rank - 1], 0), row)
        let runCount = max(0, min(keptLast.count, row - runStart))
        // The outer axes' tables as one flat array of input offsets (-1: the
        // constant): reading the nested optional arrays per row cost more
        // than the row's copy.
        var outerStarts: [Int] = [], outerOffsets: [Int] = []
        for axis in 0..<(rank - 1) {
            outerStarts.append(outerOffsets.count)
            outerOffsets += tables[axis].map { $0.map { $0 * strides[axis] } ?? -1 }
        }
        let (starts, flat) = (outerStarts, outerOffsets)
        forEachChunk(count: rows, chunkSize: max(1, defaultChunkSize / row), threadCount: CPUThreads.current) { range in
            let source = input.dataPointer, destination = output.dataPointer
            for r in range {
                var rest = r, offset = 0, constant = false
                for axis in stride(from: rank - 2, through: 0, by: -1) {
                    let index = rest % shape[axis]
                    rest /= shape[axis]
                    let from = flat[starts[axis] + index]
                    guard from >= 0 else { constant = true; break }
                    offset += from
                }
                let out = destination + r * row
                if constant {
                    out.update(repeating: fill, count: row)
                    continue
                }
                for x in 0..<runStart { out[x] = last[x].map { source[offset + $0] } ?? fill }
                (out + runStart).update(from: source + offset + keptLast.first, count: runCount)
                for x in (runStart + runCount)..<row { out[x] = last[x].map { source[offset + $0] } ?? fill }
            }
        }
    }

    /// Up to rank 4 (the policy checks the rank).
    public var hasGPUImplementation: Bool { true }

    /// A constant fp16 storage cannot keep (1e30 would become infinity) keeps the pad on the CPU.
    public func whyNotGPU(inputShapes: [[Int]], outputShapes: [[Int]]) -> String? {
        guard mode == .constant, let constant = try? Tensor(shape: [1], values: [value]),
              HalfRange(checking: constant) != nil else { return nil }
        return "its constant \(value) is one fp16 storage cannot keep (the GPU would store \(Float(Float16(value))))"
    }

    /// Creates the pipeline on `context`, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try kernel(on: context) }

    private func kernel(on context: GPUContext) throws -> GPUKernel<PadConstants> {
        try gpuKernel.value(on: context) { try BuiltInShaders.pad.kernel(on: context) }
    }

    /// `Shaders/pad.comp`: each output texel reads the input texel (or, with
    /// the channel axis padded, the lanes) its indices map to, or holds the constant.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 1, outputs.count == 1, begins.count <= 4 else {
            throw LayerKitError.unsupported("\(layerName) on the GPU takes 1 input and 1 output image of rank 4 at most")
        }
        let (input, output) = (inputs[0], outputs[0])
        // Pads of the NCHW image (a lower rank's missing trailing axes are unpadded: `Tensor.nchwShape`).
        let padded = Array(repeating: 0, count: 4 - begins.count)
        let (b, e) = (begins + padded, ends + padded)
        let image = input.shape
        guard output.shape == (0..<4).map({ image[$0] + b[$0] + e[$0] }) else {
            throw LayerKitError.shapeMismatch("\(layerName): output image \(Tensor.describe(output.shape)) is not "
                                              + "\(Tensor.describe(image)) padded")
        }
        // Per axis: the first input index kept, how many are kept, where they start in the output.
        let kept = (0..<4).map { axis -> (first: Int32, count: Int32, start: Int32) in
            let first = max(0, -b[axis])
            let count = image[axis] - first - max(0, -e[axis])
            return (Int32(first), Int32(count), Int32(max(0, b[axis])))
        }
        let modes: [Mode] = [.constant, .reflect, .edge, .wrap]
        let constants = PadConstants(
            shape: output.shapeConstants, inputWidth: Int32(input.width), inputHeight: Int32(input.height),
            keptX: kept[3].first, keptY: kept[2].first, keptWidth: kept[3].count, keptHeight: kept[2].count,
            startX: kept[3].start, startY: kept[2].start, mode: UInt32(modes.firstIndex(of: mode) ?? 0), value: value,
            keptC: kept[1].first, keptChannels: kept[1].count, startC: kept[1].start,
            inputSlices: UInt32((image[1] + 3) / 4), keptN: kept[0].first, keptBatch: kept[0].count, startN: kept[0].start)
        try commandBuffer.dispatch(kernel(on: commandBuffer.context), images: [input, output], constants: constants,
                                   threads: output.threads)
    }
}
