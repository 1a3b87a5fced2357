import Foundation
import Testing
import VulkanCompute
@testable import LayerKit

/// The GPU context LayerKit's tests share, validation always on: a
/// validation error fails the test whose work produced it. Without a Vulkan
/// device the GPU tests fail, unless `LAYERKIT_ALLOW_NO_GPU=1` disables them.
enum TestGPU {
    static let shared: Result<GPUContext, Error> = Result { try GPUContext(validation: true) }

    static func get() throws -> GPUContext { try shared.get() }

    static let isEnabled: Bool = {
        if case .success = shared { return true }
        return ProcessInfo.processInfo.environment["LAYERKIT_ALLOW_NO_GPU"] != "1"
    }()

    /// The raw fp16 lanes of `image`, padding lanes included
    /// (`[layer][y][x][lane]` flattened).
    static func rawLanes(of image: SliceImage) throws -> [Float16] {
        let context = try get()
        let texels = image.texture.width * image.texture.height * image.texture.layers
        let buffer = try Buffer(device: context.device, length: texels * Image.bytesPerTexel)
        let commands = try CommandBuffer(device: context.device)
        try commands.copy(from: image.texture, to: buffer)
        try commands.commit()
        try commands.waitUntilCompleted()
        let lanes = buffer.contents!.bindMemory(to: Float16.self, capacity: texels * 4)
        return Array(UnsafeBufferPointer(start: lanes, count: texels * 4))
    }
}

/// Float → nearest fp16 → Float, by Swift's own IEEE conversion (ties to
/// even): the independent reference for what the GPU stores.
func fp16Rounded(_ x: Float) -> Float { Float(Float16(x)) }

/// Bitwise equality that treats every NaN as equal to every NaN.
func sameFloat(_ a: Float, _ b: Float) -> Bool {
    (a.isNaN && b.isNaN) || a.bitPattern == b.bitPattern
}

/// Runners for the backward-pass tests: on the CPU evaluator, or on the
/// shared test GPU (lavapipe here, validation on) for every layer with `encode`.
func cpuRunner() throws -> GradientRunner {
    GradientRunner(backend: try Backend(computeUnits: .cpuOnly, notice: { _ in }))
}

func gpuRunner() throws -> GradientRunner {
    GradientRunner(backend: try Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in }))
}
