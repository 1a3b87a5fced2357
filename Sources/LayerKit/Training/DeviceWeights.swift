import Foundation

/// The optimizer's Float32 parameter buffer after a GPU step, and where
/// each trained parameter starts in it: the values `TrainingPass` re-derives
/// its layers' GPU weight forms from. Valid until the next step.
struct DeviceParameters {
    let buffer: GPUBuffer
    let context: GPUContext
    let offsets: [String: Int]
}

/// `weight_gather.comp`'s push constants: `count` elements of a weight form,
/// each read at `offset` plus its map entry in the parameter buffer.
struct WeightGatherConstants: BitwiseCopyable, ElementRows {
    var offset: UInt32, count: UInt32, rowLength: UInt32

    init(offset: Int, count: Int) {
        self.offset = UInt32(offset)
        self.count = UInt32(count)
        rowLength = Self.rowLength(count: count)
    }
}

/// Where one element of each GPU weight form of a layer comes from: the
/// index of a parameter's element, or -1 for padding (held as Int32 bits in
/// a Float32 buffer), for the layer's weights and its bias.
struct WeightFormMap {
    /// One buffer of a layer's form: the step of a graph (by batch size),
    /// the block its convolution was prepared for (another block arranges
    /// the weights another way) and the parameter role it holds.
    struct Key: Hashable {
        let step: WeightFormStep
        let block: AnyHashable
        let role: String
    }

    let buffer: GPUBuffer
    let count: Int
}

/// A step of the training graph of one batch size.
struct WeightFormStep: Hashable {
    let batchSize: Int
    let step: Int
}

/// A layer's GPU weight forms kept across an optimizer step: a remade layer
/// (`replacingParameters`, the new values on the host for the CPU work and
/// the backward pass) takes over its predecessor's device buffers, and
/// `weight_gather.comp` rewrites them from the optimizer's parameter buffer,
/// so no weight is uploaded. The forms are rearranged, zero-padded copies
/// (a convolution's mat4 blocks, its bias as vec4s): re-derived on the
/// device by a gather whose index map is the arrangement applied once on
/// the host to the parameters' element indices (exact as Float32 up to
/// 2^24 elements), so the buffers hold the bits an upload would have.
/// Convolutions and Gemm's GPU form (a 1x1 convolution, alpha and beta 1)
/// in Float32 are kept this way; any other layer is made anew and its next
/// plan uploads its weights, as before.
final class WeightForms {
    /// The index maps made so far, each kept for the steps after.
    private var maps: [WeightFormMap.Key: WeightFormMap] = [:]

    /// Hands `old`'s convolution form's GPU state to `new`'s and encodes on
    /// `commands` the gathers that rewrite the buffers of the `trained`
    /// roles (role to parameter name) from `device`; returns how many (0:
    /// `new` keeps no state of `old`'s, and its next plan uploads its weights).
    func refresh(from old: Layer, to new: Layer, trained: [String: String], step: WeightFormStep,
                 device: DeviceParameters, commands: GPUCommandBuffer) throws -> Int {
        guard !trained.isEmpty, trained.values.allSatisfy({ device.offsets[$0] != nil }),
              let roles = Self.formBuffers(of: new), trained.keys.allSatisfy({ roles[$0] != nil }),
              let oldForm = Self.madeForm(of: old) else { return 0 }
        let states = oldForm.gpuState.values.filter { $0.context === device.context }
        guard !states.isEmpty, let newForm = try Self.form(of: new), !newForm.usesFloat16Weights else { return 0 }
        // Every form's maps first (made the first time), so that a form is taken over only with all of them.
        var indexForm: Convolution?
        var formMaps: [[(role: String, map: WeightFormMap)]] = []
        for (context, key, _) in states {
            var maps: [(role: String, map: WeightFormMap)] = []
            for role in trained.keys.sorted() {
                let mapKey = WeightFormMap.Key(step: step, block: key, role: role)
                if let known = self.maps[mapKey] {
                    maps.append((role, known))
                    continue
                }
                if indexForm == nil { indexForm = try self.indexForm(of: new, trained: trained) }
                guard let indexForm, let block = key.base as? ConvolutionBlock else { return 0 }
                let arranged = Convolution.arrangedForDevice(weights: indexForm.weights, bias: indexForm.bias,
                                                             group: indexForm.group, block: block)
                // An index i + 1 (0 for padding) becomes i (or -1), carried as Int32 bits.
                let bits = (roles[role] == .weights ? arranged.weights : arranged.bias).map {
                    Float(bitPattern: UInt32(bitPattern: Int32($0) - 1))
                }
                let made = WeightFormMap(buffer: try context.makeBuffer(floats: bits, pooled: false), count: bits.count)
                self.maps[mapKey] = made
                maps.append((role, made))
            }
            formMaps.append(maps)
        }
        let kernel = try BuiltInShaders.weightGather.kernel(on: device.context)
        for ((context, key, state), maps) in zip(states, formMaps) {
            newForm.gpuState.store(state, on: context, key: key)
            for (role, map) in maps {
                let constants = WeightGatherConstants(offset: device.offsets[trained[role]!]!, count: map.count)
                try commands.dispatch(kernel, images: [], buffers: [device.buffer, map.buffer,
                                                                    roles[role] == .weights ? state.weights : state.bias],
                                      constants: constants, threads: constants.threads)
            }
        }
        return formMaps.reduce(0) { $0 + $1.count }
    }

    /// Which of a convolution form's buffers each parameter role fills.
    private enum FormBuffer { case weights, bias }

    /// The roles of `layer`'s parameters and the form buffer each fills,
    /// when its GPU weight forms can be re-derived: a convolution's, or a
    /// Gemm's whose form copies B and C unscaled (alpha and beta 1).
    private static func formBuffers(of layer: Layer) -> [String: FormBuffer]? {
        if layer is Convolution { return ["weights": .weights, "bias": .bias] }
        if let gemm = layer as? Gemm, gemm.hasGPUImplementation, gemm.alpha == 1, gemm.c == nil || gemm.beta == 1 {
            return ["B": .weights, "C": .bias]
        }
        return nil
    }

    /// The convolution holding `layer`'s GPU state, made if need be.
    private static func form(of layer: Layer) throws -> Convolution? {
        if let convolution = layer as? Convolution { return convolution }
        return try (layer as? Gemm)?.convolution()
    }

    /// The convolution holding `layer`'s GPU state if one was made (nothing made).
    private static func madeForm(of layer: Layer) -> Convolution? {
        (layer as? Convolution) ?? (layer as? Gemm)?.madeConvolution
    }

    /// `layer`'s convolution form made from its `trained` parameters'
    /// element indices plus one (1, 2, ...) in place of their values: its
    /// arranged weights and bias say where each element comes from. Nil for
    /// a parameter past 2^24 elements (not every index is a Float32).
    private func indexForm(of layer: Layer, trained: [String: String]) throws -> Convolution? {
        guard let differentiable = layer as? DifferentiableLayer else { return nil }
        var indices: [String: Tensor] = [:]
        let shapes = Dictionary(differentiable.trainableParameters.map { ($0.role, $0.value.shape) }) { first, _ in first }
        for role in trained.keys {
            guard let shape = shapes[role] else { return nil }
            let count = shape.reduce(1, *)
            guard count < 1 << 24 else { return nil }
            indices[role] = try Tensor(shape: shape, values: (1...max(count, 1)).prefix(count).map { Float($0) })
        }
        // Frozen roles keep their values (`checkedReplacements`); their buffers are not rewritten.
        return try Self.form(of: differentiable.replacingParameters(indices))
    }
}
