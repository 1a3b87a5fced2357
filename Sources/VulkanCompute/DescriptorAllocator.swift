import CVulkan

/// Descriptor sets for one command buffer's dispatches, from pools of its
/// own (so threads recording different command buffers never share one),
/// freed all at once with the command buffer.
final class DescriptorAllocator {
    private let device: Device
    private var pools: [VkDescriptorPool] = []
    private var setsLeft = 0

    /// The most dispatches' sets one pool holds before another is made.
    private static let setsPerPool: UInt32 = 32

    init(device: Device) { self.device = device }

    deinit {
        pools.forEach { vkDestroyDescriptorPool(device.handle, $0, nil) }
        device.objectCounter.add(-pools.count)
    }

    /// A descriptor set for `pipeline` with `bindings` written into it.
    func set(for pipeline: ComputePipeline, bindings: [CommandBuffer.Binding]) throws -> VkDescriptorSet {
        let set = try allocate(pipeline)
        write(set, pipeline: pipeline, bindings: bindings)
        return set
    }

    private func allocate(_ pipeline: ComputePipeline) throws -> VkDescriptorSet {
        if setsLeft == 0 {
            let perPool = DescriptorAllocator.setsPerPool
            var sizes = [
                VkDescriptorPoolSize(type: VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, descriptorCount: perPool * 4),
                VkDescriptorPoolSize(type: VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount: perPool * 4),
            ]
            var info = VkDescriptorPoolCreateInfo()
            info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO
            info.maxSets = perPool
            info.poolSizeCount = UInt32(sizes.count)
            var pool: VkDescriptorPool?
            try sizes.withUnsafeMutableBufferPointer { pointer in
                info.pPoolSizes = UnsafePointer(pointer.baseAddress)
                try check(vkCreateDescriptorPool(device.handle, &info, nil, &pool), "vkCreateDescriptorPool")
            }
            guard let pool else { throw VulkanError.call("vkCreateDescriptorPool", -1) }
            pools.append(pool)
            device.objectCounter.add(1)
            setsLeft = Int(perPool)
        }
        // Four of each kind: what every Vulkan device offers a compute stage
        // (maxPerStageDescriptorStorageImages/Buffers are at least 4), and
        // what each pool holds per set.
        for kind in [ComputePipeline.BindingKind.storageImage, .storageBuffer]
        where pipeline.bindings.filter({ $0 == kind }).count > 4 {
            throw VulkanError.limitExceeded(
                "\(pipeline.name): more than 4 storage \(kind == .storageImage ? "images" : "buffers") per dispatch")
        }
        var layout: VkDescriptorSetLayout? = pipeline.setLayout
        var info = VkDescriptorSetAllocateInfo()
        info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO
        info.descriptorPool = pools.last
        info.descriptorSetCount = 1
        var set: VkDescriptorSet?
        try withUnsafePointer(to: &layout) { pointer in
            info.pSetLayouts = pointer
            try check(vkAllocateDescriptorSets(device.handle, &info, &set), "vkAllocateDescriptorSets")
        }
        guard let set else { throw VulkanError.call("vkAllocateDescriptorSets", -1) }
        setsLeft -= 1
        return set
    }

    private func write(_ set: VkDescriptorSet, pipeline: ComputePipeline, bindings: [CommandBuffer.Binding]) {
        var imageInfos = [VkDescriptorImageInfo](repeating: VkDescriptorImageInfo(), count: bindings.count)
        var bufferInfos = [VkDescriptorBufferInfo](repeating: VkDescriptorBufferInfo(), count: bindings.count)
        for (i, binding) in bindings.enumerated() {
            switch binding {
            case .image(let image):
                imageInfos[i] = VkDescriptorImageInfo(sampler: nil, imageView: image.view,
                                                      imageLayout: VK_IMAGE_LAYOUT_GENERAL)
            case .buffer(let buffer):
                bufferInfos[i] = VkDescriptorBufferInfo(buffer: buffer.handle, offset: 0,
                                                        range: VkDeviceSize(VK_WHOLE_SIZE))
            }
        }
        imageInfos.withUnsafeBufferPointer { images in
            bufferInfos.withUnsafeBufferPointer { buffers in
                var writes = bindings.enumerated().map { i, binding -> VkWriteDescriptorSet in
                    var write = VkWriteDescriptorSet()
                    write.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
                    write.dstSet = set
                    write.dstBinding = UInt32(i)
                    write.descriptorCount = 1
                    write.descriptorType = pipeline.bindings[i].descriptorType
                    if case .image = binding {
                        write.pImageInfo = images.baseAddress.map { $0 + i }
                    } else {
                        write.pBufferInfo = buffers.baseAddress.map { $0 + i }
                    }
                    return write
                }
                vkUpdateDescriptorSets(device.handle, UInt32(writes.count), &writes, 0, nil)
            }
        }
    }
}
