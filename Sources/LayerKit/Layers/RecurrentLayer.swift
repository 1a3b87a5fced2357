import CKernels
import Foundation

/// ONNX's recurrent ops, RNN, GRU and LSTM, on the CPU, every attribute of
/// their versions 1 to 22: forward, reverse and bidirectional, the spec's
/// activations with their alphas and betas, `clip`, LSTM's `input_forget`
/// and peepholes, GRU's `linear_before_reset`, both layouts, per-batch
/// sequence lengths, initial states, and the outputs Y, Y_h (and Y_c) of
/// which a node lists the first one to three.
///
/// The inputs are X (`[seq, batch, input]`, `[batch, seq, input]` when
/// batch-major), then initial_h and initial_c when given (`[directions,
/// batch, hidden]`, `[batch, directions, hidden]` when batch-major). The
/// weights are constants, packed once here: W and R transposed so every
/// product reads rows, the two biases summed. A run projects every step's
/// input in one matrix product (`lk_sgemm_f32`), then walks the steps,
/// each a product of the previous state and R' and the gates' arithmetic.
/// Sequences of a batch and the two directions are independent, so they
/// split over threads; one sequence of a wide cell splits each step's
/// hidden units instead. There is no GPU implementation: each step needs
/// the whole previous one, which a model of slice images would turn into
/// one dispatch chain per step.
public final class RecurrentLayer: Layer, Sendable {
    /// The cell a step computes.
    public enum Cell: String, Sendable {
        /// `H = f(X W' + H R' + b)`.
        case rnn = "RNN"
        /// Update and reset gates, then the candidate state.
        case gru = "GRU"
        /// Input, output, forget gates and the cell state.
        case lstm = "LSTM"

        /// The gates W, R and B hold, each `hidden` rows.
        public var gates: Int {
            switch self { case .rnn: 1; case .gru: 3; case .lstm: 4 }
        }

        /// The activations a direction takes: f; f and g; f, g and h.
        public var activationsPerDirection: Int {
            switch self { case .rnn: 1; case .gru: 2; case .lstm: 3 }
        }

        /// The spec's default activations for one direction.
        public var defaultActivations: [RecurrentActivation] {
            switch self {
            case .rnn: [RecurrentActivation(.tanh)]
            case .gru: [RecurrentActivation(.sigmoid), RecurrentActivation(.tanh)]
            case .lstm: [RecurrentActivation(.sigmoid), RecurrentActivation(.tanh), RecurrentActivation(.tanh)]
            }
        }

        /// The outputs a node may list: Y, Y_h, and Y_c for an LSTM.
        public var outputs: Int { self == .lstm ? 3 : 2 }
    }

    /// Which way the steps walk the sequence.
    public enum Direction: String, Sendable {
        case forward, reverse, bidirectional

        /// 1, or 2 for bidirectional.
        public var count: Int { self == .bidirectional ? 2 : 1 }
    }

    /// The attributes and optional inputs besides the weights.
    public struct Options: Sendable {
        /// Which way the steps walk the sequence.
        public var direction: Direction = .forward
        /// The activations: one direction's (used for both directions of a
        /// bidirectional cell), or each direction's in turn; nil: the cell's
        /// defaults.
        public var activations: [RecurrentActivation]? = nil
        /// The bound of the gates' inputs, [-clip, clip], before their
        /// activations; nil: unbounded.
        public var clip: Float? = nil
        /// ONNX `layout` 1: X, Y and the states are batch-major.
        public var batchMajor = false
        /// LSTM's `input_forget`: the forget gate is 1 minus the input gate.
        public var inputForget = false
        /// LSTM only: the bound of the cell state, [-cellClip, cellClip],
        /// after each step's update (Core ML's `cellClipThreshold`; ONNX
        /// has none, its `clip` bounds the gates' inputs); nil: unbounded.
        public var cellClip: Float? = nil
        /// GRU's `linear_before_reset`: the reset gate scales `H R' + Rb`
        /// instead of H.
        public var linearBeforeReset = false
        /// Each sequence's length (ONNX `sequence_lens`); nil: all run the
        /// whole sequence. Y is zero past a length, and Y_h (Y_c) are the
        /// state after a sequence's last step (zero for a length of 0, as
        /// onnxruntime gives).
        public var sequenceLengths: [Int]? = nil
        /// Whether initial_h, and initial_c, follow X among the inputs.
        public var initialH = false
        /// Whether initial_c follows X (and initial_h when given); LSTM only.
        public var initialC = false
        /// How many of Y, Y_h, Y_c the layer makes (0 up to the cell's outputs).
        public var outputCount = 2

