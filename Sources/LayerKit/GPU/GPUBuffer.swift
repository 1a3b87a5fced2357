internal import VulkanCompute

/// Float32 values on the device that a kernel reads as a std430 storage
/// buffer (`layout(std430, binding = k) readonly buffer B { float v[]; }`,
/// or vec4/mat4 elements over the same floats): a layer's weights made once
/// with `GPUContext.makeBuffer(floats:)`, or per-dispatch data from
/// `GPUCommandBuffer.temporaryBuffer(floats:fill:)`.
public struct GPUBuffer: Sendable {
    /// The Vulkan buffer.
    let buffer: Buffer

    /// How many Float32 values it holds.
    public var floatCount: Int { buffer.length / 4 }
}
