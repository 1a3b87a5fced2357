/// The one placement policy, used by single-layer runs and models alike:
/// a layer runs on the GPU when the backend allows it, the layer has
/// `encode`, the device is not a CPU emulation under `.automatic`, and its
/// tensors fit the device's images (a `PerElementLayer` then runs in pieces).
///
/// A `PerElementLayer` run on its own (its tensors start and end on the
/// host) also runs in pieces when an image would exceed
/// `ModelRun.pieceTexels`: streamed piece by piece, its device memory (host
/// memory, on an emulated device) stays a few pieces beyond the tensors,
/// for no extra transfer. Inside a model, values stay in whole images.
extension Backend {
    /// Where a step runs: `whyNotGPU` nil means the GPU (in pieces or not).
    struct PlacementDecision {
        let whyNotGPU: String?
        let inPieces: Bool
    }

    /// Why `layer` cannot or should not run on the GPU this backend allows,
    /// whatever its shapes; nil when it may.
    func whyNotGPU(_ layer: Layer) -> String? {
        guard let gpu else { return gpuUnavailableReason ?? "no GPU" }
        guard layer.hasGPUImplementation else { return "it has no GPU implementation (encode)" }
        if computeUnits == .automatic, gpu.deviceInfo.kind == .cpu {
            return "the Vulkan device \(gpu.deviceInfo.name) is a CPU emulation, slower than the CPU evaluator"
        }
        return nil
    }

    /// Where `layer` runs on tensors of `inputShapes` giving `outputShapes`;
    /// `fromHost`: the layer runs on its own, its tensors on the host.
    func place(_ layer: Layer, inputShapes: [[Int]], outputShapes: [[Int]], fromHost: Bool) throws -> PlacementDecision {
        guard computeUnits != .cpuOnly else { return PlacementDecision(whyNotGPU: nil, inPieces: false) }
        if let why = whyNotGPU(layer) { return PlacementDecision(whyNotGPU: why, inPieces: false) }
        guard let gpu else { return PlacementDecision(whyNotGPU: "no GPU", inPieces: false) }
        let perElement = layer is PerElementLayer && inputShapes == outputShapes
        for shape in inputShapes + outputShapes {
            let image = try Tensor.nchwShape(shape)
            guard let limit = Backend.limitExceeded(by: image, on: gpu.deviceInfo) else {
                if perElement, fromHost, Backend.texels(of: image) > ModelRun.pieceTexels {
                    return PlacementDecision(whyNotGPU: nil, inPieces: true)
                }
                continue
            }
            if perElement { return PlacementDecision(whyNotGPU: nil, inPieces: true) }
            return PlacementDecision(whyNotGPU: "its \(Tensor.describe(shape)) tensor exceeds the device's \(limit)",
                                     inPieces: false)
        }
        return PlacementDecision(whyNotGPU: nil, inPieces: false)
    }

    /// The texels of a slice image of NCHW `shape` (saturating: a count
    /// past `Int.max` is past every bound anyway).
    private static func texels(of shape: [Int]) -> Int {
        let slices = (shape[1] + 3) / 4
        return [shape[0], slices, shape[2], shape[3]].reduce(1) { total, extent in
            let (product, overflow) = total.multipliedReportingOverflow(by: extent)
            return overflow ? Int.max : product
        }
    }

    /// The image limit an NCHW `shape` exceeds on the device, named with its
    /// value; nil when one slice image holds it.
    private static func limitExceeded(by shape: [Int], on info: GPUDeviceInfo) -> String? {
        let (layers, overflow) = shape[0].multipliedReportingOverflow(by: (shape[1] + 3) / 4)
        if overflow || layers > Int(info.maxImageArrayLayers) {
            return "maxImageArrayLayers (\(info.maxImageArrayLayers) batch x slice layers)"
        }
        if max(shape[2], shape[3]) > Int(info.maxImageDimension2D) {
            return "maxImageDimension2D (\(info.maxImageDimension2D) texels a side)"
        }
        return nil
    }
}
