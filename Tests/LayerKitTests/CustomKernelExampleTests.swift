import Foundation
import Testing
import LayerKit

// Docs/CUSTOM_KERNELS.md's example, verbatim: if this file stops compiling
// or passing, the document is wrong.

// README-EXAMPLE-BEGIN
/// Mirrors each feature map left to right (output column x is input column
/// W - 1 - x), or top to bottom with `vertical: 1`. Not element-wise: an
/// output texel reads another place of the input.
final class Flip: CustomLayer {
    static let name = "Flip"
    let vertical: Bool

    init(parameters: [String: Any]) throws {
        let reader = LayerParameters(parameters, layer: Self.name)
        vertical = try reader.float("vertical", default: 0) != 0
        try reader.requireOnly(["vertical"])
    }

    func setWeightData(_ weights: [Data]) throws {
        guard weights.isEmpty else { throw LayerKitError.invalidWeights("Flip takes no weights") }
    }

    func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] { inputShapes }

    // CPU: NCHW Float32; each H x W plane is mirrored.
    func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        for (input, output) in zip(inputs, outputs) {
            guard input.shape.count == 4 else { throw LayerKitError.shapeMismatch("Flip takes NCHW tensors") }
            let (h, w) = (input.shape[2], input.shape[3])
            for plane in 0..<(input.count / (h * w)) {
                for y in 0..<h {
                    for x in 0..<w {
                        let (sy, sx) = vertical ? (h - 1 - y, x) : (y, w - 1 - x)
                        output[(plane * h + y) * w + x] = input[(plane * h + sy) * w + sx]
                    }
                }
            }
        }
    }

    // GPU: the shader's push constants, field for field.
    struct Constants: BitwiseCopyable {
        var shape: ShapeConstants   // LK_SHAPE_FIELDS
        var vertical: UInt32
    }

    static let shader = """
        #version 450
        #include "layerkit.glsl"
        LK_WORKGROUP_SIZE;
        layout(rgba16f, binding = 0) readonly uniform image2DArray source;
        layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
        layout(push_constant) uniform Constants { LK_SHAPE_FIELDS; uint vertical; } p;

        void main() {
            uvec3 id = gl_GlobalInvocationID;  // one invocation per output texel
            if (id.x >= p.width || id.y >= p.height || id.z >= p.layers) return;
            uvec2 from = p.vertical != 0u ? uvec2(id.x, p.height - 1u - id.y) : uvec2(p.width - 1u - id.x, id.y);
            vec4 texel = imageLoad(source, ivec3(from, id.z));
            // Padding lanes stay zero; round to nearest fp16 before the store.
            texel = mix(vec4(0.0), texel, lk_channel_lanes(lk_slice_of(id.z, p.slices), p.channels));
            imageStore(destination, ivec3(id), lk_round_half(texel));
        }
        """

    var hasGPUImplementation: Bool { true }

    // Compiles the shader once per context (a later call finds it cached).
    func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try kernel(on: context) }

    func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        let kernel = try kernel(on: commandBuffer.context)
        for (input, output) in zip(inputs, outputs) {
            let constants = Constants(shape: output.shapeConstants, vertical: vertical ? 1 : 0)
            try commandBuffer.dispatch(kernel, images: [input, output], constants: constants,
                                       threads: output.threads)
        }
    }

    private func kernel(on context: GPUContext) throws -> GPUKernel<Constants> {
        try context.makeKernel(name: Self.name, source: Self.shader, images: 2, constants: Constants.self)
    }
}
// README-EXAMPLE-END

@Suite(.enabled(if: TestGPU.isEnabled))
struct CustomKernelExampleTests {
    /// GPU agrees with CPU, and both reverse the columns (or rows) of an
    /// input whose values name their position, channels 1, 5 and 8, batch 2.
    @Test(arguments: [0, 1], [1, 5, 8])
    func theFlipRunsOnBothBackendsAndMirrors(vertical: Int, channels: Int) throws {
        let layer = try Flip(parameters: ["vertical": vertical])
        let (n, h, w) = (2, 3, 5)
        // Exact in fp16: value = 100 * plane + 10 * y + x.
        let x = try Tensor(shape: [n, channels, h, w], values: (0..<(n * channels * h * w)).map { i in
            Float(i / (h * w) * 100 + i / w % h * 10 + i % w)
        })
        let gpu = try Backend(computeUnits: .gpu, context: TestGPU.get()).run(layer, inputs: [x])
        let cpu = try Backend(computeUnits: .cpuOnly).run(layer, inputs: [x])
        #expect(gpu.placement == .gpu)
        #expect(try ParityReport(gpu: gpu.outputs[0], cpu: cpu.outputs[0]).passed)
        for plane in 0..<(n * channels) {
            for row in 0..<h {
                for column in 0..<w {
                    let (sy, sx) = vertical == 1 ? (h - 1 - row, column) : (row, w - 1 - column)
                    let expected = Float(plane * 100 + sy * 10 + sx)
                    let i = (plane * h + row) * w + column
                    #expect(gpu.outputs[0][i] == expected, "plane \(plane) (\(row), \(column))")
                    #expect(cpu.outputs[0][i] == expected, "plane \(plane) (\(row), \(column))")
                }
            }
        }
    }

    /// A constants struct that does not match the shader's block is refused
    /// when the kernel is made, with both sizes named.
    @Test func aMismatchedConstantsStructIsRefused() throws {
        let context = try TestGPU.get()
        do {
            _ = try context.makeKernel(name: "FlipWrongConstants", source: Flip.shader, images: 2,
                                       constants: ShapeConstants.self)
            Issue.record("a 20-byte struct was accepted for a 24-byte block")
        } catch let error as LayerKitError {
            #expect("\(error)".contains("20 bytes"), "\(error)")
            #expect("\(error)".contains("24"), "\(error)")
        }
    }

    /// A second source under a used kernel name is refused, not confused with the first.
    @Test func anotherSourceUnderAUsedNameIsRefused() throws {
        let context = try TestGPU.get()
        _ = try context.makeKernel(name: "FlipOnce", source: Flip.shader, images: 2, constants: Flip.Constants.self)
        #expect(throws: LayerKitError.self) {
            try context.makeKernel(name: "FlipOnce", source: Flip.shader + "\n", images: 2,
                                   constants: Flip.Constants.self)
        }
    }

    /// A GLSL error in a custom kernel is a LayerKit error naming the kernel
    /// and the line (12 of `Flip.shader`, counted by hand).
    @Test func aGLSLErrorNamesTheKernelAndLine() throws {
        let context = try TestGPU.get()
        let broken = Flip.shader.replacingOccurrences(of: "vec4 texel = imageLoad", with: "vec4 texel = imageLoadd")
        do {
            _ = try context.makeKernel(name: "BrokenFlip", source: broken, images: 2, constants: Flip.Constants.self)
            Issue.record("a broken shader compiled")
        } catch let error as LayerKitError {
            #expect("\(error)".contains("BrokenFlip:12:"), "\(error)")
            #expect("\(error)".contains("imageLoadd"), "\(error)")
        }
    }
}
