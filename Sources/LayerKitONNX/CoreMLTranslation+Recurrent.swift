import LayerKitCore
// Core ML's recurrent layers (NeuralNetwork.proto: simpleRecurrent, gru,
// uniDirectionalLSTM, biDirectionalLSTM) as ONNX RNN, GRU and LSTM nodes,
// which LayerKit's recurrent layer runs (on the CPU).
//
// Core ML's layer reads [Seq, Batch, C, 1, 1]. A network of the rank-5 era
// gives LayerKit blobs without the sequence axis ([N, C], or [N, C, 1, 1]),
// items of a batch to every other layer, as Core ML's Seq and Batch axes
// are; a recurrent layer reads that axis N as the sequence: one sequence of
// N steps, a batch of one. Its outputs are then [steps, C'] (or [1, C'] for
// the last step and the states). In an exact-mapping network the blobs are
// Core ML's own rank-5 ones, any batch.
//
// What differs from ONNX is written into the node: Core ML's gate orders
// (LSTM i, f, z, o; GRU z, r, o, which is ONNX's), one bias per gate (ONNX's
// Rb is zero), clip() of every gate's input to [-50, 50] (ONNX's `clip`),
// `forgetBias`, the cell state's bound (`cellClipThreshold`, LayerKit's
// `coreml_cell_clip`), and `reverseInput`, whose outputs come in the order
// the steps are taken (the input reversed, then a forward walk), where a
// bidirectional layer's backward half lines up with the input, as ONNX's does.

extension CoreMLGraphBuilder {
    /// Core ML's bound on every gate's input (`clip()` in NeuralNetwork.proto).
    private static let gateClip: Float = 50

    /// Adds a recurrent layer's nodes: one ONNX RNN, GRU or LSTM and the reshapes around it.
    mutating func recurrent(_ type: String, _ reader: inout ProtobufReader, _ layer: CoreMLLayer) throws {
        let isLSTM = type.hasSuffix("LSTM"), bidirectional = type == "biDirectionalLSTM"
        var sizes: (input: UInt64, hidden: UInt64) = (0, 0)
        var activations: [ProtobufReader] = [], backward: [ProtobufReader] = []
        var sequenceOutput = false, hasBias = false, reverse = false
        var lstmParams: ProtobufReader?, weights: [[Int: ProtobufReader]] = []
        var direct: [Int: ProtobufReader] = [:]
        while let field = try reader.nextField() {
            switch field.number {
            case 1: sizes.input = try reader.uint64(field, "inputVectorSize")
            case 2: sizes.hidden = try reader.uint64(field, "outputVectorSize")
            case 10: activations.append(try reader.message(field, "activations", type: "ActivationParams"))
            case 11 where bidirectional:
                backward.append(try reader.message(field, "activationsBackwardLSTM", type: "ActivationParams"))
            case 15 where isLSTM: lstmParams = try reader.message(field, "params", type: "LSTMParams")
            case 15: sequenceOutput = try reader.uint64(field, "sequenceOutput") != 0
            case 20 where isLSTM:
                var sub = try reader.message(field, "weightParams", type: "LSTMWeightParams")
                weights.append(try Self.weightReaders(&sub))
            case 20: hasBias = try reader.uint64(field, "hasBiasVector") != 0
            case let number where !isLSTM && [30, 31, 32, 50, 51, 52, 70, 71, 72].contains(number):
                direct[field.number] = try reader.message(field, "weights (field \(field.number))", type: "WeightParams")
            case 100 where !bidirectional: reverse = try reader.uint64(field, "reverseInput") != 0
            default: try reader.skip(field)
            }
        }
        let input = try Self.size(sizes.input, "inputVectorSize"), hidden = try Self.size(sizes.hidden, "outputVectorSize")
        var settings = RecurrentSettings()
        if let lstmParams { settings = try Self.lstmSettings(lstmParams) }
        if !isLSTM { settings.sequenceOutput = sequenceOutput; settings.hasBias = hasBias; weights = [direct] }
        let directions = bidirectional ? 2 : 1
        guard weights.count == directions else {
            throw LayerKitError.invalidModel("the layer has \(weights.count) weightParams where \(directions) were expected")
        }
        let op = type == "simpleRecurrent" ? "RNN" : type == "gru" ? "GRU" : "LSTM"
        let perDirection = op == "RNN" ? 1 : op == "GRU" ? 2 : 3
        var names: [String] = [], alphas: [Float] = [], betas: [Float] = []
        for list in bidirectional && !backward.isEmpty ? [activations, backward] : [activations] {
            guard list.count == perDirection else {
                throw LayerKitError.invalidModel("the layer has \(list.count) activations where \(perDirection) were expected")
            }
            for activation in list {
                let (name, alphaBeta) = try Self.recurrentActivation(activation)
                names.append(name)
                if alphaBeta.count == 2 { alphas.append(alphaBeta[0]); betas.append(alphaBeta[1]) }
            }
        }
        var w: [Float] = [], r: [Float] = [], b: [Float] = [], p: [Float] = []
        for readers in weights {
            let gates = try gateWeights(op, readers, input: input, hidden: hidden, settings)
            (w, r, b) = (w + gates.w, r + gates.r, b + gates.b + [Float](repeating: 0, count: gates.b.count))
            p += gates.p
        }
        let gateCount = w.count / (directions * hidden * input)
        let base = layer.outputs[0]
        var inputs = [try sequence(layer.inputs[0], reverse: reverse, name: base),
                      constant(base + ".W", [directions, gateCount * hidden, input], w),
                      constant(base + ".R", [directions, gateCount * hidden, hidden], r),
                      constant(base + ".B", [directions, 2 * gateCount * hidden], b)]
        let states = try initialStates(layer, op: op, directions: directions, hidden: hidden, name: base)
        // Inputs 4 on: sequence_lens (none), initial_h, initial_c, P.
        if !states.isEmpty { inputs += [""] + states }
        if !p.isEmpty {
            while inputs.count < 7 { inputs.append("") }
            inputs.append(constant(base + ".P", [directions, 3 * hidden], p))
        }
        var attributes: [String: ONNXAttribute] = [
            "hidden_size": .int(hidden), "clip": .float(Self.gateClip), "activations": .strings(names),
            "direction": .string(bidirectional ? "bidirectional" : "forward"),
        ]
        if !alphas.isEmpty { attributes["activation_alpha"] = .floats(alphas); attributes["activation_beta"] = .floats(betas) }
        if isLSTM {
            attributes["input_forget"] = .int(settings.coupled ? 1 : 0)
            attributes["coreml_cell_clip"] = .float(settings.cellClip)
        }
        let results = isLSTM ? [base + ".Y", base + ".Y_h", base + ".Y_c"] : [base + ".Y", base + ".Y_h"]
        addNode(op, inputs, outputs: results, rank: 3, attributes)
        ranks[results[0]] = 4
        try recurrentOutputs(layer, states: results, sequenceOutput: settings.sequenceOutput, directions: directions,
                             hidden: hidden)
    }

