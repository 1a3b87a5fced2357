import CKernels
internal import VulkanCompute

/// What a convolution or GEMM applies to its output after the sums and the
/// bias, while the output is still in cache (CPU) or in registers (GPU):
/// per-element stages (`before`), then optionally a residual tensor of the
/// output's shape added element by element, then more stages (`after`).
/// The stages are the per-element ops' own formula chains, so both
/// backends' epilogues come from the ops' one declaration: the CPU runs the
/// chains' `CPUProgram`s on each finished row segment, the GPU the chains'
/// GLSL (`FormulaChain.glsl`) inside the convolution's shader
/// (Shaders/epilogue.glsl).
///
/// Made by the graph pass `ModelGraph.fuseConvolutionEpilogues()`; run by
/// `EpilogueLayer`.
struct Epilogue: Sendable {
    /// The stages before the residual add (all of them without one).
    let before: FormulaChain
    /// Whether a residual tensor is added.
    let residual: Bool
    /// The stages after the residual add.
    let after: FormulaChain
    /// The output's channels (axis 1), which per-channel values index.
    let channels: Int

    /// The chains compiled for the CPU (nil for an empty chain).
    private let beforeProgram: CPUProgram?
    private let afterProgram: CPUProgram?
    /// The GLSL of the stages, and the scalar and per-channel values they read.
    private let glsl: (functions: String, before: String, after: String, parameters: [Float], weights: [[Float]])

    /// Throws when a chain's per-channel values do not number `channels`,
    /// or a formula cannot compile.
    init(before: FormulaChain, residual: Bool, after: FormulaChain, channels: Int) throws {
        try before.checkChannels(channels)
        try after.checkChannels(channels)
        (self.before, self.residual, self.after, self.channels) = (before, residual, after, channels)
        beforeProgram = before.stages.isEmpty ? nil : try before.cpuProgram()
        afterProgram = after.stages.isEmpty ? nil : try after.cpuProgram()
        var parameters: [Float] = []
        var weights: [[Float]] = []
        let first = try FormulaChain.glsl(before.stages[...], functionPrefix: "lk_epilogue_before", parameter: "lk_epilogue_param",
                                          weight: "lk_epilogue_weight", parameters: &parameters, weights: &weights)
        let second = try FormulaChain.glsl(after.stages[...], functionPrefix: "lk_epilogue_after", parameter: "lk_epilogue_param",
                                           weight: "lk_epilogue_weight", parameters: &parameters, weights: &weights)
        glsl = ([first.functions, second.functions].filter { !$0.isEmpty }.joined(separator: " "),
                first.body, second.body, parameters, weights)
    }

    /// `Relu`, `Add+Relu`: the fused ops in order, for names and kernels.
    var name: String {
        (before.stages.map(\.name) + (residual ? ["Add"] : []) + after.stages.map(\.name)).joined(separator: "+")
    }

    // MARK: - CPU

    /// Applies the epilogue to pixels `segment` of the planes `channels`
    /// (`pixels` floats each, channel c at `c * pixels`) of one image's
    /// output, in place, after the convolution wrote them: per channel, the
    /// stages before, the residual (same layout, never the output itself)
    /// added, the stages after. On the calling thread (a convolution calls
    /// it per tile on the tile's thread). The same primitives as the unfused
    /// layers, in the same order per element, so the result is theirs bit
    /// for bit.
    func apply(output: UnsafeMutablePointer<Float>, residual: UnsafePointer<Float>?, channels: Range<Int>, pixels: Int,
               segment: Range<Int>) {
        let isa = lk_kernels_isa()
        let scratch = (beforeProgram.map(CPUProgram.Scratch.init), afterProgram.map(CPUProgram.Scratch.init))
        let n = segment.count
        if n == pixels, !hasChannelValues {
            // Whole planes and no value per channel: one run over them all,
            // not one per channel (small planes of many channels, e.g. 7x7 by
            // 1280, paid a call per 49 elements).
            let offset = channels.lowerBound * pixels
            run(output + offset, residual.map { $0 + offset }, count: channels.count * pixels, channel: 0,
                scratch: scratch, isa: isa)
            return
        }
        for c in channels {
            let offset = c * pixels + segment.lowerBound
            run(output + offset, residual.map { $0 + offset }, count: n, channel: c, scratch: scratch, isa: isa)
        }
    }

