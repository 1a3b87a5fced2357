import CKernels
import Foundation

/// The windows of a pool over up to three spatial axes, fewer given unit
/// axes in front: what the backward pass of every windowed and global pool
/// walks.
struct PoolWindows: Sendable {
    /// The input's and output's spatial extents (3 each).
    var input: [Int]
    var output: [Int]
    /// Per axis: window extent, step, spacing between cells, and the pad
    /// cells before and after the input.
    var kernel: [Int]
    var stride: [Int]
    var dilation: [Int]
    var padBegin: [Int]
    var padEnd: [Int]

    /// Windows of `axes` (one per spatial axis, at most 3) over `input`
    /// spatial extents.
    init(input: [Int], axes: [Padding.Axis], kernel: [Int], stride: [Int], dilation: [Int]) {
        let lead = 3 - input.count
        let ones = Array(repeating: 1, count: lead), zeros = Array(repeating: 0, count: lead)
        self.input = ones + input
        output = ones + axes.map(\.output)
        self.kernel = ones + kernel
        self.stride = ones + stride
        self.dilation = ones + dilation
        padBegin = zeros + axes.map(\.begin)
        padEnd = zeros + axes.map(\.end)
    }

    /// One window over a whole plane of `cells` (a global pool).
    init(plane cells: Int) {
        self.init(input: [cells], axes: [Padding.Axis(begin: 0, end: 0, output: 1)], kernel: [cells], stride: [1],
                  dilation: [1])
    }

    var inputPlane: Int { input.reduce(1, *) }
    var outputPlane: Int { output.reduce(1, *) }

    /// The input positions along `axis` of the cells of window `o`
    /// (inside the input), with how many cells of it the divisor of an
    /// average counts (inside the input, or inside the padded extent when
    /// `includePad`: the same count the forward pools divide by).
    func cells(axis: Int, window o: Int, includePad: Bool) -> (positions: [Int], count: Int) {
        let start = o * stride[axis] - padBegin[axis]
        let (lo, hi) = includePad ? (-padBegin[axis], input[axis] + padEnd[axis]) : (0, input[axis])
        var positions: [Int] = [], count = 0
        for k in 0..<kernel[axis] {
            let i = start + k * dilation[axis]
            if (lo..<hi).contains(i) { count += 1 }
            if (0..<input[axis]).contains(i) { positions.append(i) }
        }
        return (positions, count)
    }
}

/// What a pool's backward pass sends each input cell of a window.
enum PoolGradientRule: Sendable {
    /// All of the window's gradient to its first maximal cell in row-major
    /// window order (strictly greater replaces); `nanWins`: a NaN is the
    /// maximum (windowed MaxPool propagates NaN), else NaN cells are skipped
    /// (GlobalMaxPool skips them).
    case max(nanWins: Bool)
    /// g / count to every cell inside the input.
    case average(includePad: Bool)
    /// g * sign(x) * |x|^(p-1) / y^(p-1), y the window's p-norm (0 where y is 0).
    case lpNorm(p: Int)

    /// dLoss/dInput of a pool over `planes` planes (N * C): `input` the
    /// forward input, `gradient` dLoss/dOutput, both NCHW-contiguous; each
    /// input cell sums, in double precision and in a fixed order, what every
    /// window it lies in sends it. Deterministic: planes are independent.
    func inputGradient(windows: PoolWindows, planes: Int, input: Tensor, gradient: Tensor) throws -> Tensor {
        let result = try Tensor(shape: input.shape)
        let inPlane = windows.inputPlane, outPlane = windows.outputPlane
        guard inPlane > 0, outPlane > 0 else { return result }
        // Per axis and window: its cells inside the input and its divisor.
        let includePad = if case .average(true) = self { true } else { false }
        let cells = (0..<3).map { axis in
            (0..<windows.output[axis]).map { windows.cells(axis: axis, window: $0, includePad: includePad) }
        }
        let (rows, columns) = (windows.input[1], windows.input[2])
        let rule = self
        let chunk = Swift.max(1, defaultChunkSize / Swift.max(inPlane + outPlane, 1))
        forEachChunk(count: planes, chunkSize: chunk, threadCount: CPUThreads.current) { range in
            var sums = [Double](repeating: 0, count: inPlane)
            var window: [Int] = []
            for plane in range {
                let x = input.dataPointer + plane * inPlane, g = gradient.dataPointer + plane * outPlane
                for i in sums.indices { sums[i] = 0 }
                var o = 0
                for c0 in cells[0] {
                    for c1 in cells[1] {
                        for c2 in cells[2] {
                            defer { o += 1 }
                            let go = Double(g[o])
                            // The window's input cells in row-major window order.
                            window.removeAll(keepingCapacity: true)
                            for i0 in c0.positions {
                                for i1 in c1.positions {
                                    for i2 in c2.positions { window.append((i0 * rows + i1) * columns + i2) }
                                }
                            }
                            rule.send(go, over: window, x, count: c0.count * c1.count * c2.count, into: &sums)
                        }
                    }
                }
                let dx = result.dataPointer + plane * inPlane
                for i in 0..<inPlane { dx[i] = Float(sums[i]) }
            }
        }
        return result
    }