    /// `LSTMParams`, and the settings simpleRecurrent and gru keep in their own fields.
    private struct RecurrentSettings {
        var sequenceOutput = false, hasBias = false, forgetBias = false, peepholes = false, coupled = false
        /// The bound of the cell state (`cellClipThreshold`, 50 when 0).
        var cellClip: Float = 50
    }

    private static func lstmSettings(_ params: ProtobufReader) throws -> RecurrentSettings {
        var reader = params, settings = RecurrentSettings()
        while let field = try reader.nextField() {
            switch field.number {
            case 10: settings.sequenceOutput = try reader.uint64(field, "sequenceOutput") != 0
            case 20: settings.hasBias = try reader.uint64(field, "hasBiasVectors") != 0
            case 30: settings.forgetBias = try reader.uint64(field, "forgetBias") != 0
            case 40: settings.peepholes = try reader.uint64(field, "hasPeepholeVectors") != 0
            case 50: settings.coupled = try reader.uint64(field, "coupledInputAndForgetGate") != 0
            case 60:
                let clip = try reader.float(field, "cellClipThreshold")
                guard clip >= 0, clip.isFinite else {
                    throw LayerKitError.invalidModel("cellClipThreshold \(clip) is not a finite bound >= 0")
                }
                if clip > 0 { settings.cellClip = clip }
            default: try reader.skip(field)
            }
        }
        return settings
    }

    /// The `WeightParams` of an `LSTMWeightParams`, by field number.
    private static func weightReaders(_ reader: inout ProtobufReader) throws -> [Int: ProtobufReader] {
        var readers: [Int: ProtobufReader] = [:]
        while let field = try reader.nextField() {
            switch field.number {
            case 1...4, 20...23, 40...43, 60...62:
                readers[field.number] = try reader.message(field, "weights (field \(field.number))", type: "WeightParams")
            default: try reader.skip(field)
            }
        }
        return readers
    }

