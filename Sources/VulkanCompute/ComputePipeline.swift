import CVulkan

/// A compiled compute shader with its descriptor-set layout (one set,
/// bindings 0..<n) and push-constant range: Metal's `MTLComputePipelineState`.
/// Made by `Device.makePipeline(...)`; owned by its device.
public final class ComputePipeline: @unchecked Sendable {
    /// What each binding of set 0 holds.
    public enum BindingKind: Int, Sendable {
        case storageImage, storageBuffer
        var descriptorType: VkDescriptorType {
            self == .storageImage ? VK_DESCRIPTOR_TYPE_STORAGE_IMAGE : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
        }
    }

    /// The shader's name, as given to `Device.makePipeline`.
    public let name: String
    public let bindings: [BindingKind]
    public let pushConstantSize: Int
    /// The shader's `local_size_x/y/z`.
    public let workgroupSize: (UInt32, UInt32, UInt32)
    /// The bindings the shader only reads (`readonly`); the others may be written.
    public let readOnlyBindings: Set<Int>
    private let core: DeviceCore
    let handle: VkPipeline
    let layout: VkPipelineLayout
    let setLayout: VkDescriptorSetLayout

    init(device: Device, name: String, spirv: [UInt32], bindings: [BindingKind],
         pushConstantSize: Int, workgroupSize: (UInt32, UInt32, UInt32), readOnlyBindings: Set<Int> = []) throws {
        core = device.core
        self.readOnlyBindings = readOnlyBindings
        self.name = name
        self.bindings = bindings
        self.pushConstantSize = pushConstantSize
        self.workgroupSize = workgroupSize
        let vkDevice = device.handle
        var rollback = Rollback()
        defer { rollback.run() }

        var layoutBindings = bindings.enumerated().map { index, kind in
            VkDescriptorSetLayoutBinding(binding: UInt32(index), descriptorType: kind.descriptorType,
                                         descriptorCount: 1,
                                         stageFlags: VK_SHADER_STAGE_COMPUTE_BIT.rawValue,
                                         pImmutableSamplers: nil)
        }
        var setInfo = VkDescriptorSetLayoutCreateInfo()
        setInfo.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO
        setInfo.bindingCount = UInt32(layoutBindings.count)
        var setLayout: VkDescriptorSetLayout?
        try layoutBindings.withUnsafeMutableBufferPointer { pointer in
            setInfo.pBindings = UnsafePointer(pointer.baseAddress)
            try check(vkCreateDescriptorSetLayout(vkDevice, &setInfo, nil, &setLayout),
                      "vkCreateDescriptorSetLayout(\(name))")
        }
        guard let setLayout else { throw VulkanError.call("vkCreateDescriptorSetLayout", -1) }
        rollback.add { vkDestroyDescriptorSetLayout(vkDevice, setLayout, nil) }

        var range = VkPushConstantRange(stageFlags: VK_SHADER_STAGE_COMPUTE_BIT.rawValue, offset: 0,
                                        size: UInt32(pushConstantSize))
        var setLayoutHandle: VkDescriptorSetLayout? = setLayout
        var layoutInfo = VkPipelineLayoutCreateInfo()
        layoutInfo.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO
        layoutInfo.setLayoutCount = 1
        layoutInfo.pushConstantRangeCount = pushConstantSize > 0 ? 1 : 0
        var layout: VkPipelineLayout?
        let layoutResult = withUnsafePointer(to: &setLayoutHandle) { setPointer in
            withUnsafePointer(to: &range) { rangePointer in
                layoutInfo.pSetLayouts = setPointer
                layoutInfo.pPushConstantRanges = rangePointer
                return vkCreatePipelineLayout(vkDevice, &layoutInfo, nil, &layout)
            }
        }
        try check(layoutResult, "vkCreatePipelineLayout(\(name))")
        guard let layout else { throw VulkanError.call("vkCreatePipelineLayout(\(name))", -1) }
        rollback.add { vkDestroyPipelineLayout(vkDevice, layout, nil) }

        var moduleInfo = VkShaderModuleCreateInfo()
        moduleInfo.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO
        moduleInfo.codeSize = spirv.count * 4
        var module: VkShaderModule?
        let moduleResult = spirv.withUnsafeBufferPointer { words in
            moduleInfo.pCode = words.baseAddress
            return vkCreateShaderModule(vkDevice, &moduleInfo, nil, &module)
        }
        try check(moduleResult, "vkCreateShaderModule(\(name))")
        guard let module else { throw VulkanError.call("vkCreateShaderModule(\(name))", -1) }
        defer { vkDestroyShaderModule(vkDevice, module, nil) }

        var pipelineInfo = VkComputePipelineCreateInfo()
        pipelineInfo.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO
        pipelineInfo.layout = layout
        pipelineInfo.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO
        pipelineInfo.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT
        pipelineInfo.stage.module = module
        var pipeline: VkPipeline?
        let pipelineResult = "main".withCString { entry in
            pipelineInfo.stage.pName = entry
            return vkCreateComputePipelines(vkDevice, device.pipelineCache, 1, &pipelineInfo, nil, &pipeline)
        }
        try check(pipelineResult, "vkCreateComputePipelines(\(name))")
        guard let pipeline else { throw VulkanError.call("vkCreateComputePipelines(\(name))", -1) }
        rollback.keep()
        self.handle = pipeline
        self.layout = layout
        self.setLayout = setLayout
        device.objectCounter.add(3)
    }

    deinit {
        vkDestroyPipeline(core.handle, handle, nil)
        vkDestroyPipelineLayout(core.handle, layout, nil)
        vkDestroyDescriptorSetLayout(core.handle, setLayout, nil)
        core.objectCounter.add(-3)
    }
}