        public init() {}
    }

    /// The cell.
    public let cell: Cell
    /// The attributes and optional inputs.
    public let options: Options
    /// The hidden size.
    public let hiddenSize: Int
    /// The input size, X's innermost extent.
    public let inputSize: Int

    /// The instruction set the weights are packed for (`lk_sgemm_pack_b`).
    let packedISA: lk_isa
    /// W' of every direction side by side (`[input, directions * gates * hidden]`),
    /// packed: one product projects every step for both directions.
    let inputWeights: Tensor
    /// Each direction's and gate's block of R' (`[hidden, hidden]`), packed
    /// one after another, `gatePanels` floats each: a step's product reads
    /// a gate's columns from any multiple of the column block.
    let recurrentWeights: Tensor
    /// Floats of one packed `[hidden, hidden]` block of R'.
    let gatePanels: Int
    /// Wb + Rb per direction, `[directions * gates * hidden]`, added to the
    /// projection; for GRU with `linear_before_reset` its candidate gate holds Wb alone.
    let bias: Tensor
    /// GRU with `linear_before_reset`: the candidate gate's Rb per direction,
    /// `[directions, hidden]`, which the reset gate scales.
    let candidateRecurrentBias: Tensor?
    /// LSTM's peepholes per direction, `[directions, 3 * hidden]`, in P's order (i, o, f).
    let peepholes: Tensor?
    /// Each direction's activations as CPU programs (f, g, h), clip included
    /// where it applies (every gate's input; not LSTM's h of the cell state).
    let programs: [[CPUProgram]]

    public var layerName: String { cell.rawValue }