    /// One direction's W, R, Wb and P in ONNX's gate order, from Core ML's
    /// per-gate matrices (by field number; a gate the layer does not use,
    /// the forget gate of coupled gates, may be absent).
    private func gateWeights(_ op: String, _ readers: [Int: ProtobufReader], input: Int, hidden: Int,
                             _ settings: RecurrentSettings) throws -> (w: [Float], r: [Float], b: [Float], p: [Float]) {
        // Field numbers of W, R, b for each gate in ONNX's order, and the gate's name.
        let gates: [(w: Int, r: Int, b: Int, name: String)] = switch op {
        case "RNN": [(30, 31, 32, "")]
        case "GRU": [(30, 50, 70, "updateGate"), (31, 51, 71, "resetGate"), (32, 52, 72, "outputGate")]
        default: [(1, 20, 40, "inputGate"), (4, 23, 43, "outputGate"), (2, 21, 41, "forgetGate"), (3, 22, 42, "blockInput")]
        }
        func values(_ number: Int, _ name: String, count: Int, optional: Bool) throws -> [Float] {
            guard var reader = readers[number] else {
                if optional { return [Float](repeating: 0, count: count) }
                throw LayerKitError.invalidModel("the layer has no \(name)")
            }
            return try weights(&reader, name, count: count)
        }
        var result: (w: [Float], r: [Float], b: [Float], p: [Float]) = ([], [], [], [])
        for gate in gates {
            let unused = settings.coupled && gate.name == "forgetGate"
            let prefix = gate.name.isEmpty ? "" : gate.name
            result.w += try values(gate.w, prefix.isEmpty ? "weightMatrix" : prefix + "WeightMatrix",
                                   count: hidden * input, optional: unused)
            result.r += try values(gate.r, prefix.isEmpty ? "recursionMatrix" : prefix + "RecursionMatrix",
                                   count: hidden * hidden, optional: unused)
            var bias = settings.hasBias ? try values(gate.b, prefix.isEmpty ? "biasVector" : prefix + "BiasVector",
                                                     count: hidden, optional: unused)
                : [Float](repeating: 0, count: hidden)
            if settings.forgetBias && gate.name == "forgetGate" { bias = bias.map { $0 + 1 } }
            result.b += bias
        }
        if settings.peepholes {
            // ONNX's P: i, o, f.
            for (number, name) in [(60, "inputGate"), (62, "outputGate"), (61, "forgetGate")] {
                result.p += try values(number, name + "PeepholeVector", count: hidden,
                                       optional: settings.coupled && name == "forgetGate")
            }
        }
        return result
    }

    /// A recurrent activation (`ActivationParams`) as an ONNX activation
    /// name and, for those that take them, its alpha and beta. Core ML
    /// lists six; scaledTanh and sigmoidHard take only the constants it
    /// names (coremltools writes their messages empty), an empty linear is the identity.
    private static func recurrentActivation(_ params: ProtobufReader) throws -> (name: String, alphaBeta: [Float]) {
        var reader = params
        guard let field = try reader.nextField() else { throw LayerKitError.invalidModel("an activation has no function") }
        var function = try reader.message(field, "function", type: "Activation")
        var alpha: Float = 0, beta: Float = 0
        while let f = try function.nextField() {
            switch f.number {
            case 1 where field.number != 25 && field.number != 71: alpha = try function.float(f, "alpha")
            case 2 where field.number != 71: beta = try function.float(f, "beta")
            default: try function.skip(f)
            }
        }
        let unset = alpha == 0 && beta == 0
        func fixed(_ name: String, _ a: Float, _ b: Float, _ coreML: String) throws -> (name: String, alphaBeta: [Float]) {
            guard unset || (alpha == a && beta == b) else {
                throw LayerKitError.invalidModel("a recurrent \(coreML) with alpha \(alpha) and beta \(beta): Core ML "
                                                 + "takes only alpha \(a) and beta \(b)")
            }
            return (name, [a, b])
        }
        switch field.number {
        case 5: return ("Affine", unset ? [1, 0] : [alpha, beta])
        case 10: return ("Relu", [])
        case 30: return ("Tanh", [])
        case 40: return ("Sigmoid", [])
        case 31: return try fixed("ScaledTanh", 1.7159, 2.0 / 3, "scaledTanh")
        case 41: return try fixed("HardSigmoid", 0.2, 0.5, "sigmoidHard")
        default:
            let name = CoreMLGraphBuilder.activationNames[field.number] ?? "field \(field.number)"
            throw LayerKitError.invalidModel("activation \(name) is not one a recurrent layer takes (linear, ReLU, "
                                             + "tanh, scaledTanh, sigmoid, sigmoidHard)")
        }
    }

    /// `ActivationParams`' functions by field number, for errors.
    static let activationNames = [5: "linear", 10: "ReLU", 15: "leakyReLU", 20: "thresholdedReLU", 25: "PReLU",
                                  30: "tanh", 31: "scaledTanh", 40: "sigmoid", 41: "sigmoidHard", 50: "ELU",
                                  60: "softsign", 70: "softplus", 71: "parametricSoftplus"]

