import Foundation

/// The `LAYERKIT_*` environment variables of the GPU side, each read here
/// and nowhere else (VulkanCompute takes them as parameters).
enum GPUEnvironment {
    /// `LAYERKIT_VALIDATION=1`: the Khronos validation layer on, for contexts
    /// that do not say.
    static var validation: Bool { ProcessInfo.processInfo.environment["LAYERKIT_VALIDATION"] == "1" }

    /// `LAYERKIT_DEVICE=<index|name>`: the Vulkan device to open instead of
    /// the preferred one; nil when unset or empty.
    static var deviceOverride: String? {
        guard let value = ProcessInfo.processInfo.environment["LAYERKIT_DEVICE"], !value.isEmpty else { return nil }
        return value
    }

    /// `LAYERKIT_GPU_CONV=block=4x2,f16weights=1`: forces
    /// `conv2d.comp`'s paths for benchmarks (each key optional; see
    /// `ConvolutionGPUOptions`); nil when unset or empty.
    static var convolutionOverride: String? {
        guard let value = ProcessInfo.processInfo.environment["LAYERKIT_GPU_CONV"], !value.isEmpty else { return nil }
        return value
    }
}
