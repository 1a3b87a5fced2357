internal import VulkanCompute

/// Every Vulkan device present and the one a `GPUContext` opens, with why.
public struct GPUDeviceSurvey: Sendable {
    /// The devices in the loader's order.
    public let devices: [GPUDeviceInfo]
    /// The device `GPUContext()` opens; nil when none can be.
    public let chosen: GPUDeviceInfo?
    /// Why `chosen` is the one (`LAYERKIT_DEVICE`, or the preference order),
    /// or, when it is nil, why there is none.
    public let reason: String

    /// Picks from `devices` as `GPUContext()` does: `override` (an index or
    /// a name fragment) when given, else the most preferred usable kind.
    init(_ devices: [PhysicalDeviceInfo], override: String?) {
        self.devices = devices.map(GPUDeviceInfo.init)
        do {
            chosen = GPUDeviceInfo(try PhysicalDeviceInfo.choose(from: devices, override: override))
            reason = override.map { "LAYERKIT_DEVICE=\($0)" }
                ?? "the most preferred usable kind (discrete > integrated > virtual > CPU)"
        } catch {
            chosen = nil
            reason = override.map { "LAYERKIT_DEVICE=\($0): \(error)" } ?? "\(error)"
        }
    }
}

extension GPUContext {
    /// The Vulkan devices present and the one `GPUContext()` would open
    /// (honouring `LAYERKIT_DEVICE`). Throws `LayerKitError.gpuUnavailable`
    /// when there is no Vulkan loader or driver to ask.
    public static func availableDevices() throws -> GPUDeviceSurvey {
        let devices: [PhysicalDeviceInfo]
        do {
            devices = try Instance(validation: GPUEnvironment.validation).physicalDevices()
        } catch {
            throw LayerKitError.gpuUnavailable("cannot list Vulkan devices: \(error)")
        }
        return GPUDeviceSurvey(devices, override: GPUEnvironment.deviceOverride)
    }
}
