import Foundation

/// A convolution or GEMM with a fused epilogue (`Epilogue`): per-element
/// ops and a residual add applied to the product's output as it is made,
/// instead of one pass over memory (CPU) or one dispatch (GPU) each. Made
/// by `ModelGraph.fuseConvolutionEpilogues()` from a Conv, Gemm or
/// flattened Gemm step and the steps after it; the step keeps the last
/// fused node's outputs.
///
/// Inputs: the product's input, then the residual (the output's shape) if
/// the epilogue adds one. The output must not be the residual's tensor or
/// image: the product writes each chunk before the epilogue reads the
/// residual there.
final class EpilogueLayer: Layer {
    /// The product whose output the epilogue finishes.
    enum Producer {
        case convolution(Convolution)
        case gemm(Gemm)
        case flattenedGemm(FlattenedGemm)

        var layer: Layer {
            switch self {
            case .convolution(let c): c
            case .gemm(let g): g
            case .flattenedGemm(let f): f
            }
        }

        /// The convolution the product runs as on the GPU, if any.
        func gpuConvolution() throws -> Convolution? {
            switch self {
            case .convolution(let c): c
            case .gemm(let g): try g.convolution()
            case .flattenedGemm(let f): try f.convolution()
            }
        }
    }

    let producer: Producer
    let epilogue: Epilogue
    /// `Conv+Add+Relu`: the product's op name and the fused ops.
    let layerName: String
    /// The epilogue's kernel and values buffer on each context.
    private let gpuState = PerContext<(kernel: GPUKernel<ConvolutionConstants>, values: GPUBuffer)>()

    /// `name` defaults to the product's op name and the epilogue's ops.
    init(producer: Producer, epilogue: Epilogue, name: String? = nil) {
        (self.producer, self.epilogue) = (producer, epilogue)
        layerName = name ?? "\(producer.layer.layerName)+\(epilogue.name)"
    }

    func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, epilogue.residual ? 2 : 1, layer: layerName)
        let shapes = try producer.layer.outputShapes(forInputShapes: [inputShapes[0]])
        guard shapes.count == 1, CPUEvaluator.channels(of: shapes[0]) == epilogue.channels else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): output \(shapes.map(Tensor.describe)) does not have the epilogue's \(epilogue.channels) channels")
        }
        if epilogue.residual, inputShapes[1] != shapes[0] {
            throw LayerKitError.shapeMismatch(
                "\(layerName): residual \(Tensor.describe(inputShapes[1])) is not the output's shape \(Tensor.describe(shapes[0]))")
        }
        return shapes
    }

    func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        _ = try outputShapes(forInputShapes: inputs.map(\.shape))
        let residual = epilogue.residual ? inputs[1] : nil
        if let residual, outputs.contains(where: { $0 === residual }) {
            throw LayerKitError.invalidParameter("\(layerName): the output cannot be the residual's tensor")
        }
        switch producer {
        case .convolution(let c):
            try c.evaluate(inputs: [inputs[0]], outputs: outputs, epilogue: epilogue, residual: residual)
        case .gemm(let g):
            try g.evaluate(inputs: [inputs[0]], outputs: outputs, epilogue: epilogue, residual: residual)
        case .flattenedGemm(let f):
            try f.evaluate(inputs: [inputs[0]], outputs: outputs, epilogue: epilogue, residual: residual)
        }
    }

    var hasGPUImplementation: Bool { producer.layer.hasGPUImplementation }

    func prepare(on context: GPUContext, inputShapes: [[Int]]) throws {
        try producer.layer.prepare(on: context, inputShapes: [inputShapes[0]])
        _ = try prepared(on: context, inputShape: inputShapes.first)
    }

    /// The kernel and values buffer, made once per context and block; the
    /// kernel has the block the product's own kernel takes for `inputShape`.
    private func prepared(on context: GPUContext, inputShape: [Int]?)
        throws -> (kernel: GPUKernel<ConvolutionConstants>, values: GPUBuffer) {
        guard let convolution = try producer.gpuConvolution() else {
            throw LayerKitError.unsupported("\(layerName) has no GPU form")
        }
        return try gpuState.value(on: context, key: convolution.block(forInputShape: inputShape, on: context.deviceInfo)) {
            (try convolution.kernel(on: context, inputShape: inputShape, epilogue: epilogue),
             try context.makeBuffer(floats: epilogue.deviceValues))
        }
    }

    func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        try LayerChecks.requireInputCount(inputs.map(\.shape), epilogue.residual ? 2 : 1, layer: layerName)
        let state = try prepared(on: commandBuffer.context, inputShape: inputs[0].shape)
        var bindings: [GPUBinding] = [.buffer(state.values)]
        if epilogue.residual {
            guard inputs[1].shape == outputs.first?.shape else {
                throw LayerKitError.shapeMismatch(
                    "\(layerName): residual image \(Tensor.describe(inputs[1].shape)) is not the output's shape")
            }
            bindings.append(.image(inputs[1]))
        }
        let fused = (kernel: state.kernel, bindings: bindings)
        switch producer {
        case .convolution(let c):
            try c.encode(commandBuffer: commandBuffer, inputs: [inputs[0]], outputs: outputs, epilogue: fused)
        case .gemm(let g):
            try g.encode(commandBuffer: commandBuffer, inputs: [inputs[0]], outputs: outputs, epilogue: fused)
        case .flattenedGemm(let f):
            try f.convolution().encode(commandBuffer: commandBuffer, inputs: [inputs[0]], outputs: outputs, epilogue: fused)
        }
    }
}
