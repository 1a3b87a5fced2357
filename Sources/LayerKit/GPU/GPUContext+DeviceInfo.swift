// The one LayerKit declaration that still shows a VulkanCompute type; a
// LayerKit type of its own replaces `PhysicalDeviceInfo` here separately.
public import VulkanCompute

extension GPUContext {
    /// What the device is.
    public var deviceInfo: PhysicalDeviceInfo { device.info }
}