    /// The layer for weights W (`[directions, gates * hidden, input]`),
    /// R (`[directions, gates * hidden, hidden]`), optional B (`[directions,
    /// 2 * gates * hidden]`, Wb then Rb) and, for an LSTM, peepholes P
    /// (`[directions, 3 * hidden]`), in ONNX's gate orders (LSTM i, o, f, c;
    /// GRU z, r, h). `hiddenSize`, when given, must be R's. Throws for
    /// weights of the wrong shape, or options the cell does not take.
    public init(cell: Cell, w: Tensor, r: Tensor, b: Tensor? = nil, peepholes p: Tensor? = nil,
                hiddenSize: Int? = nil, options: Options = Options()) throws {
        let name = cell.rawValue
        let directions = options.direction.count
        guard r.shape.count == 3, r.shape[0] == directions, r.shape[2] >= 1 else {
            throw LayerKitError.invalidWeights("\(name): R must be [\(directions), gates * hidden, hidden] with hidden >= 1 "
                                               + "for direction \(options.direction.rawValue), got \(Tensor.describe(r.shape))")
        }
        let hidden = r.shape[2]
        if let hiddenSize, hiddenSize != hidden {
            throw LayerKitError.invalidParameter("\(name): hidden_size \(hiddenSize) is not R's hidden size \(hidden) "
                                                 + "(R is \(Tensor.describe(r.shape)))")
        }
        // R's extents are those of a tensor held in memory, so this product cannot overflow.
        let rows = cell.gates * hidden
        guard r.shape[1] == rows else {
            throw LayerKitError.invalidWeights("\(name): R must be [\(directions), \(rows), \(hidden)] "
                                               + "(\(cell.gates) gates of hidden size \(hidden)), got \(Tensor.describe(r.shape))")
        }
        guard w.shape.count == 3, w.shape[0] == directions, w.shape[1] == rows, w.shape[2] >= 1 else {
            throw LayerKitError.invalidWeights("\(name): W must be [\(directions), \(rows), input] (\(cell.gates) gates of "
                                               + "hidden size \(hidden)), got \(Tensor.describe(w.shape))")
        }
        if let b, b.shape != [directions, 2 * rows] {
            throw LayerKitError.invalidWeights("\(name): B must be [\(directions), \(2 * rows)], got \(Tensor.describe(b.shape))")
        }
        if let p {
            guard cell == .lstm else { throw LayerKitError.invalidWeights("\(name) takes no peepholes") }
            guard p.shape == [directions, 3 * hidden] else {
                throw LayerKitError.invalidWeights("\(name): P must be [\(directions), \(3 * hidden)], got \(Tensor.describe(p.shape))")
            }
        }
        try Self.check(options, cell: cell)
        let perDirection = cell.activationsPerDirection
        let activations = options.activations ?? cell.defaultActivations
        guard activations.count == perDirection || activations.count == perDirection * directions else {
            throw LayerKitError.invalidParameter("\(name): \(activations.count) activations given; it takes \(perDirection) "
                                                 + "per direction (\(perDirection * directions) for \(options.direction.rawValue))")
        }
        programs = try (0..<directions).map { d in
            let own = activations.count == perDirection ? activations : Array(activations[d * perDirection..<(d + 1) * perDirection])
            return try own.enumerated().map { k, activation in
                try activation.program(clip: cell == .lstm && k == 2 ? nil : options.clip)
            }
        }
        (self.cell, self.options, self.hiddenSize, inputSize) = (cell, options, hidden, w.shape[2])
        let input = w.shape[2]
        let width = directions * rows
        let isa = lk_kernels_isa()
        packedISA = isa
        // W' side by side: element (k, d * rows + j) is W[d, j, k]; R'[d] likewise, `[hidden, rows]`.
        let transposedW = try Tensor(shape: [input, width])
        let transposedR = try Tensor(shape: [directions, hidden, rows])
        for d in 0..<directions {
            for j in 0..<rows {
                for k in 0..<input { transposedW[k * width + d * rows + j] = w[(d * rows + j) * input + k] }
                for k in 0..<hidden { transposedR[(d * hidden + k) * rows + j] = r[(d * rows + j) * hidden + k] }
            }
        }
        inputWeights = try Tensor(shape: [lk_sgemm_packed_b_size(isa, input, width)])
        gatePanels = lk_sgemm_packed_b_size(isa, hidden, hidden)
        recurrentWeights = try Tensor(shape: [directions * cell.gates * gatePanels])
        var status = lk_sgemm_pack_b(isa, input, width, transposedW.dataPointer, width, inputWeights.dataPointer)
        for d in 0..<directions {
            for g in 0..<cell.gates {
                status |= lk_sgemm_pack_b(isa, hidden, hidden, transposedR.dataPointer + d * hidden * rows + g * hidden, rows,
                                          recurrentWeights.dataPointer + (d * cell.gates + g) * gatePanels)
            }
        }
        guard status == 0 else { throw LayerKitError.unsupported("\(name): the weights could not be packed for this CPU") }
        bias = try Tensor(shape: [width])
        var candidateBias: Tensor? = nil
        if cell == .gru && options.linearBeforeReset { candidateBias = try Tensor(shape: [directions, hidden]) }
        if let b {
            for d in 0..<directions {
                for j in 0..<rows {
                    let (wb, rb) = (b[d * 2 * rows + j], b[d * 2 * rows + rows + j])
                    if let candidateBias, j >= 2 * hidden {
                        bias[d * rows + j] = wb
                        candidateBias[d * hidden + j - 2 * hidden] = rb
                    } else {
                        bias[d * rows + j] = wb + rb
                    }
                }
            }
        }
        candidateRecurrentBias = candidateBias
        peepholes = try p.map { try Tensor(shape: $0.shape, values: $0.values) }
    }

    /// Throws for options `cell` does not take or values out of range.
    private static func check(_ options: Options, cell: Cell) throws {
        let name = cell.rawValue
        if let clip = options.clip, !(clip > 0 && clip.isFinite) {
            throw LayerKitError.invalidParameter("\(name): clip must be a finite value > 0, got \(clip)")
        }
        if options.inputForget && cell != .lstm { throw LayerKitError.invalidParameter("\(name) takes no input_forget") }
        if let bound = options.cellClip {
            guard cell == .lstm else { throw LayerKitError.invalidParameter("\(name) has no cell state to clip") }
            guard bound > 0 && bound.isFinite else {
                throw LayerKitError.invalidParameter("\(name): the cell clip must be a finite value > 0, got \(bound)")
            }
        }
        if options.linearBeforeReset && cell != .gru { throw LayerKitError.invalidParameter("\(name) takes no linear_before_reset") }
        if options.initialC && cell != .lstm { throw LayerKitError.invalidParameter("\(name) takes no initial_c") }
        guard (0...cell.outputs).contains(options.outputCount) else {
            throw LayerKitError.invalidParameter("\(name) makes 0 to \(cell.outputs) outputs, not \(options.outputCount)")
        }
        if let lengths = options.sequenceLengths, let bad = lengths.first(where: { $0 < 0 }) {
            throw LayerKitError.invalidParameter("\(name): sequence_lens holds \(bad); lengths are >= 0")
        }
    }

