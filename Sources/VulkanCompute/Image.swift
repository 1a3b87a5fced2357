import CVulkan
import Foundation

/// A half-precision RGBA 2D-array storage image (`R16G16B16A16_SFLOAT`,
/// optimal tiling, a `2D_ARRAY` view): the texture type LayerKit's slice
/// images are made of. It is kept in `VK_IMAGE_LAYOUT_GENERAL`, the layout
/// storage images need; the first command buffer that uses it transitions it.
public final class Image: @unchecked Sendable {
    public let device: Device
    public let width: Int
    public let height: Int
    /// Number of array layers.
    public let layers: Int
    let handle: VkImage
    let view: VkImageView
    private let memory: VkDeviceMemory
    private let layoutLock = NSLock()
    private var initialized = false

    /// Bytes one texel takes (four fp16 values).
    public static let bytesPerTexel = 8

    /// Makes an image, checking the device's dimension and layer limits first.
    public init(device: Device, width: Int, height: Int, layers: Int) throws {
        let limits = device.info
        guard width > 0, height > 0, layers > 0 else {
            throw VulkanError.limitExceeded("image extent \(width)x\(height)x\(layers) must be positive")
        }
        guard width <= Int(limits.maxImageDimension2D), height <= Int(limits.maxImageDimension2D) else {
            throw VulkanError.limitExceeded(
                "image \(width)x\(height) exceeds maxImageDimension2D (\(limits.maxImageDimension2D))")
        }
        guard layers <= Int(limits.maxImageArrayLayers) else {
            throw VulkanError.limitExceeded(
                "\(layers) array layers exceed maxImageArrayLayers (\(limits.maxImageArrayLayers))")
        }
        self.device = device
        self.width = width
        self.height = height
        self.layers = layers

        var info = VkImageCreateInfo()
        info.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO
        info.imageType = VK_IMAGE_TYPE_2D
        info.format = VK_FORMAT_R16G16B16A16_SFLOAT
        info.extent = VkExtent3D(width: UInt32(width), height: UInt32(height), depth: 1)
        info.mipLevels = 1
        info.arrayLayers = UInt32(layers)
        info.samples = VK_SAMPLE_COUNT_1_BIT
        info.tiling = VK_IMAGE_TILING_OPTIMAL
        info.usage = VK_IMAGE_USAGE_STORAGE_BIT.rawValue
            | VK_IMAGE_USAGE_TRANSFER_SRC_BIT.rawValue | VK_IMAGE_USAGE_TRANSFER_DST_BIT.rawValue
        info.sharingMode = VK_SHARING_MODE_EXCLUSIVE
        info.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED
        var rollback = Rollback()
        defer { rollback.run() }
        var image: VkImage?
        try check(vkCreateImage(device.handle, &info, nil, &image), "vkCreateImage(\(width)x\(height)x\(layers))")
        guard let image else { throw VulkanError.call("vkCreateImage", VK_ERROR_OUT_OF_HOST_MEMORY.rawValue) }
        rollback.add { vkDestroyImage(device.handle, image, nil) }
        var requirements = VkMemoryRequirements()
        vkGetImageMemoryRequirements(device.handle, image, &requirements)
        let memory = try device.allocateMemory(requirements, required: 0,
                                               preferred: VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT.rawValue)
        rollback.add { vkFreeMemory(device.handle, memory, nil) }
        try check(vkBindImageMemory(device.handle, image, memory, 0), "vkBindImageMemory")
        var viewInfo = VkImageViewCreateInfo()
        viewInfo.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO
        viewInfo.image = image
        viewInfo.viewType = VK_IMAGE_VIEW_TYPE_2D_ARRAY
        viewInfo.format = VK_FORMAT_R16G16B16A16_SFLOAT
        viewInfo.subresourceRange = Image.wholeRange(layers: layers)
        var view: VkImageView?
        try check(vkCreateImageView(device.handle, &viewInfo, nil, &view), "vkCreateImageView")
        guard let view else { throw VulkanError.call("vkCreateImageView", VK_ERROR_OUT_OF_HOST_MEMORY.rawValue) }
        rollback.keep()
        handle = image
        self.memory = memory
        self.view = view
        device.objectCounter.add(3)
    }

    deinit {
        vkDestroyImageView(device.handle, view, nil)
        vkDestroyImage(device.handle, handle, nil)
        vkFreeMemory(device.handle, memory, nil)
        device.objectCounter.add(-3)
    }

    static func wholeRange(layers: Int) -> VkImageSubresourceRange {
        VkImageSubresourceRange(aspectMask: VK_IMAGE_ASPECT_COLOR_BIT.rawValue, baseMipLevel: 0,
                                levelCount: 1, baseArrayLayer: 0, layerCount: UInt32(layers))
    }

    /// True the first time it is called: the caller must then record the
    /// UNDEFINED → GENERAL transition.
    func claimInitialTransition() -> Bool {
        layoutLock.lock(); defer { layoutLock.unlock() }
        defer { initialized = true }
        return !initialized
    }
}