    /// Adds what the window of input cells `window` (offsets into `x`),
    /// whose output's gradient is `g`, sends each cell to `sums`.
    private func send(_ g: Double, over window: [Int], _ x: UnsafeMutablePointer<Float>, count: Int,
                      into sums: inout [Double]) {
        switch self {
        case .max(let nanWins):
            var best = -Float.infinity, chosen = -1
            for i in window {
                let v = x[i]
                if v.isNaN {
                    if nanWins, chosen < 0 || !best.isNaN { (best, chosen) = (v, i) }
                } else if chosen < 0 || v > best, !best.isNaN {
                    (best, chosen) = (v, i)
                }
            }
            // A window of -inf cells only still has its first cell as the maximum;
            // a window over no input cell sends nothing.
            if chosen >= 0 { sums[chosen] += g }
        case .average:
            guard count > 0 else { return }
            let share = g / Double(count)
            for i in window { sums[i] += share }
        case .lpNorm(let p):
            var norm = 0.0
            for i in window { norm += Foundation.pow(Swift.abs(Double(x[i])), Double(p)) }
            guard norm > 0 else { return }
            let y = Foundation.pow(norm, 1 / Double(p))
            for i in window {
                let v = Double(x[i])
                let magnitude = p == 1 ? 1 : Foundation.pow(Swift.abs(v) / y, Double(p - 1))
                sums[i] += g * (v > 0 ? magnitude : v < 0 ? -magnitude : 0)
            }
        }
    }
}

/// The backward pass of MaxPool, AveragePool, GlobalAveragePool and
/// GlobalMaxPool (no parameters). MaxPool sends each window's gradient to
/// its first maximal input cell in row-major window order (a tie goes to the
/// first index; a NaN, which MaxPool propagates, is the maximum);
/// GlobalMaxPool to the first maximum of the plane, NaN skipped as the
/// forward pass skips it. AveragePool sends g / count to each input cell of
/// the window, count being its divisor (pad cells counted with
/// `countIncludePad`). These run on the CPU (`GradientRunner.cpu`).
/// GlobalAveragePool's g / (H * W) is a broadcast product through the
/// runner (the GPU when in use).
extension Pooling: ParameterFreeGradients {
    func gradients(of step: GradientStep, on runner: GradientRunner) throws -> LayerGradients {
        guard let g = try StructuralGradient.outputGradient(step, of: self, inputCount: 1) else {
            return try StructuralGradient.zeroGradients(step)
        }
        guard step.needsInputGradients[0] else { return LayerGradients(inputs: [nil]) }
        let input = step.inputs[0]
        let planes = input.shape[0] * input.shape[1]
        let plane = LayerChecks.product(input.shape[2...])
        switch kind {
        case .globalAverage:
            // g [N, C, 1...] times 1 / (H * W) over a [1, 1, H, W...] plane: the broadcast product.
            let share = try Tensor(shape: [1, 1] + input.shape[2...],
                                   values: Array(repeating: Float(1 / Double(plane)), count: plane))
            return LayerGradients(inputs: [try StructuralGradient.binary(.mul, g, share, on: runner)])
        case .globalMax:
            let dx = try runner.cpu("\(layerName) backward") {
                try PoolGradientRule.max(nanWins: false).inputGradient(
                    windows: PoolWindows(plane: plane), planes: planes, input: input, gradient: g)
            }
            return LayerGradients(inputs: [dx])
        case .max, .average(_):
            let p = try kernelParameters(input.shape)
            let dx = try runner.cpu("\(layerName) backward") {
                let dx = try Tensor(shape: input.shape)
                let (inPlane, outPlane) = (p.in_h * p.in_w, p.out_h * p.out_w)
                let chunk = Swift.max(1, defaultChunkSize / Swift.max(inPlane + outPlane, 1))
                let scratchFloats = withUnsafePointer(to: p) { lk_pool2d_backward_scratch_floats($0) }
                forEachChunk(count: planes, chunkSize: chunk, threadCount: CPUThreads.current) { range in
                    withUnsafeTemporaryAllocation(of: Float.self, capacity: scratchFloats) { scratch in
                        withUnsafePointer(to: p) { p in
                            lk_pool2d_backward_f32(p, input.dataPointer + range.lowerBound * inPlane,
                                                   g.dataPointer + range.lowerBound * outPlane,
                                                   dx.dataPointer + range.lowerBound * inPlane, range.count,
                                                   scratch.baseAddress!)
                        }
                    }
                }
                return dx
            }
            return LayerGradients(inputs: [dx])
        }
    }
}

/// The backward pass of the 1-D to 3-D MaxPool (with or without Indices),
/// AveragePool and LpPool (no parameters), on the CPU: MaxPool's and
/// AveragePool's rules are `Pooling`'s; LpPool sends
/// g * sign(x) * (|x| / y)^(p-1) (0 where the window's norm y is 0). The
/// Indices output has no gradient (its gradient, if given, is ignored).
extension GeneralPooling: ParameterFreeGradients {
    func gradients(of step: GradientStep, on runner: GradientRunner) throws -> LayerGradients {
        guard let g = try StructuralGradient.outputGradient(step, of: self, inputCount: 1) else {
            return try StructuralGradient.zeroGradients(step)
        }
        guard step.needsInputGradients[0] else { return LayerGradients(inputs: [nil]) }
        let input = step.inputs[0]
        let windows = PoolWindows(input: Array(input.shape[2...]), axes: try windows(input.shape), kernel: kernel,
                                  stride: strides, dilation: dilations)
        let rule: PoolGradientRule = switch kind {
        case .max: .max(nanWins: true)
        case .average(let includePad): .average(includePad: includePad)
        case .lpNorm(let p): .lpNorm(p: p)
        }
        let dx = try runner.cpu("\(layerName) backward") {
            try rule.inputGradient(windows: windows, planes: input.shape[0] * input.shape[1], input: input, gradient: g)
        }
        return LayerGradients(inputs: [dx])
    }
}
