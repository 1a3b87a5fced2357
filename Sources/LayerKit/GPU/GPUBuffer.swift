internal import VulkanCompute

/// Float32 values on the device that a kernel reads as a std430 storage
/// buffer (`layout(std430, binding = k) readonly buffer B { float v[]; }`,
/// or vec4/mat4 elements over the same floats): a layer's weights made once
/// with `GPUContext.makeBuffer(floats:)`, or per-dispatch data from
/// `GPUCommandBuffer.temporaryBuffer(floats:fill:)`.
public struct GPUBuffer: Sendable {
    /// The Vulkan buffer.
    let buffer: Buffer
    /// Gives the buffer back to its pool when the last copy of this value dies.
    private let lease: Lease?

    /// Holds `buffer` until the last copy of the `GPUBuffer` dies, then
    /// returns it to `pool`, which hands it out again only once no command
    /// buffer retains it (`StagingPool.take`).
    private final class Lease: Sendable {
        let buffer: Buffer
        let pool: StagingPool
        init(_ buffer: Buffer, _ pool: StagingPool) { (self.buffer, self.pool) = (buffer, pool) }
        deinit { pool.giveBack(buffer) }
    }

    /// `buffer`, given back to `pool` when no copy of this value is left
    /// (nil: its owner gives it back, as a command buffer does its
    /// temporary buffers).
    init(buffer: Buffer, returningTo pool: StagingPool? = nil) {
        self.buffer = buffer
        lease = pool.map { Lease(buffer, $0) }
    }

    /// How many Float32 values it holds.
    public var floatCount: Int { buffer.length / 4 }
}
