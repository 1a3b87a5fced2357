import Foundation

/// Which processors layers may run on.
public enum ComputeUnits: String, Sendable, CaseIterable {
    /// The CPU evaluator only.
    case cpuOnly
    /// The GPU for every layer that has `encode`, on whichever Vulkan device
    /// was chosen, a CPU-emulated one (lavapipe) included. Required: a
    /// backend or model asking for it throws when no device can be opened.
    case gpu
    /// LayerKit decides: the GPU on real GPU hardware; on a CPU-type Vulkan
    /// device, or with no device at all, the CPU evaluator (it says why).
    case automatic
}

/// Where a layer runs, and why when it is not where it could have been.
public enum Placement: Sendable, Equatable {
    case cpu(reason: String?)
    case gpu

    public var isGPU: Bool { self == .gpu }
}

/// The result of running one layer.
public struct LayerRun: Sendable {
    /// One tensor per layer output.
    public let outputs: [Tensor]
    /// Where it ran.
    public let placement: Placement
    /// GPU timestamps (`start`, `upload`, `kernel`, `download` marks), empty
    /// on the CPU or when the backend's `timestamps` is off.
    public let gpuTimestamps: [GPUTimestamp]
}

/// Runs layers on the GPU or the CPU according to `ComputeUnits`, the
/// device, and what each layer implements, like Core ML's dispatcher.
///
/// Every fallback to the CPU is announced once (one line through `notice`),
/// never silent. Thread-safe: a backend may be shared by threads.
public final class Backend: @unchecked Sendable {
    public let computeUnits: ComputeUnits
    /// The GPU, when one could be opened and `computeUnits` allows it.
    public let gpu: GPUContext?
    /// Why there is no GPU, when `computeUnits` wanted one.
    public let gpuUnavailableReason: String?
    /// Whether GPU runs record their `start`/`upload`/`kernel`/`download`
    /// timestamps (`LayerRun.gpuTimestamps`); off, a run records none.
    public let timestamps: Bool
    private let notice: @Sendable (String) -> Void
    private let lock = NSLock()
    private var announced: Set<String> = []

    /// Opens the GPU unless `computeUnits` is `.cpuOnly`. With `.automatic`
    /// a missing device is not an error: the backend runs on the CPU and says
    /// so; with `.gpu` it throws `LayerKitError.gpuUnavailable`.
    /// Pass `context` to share an open device.
    /// `timestamps` false leaves GPU runs without timestamps.
    public init(computeUnits: ComputeUnits = .automatic, context: GPUContext? = nil, validation: Bool? = nil,
                timestamps: Bool = true, notice: @escaping @Sendable (String) -> Void = { _ in }) throws {
        self.computeUnits = computeUnits
        self.timestamps = timestamps
        self.notice = notice
        if computeUnits == .cpuOnly {
            gpu = nil
            gpuUnavailableReason = nil
        } else if let context {
            gpu = context
            gpuUnavailableReason = nil
        } else {
            do {
                gpu = try GPUContext(validation: validation)
                gpuUnavailableReason = nil
            } catch {
                if computeUnits == .gpu { throw LayerKitError.gpuUnavailable("no usable Vulkan device: \(error)") }
                gpu = nil
                gpuUnavailableReason = "no usable Vulkan device (\(error))"
            }
        }
    }

    /// Where `layer` will run, with the reason when it is the CPU although a
    /// GPU was allowed.
    public func placement(for layer: Layer) -> Placement {
        guard computeUnits != .cpuOnly else { return .cpu(reason: nil) }
        guard let why = whyNotGPU(layer) else { return .gpu }
        return .cpu(reason: "\(layer.layerName) runs on the CPU: \(why)")
    }

    /// Why `layer` cannot or should not run on the GPU this backend allows;
    /// nil when it runs there.
    func whyNotGPU(_ layer: Layer) -> String? {
        guard let gpu else { return gpuUnavailableReason ?? "no GPU" }
        guard layer.hasGPUImplementation else { return "it has no GPU implementation (encode)" }
        if computeUnits == .automatic, gpu.deviceInfo.kind == .cpu {
            return "the Vulkan device \(gpu.deviceInfo.name) is a CPU emulation, slower than the CPU evaluator "
                + "(--backend gpu forces it)"
        }
        return nil
    }

