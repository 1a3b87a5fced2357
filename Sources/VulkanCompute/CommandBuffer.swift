import CVulkan
import Foundation

/// One recording of compute work, submitted once: Metal's
/// `MTLCommandBuffer` and compute encoder in one.
///
/// Record dispatches (with `barrier()` between dependent ones), optionally
/// `timestamp(_:)` marks, then `commit()` and `waitUntilCompleted()`. The
/// buffer keeps every resource it references alive until it completes. Each
/// command buffer owns its command and descriptor pools, so threads can
/// record in parallel; only submission is serialized (by the device). Its
/// timestamp query pool is borrowed from the device and given back when
/// the buffer is freed.
public final class CommandBuffer: @unchecked Sendable {
    /// A resource bound at one binding slot of a dispatch.
    public enum Binding {
        case image(Image)
        case buffer(Buffer)
    }

    /// A labelled GPU timestamp, in nanoseconds since the buffer's first mark.
    public struct Timestamp: Sendable {
        public let label: String
        public let nanoseconds: Double
    }

    public let device: Device
    private let pool: VkCommandPool
    private let handle: VkCommandBuffer
    private lazy var descriptors = DescriptorAllocator(device: device)
    private var retained: [AnyObject] = []
    private var fence: VkFence?
    private var queryPool: VkQueryPool?
    private var timestampLabels: [String] = []
    private var state = State.recording
    private enum State { case recording, committed, completed }

    /// The most timestamps one command buffer can record.
    public static let maxTimestamps = 256
    /// How long `waitUntilCompleted` waits by default before giving up.
    public static let defaultTimeout: Double = 120

    /// Begins recording on `device`.
    public init(device: Device) throws {
        self.device = device
        var poolInfo = VkCommandPoolCreateInfo()
        poolInfo.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO
        poolInfo.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT.rawValue
        poolInfo.queueFamilyIndex = device.queueFamily
        var pool: VkCommandPool?
        try check(vkCreateCommandPool(device.handle, &poolInfo, nil, &pool), "vkCreateCommandPool")
        guard let pool else { throw VulkanError.call("vkCreateCommandPool", -1) }
        var allocateInfo = VkCommandBufferAllocateInfo()
        allocateInfo.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO
        allocateInfo.commandPool = pool
        allocateInfo.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY
        allocateInfo.commandBufferCount = 1
        var buffer: VkCommandBuffer?
        let result = vkAllocateCommandBuffers(device.handle, &allocateInfo, &buffer)
        guard result == VK_SUCCESS, let buffer else {
            vkDestroyCommandPool(device.handle, pool, nil)
            throw VulkanError.call("vkAllocateCommandBuffers", result.rawValue)
        }
        var beginInfo = VkCommandBufferBeginInfo()
        beginInfo.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO
        beginInfo.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT.rawValue
        let beginResult = vkBeginCommandBuffer(buffer, &beginInfo)
        guard beginResult == VK_SUCCESS else {
            vkDestroyCommandPool(device.handle, pool, nil)
            throw VulkanError.call("vkBeginCommandBuffer", beginResult.rawValue)
        }
        self.pool = pool
        self.handle = buffer
        device.objectCounter.add(1)
    }

    deinit {
        if state == .committed, let fence {
            // Never free what the GPU may still be reading.
            _ = vkWaitForFences(device.handle, 1, [fence], VkBool32(VK_TRUE), UInt64.max)
        }
        if let fence { vkDestroyFence(device.handle, fence, nil) }
        if let queryPool { device.core.timestampPools.giveBack(queryPool) }
        vkDestroyCommandPool(device.handle, pool, nil)
        device.objectCounter.add(-(1 + (fence == nil ? 0 : 1)))
    }