    /// The layer's input as ONNX's X, `[steps, batch, C]`: a rank-2 or
    /// rank-4 blob's N is the sequence (a batch of one); an exact-mapping
    /// network's rank-5 blob is [Seq, Batch, C, 1, 1]. `reverse` takes the steps last to first.
    private mutating func sequence(_ name: String, reverse: Bool, name base: String) throws -> String {
        let x = try blob(name), xRank = rank(of: x)
        guard exactMapping ? xRank == 5 : xRank == 2 || xRank == 4 else {
            throw LayerKitError.invalidModel("input '\(name)' has rank \(xRank), where "
                                             + (exactMapping ? "rank 5 [Seq, Batch, C, 1, 1]" : "[N, C] or [N, C, 1, 1]")
                                             + " was expected")
        }
        let shape = exactMapping ? [0, 0, -1] : [0, 1, -1]
        addNode("Reshape", [x, constant(base + ".X.shape", [3], int64s: shape)], base + ".X", rank: 3)
        guard reverse else { return base + ".X" }
        addNode("Slice", [base + ".X", constant(base + ".X.starts", [1], int64s: [-1]),
                          constant(base + ".X.ends", [1], int64s: [Int.min]), constant(base + ".X.axes", [1], int64s: [0]),
                          constant(base + ".X.steps", [1], int64s: [-1])], base + ".X.reversed", rank: 3)
        return base + ".X.reversed"
    }

    /// ONNX's initial_h and initial_c (`[directions, batch, hidden]`) from
    /// the layer's state inputs ([1, Batch, hidden] each: h, c, then the
    /// backward h and c of a bidirectional LSTM); none when it reads x alone.
    private mutating func initialStates(_ layer: CoreMLLayer, op: String, directions: Int, hidden: Int,
                                        name base: String) throws -> [String] {
        let most = op == "LSTM" ? 2 * directions + 1 : 2
        let count = layer.inputs.count
        guard count <= most, directions == 1 || count == 1 || count == most else {
            throw LayerKitError.invalidModel("the layer reads \(count) inputs; it takes x"
                                             + (directions == 2 ? " alone or with 4 states" : " and up to \(most - 1) states"))
        }
        var states: [String] = []
        for (k, state) in layer.inputs.dropFirst().enumerated() {
            let shaped = "\(base).state\(k)"
            addNode("Reshape", [try blob(state), constant(shaped + ".shape", [3], int64s: [1, -1, hidden])], shaped, rank: 3)
            states.append(shaped)
        }
        guard directions == 2, !states.isEmpty else { return states }
        // Forward h, c, backward h, c: each state's two directions in one tensor.
        return (0..<2).map { k in
            let joined = "\(base).initial\(k)"
            addNode("Concat", [states[k], states[k + 2]], joined, rank: 3, ["axis": .int(0)])
            return joined
        }
    }

    /// The layer's outputs from ONNX's Y (`[steps, directions, batch,
    /// hidden]`), Y_h and Y_c (`[directions, batch, hidden]`): y the whole
    /// sequence or its last step, each direction's halves side by side, then the final states.
    private mutating func recurrentOutputs(_ layer: CoreMLLayer, states: [String], sequenceOutput: Bool,
                                           directions: Int, hidden: Int) throws {
        let most = 1 + (states.count - 1) * directions
        guard layer.outputs.count <= most else {
            throw LayerKitError.invalidModel("the layer writes \(layer.outputs.count) outputs; it makes up to \(most)")
        }
        let y = layer.outputs[0], width = directions * hidden
        // [steps, batch, directions, hidden] (or [batch, directions, hidden]) flattened to Core ML's blob.
        let (source, perm) = sequenceOutput ? (states[0], [0, 2, 1, 3]) : (states[1], [1, 0, 2])
        addNode("Transpose", [source], y + ".batchFirst", rank: perm.count, ["perm": .ints(perm)])
        let shape = exactMapping ? (sequenceOutput ? [0, 0, width, 1, 1] : [1, -1, width, 1, 1]) : [-1, width]
        addNode("Reshape", [y + ".batchFirst", constant(y + ".shape", [shape.count], int64s: shape)], y, rank: shape.count)
        // Outputs 1 on: h and c of the forward direction, then the backward one's.
        for (k, output) in layer.outputs.enumerated().dropFirst() {
            let (direction, state) = ((k - 1) / (states.count - 1), states[1 + (k - 1) % (states.count - 1)])
            let picked = exactMapping ? output + ".state" : output
            addNode("Gather", [state, constant(output + ".direction", [], int64s: [direction])], picked, rank: 2,
                    ["axis": .int(0)])
            if exactMapping {
                addNode("Reshape", [picked, constant(output + ".shape", [5], int64s: [1, -1, hidden, 1, 1])], output,
                        rank: 5)
            }
        }
    }
}
