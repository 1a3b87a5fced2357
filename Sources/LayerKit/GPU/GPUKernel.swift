internal import VulkanCompute

/// A compute shader compiled and ready to dispatch on one `GPUContext`:
/// LayerKit's `MTLComputePipelineState`. Made by
/// `GPUContext.makeKernel(name:source:images:buffers:constants:defines:)`
/// for a custom layer's own GLSL (best in the layer's `prepare`), and
/// dispatched with `GPUCommandBuffer.dispatch(_:images:buffers:constants:threads:)`.
///
/// `Constants` is the Swift struct the shader's push-constant block holds,
/// passed by value at each dispatch; its `MemoryLayout.size` was checked
/// against the block's size in the compiled shader.
public struct GPUKernel<Constants: BitwiseCopyable>: Sendable {
    /// Names the kernel in errors and profiles.
    public let name: String
    /// How many slice images the shader binds (bindings 0..<imageCount).
    public let imageCount: Int
    /// How many storage buffers follow them.
    public let bufferCount: Int
    let pipeline: ComputePipeline
}

/// What identifies a pipeline in a context's cache: the shader and the
/// variant's defines (a user kernel's name stands for its source).
struct KernelKey: Hashable, Sendable {
    /// A built-in shader's file, or a user kernel's name.
    let shader: String
    /// `#define name value` lines of the variant, in order.
    let defines: [Define]
    /// The binding layout: images, then buffers, then `trailing` (a fused
    /// epilogue's buffer and image, after a built-in shader's own).
    let images: Int
    let buffers: Int
    var trailing: [ComputePipeline.BindingKind] = []

    struct Define: Hashable, Sendable {
        let name: String
        let value: String
    }
}

/// A binding after a kernel's own images and buffers: what a fused
/// epilogue (Shaders/epilogue.glsl) adds to the kernel it is fused into.
enum GPUBinding {
    case image(SliceImage)
    case buffer(GPUBuffer)
}
