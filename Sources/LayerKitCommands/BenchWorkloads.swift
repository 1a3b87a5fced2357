import Foundation
import LayerKit

/// The timed loops of `layerkit bench`, on one layer and input. Bytes count
/// what a run reads and writes: Float32 tensors for the CPU and for the GPU
/// end to end, fp16 images (padding lanes included) for GPU kernels and copies.
enum BenchWorkloads {
    /// Float32 bytes of `layer`'s inputs and outputs for `input`.
    static func tensorBytes(_ layer: Layer, input: Tensor) throws -> Int {
        let outputs = try layer.outputShapes(forInputShapes: [input.shape])
        return 4 * (input.count + (try outputs.reduce(0) { $0 + (try Tensor.elementCount(of: $1)) }))
    }

    /// fp16 image bytes of a tensor of `shape` (8 a texel of four channels).
    static func imageBytes(_ shape: [Int]) throws -> Int {
        let s = try Tensor.nchwShape(shape)
        return s[0] * ((s[1] + 3) / 4) * s[2] * s[3] * 8
    }

    /// The CPU evaluation into preallocated outputs (`kernel`) and
    /// `Backend.run` with its output allocation (`endToEnd`).
    static func cpu(_ layer: Layer, input: Tensor, warmup: Int, runs: Int,
                    progress: ProgressBar? = nil) throws -> [BenchMeasurement] {
        let outputs = try layer.outputShapes(forInputShapes: [input.shape]).map { try Tensor(shape: $0) }
        let bytes = try tensorBytes(layer, input: input)
        let kernel = try Timing.measure(warmup: warmup, runs: runs, progress: progress) {
            try layer.evaluate(inputs: [input], outputs: outputs)
        }
        let backend = try Backend(computeUnits: .cpuOnly, notice: { _ in })
        let endToEnd = try Timing.measure(warmup: warmup, runs: runs, progress: progress) {
            _ = try backend.run(layer, inputs: [input])
        }
        return [BenchMeasurement("cpu", "kernel", samples: kernel, elements: input.count, bytes: bytes),
                BenchMeasurement("cpu", "endToEnd", samples: endToEnd, elements: input.count, bytes: bytes)]
            .compactMap { $0 }
    }

    /// A run's upload, kernel and download times (ms) from its marks, in
    /// order: start, upload, kernel, download, once per piece of a run in
    /// pieces, so each phase is summed over the pieces (the first piece's
    /// alone made a 16-piece Swish on an H200 read 125% of its bandwidth).
    /// Nil without a complete set of marks.
    static func phases(of marks: [(label: String, ms: Double)]) -> (upload: Double, kernel: Double, download: Double)? {
        var totals = (upload: 0.0, kernel: 0.0, download: 0.0), pieces = 0
        var last: Double?
        for (label, ms) in marks {
            switch label {
            case "upload": totals.upload += ms - (last ?? ms)
            case "kernel": totals.kernel += ms - (last ?? ms)
            case "download": totals.download += ms - (last ?? ms); pieces += 1
            default: break
            }
            last = ms
        }
        return pieces > 0 ? totals : nil
    }

    /// The GPU path through `Backend.run` (Float32 in, upload, dispatch,
    /// download, Float32 out) with timestamps on and, with
    /// `compareTimestamps`, off, runs alternating so that both see the same
    /// machine load; the kernel and the copies from the timestamped runs'
    /// marks. Also the timestamps' overhead: the relative difference of the
    /// two end-to-end medians (0 without `compareTimestamps`).
    static func gpu(_ layer: Layer, input: Tensor, context: GPUContext, warmup: Int, runs: Int,
                    compareTimestamps: Bool = true, progress: ProgressBar? = nil) throws -> (measurements: [BenchMeasurement], timestampOverhead: Double) {
        // `BenchCommand.targets` has noted where the layer runs already.
        let stamped = try Backend(computeUnits: .gpu, context: context, notice: { _ in })
        let plain = try Backend(computeUnits: .gpu, context: context, timestamps: false, notice: { _ in })
        let order = compareTimestamps ? [[stamped, plain], [plain, stamped]] : [[stamped], [stamped]]
        var on: [Double] = [], off: [Double] = [], kernel: [Double] = [], upload: [Double] = [], download: [Double] = []
        let clock = ContinuousClock()
        for run in 0..<(warmup + runs) {
            defer { progress?.advance() }
            var phases: (upload: Double, kernel: Double, download: Double)?
            // Alternate which goes first.
            for backend in order[run % 2] {
                let start = clock.now
                let result = try backend.run(layer, inputs: [input])
                let elapsed = Timing.milliseconds(clock.now - start)
                guard run >= warmup else { continue }
                if backend === stamped {
                    on.append(elapsed)
                    phases = Self.phases(of: result.gpuTimestamps.map { (label: $0.label, ms: $0.nanoseconds / 1e6) })
                } else {
                    off.append(elapsed)
                }
            }
            if let phases {
                upload.append(phases.upload)
                kernel.append(phases.kernel)
                download.append(phases.download)
            }
        }
        let outputShapes = try layer.outputShapes(forInputShapes: [input.shape])
        let inBytes = try imageBytes(input.shape)
        let outBytes = try outputShapes.reduce(0) { $0 + (try imageBytes($1)) }
        let bytes = try tensorBytes(layer, input: input)
        let n = input.count
        let measurements = [
            BenchMeasurement("gpu", "kernel", samples: kernel, elements: n, bytes: inBytes + outBytes),
            BenchMeasurement("gpu", "endToEnd", samples: on, elements: n, bytes: bytes),
            BenchMeasurement("gpu", "endToEndTimestampsOff", samples: off, elements: n, bytes: bytes),
            BenchMeasurement("gpu", "uploadCopy", samples: upload, elements: n, bytes: 2 * inBytes),
            BenchMeasurement("gpu", "downloadCopy", samples: download, elements: n, bytes: 2 * outBytes),
        ].compactMap { $0 }
        let onMedian = TimingStats(samples: on)?.medianMs ?? 0
        let offMedian = TimingStats(samples: off)?.medianMs ?? 0
        return (measurements, offMedian > 0 ? (onMedian - offMedian) / offMedian : 0)
    }
}
