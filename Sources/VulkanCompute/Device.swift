import CVulkan
import Foundation

/// A logical device with one compute queue: the `MTLDevice` of LayerKit's
/// Vulkan layer. It makes buffers, images, pipelines and command buffers.
///
/// Thread-safe: queue submission is serialized by a lock, and each command
/// buffer owns its own pools, so several threads may encode at once.
public final class Device: @unchecked Sendable {
    /// The instance this device came from (kept alive by the device).
    public let instance: Instance
    /// What the physical device is.
    public let info: PhysicalDeviceInfo
    /// Owns the VkDevice; pipelines hold it too, so it outlives them.
    let core: DeviceCore
    var handle: VkDevice { core.handle }
    var pipelineCache: VkPipelineCache { core.pipelineCache }
    let queue: VkQueue
    let queueFamily: UInt32
    private let memoryProperties: VkPhysicalDeviceMemoryProperties
    private let submitLock = NSLock()
    var objectCounter: LiveObjectCounter { core.objectCounter }

    /// The number of Vulkan objects (buffers, images, memory, pipelines,
    /// pools...) this device currently owns through its wrappers.
    public var liveObjectCount: Int { objectCounter.count }

    /// Opens the device that `PhysicalDeviceInfo.choose` picks (`deviceOverride`:
    /// an index or a name fragment, else the preferred kind), with the
    /// Khronos validation layer when `validation`.
    public convenience init(validation: Bool = false, deviceOverride: String? = nil) throws {
        let instance = try Instance(validation: validation)
        let chosen = try PhysicalDeviceInfo.choose(from: instance.physicalDevices(), override: deviceOverride)
        try self.init(instance: instance, physicalDevice: chosen)
    }

    /// Opens `physicalDevice` of `instance`, enabling `shaderFloat16` when present.
    public init(instance: Instance, physicalDevice: PhysicalDeviceInfo) throws {
        guard let family = physicalDevice.computeQueueFamily, physicalDevice.isUsable else {
            throw VulkanError.noDevice("\(physicalDevice.name) cannot run LayerKit shaders")
        }
        self.instance = instance
        info = physicalDevice
        queueFamily = family

        var priority: Float = 1
        var queueInfo = VkDeviceQueueCreateInfo()
        queueInfo.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO
        queueInfo.queueFamilyIndex = family
        queueInfo.queueCount = 1
        var f16 = VkPhysicalDeviceShaderFloat16Int8Features()
        f16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES
        f16.shaderFloat16 = VkBool32(physicalDevice.supportsFloat16 ? VK_TRUE : VK_FALSE)
        let extensions = (physicalDevice.hasFloat16Extension && physicalDevice.supportsFloat16
            ? ["VK_KHR_shader_float16_int8"] : [])
            + (physicalDevice.supportsSignedZeroInfNanPreserve32 ? ["VK_KHR_shader_float_controls"] : [])
            + (physicalDevice.supportsCalibratedTimestamps ? ["VK_EXT_calibrated_timestamps"] : [])
        var device: VkDevice?
        let result = withUnsafePointer(to: &priority) { priorityPointer in
            queueInfo.pQueuePriorities = priorityPointer
            return withUnsafePointer(to: &queueInfo) { queuePointer in
                withUnsafeMutablePointer(to: &f16) { f16Pointer in
                    withCStrings(extensions) { extensionPointers in
                        var info = VkDeviceCreateInfo()
                        info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO
                        info.pNext = physicalDevice.supportsFloat16 ? UnsafeRawPointer(f16Pointer) : nil
                        info.queueCreateInfoCount = 1
                        info.pQueueCreateInfos = queuePointer
                        info.enabledExtensionCount = UInt32(extensions.count)
                        info.ppEnabledExtensionNames = extensionPointers
                        return vkCreateDevice(physicalDevice.handle, &info, nil, &device)
                    }
                }
            }
        }
        try check(result, "vkCreateDevice(\(physicalDevice.name))")
        guard let device else { throw VulkanError.noDevice("vkCreateDevice returned no device") }
        var queue: VkQueue?
        vkGetDeviceQueue(device, family, 0, &queue)
        guard let queue else {
            vkDestroyDevice(device, nil)
            throw VulkanError.noDevice("\(physicalDevice.name) returned no compute queue")
        }
        self.queue = queue

        var cacheInfo = VkPipelineCacheCreateInfo()
        cacheInfo.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO
        var cache: VkPipelineCache?
        let cacheResult = vkCreatePipelineCache(device, &cacheInfo, nil, &cache)
        guard cacheResult == VK_SUCCESS, let cache else {
            vkDestroyDevice(device, nil)
            throw VulkanError.call("vkCreatePipelineCache", cacheResult.rawValue)
        }
        core = DeviceCore(instance: instance, handle: device, pipelineCache: cache)
        var memory = VkPhysicalDeviceMemoryProperties()
        vkGetPhysicalDeviceMemoryProperties(physicalDevice.handle, &memory)
        memoryProperties = memory
    }


    /// Submits `commandBuffer` with `fence`, serialized with other threads.
    func submit(_ commandBuffer: VkCommandBuffer?, fence: VkFence) throws {
        var buffer = commandBuffer
        var info = VkSubmitInfo()
        info.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO
        info.commandBufferCount = 1
        submitLock.lock(); defer { submitLock.unlock() }
        let result = withUnsafePointer(to: &buffer) { pointer in
            info.pCommandBuffers = pointer
            return vkQueueSubmit(queue, 1, &info, fence)
        }
        try check(result, "vkQueueSubmit")
    }