    /// Records `pipeline` over `threads` invocations (rounded up to whole
    /// workgroups) with `bindings` at slots 0..<n and `pushConstants`.
    public func dispatch(_ pipeline: ComputePipeline, bindings: [Binding],
                         pushConstants: PushConstants = PushConstants(),
                         threads: (x: Int, y: Int, z: Int)) throws {
        try requireRecording()
        guard bindings.count == pipeline.bindings.count else {
            throw VulkanError.limitExceeded(
                "\(pipeline.name) takes \(pipeline.bindings.count) bindings, got \(bindings.count)")
        }
        guard pushConstants.bytes.count == pipeline.pushConstantSize else {
            throw VulkanError.limitExceeded(
                "\(pipeline.name) takes \(pipeline.pushConstantSize) push-constant bytes, got \(pushConstants.bytes.count)")
        }
        let wg = pipeline.workgroupSize
        let groups = (UInt32((threads.x + Int(wg.0) - 1) / Int(wg.0)),
                      UInt32((threads.y + Int(wg.1) - 1) / Int(wg.1)),
                      UInt32((threads.z + Int(wg.2) - 1) / Int(wg.2)))
        let limit = device.info.maxComputeWorkGroupCount
        guard groups.0 <= limit.0, groups.1 <= limit.1, groups.2 <= limit.2 else {
            throw VulkanError.limitExceeded(
                "\(pipeline.name): \(groups) workgroups exceed maxComputeWorkGroupCount \(limit)")
        }
        for case .image(let image) in bindings where image.claimInitialTransition() {
            transitionToGeneral(image)
        }
        let set = try descriptors.set(for: pipeline, bindings: bindings)
        vkCmdBindPipeline(handle, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle)
        var setHandle: VkDescriptorSet? = set
        vkCmdBindDescriptorSets(handle, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout, 0, 1, &setHandle, 0, nil)
        if !pushConstants.bytes.isEmpty {
            pushConstants.bytes.withUnsafeBytes {
                vkCmdPushConstants(handle, pipeline.layout, VK_SHADER_STAGE_COMPUTE_BIT.rawValue, 0,
                                   UInt32($0.count), $0.baseAddress)
            }
        }
        vkCmdDispatch(handle, groups.0, groups.1, groups.2)
        retained.append(pipeline)
        for binding in bindings {
            switch binding {
            case .image(let image): retained.append(image)
            case .buffer(let buffer): retained.append(buffer)
            }
        }
    }

    /// Makes the writes of everything recorded so far (shaders, copies)
    /// visible to everything recorded after: a full compute/transfer barrier.
    public func barrier() throws {
        try requireRecording()
        let stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT.rawValue | VK_PIPELINE_STAGE_TRANSFER_BIT.rawValue
        memoryBarrier(sourceStages: stages,
                      sourceAccess: VK_ACCESS_SHADER_WRITE_BIT.rawValue | VK_ACCESS_TRANSFER_WRITE_BIT.rawValue,
                      destinationStages: stages,
                      destinationAccess: VK_ACCESS_SHADER_READ_BIT.rawValue | VK_ACCESS_SHADER_WRITE_BIT.rawValue
                          | VK_ACCESS_TRANSFER_READ_BIT.rawValue | VK_ACCESS_TRANSFER_WRITE_BIT.rawValue)
    }

    /// Copies `length` bytes between buffers.
    public func copy(from source: Buffer, to destination: Buffer, length: Int) throws {
        try requireRecording()
        guard length <= source.length, length <= destination.length else {
            throw VulkanError.limitExceeded("copy of \(length) bytes exceeds a buffer's length")
        }
        var region = VkBufferCopy(srcOffset: 0, dstOffset: 0, size: VkDeviceSize(length))
        vkCmdCopyBuffer(handle, source.handle, destination.handle, 1, &region)
        retained.append(source)
        retained.append(destination)
    }

    /// Copies every texel of `image` into `buffer`, tightly packed: layer by
    /// layer, row by row, 8 bytes (four fp16 values) a texel. For inspecting
    /// raw image contents, padding lanes included.
    public func copy(from image: Image, to buffer: Buffer) throws {
        try copyWhole(image, buffer, layout: VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                      access: VK_ACCESS_TRANSFER_READ_BIT.rawValue) { region in
            vkCmdCopyImageToBuffer(handle, image.handle, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, buffer.handle, 1, region)
        }
    }

    /// Copies `buffer`, tightly packed as `copy(from:to:)` writes it (layer
    /// by layer, row by row, 8 bytes a texel), into every texel of `image`.
    public func copy(from buffer: Buffer, to image: Image) throws {
        try copyWhole(image, buffer, layout: VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                      access: VK_ACCESS_TRANSFER_WRITE_BIT.rawValue) { region in
            vkCmdCopyBufferToImage(handle, buffer.handle, image.handle, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, region)
        }
    }

    /// Records `copy` of all of `image` to or from a tightly packed `buffer`
    /// large enough for it, with `image` in the transfer `layout` meanwhile.
    private func copyWhole(_ image: Image, _ buffer: Buffer, layout: VkImageLayout, access: UInt32,
                           _ copy: (UnsafePointer<VkBufferImageCopy>) -> Void) throws {
        try requireRecording()
        let bytes = image.width * image.height * image.layers * Image.bytesPerTexel
        guard bytes <= buffer.length else {
            throw VulkanError.limitExceeded("image of \(bytes) bytes and buffer of \(buffer.length) bytes differ in size")
        }
        var region = wholeImageRegion(image)
        withTransferLayout(image, layout, access: access) { copy(&region) }
        retained.append(image)
        retained.append(buffer)
    }

