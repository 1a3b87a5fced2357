import Foundation
public import VulkanCompute

/// Float32 values a layer keeps on the GPU (weights, biases, lookup
/// tables), written into a buffer once per device context and reused by
/// every later dispatch, as Metal layers keep their `MTLBuffer` of weights.
public final class DeviceConstants: @unchecked Sendable {
    /// The values, as given.
    public let values: [Float]
    private let lock = NSLock()
    /// One buffer per context that asked; the context is held weakly so a
    /// closed context's buffer is never handed to a new one at its address.
    private var uploads: [(context: WeakContext, buffer: Buffer)] = []

    private struct WeakContext { weak var context: GPUContext? }

    public init(_ values: [Float]) { self.values = values }

    /// The buffer holding `values` on `context`'s device (at least one
    /// float), made on first use.
    public func buffer(on context: GPUContext) throws -> Buffer {
        lock.lock(); defer { lock.unlock() }
        uploads.removeAll { $0.context.context == nil }
        if let found = uploads.first(where: { $0.context.context === context }) { return found.buffer }
        let count = max(values.count, 1)
        let buffer = try Buffer(device: context.device, length: count * 4, storage: .shared)
        guard let base = buffer.contents?.bindMemory(to: Float.self, capacity: count) else {
            throw LayerKitError.unsupported("constant buffer memory is not mapped")
        }
        base.initialize(repeating: 0, count: count)
        values.withUnsafeBufferPointer { if let source = $0.baseAddress { base.update(from: source, count: values.count) } }
        uploads.append((WeakContext(context: context), buffer))
        return buffer
    }
}