    /// Runs `layer` on `inputs`, allocating outputs from `outputShapes`.
    /// On the GPU, inputs past the device's image limits run in pieces when
    /// the layer is a `PerElementLayer`; for any other layer that throws,
    /// naming the limit. With a `profiler`, the run's steps are recorded
    /// there: the CPU evaluation, or every upload, dispatch, download,
    /// recording, submit and wait (see `Profiler`).
    public func run(_ layer: Layer, inputs: [Tensor], profiler: Profiler? = nil) throws -> LayerRun {
        let shapes = try layer.outputShapes(forInputShapes: inputs.map(\.shape))
        let outputs = try shapes.map { try Tensor(shape: $0) }
        let placement = placement(for: layer)
        guard placement.isGPU, let gpu else {
            if case .cpu(let reason?) = placement { announce(reason) }
            try profiler.withOp(layer.layerName) {
                try profiler.evaluate(layer, inputs: inputs, outputs: outputs, name: layer.layerName)
            }
            return LayerRun(outputs: outputs, placement: placement, gpuTimestamps: [])
        }
        if let perElement = layer as? PerElementLayer, shapes == inputs.map(\.shape),
           try inputs.contains(where: { try !gpu.fitsOneImage($0) }) {
            return try runInPieces(perElement, inputs: inputs, outputs: outputs, on: gpu, profiler: profiler)
        }
        var inputImages: [SliceImage] = []
        var outputImages: [SliceImage] = []
        let stamps = try runStamped(on: gpu, profiler: profiler, upload: { commands in
            inputImages = try inputs.map { input in
                let image = try gpu.makeSliceImage(like: input)
                try commands.upload(input, to: image)
                return image
            }
        }, encode: { commands in
            outputImages = try outputs.map { try gpu.makeSliceImage(like: $0) }
            try profiler.withOp(layer.layerName) {
                try layer.encode(commandBuffer: commands, inputs: inputImages, outputs: outputImages)
            }
        }, download: { commands in
            for (image, tensor) in zip(outputImages, outputs) { try commands.download(image, into: tensor) }
        })
        return LayerRun(outputs: outputs, placement: .gpu, gpuTimestamps: stamps)
    }

    /// Records the uploads, the kernels and the downloads in one command
    /// buffer between the `start`, `upload`, `kernel` and `download` marks,
    /// submits it and waits; returns the marks (none when `timestamps` is
    /// off). The recording is a `record` span of `profiler`.
    private func runStamped(on gpu: GPUContext, profiler: Profiler?, upload: (GPUCommandBuffer) throws -> Void,
                            encode: (GPUCommandBuffer) throws -> Void,
                            download: (GPUCommandBuffer) throws -> Void) throws -> [GPUTimestamp] {
        let commands = try gpu.makeCommandBuffer(profiler: profiler)
        func mark(_ label: String) throws { if timestamps { try commands.timestamp(label) } }
        func recordAll() throws {
            try mark("start")
            try upload(commands)
            try mark("upload")
            try encode(commands)
            try mark("kernel")
            try download(commands)
            try mark("download")
        }
        if let profiler { try profiler.measure(.record, "record commands", recordAll) } else { try recordAll() }
        try commands.commit()
        try commands.waitUntilCompleted()
        return try commands.timestamps()
    }

    /// Runs a per-element layer on tensors too large for one slice image:
    /// each input is cut into pieces that fit (`ImagePieces`), every piece
    /// is uploaded, encoded with its channels' values and downloaded in one
    /// submission, and the pieces are pasted into the outputs.
    private func runInPieces(_ layer: PerElementLayer, inputs: [Tensor], outputs: [Tensor],
                             on gpu: GPUContext, profiler: Profiler?) throws -> LayerRun {
        struct Work {
            let output: Tensor, piece: ImagePieces.Piece, featureChannels: Int
            let inputImage: SliceImage, outputImage: SliceImage
            /// The piece's input, then (once downloaded) its result.
            let part: Tensor
        }
        var work: [Work] = []
        let stamps = try runStamped(on: gpu, profiler: profiler, upload: { commands in
            for (input, output) in zip(inputs, outputs) {
                let s = try input.nchw()
                let plan = ImagePieces(n: s.n, c: s.c, h: s.h, w: s.w,
                                       maxDimension: Int(gpu.deviceInfo.maxImageDimension2D),
                                       maxLayers: Int(gpu.deviceInfo.maxImageArrayLayers))
                for piece in plan.pieces {
                    let part = try input.copy(piece)
                    let image = try gpu.makeSliceImage(like: part)
                    try commands.upload(part, to: image)  // reads `part` now
                    work.append(Work(output: output, piece: piece, featureChannels: s.c, inputImage: image,
                                     outputImage: try gpu.makeSliceImage(like: part), part: part))
                }
            }
        }, encode: { commands in
            try profiler.withOp(layer.layerName) {
                for item in work {
                    try layer.encode(commandBuffer: commands, inputs: [item.inputImage], outputs: [item.outputImage],
                                     channels: item.piece.channels, of: item.featureChannels)
                }
            }
        }, download: { commands in
            for item in work { try commands.download(item.outputImage, into: item.part) }
        })
        for item in work { try item.output.paste(item.part, at: item.piece) }
        return LayerRun(outputs: outputs, placement: .gpu, gpuTimestamps: stamps)
    }

    private func announce(_ message: String) {
        lock.lock()
        let isNew = announced.insert(message).inserted
        lock.unlock()
        if isNew { notice(message) }
    }
}