    /// Records a GPU timestamp once all earlier commands have finished.
    /// Read them with `timestamps()` after completion. Ignored when the
    /// device has no timestamp support (check `device.info.supportsTimestamps`).
    public func timestamp(_ label: String) throws {
        try requireRecording()
        guard device.info.supportsTimestamps else { return }
        guard timestampLabels.count < CommandBuffer.maxTimestamps else {
            throw VulkanError.limitExceeded("more than \(CommandBuffer.maxTimestamps) timestamps in one command buffer")
        }
        if queryPool == nil {
            let pool = try device.core.timestampPools.take()
            queryPool = pool
            vkCmdResetQueryPool(handle, pool, 0, UInt32(CommandBuffer.maxTimestamps))
        }
        vkCmdWriteTimestamp(handle, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queryPool, UInt32(timestampLabels.count))
        timestampLabels.append(label)
    }

    /// Ends recording and submits. Shader and transfer writes are made
    /// visible to the host when the buffer completes.
    public func commit() throws {
        try requireRecording()
        memoryBarrier(sourceStages: VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT.rawValue | VK_PIPELINE_STAGE_TRANSFER_BIT.rawValue,
                      sourceAccess: VK_ACCESS_SHADER_WRITE_BIT.rawValue | VK_ACCESS_TRANSFER_WRITE_BIT.rawValue,
                      destinationStages: VK_PIPELINE_STAGE_HOST_BIT.rawValue,
                      destinationAccess: VK_ACCESS_HOST_READ_BIT.rawValue)
        try check(vkEndCommandBuffer(handle), "vkEndCommandBuffer")
        var info = VkFenceCreateInfo()
        info.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO
        var fence: VkFence?
        try check(vkCreateFence(device.handle, &info, nil, &fence), "vkCreateFence")
        guard let fence else { throw VulkanError.call("vkCreateFence", -1) }
        self.fence = fence
        device.objectCounter.add(1)
        try device.submit(handle, fence: fence)
        state = .committed
    }

    /// Blocks until the GPU finishes, at most `timeout` seconds: a hung or
    /// lost device becomes an error, never a hang. Throws validation errors
    /// the work produced.
    public func waitUntilCompleted(timeout: Double = CommandBuffer.defaultTimeout) throws {
        guard state != .completed else { return }
        guard state == .committed, let fence else {
            throw VulkanError.limitExceeded("waitUntilCompleted called before commit")
        }
        var fenceHandle: VkFence? = fence
        let result = vkWaitForFences(device.handle, 1, &fenceHandle, VkBool32(VK_TRUE), UInt64(timeout * 1e9))
        if result == VK_TIMEOUT {
            throw VulkanError.timeout("GPU work did not finish within \(Int(timeout)) s")
        }
        try check(result, "vkWaitForFences")
        state = .completed
        retained.removeAll()
        let errors = device.instance.takeValidationErrors()
        if !errors.isEmpty { throw VulkanError.validation(errors) }
    }

    /// The first timestamp on the host's `CLOCK_MONOTONIC`, in ns, where the
    /// device calibrates its clock against it (`VK_EXT_calibrated_timestamps`);
    /// nil before completion, without marks or without calibration.
    public func firstTimestampOnMonotonicClock() throws -> Double? {
        guard state == .completed, let queryPool, !timestampLabels.isEmpty,
              let clocks = device.calibratedClocks() else { return nil }
        var first: UInt64 = 0
        try check(vkGetQueryPoolResults(device.handle, queryPool, 0, 1, 8, &first, 8,
                                        VK_QUERY_RESULT_64_BIT.rawValue | VK_QUERY_RESULT_WAIT_BIT.rawValue),
                  "vkGetQueryPoolResults")
        let bits = device.info.timestampValidBits
        let mask: UInt64 = bits >= 64 ? .max : (1 << UInt64(bits)) - 1
        // Ticks from the first mark to the calibration, under the mask (a wrap survives).
        let elapsed = Double(((clocks.deviceTicks & mask) &- (first & mask)) & mask) * Double(device.info.timestampPeriod)
        return Double(clocks.monotonicNanoseconds) - elapsed
    }

    /// The recorded timestamps, relative to the first, scaled by
    /// `timestampPeriod` and masked to `timestampValidBits`. Empty before
    /// completion or without timestamp support.
    public func timestamps() throws -> [Timestamp] {
        guard state == .completed, let queryPool, !timestampLabels.isEmpty else { return [] }
        var ticks = [UInt64](repeating: 0, count: timestampLabels.count)
        try ticks.withUnsafeMutableBytes { raw in
            try check(vkGetQueryPoolResults(device.handle, queryPool, 0, UInt32(timestampLabels.count),
                                            raw.count, raw.baseAddress, 8,
                                            VK_QUERY_RESULT_64_BIT.rawValue | VK_QUERY_RESULT_WAIT_BIT.rawValue),
                      "vkGetQueryPoolResults")
        }
        let bits = device.info.timestampValidBits
        let mask: UInt64 = bits >= 64 ? .max : (1 << UInt64(bits)) - 1
        let period = Double(device.info.timestampPeriod)
        let first = ticks[0] & mask
        return zip(timestampLabels, ticks).map { label, tick in
            // Wrapping subtraction under the mask survives a counter wrap.
            Timestamp(label: label, nanoseconds: Double(((tick & mask) &- first) & mask) * period)
        }
    }