    /// Applies the epilogue to columns `columns` of each of `rows` rows of a
    /// row-major `rows x stride` matrix (a GEMM's output, whose channels are
    /// its columns), in place; the residual has the same layout.
    func apply(matrix output: UnsafeMutablePointer<Float>, residual: UnsafePointer<Float>?, rows: Int, stride: Int,
               columns: Range<Int>) {
        let isa = lk_kernels_isa()
        let scratch = (beforeProgram.map(CPUProgram.Scratch.init), afterProgram.map(CPUProgram.Scratch.init))
        // A row segment spans channels: values that differ per channel take
        // one element at a time.
        let perChannel = hasChannelValues
        if !perChannel, columns.count == stride {
            run(output, residual, count: rows * stride, channel: 0, scratch: scratch, isa: isa)
            return
        }
        for i in 0..<rows {
            let offset = i * stride + columns.lowerBound
            if perChannel {
                for (k, j) in columns.enumerated() {
                    run(output + offset + k, residual.map { $0 + offset + k }, count: 1, channel: j, scratch: scratch, isa: isa)
                }
            } else {
                run(output + offset, residual.map { $0 + offset }, count: columns.count, channel: 0, scratch: scratch, isa: isa)
            }
        }
    }

    /// Whether a stage has a value per channel.
    private var hasChannelValues: Bool {
        beforeProgram?.hasChannelValues == true || afterProgram?.hasChannelValues == true
    }

    // The `_isa` primitives cannot fail: `lk_kernels_isa()` is this CPU's.
    private func run(_ y: UnsafeMutablePointer<Float>, _ r: UnsafePointer<Float>?, count: Int, channel: Int,
                     scratch: (CPUProgram.Scratch?, CPUProgram.Scratch?), isa: lk_isa) {
        if let beforeProgram, let s = scratch.0 {
            beforeProgram.run(segment: y, output: y, count: count, channel: channel, scratch: s, isa: isa)
        }
        if let r { _ = lk_binary_f32_isa(isa, LK_ADD, y, 1, r, 1, y, count) }
        if let afterProgram, let s = scratch.1 {
            afterProgram.run(segment: y, output: y, count: count, channel: channel, scratch: s, isa: isa)
        }
    }

    // MARK: - GPU

    /// The bindings the epilogue adds after its kernel's own: the values
    /// buffer, then the residual image if any.
    var trailingBindings: [ComputePipeline.BindingKind] {
        [.storageBuffer] + (residual ? [.storageImage] : [])
    }

    /// The defines that put the epilogue into a shader including
    /// Shaders/epilogue.glsl, its bindings from `firstBinding` on. They hold
    /// the stages' formulas (not their values, which are in the buffer), so
    /// the kernel key tells chains apart and one chain's kernel serves every
    /// convolution of a model with that chain.
    func defines(firstBinding: Int) -> [(name: String, value: String)] {
        var defines: [(name: String, value: String)] = [
            ("LK_EPILOGUE", "1"),
            ("LK_EPILOGUE_VALUES_BINDING", "\(firstBinding)"),
            ("LK_EPILOGUE_WEIGHTS", "\(4 + glsl.parameters.count)"),
            ("LK_EPILOGUE_FUNCTIONS", glsl.functions),
            ("LK_EPILOGUE_BEFORE(x)", "(\(glsl.before))"),
            ("LK_EPILOGUE_AFTER(x)", "(\(glsl.after))"),
        ]
        if residual {
            defines += [("LK_EPILOGUE_RESIDUAL", "1"), ("LK_EPILOGUE_RESIDUAL_BINDING", "\(firstBinding + 1)")]
        }
        return defines
    }

    /// The values buffer's contents (layout in Shaders/epilogue.glsl).
    var deviceValues: [Float] {
        let slices = (channels + 3) / 4
        return [0, Float(slices), 0, 0] + glsl.parameters
            + PerElementConstants.weightLayout(glsl.weights, channels: channels).prefix(glsl.weights.count * slices * 4)
    }
}