    /// How many of the inputs are initial states.
    private var stateInputs: Int { (options.initialH ? 1 : 0) + (options.initialC ? 1 : 0) }

    /// A state's shape for `batch` sequences: initial_h, Y_h, Y_c.
    private func stateShape(batch: Int) -> [Int] {
        let directions = options.direction.count
        return options.batchMajor ? [batch, directions, hiddenSize] : [directions, batch, hiddenSize]
    }

    /// The first `outputCount` of Y, Y_h, Y_c; throws unless X is rank 3 of
    /// `inputSize` features, the initial states are `[directions, batch,
    /// hidden]` (batch-major: `[batch, directions, hidden]`), and there is
    /// one sequence length per batch item, none past the sequence.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1 + stateInputs, layer: layerName)
        let x = inputShapes[0]
        guard x.count == 3, x[2] == inputSize else {
            let form = options.batchMajor ? "[batch, seq, \(inputSize)]" : "[seq, batch, \(inputSize)]"
            throw LayerKitError.shapeMismatch("\(layerName): X must be \(form) (layout \(options.batchMajor ? 1 : 0)), "
                                              + "got \(Tensor.describe(x))")
        }
        let (steps, batch) = options.batchMajor ? (x[1], x[0]) : (x[0], x[1])
        let state = stateShape(batch: batch)
        for (k, shape) in inputShapes.dropFirst().enumerated() where shape != state {
            let what = k == 0 && options.initialH ? "initial_h" : "initial_c"
            throw LayerKitError.shapeMismatch("\(layerName): \(what) must be \(Tensor.describe(state)) for X "
                                              + "\(Tensor.describe(x)), got \(Tensor.describe(shape))")
        }
        if let lengths = options.sequenceLengths {
            guard lengths.count == batch else {
                throw LayerKitError.shapeMismatch("\(layerName): sequence_lens has \(lengths.count) lengths for a batch of \(batch)")
            }
            if let long = lengths.first(where: { $0 > steps }) {
                throw LayerKitError.shapeMismatch("\(layerName): sequence_lens holds \(long), past the sequence's \(steps) steps")
            }
        }
        let directions = options.direction.count
        // A run projects every step's input at once: one more value, held to the importer's cap on one.
        let projected = try Tensor.elementCount(of: [steps, batch, directions * cell.gates * hiddenSize])
        guard projected <= ONNXImporter.maxValueElements else {
            throw LayerKitError.shapeMismatch("\(layerName): X \(Tensor.describe(x)) projected onto its \(directions * cell.gates) "
                                              + "gates would hold \(projected) elements, more than LayerKit's limit of "
                                              + "\(ONNXImporter.maxValueElements >> 20)M for one tensor")
        }
        let y = options.batchMajor ? [batch, steps, directions, hiddenSize] : [steps, directions, batch, hiddenSize]
        return Array([y, state, state].prefix(options.outputCount))
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shapes = try outputShapes(forInputShapes: inputs.map(\.shape))
        guard outputs.map(\.shape) == shapes else {
            throw LayerKitError.shapeMismatch("\(layerName): outputs \(outputs.map { Tensor.describe($0.shape) }) "
                                              + "are not \(shapes.map(Tensor.describe))")
        }
        let x = inputs[0]
        let (steps, batch) = options.batchMajor ? (x.shape[1], x.shape[0]) : (x.shape[0], x.shape[1])
        let run = try RecurrentRun(layer: self, steps: steps, batch: batch,
                               initialH: options.initialH ? inputs[1] : nil,
                               initialC: options.initialC ? inputs[inputs.count - 1] : nil,
                               outputs: outputs, threads: CPUThreads.current)
        try run.project(x)
        try run.walk()
    }
}