    // MARK: - Recording helpers

    private func requireRecording() throws {
        guard state == .recording else {
            throw VulkanError.limitExceeded("command buffer already committed; make a new one")
        }
    }

    private func memoryBarrier(sourceStages: UInt32, sourceAccess: UInt32,
                               destinationStages: UInt32, destinationAccess: UInt32) {
        var barrier = VkMemoryBarrier()
        barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER
        barrier.srcAccessMask = sourceAccess
        barrier.dstAccessMask = destinationAccess
        vkCmdPipelineBarrier(handle, sourceStages, destinationStages, 0, 1, &barrier, 0, nil, 0, nil)
    }

    /// All layers of `image`, tightly packed in the buffer.
    private func wholeImageRegion(_ image: Image) -> VkBufferImageCopy {
        var region = VkBufferImageCopy()
        region.imageSubresource = VkImageSubresourceLayers(aspectMask: VK_IMAGE_ASPECT_COLOR_BIT.rawValue,
                                                           mipLevel: 0, baseArrayLayer: 0,
                                                           layerCount: UInt32(image.layers))
        region.imageExtent = VkExtent3D(width: UInt32(image.width), height: UInt32(image.height), depth: 1)
        return region
    }

    /// Records `copy` with `image` in `layout` (copies want the TRANSFER_*
    /// layouts; shaders keep GENERAL), moving it there and back to GENERAL
    /// with the barriers that order it after and before everything else.
    private func withTransferLayout(_ image: Image, _ layout: VkImageLayout, access: UInt32, _ copy: () -> Void) {
        if image.claimInitialTransition() { transitionToGeneral(image) }
        let shaderAndTransfer = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT.rawValue | VK_PIPELINE_STAGE_TRANSFER_BIT.rawValue
        let anyAccess = VK_ACCESS_SHADER_READ_BIT.rawValue | VK_ACCESS_SHADER_WRITE_BIT.rawValue
            | VK_ACCESS_TRANSFER_READ_BIT.rawValue | VK_ACCESS_TRANSFER_WRITE_BIT.rawValue
        transition(image, from: VK_IMAGE_LAYOUT_GENERAL, to: layout,
                   sourceStage: shaderAndTransfer, sourceAccess: anyAccess,
                   destinationStage: VK_PIPELINE_STAGE_TRANSFER_BIT.rawValue, destinationAccess: access)
        copy()
        transition(image, from: layout, to: VK_IMAGE_LAYOUT_GENERAL,
                   sourceStage: VK_PIPELINE_STAGE_TRANSFER_BIT.rawValue, sourceAccess: access,
                   destinationStage: shaderAndTransfer, destinationAccess: anyAccess)
    }

    private func transitionToGeneral(_ image: Image) {
        // The first use may be a shader or a copy.
        transition(image, from: VK_IMAGE_LAYOUT_UNDEFINED, to: VK_IMAGE_LAYOUT_GENERAL,
                   sourceStage: VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT.rawValue, sourceAccess: 0,
                   destinationStage: VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT.rawValue | VK_PIPELINE_STAGE_TRANSFER_BIT.rawValue,
                   destinationAccess: VK_ACCESS_SHADER_READ_BIT.rawValue | VK_ACCESS_SHADER_WRITE_BIT.rawValue
                       | VK_ACCESS_TRANSFER_READ_BIT.rawValue | VK_ACCESS_TRANSFER_WRITE_BIT.rawValue)
    }

    private func transition(_ image: Image, from oldLayout: VkImageLayout, to newLayout: VkImageLayout,
                            sourceStage: UInt32, sourceAccess: UInt32,
                            destinationStage: UInt32, destinationAccess: UInt32) {
        var barrier = VkImageMemoryBarrier()
        barrier.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER
        barrier.srcAccessMask = sourceAccess
        barrier.dstAccessMask = destinationAccess
        barrier.oldLayout = oldLayout
        barrier.newLayout = newLayout
        barrier.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED
        barrier.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED
        barrier.image = image.handle
        barrier.subresourceRange = Image.wholeRange(layers: image.layers)
        vkCmdPipelineBarrier(handle, sourceStage, destinationStage, 0, 0, nil, 0, nil, 1, &barrier)
    }
}
