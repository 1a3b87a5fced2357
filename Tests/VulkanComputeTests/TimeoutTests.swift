import Foundation
import Testing
@testable import VulkanCompute

/// A fence wait gives up after its timeout with `VulkanError.timeout`
/// instead of hanging, and the device stays usable: the same command buffer
/// can be waited for again and completes, and new work runs.
@Suite(.enabled(if: TestDevice.isEnabled))
struct TimeoutTests {
    /// Each invocation runs an integer hash `p.iterations` times from
    /// `p.seed + index` and stores it, so the work cannot be optimized away.
    /// The loop is bounded (the work always ends); llvmpipe also caps one
    /// loop at 65,535 iterations, so length comes from the invocation count.
    static let spinShader = """
        #version 450
        layout(local_size_x = 64) in;
        layout(std430, binding = 0) buffer Out { uint result[]; };
        layout(push_constant) uniform P { uint count; uint iterations; uint seed; } p;
        void main() {
            uint index = gl_GlobalInvocationID.x;
            if (index >= p.count) return;
            uint h = p.seed + index;
            for (uint i = 0u; i < p.iterations; ++i) {
                h = h * 1664525u + 1013904223u;
                h ^= h >> 13;
            }
            result[index] = h;
        }
        """

    static let iterations: UInt32 = 50_000

    /// Records and commits `count` invocations of the spin shader.
    static func spin(_ device: Device, count: Int, seed: UInt32) throws -> (CommandBuffer, Buffer) {
        let pipeline = try device.makePipeline(name: "spin.comp", source: spinShader, bindings: [.storageBuffer])
        let output = try Buffer(device: device, length: count * 4)
        var constants = PushConstants()
        constants.append(UInt32(count))
        constants.append(iterations)
        constants.append(seed)
        let commands = try CommandBuffer(device: device)
        try commands.dispatch(pipeline, bindings: [.buffer(output)], pushConstants: constants, threads: (count, 1, 1))
        try commands.commit()
        return (commands, output)
    }

    /// What invocation `index` stores, computed on the CPU.
    static func expectedHash(seed: UInt32, index: Int) -> UInt32 {
        var h = seed &+ UInt32(index)
        for _ in 0..<iterations {
            h = h &* 1664525 &+ 1013904223
            h ^= h >> 13
        }
        return h
    }

    /// Checks a few invocations' results (the CPU loop is slow in debug builds).
    static func verify(_ output: Buffer, count: Int, seed: UInt32) {
        let results = output.contents!.bindMemory(to: UInt32.self, capacity: count)
        for index in [0, count / 2, count - 1] {
            #expect(results[index] == expectedHash(seed: seed, index: index), "invocation \(index)")
        }
    }

    @Test func aWaitPastItsTimeoutThrowsAndTheDeviceStaysUsable() throws {
        // A device of its own: the spinning work must not delay other tests.
        let device = try Device(validation: true)
        // 0.7 s of work on lavapipe; a real GPU runs thousands of invocations
        // at once (an H200 finished 16,384 in 4 ms), so it gets 1,024 times more.
        let count = device.info.kind == .cpu ? 16_384 : 16_384 * 1_024
        let (commands, output) = try Self.spin(device, count: count, seed: 7)
        let start = Date()
        do {
            try commands.waitUntilCompleted(timeout: 0.001)
            Issue.record("\(count) invocations finished within 1 ms: the test no longer spins long enough")
        } catch VulkanError.timeout(_) {
            // Expected: the fence had not signalled yet.
        }
        let timedOutAfter = Date().timeIntervalSince(start)
        #expect(timedOutAfter < 5, "a timed-out wait must return promptly")
        // The work is still running; waiting again (default timeout) finishes it.
        try commands.waitUntilCompleted()
        print("timeout: the 1 ms wait returned after \(timedOutAfter) s; the work took \(Date().timeIntervalSince(start)) s")
        Self.verify(output, count: count, seed: 7)

        // New work on the same device runs normally.
        let (next, nextOutput) = try Self.spin(device, count: 64, seed: 3)
        try next.waitUntilCompleted()
        Self.verify(nextOutput, count: 64, seed: 3)
    }
}