    /// Allocates memory for `requirements` of a type with `required`
    /// properties, one with `preferred` too where there is one and its heap
    /// has room (a device-local host-visible heap may be a 256 MiB window):
    /// else any type with `required`.
    func allocateMemory(_ requirements: VkMemoryRequirements, required: UInt32,
                        preferred: UInt32 = 0) throws -> VkDeviceMemory {
        if preferred != 0, let memory = try? allocateMemory(requirements, ofType: required | preferred) {
            return memory
        }
        return try allocateMemory(requirements, ofType: required)
    }

    private func allocateMemory(_ requirements: VkMemoryRequirements, ofType required: UInt32) throws -> VkDeviceMemory {
        let types = withUnsafeBytes(of: memoryProperties.memoryTypes) {
            Array($0.bindMemory(to: VkMemoryType.self).prefix(Int(memoryProperties.memoryTypeCount)))
        }
        func find(_ flags: UInt32) -> Int? {
            types.indices.first { i in
                requirements.memoryTypeBits & (1 << UInt32(i)) != 0
                    && types[i].propertyFlags & flags == flags
            }
        }
        guard let typeIndex = find(required) else {
            throw VulkanError.missingFeature("no memory type with properties 0x\(String(required, radix: 16))")
        }
        var info = VkMemoryAllocateInfo()
        info.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO
        info.allocationSize = requirements.size
        info.memoryTypeIndex = UInt32(typeIndex)
        var memory: VkDeviceMemory?
        try check(vkAllocateMemory(handle, &info, nil, &memory),
                  "vkAllocateMemory(\(requirements.size) bytes)")
        guard let memory else { throw VulkanError.call("vkAllocateMemory", VK_ERROR_OUT_OF_DEVICE_MEMORY.rawValue) }
        return memory
    }

    /// A new pipeline for `source` (the SPIR-V is compiled once per distinct
    /// text, see `ShaderCompiler`), with `bindings` at slots 0..<n of set 0.
    /// Its workgroup size and push-constant size are read from the SPIR-V.
    /// `name` labels compile errors; `includes` and `defines` are passed to
    /// `ShaderCompiler.compile`. Callers keep the pipelines they reuse.
    public func makePipeline(name: String, source: String, includes: [String: String] = [:],
                             defines: [(name: String, value: String)] = [],
                             bindings: [ComputePipeline.BindingKind]) throws -> ComputePipeline {
        let spirv = try ShaderCompiler.shared.compile(source: source, name: name, includes: includes,
                                                      defines: defines)
        let reflection = try SPIRVReflection(spirv: spirv)
        return try ComputePipeline(device: self, name: name, spirv: spirv, bindings: bindings,
                                   pushConstantSize: reflection.pushConstantSize,
                                   workgroupSize: reflection.workgroupSize,
                                   readOnlyBindings: reflection.readOnlyBindings)
    }
}

/// The VkDevice and its pipeline cache, destroyed when the last of the
/// device and its pipelines goes (the device caches pipelines, so pipelines
/// cannot hold the `Device` itself without a cycle).
final class DeviceCore: @unchecked Sendable {
    /// Kept so the instance is destroyed after the device, never before.
    let instance: Instance
    let handle: VkDevice
    let pipelineCache: VkPipelineCache
    let objectCounter = LiveObjectCounter()
    let timestampPools: TimestampPools

    init(instance: Instance, handle: VkDevice, pipelineCache: VkPipelineCache) {
        self.instance = instance
        self.handle = handle
        self.pipelineCache = pipelineCache
        timestampPools = TimestampPools(device: handle, counter: objectCounter,
                                        queryCount: CommandBuffer.maxTimestamps)
    }

    deinit {
        timestampPools.destroyAll()
        vkDestroyPipelineCache(handle, pipelineCache, nil)
        vkDestroyDevice(handle, nil)
    }
}

/// Counts live wrapper-owned Vulkan objects, so leak tests can watch it.
final class LiveObjectCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    var count: Int { lock.lock(); defer { lock.unlock() }; return value }
    func add(_ n: Int) { lock.lock(); value += n; lock.unlock() }
}

extension Device {
    /// The device's timestamp counter and the host's `CLOCK_MONOTONIC` (ns)
    /// read together (`VK_EXT_calibrated_timestamps`), or nil where the
    /// device cannot (`info.supportsCalibratedTimestamps`) or the call fails.
    public func calibratedClocks() -> (deviceTicks: UInt64, monotonicNanoseconds: UInt64)? {
        guard info.supportsCalibratedTimestamps,
              let raw = vkGetDeviceProcAddr(handle, "vkGetCalibratedTimestampsEXT") else { return nil }
        let calibrate = unsafeBitCast(raw, to: PFN_vkGetCalibratedTimestampsEXT.self)
        var infos = [VkCalibratedTimestampInfoEXT](repeating: VkCalibratedTimestampInfoEXT(), count: 2)
        for (i, domain) in [VK_TIME_DOMAIN_DEVICE_EXT, VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT].enumerated() {
            infos[i].sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT
            infos[i].timeDomain = domain
        }
        var values: [UInt64] = [0, 0]
        var deviation: UInt64 = 0
        guard calibrate(handle, 2, &infos, &values, &deviation) == VK_SUCCESS else { return nil }
        return (values[0], values[1])
    }
}
