import Testing
@testable import VulkanCompute

@Suite(.enabled(if: TestDevice.isEnabled))
struct DispatchTests {
    static let scaleShader = """
        #version 450
        layout(local_size_x = 64) in;
        layout(std430, binding = 0) readonly buffer In { float src[]; };
        layout(std430, binding = 1) writeonly buffer Out { float dst[]; };
        layout(push_constant) uniform P { uint count; float scale; float offset; } p;
        void main() {
            uint i = gl_GlobalInvocationID.x;
            if (i < p.count) dst[i] = src[i] * p.scale + p.offset;
        }
        """

    /// A pipeline of `scaleShader` on `device` (its SPIR-V compiled once).
    static func scalePipeline(_ device: Device) throws -> ComputePipeline {
        try device.makePipeline(name: "scale.comp", source: scaleShader, bindings: [.storageBuffer, .storageBuffer])
    }

    /// `scaleShader`'s push constants: count, scale, offset.
    static func scaleConstants(count: Int, scale: Float, offset: Float) -> PushConstants {
        var constants = PushConstants()
        constants.append(UInt32(count))
        constants.append(scale)
        constants.append(offset)
        return constants
    }

    @Test func bufferDispatchComputesEveryElement() throws {
        let device = try TestDevice.get()
        let count = 1000
        let input = try Buffer(device: device, length: count * 4)
        let output = try Buffer(device: device, length: count * 4)
        let source = input.contents!.bindMemory(to: Float.self, capacity: count)
        for i in 0..<count { source[i] = Float(i) - 500 }
        let commands = try CommandBuffer(device: device)
        try commands.dispatch(Self.scalePipeline(device), bindings: [.buffer(input), .buffer(output)],
                              pushConstants: Self.scaleConstants(count: count, scale: 3, offset: 0.5),
                              threads: (count, 1, 1))
        try commands.commit()
        try commands.waitUntilCompleted()
        let result = output.contents!.bindMemory(to: Float.self, capacity: count)
        for i in 0..<count {
            #expect(result[i] == (Float(i) - 500) * 3 + 0.5, "element \(i)")
        }
    }

    @Test func spirvIsCompiledOncePerSourceAndSizesComeFromIt() throws {
        let device = try TestDevice.get()
        let first = try Self.scalePipeline(device)
        // Counted by name: other tests compile other shaders meanwhile, in parallel.
        let compiles = ShaderCompiler.shared.compileCount(name: "scale.comp")
        _ = try Self.scalePipeline(device)
        #expect(ShaderCompiler.shared.compileCount(name: "scale.comp") == compiles)
        // `layout(local_size_x = 64)` and three 4-byte members, as declared in the GLSL.
        #expect([first.workgroupSize.0, first.workgroupSize.1, first.workgroupSize.2] == [64, 1, 1])
        #expect(first.pushConstantSize == 12)
    }

    @Test func bufferToImageToBufferCopiesRoundTripBitExactly() throws {
        let device = try TestDevice.get()
        let image = try Image(device: device, width: 5, height: 3, layers: 2)
        let bytes = 5 * 3 * 2 * Image.bytesPerTexel
        let source = try Buffer(device: device, length: bytes)
        let destination = try Buffer(device: device, length: bytes)
        let pattern = (0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        source.contents!.copyMemory(from: pattern, byteCount: bytes)
        let commands = try CommandBuffer(device: device)
        try commands.copy(from: source, to: image)
        try commands.barrier()
        try commands.copy(from: image, to: destination)
        try commands.commit()
        try commands.waitUntilCompleted()
        let back = Array(UnsafeRawBufferPointer(start: destination.contents!, count: bytes))
        #expect(back == pattern)
        let small = try Buffer(device: device, length: bytes - 1)
        #expect(throws: VulkanError.self) { try CommandBuffer(device: device).copy(from: small, to: image) }
    }

    @Test func wrongBindingCountIsAnError() throws {
        let device = try TestDevice.get()
        let pipeline = try Self.scalePipeline(device)
        let buffer = try Buffer(device: device, length: 16)
        let commands = try CommandBuffer(device: device)
        #expect(throws: VulkanError.self) {
            try commands.dispatch(pipeline, bindings: [.buffer(buffer)], threads: (1, 1, 1))
        }
    }

    @Test func deviceLocalBuffersRoundTripThroughCopies() throws {
        let device = try TestDevice.get()
        let count = 257
        let upload = try Buffer(device: device, length: count * 4)
        let resident = try Buffer(device: device, length: count * 4, storage: .private)
        let readback = try Buffer(device: device, length: count * 4)
        #expect(resident.contents == nil)
        let source = upload.contents!.bindMemory(to: Float.self, capacity: count)
        for i in 0..<count { source[i] = Float(i) * 0.5 - 7 }
        let commands = try CommandBuffer(device: device)
        try commands.copy(from: upload, to: resident, length: count * 4)
        try commands.barrier()
        try commands.copy(from: resident, to: readback, length: count * 4)
        try commands.commit()
        try commands.waitUntilCompleted()
        let result = readback.contents!.bindMemory(to: Float.self, capacity: count)
        for i in 0..<count { #expect(result[i] == Float(i) * 0.5 - 7) }
        #expect(throws: VulkanError.self) {
            try CommandBuffer(device: device).copy(from: upload, to: resident, length: count * 4 + 1)
        }
    }
}
