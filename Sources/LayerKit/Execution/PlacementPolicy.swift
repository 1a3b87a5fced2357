/// The one placement policy, used by single-layer runs and models alike:
/// a layer runs on the GPU when the backend allows it, the layer has
/// `encode`, the device is not a CPU emulation under `.automatic`, and its
/// tensors fit the device's images (a `PerElementLayer` then runs in pieces).
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

    /// Where `layer` runs on tensors of `inputShapes` giving `outputShapes`.
    func place(_ layer: Layer, inputShapes: [[Int]], outputShapes: [[Int]]) throws -> PlacementDecision {
        guard computeUnits != .cpuOnly else { return PlacementDecision(whyNotGPU: nil, inPieces: false) }
        if let why = whyNotGPU(layer) { return PlacementDecision(whyNotGPU: why, inPieces: false) }
        guard let gpu else { return PlacementDecision(whyNotGPU: "no GPU", inPieces: false) }
        for shape in inputShapes + outputShapes {
            guard let limit = try Backend.limitExceeded(by: Tensor.nchwShape(shape), on: gpu.deviceInfo) else { continue }
            if layer is PerElementLayer, inputShapes == outputShapes {
                return PlacementDecision(whyNotGPU: nil, inPieces: true)
            }
            return PlacementDecision(whyNotGPU: "its \(Tensor.describe(shape)) tensor exceeds the device's \(limit)",
                                     inPieces: false)
        }
        return PlacementDecision(whyNotGPU: nil, inPieces: false)
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
