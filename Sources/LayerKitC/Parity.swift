import CLayerKitAPI
import LayerKit

@c @implementation
public func lk_parity(_ context: OpaquePointer?, _ layer: OpaquePointer?, _ input: OpaquePointer?, _ tolerance: Double,
                      _ passed: UnsafeMutablePointer<Int32>?, _ maxAbsError: UnsafeMutablePointer<Double>?,
                      _ maxRelError: UnsafeMutablePointer<Double>?) -> lk_status {
    withContext(context) { context in
        let box = try LayerArguments.layer(layer)
        let input = try TensorArguments.tensor(input, "the input", takes: "lk_parity takes a float32 tensor")
        try TensorArguments.requireElements(input, "the input")
        // NaN would pass every element (no comparison with it is true).
        guard tolerance.isFinite, tolerance >= 0 else {
            throw CAPIError.invalidArgument("tolerance must be finite and at least 0, got \(tolerance)")
        }
        guard let gpu = context.backend.gpu else {
            throw LayerKitError.gpuUnavailable("lk_parity needs a context with a GPU (LK_COMPUTE_GPU): "
                + (context.backend.gpuUnavailableReason ?? "this one is CPU-only"))
        }
        // A tensor no slice image can hold would run on the CPU on both
        // sides, a comparison of nothing.
        _ = try Tensor.nchwShape(input.shape)
        // As `layerkit parity`: both sides read the same fp16-rounded
        // values, the CPU side on the context's thread count.
        let rounded = try input.roundedToHalf()
        let report = try CPUThreads.with(context.backend.threads) {
            try ParityReport.compare(box.layer, input: rounded, context: gpu, tolerance: tolerance).report
        }
        passed?.pointee = report.passed ? 1 : 0
        maxAbsError?.pointee = report.maxAbsError
        maxRelError?.pointee = report.maxRelError
    }
}
