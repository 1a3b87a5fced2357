import LayerKit

/// How reports name the device they measured, saying so when its GPU
/// figures are emulated (a CPU-type Vulkan device such as Mesa's lavapipe).
enum DeviceNote {
    /// Whether `info` is a CPU pretending to be a GPU.
    static func isEmulated(_ context: GPUContext) -> Bool { context.deviceInfo.kind == .cpu }

    /// `llvmpipe (...) (CPU (software rasterizer)) — EMULATED: ...` or the GPU's name and kind.
    static func describe(_ context: GPUContext) -> String {
        let info = context.deviceInfo
        return "\(info.name) (\(info.kind.rawValue))"
            + (isEmulated(context) ? " — EMULATED on the CPU: GPU figures are not GPU speed" : "")
    }

    /// The CPU evaluator: instruction set and threads.
    static var cpu: String {
        "\(CPUEvaluator.instructionSet), \(threads(CPUEvaluator().threadCount))"
    }

    /// `1 thread`, `4 threads`.
    static func threads(_ count: Int) -> String {
        count == 1 ? "1 thread" : "\(count) threads"
    }
}
